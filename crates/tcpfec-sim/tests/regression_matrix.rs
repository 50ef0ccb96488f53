//! Regression matrix: a small grid of (variant × loss × delay) runs whose results are pinned
//! in `tests/snapshots/regression_matrix.txt`. Any change in TCP behaviour changes some
//! number and fails this test; if the change is intended, look at the differences and
//! regenerate with `TCPFEC_UPDATE_SNAPSHOTS=1 cargo test --release -p tcpfec-sim --test regression_matrix`.

use core::time::Duration;
use std::fmt::Write as _;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, LossSpec, Scenario};

const SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/snapshots/regression_matrix.txt"
);

fn matrix() -> String {
    let mut out = String::from(
        "# scheme loss delay_ms goodput_mbps fast_recoveries timeouts retransmission_rate\n",
    );
    for scheme in ["tahoe", "reno", "newreno", "sack", "cubic"] {
        for loss in [0.001, 0.01] {
            for delay_ms in [20u64, 100] {
                let sc = Scenario {
                    scheme: Scheme::parse(scheme).unwrap(),
                    delay: Duration::from_millis(delay_ms),
                    loss: LossSpec::Bernoulli { p: loss },
                    duration: Duration::from_secs(60),
                    window: (Duration::from_secs(10), Duration::from_secs(60)),
                    ..Scenario::default()
                };
                let r = run(&sc);
                let _ = writeln!(
                    out,
                    "{scheme} {loss} {delay_ms} {:.6} {} {} {:.6}",
                    r.goodput_mbps, r.fast_recoveries, r.timeouts, r.retransmission_rate
                );
            }
        }
    }
    out
}

#[test]
fn tcp_behaviour_matches_the_pinned_matrix() {
    let now = matrix();
    if std::env::var_os("TCPFEC_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(SNAPSHOT, &now).unwrap();
        return;
    }
    let pinned = std::fs::read_to_string(SNAPSHOT)
        .expect("snapshot missing: run with TCPFEC_UPDATE_SNAPSHOTS=1 to create it");
    if pinned != now {
        let diff: Vec<String> = pinned
            .lines()
            .zip(now.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("  pinned: {a}\n  now:    {b}"))
            .collect();
        panic!(
            "TCP behaviour changed in {} of {} runs:\n{}\nIf intended, regenerate the snapshot (see the file's doc comment).",
            diff.len(),
            now.lines().count() - 1,
            diff.join("\n")
        );
    }
}
