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

#[test]
fn exact_delivery_under_30_percent_loss() {
    for scheme in ["tahoe", "reno", "newreno", "sack", "cubic"] {
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
    for scheme in ["tahoe", "reno", "newreno", "sack", "cubic"] {
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
