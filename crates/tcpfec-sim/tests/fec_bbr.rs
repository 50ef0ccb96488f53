//! FEC under a model-based controller: `anker-16-3-bbr1` on a long, lossy path keeps its
//! share of the link, repair overhead aside.
//!
//! BBR's bandwidth estimate has to count the repair packets it paces (otherwise a probe at
//! 1.25 times the estimate cannot lift an estimate that only sees 16/19 of the traffic),
//! and SACK recovery must not resend holes the repairs on their way will fill.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, LossSpec, Scenario, HEADER_BYTES};

fn goodput(p: f64) -> f64 {
    let sc = Scenario {
        scheme: Scheme::parse("anker-16-3-bbr1").unwrap(),
        bottleneck_bps: 50_000_000,
        delay: Duration::from_millis(100),
        buffer: 833,
        loss: if p > 0.0 {
            LossSpec::Bernoulli { p }
        } else {
            LossSpec::None
        },
        duration: Duration::from_secs(30),
        window: (Duration::from_secs(10), Duration::from_secs(30)),
        ..Scenario::default()
    };
    run(&sc).goodput_mbps
}

/// What the link carries in payload once 3 repairs ride with every 16 data packets.
fn ceiling() -> f64 {
    50.0 * (1500.0 - HEADER_BYTES as f64) / 1500.0 * 16.0 / 19.0
}

#[test]
fn anker_bbr1_fills_a_clean_path_but_for_the_repairs() {
    let g = goodput(0.0);
    assert!(g > 0.85 * ceiling(), "{g:.2} Mb/s of {:.2}", ceiling());
}

#[test]
fn anker_bbr1_holds_the_link_at_5_percent_random_loss() {
    // Before repairs counted in the delivery rate and protected holes waited for their
    // repairs, this run gave 6 Mb/s.
    let g = goodput(0.05);
    assert!(g > 0.75 * ceiling(), "{g:.2} Mb/s of {:.2}", ceiling());
}
