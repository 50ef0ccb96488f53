//! The on-time targets of a delay experiment (`delay_targets` in its file): at every point
//! of its delay figures, one scheme's delivery delay and repair against what the path
//! allows.
//!
//! * p99 ≤ one-way delay + max(RTT/4, 10 ms) + the serialisation of a full packet on
//!   each of the path's three links: a loss may cost a quarter of a round trip, never a
//!   retransmission's round trip;
//! * p99.9 ≤ one-way delay + RTT;
//! * repair ≤ 2 × the loss rate + 2 % of the packets sent.
//!
//! For request/response exchanges the floor is the round trip instead of the one-way
//! delay (an exchange crosses the path both ways).

use std::fmt::Write as _;
use tcpfec_sim::{App, Scenario};

/// One point of a delay figure: the checked scheme's runs there.
pub struct Point<'a> {
    /// Figure id.
    pub figure: &'a str,
    /// The point's x value.
    pub x: &'a str,
    /// The scenario of the point's first run.
    pub scenario: &'a Scenario,
    /// The records of the scheme's runs there (`output::run_json`).
    pub runs: Vec<&'a serde_json::Value>,
}

/// One point checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Figure id.
    pub figure: String,
    /// The point's x value.
    pub x: String,
    /// The p99 delivery delay, ms (mean over the runs).
    pub p99: f64,
    /// The p99.9 delivery delay, ms (mean over the runs).
    pub p999: f64,
    /// The repair share of the packets sent (mean over the runs).
    pub redundancy: f64,
    /// What the p99 may be at most.
    pub p99_target: f64,
    /// What the p99.9 may be at most.
    pub p999_target: f64,
    /// What the repair share may be at most.
    pub redundancy_target: f64,
}

impl Row {
    /// Whether each of the three targets is met: p99, p99.9, repair.
    pub fn met(&self) -> [bool; 3] {
        [
            self.p99 <= self.p99_target,
            self.p999 <= self.p999_target,
            self.redundancy <= self.redundancy_target,
        ]
    }
}

