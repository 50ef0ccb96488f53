//! Hosts whose clocks run apart: `auto`'s receiver compares the sender's timestamps with
//! its own clock, and a clock that gains on the sender's must not read as a queue.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, LossSpec, Scenario};

/// `auto` on a lossy 10 Mb/s path, RTT 42 ms, one-BDP queue, for two minutes with the
/// receiver's clock `ppm` fast: goodput over the second minute.
fn goodput(ppm: f64) -> f64 {
    run(&Scenario {
        scheme: Scheme::parse("auto").unwrap(),
        bottleneck_bps: 10_000_000,
        delay: Duration::from_millis(20),
        buffer: 35,
        loss: LossSpec::bernoulli(0.05),
        clock_skew_ppm: ppm,
        duration: Duration::from_secs(120),
        window: (Duration::from_secs(60), Duration::from_secs(120)),
        ..Scenario::default()
    })
    .goodput_mbps
}

#[test]
fn a_receiver_clock_that_gains_on_the_sender_costs_auto_nothing() {
    let true_clocks = goodput(0.0);
    assert!(true_clocks > 7.5, "{true_clocks} Mb/s at 5 % loss");
    // 500 ppm, NTP's largest slew, gains 30 ms a minute: read as queueing, every packet
    // would meet a full queue and every loss would be congestion.
    for ppm in [500.0, -500.0] {
        let skewed = goodput(ppm);
        assert!(
            (skewed / true_clocks - 1.0).abs() < 0.05,
            "{ppm} ppm: {skewed} Mb/s against {true_clocks}"
        );
    }
}
