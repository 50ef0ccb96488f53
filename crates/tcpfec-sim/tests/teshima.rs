//! TCP-AFEC and TCP-TFEC (Teshima, seed 001) in the simulator: the redundancy follows the
//! loss, and TFEC carries a streaming application's target rate through heavy loss.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, RunResult, Scenario};

fn wlan(scheme: &str, loss: f64, rate_bps: u64, seed: u64) -> RunResult {
    run(&Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        bottleneck_bps: 24_000_000,
        access_bps: 100_000_000,
        delay: Duration::from_millis(1),
        access_delay: (Duration::from_millis(5), Duration::from_millis(5)),
        buffer: 500,
        packet_size: 1040,
        max_window: Some(100),
        loss: LossSpec::bernoulli(loss),
        app: App::Rate { bps: rate_bps },
        duration: Duration::from_secs(60),
        window: (Duration::from_secs(20), Duration::from_secs(60)),
        cwnd_sample: Some(Duration::from_millis(100)),
        verify_data: true,
        seed,
        ..Scenario::default()
    })
}

fn last_redundancy(r: &RunResult) -> f64 {
    r.redundancy_series[0].last().unwrap().1
}

fn max_redundancy(r: &RunResult) -> f64 {
    r.redundancy_series[0]
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max)
}

#[test]
fn tfec_redundancy_follows_the_measured_loss_and_holds_the_target() {
    let low = wlan("tfec", 0.01, 5_000_000, 1);
    let high = wlan("tfec", 0.10, 5_000_000, 1);
    for r in [&low, &high] {
        assert_eq!(r.corrupt_bytes, 0);
    }
    let (a, b) = (last_redundancy(&low), last_redundancy(&high));
    assert!(b > a, "redundancy {b:.3} at 10 % vs {a:.3} at 1 %");
    // The table plus one: at 10 % loss at least 10 repairs per 100.
    assert!(b >= 1.10, "redundancy {b:.3} at 10 % loss");
    // 5 Mb/s of a 24 Mb/s link through 10 % loss: within 10 % of the target.
    let share = high.goodput_mbps / 5.0;
    assert!(
        share > 0.9,
        "TFEC delivered {:.2} Mb/s of 5",
        high.goodput_mbps
    );
}

#[test]
fn afec_climbs_on_loss_and_stays_at_the_floor_without() {
    let clean = wlan("afec", 0.0, 5_000_000, 1);
    let lossy = wlan("afec", 0.05, 5_000_000, 1);
    // Level 1 with K = 20 is 1.05; a clean path never leaves it.
    assert!((max_redundancy(&clean) - 1.05).abs() < 1e-9);
    assert!(
        max_redundancy(&lossy) >= 1.15,
        "AFEC's redundancy peaked at {:.3} with 5 % loss",
        max_redundancy(&lossy)
    );
}