/// Mean of a metric over records; NaN if any lacks it.
fn mean(runs: &[&serde_json::Value], metric: &str) -> f64 {
    let v: Vec<f64> = runs
        .iter()
        .map(|r| r[metric].as_f64().unwrap_or(f64::NAN))
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The targets at `p` and what the scheme achieved there.
pub fn row(p: &Point) -> Row {
    let sc = p.scenario;
    let one_way = mean(&p.runs, "one_way_delay_ms");
    let rtt = 2.0 * one_way;
    let serialise = |bps: u64| sc.packet_size as f64 * 8.0 / bps as f64 * 1e3;
    let serialisation = serialise(sc.bottleneck_bps) + 2.0 * serialise(sc.access_bps);
    let floor = match sc.app {
        App::RequestResponse { .. } => rtt,
        _ => one_way,
    };
    Row {
        figure: p.figure.to_string(),
        x: p.x.to_string(),
        p99: mean(&p.runs, "delay_p99_ms"),
        p999: mean(&p.runs, "delay_p999_ms"),
        redundancy: mean(&p.runs, "redundancy_rate"),
        p99_target: floor + (rtt / 4.0).max(10.0) + serialisation,
        p999_target: floor + rtt,
        redundancy_target: 2.0 * sc.loss.mean_loss() + 0.02,
    }
}

/// Markdown: how many points meet each target, then every point; and the same as CSV.
pub fn section(scheme: &str, rows: &[Row]) -> (String, String) {
    let mut md = format!("## Targets: `{scheme}` on time\n\n");
    let mut csv = String::from(
        "figure,x,p99_ms,p99_target_ms,p999_ms,p999_target_ms,redundancy,redundancy_target\n",
    );
    if rows.is_empty() {
        md.push_str("No point was checked.\n\n");
        return (md, csv);
    }
    let n = rows.len();
    let count = |k: usize| rows.iter().filter(|r| r.met()[k]).count();
    let _ = writeln!(
        md,
        "{n} points. p99 ≤ one-way + max(RTT/4, 10 ms) + 3 serialisations: {} ({:.0} %); \
         p99.9 ≤ one-way + RTT: {} ({:.0} %); repair ≤ 2 × loss + 2 %: {} ({:.0} %). \
         (An exchange's floor is the round trip, not the one-way delay.)\n",
        count(0),
        100.0 * count(0) as f64 / n as f64,
        count(1),
        100.0 * count(1) as f64 / n as f64,
        count(2),
        100.0 * count(2) as f64 / n as f64,
    );
    md.push_str(
        "| figure | x | p99 [ms] | target | p99.9 [ms] | target | repair | target |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    let mark = |ok: bool| if ok { "" } else { " **miss**" };
    for r in rows {
        let [a, b, c] = r.met();
        let _ = writeln!(
            md,
            "| {} | {} | {:.1}{} | {:.1} | {:.1}{} | {:.1} | {:.3}{} | {:.3} |",
            r.figure,
            r.x,
            r.p99,
            mark(a),
            r.p99_target,
            r.p999,
            mark(b),
            r.p999_target,
            r.redundancy,
            mark(c),
            r.redundancy_target
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{}",
            r.figure,
            crate::output::csv_text(&r.x),
            r.p99,
            r.p99_target,
            r.p999,
            r.p999_target,
            r.redundancy,
            r.redundancy_target
        );
    }
    md.push('\n');
    (md, csv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;
    use serde_json::json;
    use tcpfec_sim::LossSpec;

    #[test]
    fn targets_follow_the_path_and_the_loss() {
        // 10 Mb/s everywhere, 1500-byte packets (1.2 ms each), one way 50 ms, 2 % loss.
        let sc = Scenario {
            bottleneck_bps: 10_000_000,
            access_bps: 10_000_000,
            delay: Duration::from_millis(48),
            loss: LossSpec::bernoulli(0.02),
            app: App::Rate { bps: 1_000_000 },
            ..Scenario::default()
        };
        let runs = [
            json!({"one_way_delay_ms": 50.0, "delay_p99_ms": 70.0, "delay_p999_ms": 160.0, "redundancy_rate": 0.04}),
            json!({"one_way_delay_ms": 50.0, "delay_p99_ms": 80.0, "delay_p999_ms": 140.0, "redundancy_rate": 0.07}),
        ];
        let p = Point {
            figure: "f",
            x: "2%",
            scenario: &sc,
            runs: runs.iter().collect(),
        };
        let r = row(&p);
        assert!((r.p99_target - (50.0 + 25.0 + 3.6)).abs() < 1e-9);
        assert_eq!(r.p999_target, 150.0);
        assert!((r.redundancy_target - 0.06).abs() < 1e-12);
        // p99 75 ≤ 78.6; p99.9 150 ≤ 150; repair 0.055 ≤ 0.06.
        assert_eq!(r.met(), [true, true, true]);
        // An exchange's floor is the round trip; a short path's budget is 10 ms.
        let rr = Scenario {
            delay: Duration::from_millis(3),
            app: App::RequestResponse {
                request: 100,
                response: 100,
            },
            ..sc.clone()
        };
        let r = row(&Point {
            scenario: &rr,
            runs: vec![
                &json!({"one_way_delay_ms": 5.0, "delay_p99_ms": 19.0, "delay_p999_ms": 21.0, "redundancy_rate": 0.5}),
            ],
            ..p
        });
        assert!((r.p99_target - (10.0 + 10.0 + 3.6)).abs() < 1e-9);
        assert_eq!(r.p999_target, 20.0);
        assert_eq!(r.met(), [true, false, false]);
        let (md, csv) = section("auto", &[r]);
        assert!(md.contains("p99.9 ≤ one-way + RTT: 0 (0 %)"), "{md}");
        assert_eq!(csv.lines().count(), 2);
    }
}
