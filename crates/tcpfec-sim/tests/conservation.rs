//! Conservation: what the receiving application reads is exactly what the sender wrote, in
//! order, whatever the loss; and the same seed always gives the same result.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, Scenario};

fn transfer(scheme: &str, loss: LossSpec, reverse: LossSpec, bytes: u64) -> Scenario {
    Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        delay: Duration::from_millis(20),
        loss,
        reverse_loss: reverse,
        app: App::Transfer { bytes },
        duration: Duration::from_secs(20_000),
        window: (Duration::ZERO, Duration::from_secs(20_000)),
        verify_data: true,
        ..Scenario::default()
    }
}

fn assert_exact(sc: &Scenario, what: &str) {
    let r = run(sc);
    let App::Transfer { bytes } = sc.app else {
        unreachable!()
    };
    assert_eq!(r.incomplete_flows, 0, "{what}: transfer did not complete");
    assert_eq!(
        r.flows[0].bytes_delivered, bytes,
        "{what}: wrong byte count"
    );
    assert_eq!(
        r.corrupt_bytes, 0,
        "{what}: delivered bytes differ from written"
    );
}

const SCHEMES: [&str; 20] = [
    "tahoe",
    "reno",
    "newreno",
    "sack",
    "cubic",
    "bbr",
    "bbr1",
    "fec-fmax-10",
    "fec-dup-cwnd",
    "fec-static-3",
    "fec-il-g3-l30-r0.7",
    "anker-16-2",
    "anker-5-3-tahoe",
    "anker-16-3-bbr1",
    "tcp-ir",
    "dfec",
    "afec",
    "afec-raw100",
    "tfec",
    "fectcp",
];

#[test]
fn exact_delivery_under_30_percent_loss() {
    for scheme in SCHEMES {
        let sc = transfer(
            scheme,
            LossSpec::Bernoulli { p: 0.3 },
            LossSpec::Bernoulli { p: 0.3 },
            300_000,
        );
        assert_exact(&sc, &format!("{scheme} at 30% loss both ways"));
    }
}

#[test]
fn exact_delivery_under_gilbert_elliott_bursts() {
    // Mean burst 1/r = 4 packets, long-run loss p/(p+r) ≈ 3.8 %.
    let ge = LossSpec::GilbertElliott {
        p: 0.01,
        r: 0.25,
        h: 0.0,
        k: 1.0,
    };
    for scheme in SCHEMES {
        for seed in 1..=3 {
            let mut sc = transfer(scheme, ge, LossSpec::None, 5_000_000);
            sc.seed = seed;
            assert_exact(&sc, &format!("{scheme} seed {seed} under GE bursts"));
        }
    }
}

#[test]
fn same_seed_same_result_different_seed_different_result() {
    let sc = Scenario {
        duration: Duration::from_secs(30),
        window: (Duration::from_secs(5), Duration::from_secs(30)),
        delay: Duration::from_millis(20),
        loss: LossSpec::Bernoulli { p: 0.005 },
        ..Scenario::default()
    };
    let a = serde_json::to_string(&run(&sc)).unwrap();
    let b = serde_json::to_string(&run(&sc)).unwrap();
    assert_eq!(a, b);
    let other = Scenario { seed: 2, ..sc };
    assert_ne!(a, serde_json::to_string(&run(&other)).unwrap());
}

#[test]
fn fec_rebuilds_segments_and_counts_them() {
    let sc = transfer(
        "fec-static-5",
        LossSpec::Bernoulli { p: 0.01 },
        LossSpec::None,
        5_000_000,
    );
    // ~3600 data packets at 1 % loss: dozens of single losses per 5-packet group.
    assert_rebuilds(&run(&sc), 10, 1.0 / 6.0);
}

/// The transfer completed byte-exact, FEC rebuilt more than `at_least` segments, and the
/// redundancy rate is `redundancy` (within 0.02).
fn assert_rebuilds(r: &tcpfec_sim::RunResult, at_least: u64, redundancy: f64) {
    assert_eq!(r.corrupt_bytes, 0);
    assert_eq!(r.incomplete_flows, 0);
    assert!(
        r.recovered_packets > at_least,
        "recovered {}",
        r.recovered_packets
    );
    assert!(
        (r.redundancy_rate - redundancy).abs() < 0.02,
        "redundancy {}",
        r.redundancy_rate
    );
}

#[test]
fn reed_solomon_rebuilds_several_losses_per_block() {
    // (16,2) blocks at 3 % loss: blocks with two losses are common and must be rebuilt.
    let mut sc = transfer(
        "anker-16-2",
        LossSpec::Bernoulli { p: 0.03 },
        LossSpec::None,
        3_000_000,
    );
    // Full blocks only, so the redundancy is exactly M/(N+M); early closing of stalled
    // blocks has its own test (flight_end_flush.rs).
    sc.scheme.fec.as_mut().unwrap().flush_at_flight_end = None;
    assert_rebuilds(&run(&sc), 40, 2.0 / 18.0);
}
