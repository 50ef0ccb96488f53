//! `auto` delivers a stream on time: with 3 % random loss, 99 % of a 2 Mb/s stream's
//! bytes arrive within the path's one-way delay plus a quarter of the round trip (and
//! three packet serialisations), where BBR without FEC waits a round trip and more for
//! each retransmission.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, RunResult, Scenario};

/// A 2 Mb/s stream on a 10 Mb/s path, RTT 100 ms, a one-BDP queue, 3 % random loss,
/// measured over 10–60 s.
fn stream(scheme: &str, seed: u64) -> RunResult {
    run(&Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        bottleneck_bps: 10_000_000,
        access_bps: 10_000_000,
        delay: Duration::from_millis(48),
        buffer: 84,
        initial_window: 10,
        loss: LossSpec::bernoulli(0.03),
        app: App::Rate { bps: 2_000_000 },
        duration: Duration::from_secs(60),
        window: (Duration::from_secs(10), Duration::from_secs(60)),
        verify_data: true,
        seed,
        ..Scenario::default()
    })
}

#[test]
fn a_stream_at_three_percent_loss_meets_its_delay_target_in_every_seed() {
    // One way 50 ms, a quarter of the 100 ms round trip, three 1.2 ms serialisations.
    let target = 50.0 + 25.0 + 3.6;
    for seed in 1..=4 {
        let r = stream("auto", seed);
        assert_eq!(r.corrupt_bytes, 0);
        let d = r.delay.unwrap();
        assert!(d.p99_ms <= target, "seed {seed}: p99 {:.1} ms", d.p99_ms);
        // The repair it takes: under 40 % of the packets at 3 % loss (intervals of
        // about 3 packets, at most one repair each).
        assert!(
            r.redundancy_rate < 0.4,
            "seed {seed}: redundancy {:.3}",
            r.redundancy_rate
        );
        let bbr = stream("bbr", seed).delay.unwrap();
        assert!(
            bbr.p99_ms > target + 50.0,
            "seed {seed}: bbr's p99 {:.1} ms",
            bbr.p99_ms
        );
    }
}
