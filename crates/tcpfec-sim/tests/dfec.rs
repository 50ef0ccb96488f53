//! TCP-dFEC (Ferlin, seed 003) against its TCP-IR baseline, in the simulator.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, RunResult, Scenario};

fn page(scheme: &str, loss: f64, seed: u64) -> RunResult {
    run(&Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        bottleneck_bps: 20_000_000,
        access_bps: 20_000_000,
        delay: Duration::from_millis(48),
        buffer: 100,
        loss: LossSpec::bernoulli(loss),
        app: App::Transfer { bytes: 3204 * 1024 },
        duration: Duration::from_secs(600),
        window: (Duration::ZERO, Duration::from_secs(600)),
        cwnd_sample: Some(Duration::from_millis(100)),
        verify_data: true,
        seed,
        ..Scenario::default()
    })
}

/// Group sizes sampled while the page was loading (after the first group opened).
fn group_sizes(r: &RunResult) -> Vec<f64> {
    let done = r.completion_time_s.expect("completed");
    r.group_size_series[0]
        .iter()
        .filter(|p| p.0 <= done && p.1 > 0.0)
        .map(|p| p.1)
        .collect()
}

#[test]
fn the_ratio_follows_the_loss_rate() {
    let clean = page("dfec", 0.0, 1);
    let lossy = page("dfec", 0.05, 1);
    for r in [&clean, &lossy] {
        assert_eq!(r.incomplete_flows, 0);
        assert_eq!(r.corrupt_bytes, 0);
    }
    // Without random loss only slow start's queue overflow leaves residual loss: the ratio
    // may rise for a moment but ends at its floor, 1/16.
    let clean_sizes = group_sizes(&clean);
    assert_eq!(clean_sizes.last(), Some(&16.0));
    // At 5 % loss a group of 16 fails about half the time, far above the 0.5 % target:
    // the ratio must at least double from its floor of 1/16 during the ~2300-packet page
    // (steps of 25 % per 100 packets need ~300 packets for that). Where it settles
    // depends on how many residual losses show as retransmissions (one retransmission
    // repairs a group with two losses), so only the direction is asserted.
    let lossy_sizes = group_sizes(&lossy);
    let smallest = lossy_sizes.iter().copied().fold(f64::MAX, f64::min);
    assert!(smallest <= 8.0, "smallest group {smallest} at 5 % loss");
    assert!(lossy.redundancy_rate > 2.0 * clean.redundancy_rate);
}

#[test]
fn dfec_completes_pages_faster_than_tcp_ir_at_3_percent_loss() {
    let (mut ir, mut d) = (0.0, 0.0);
    for seed in 1..=5 {
        ir += page("tcp-ir", 0.03, seed).completion_time_s.unwrap();
        d += page("dfec", 0.03, seed).completion_time_s.unwrap();
    }
    eprintln!("5 pages: tcp-ir {ir:.1} s, dfec {d:.1} s");
    // Ferlin reports up to 50 % shorter completion; ask for a clear 20 %.
    assert!(d < 0.8 * ir, "dfec {d:.1} s vs tcp-ir {ir:.1} s");
}
