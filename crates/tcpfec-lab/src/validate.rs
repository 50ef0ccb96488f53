//! `tcpfec validate`: runs the validation scenarios in tcpfec, ns-2 and ns-3 and writes a
//! report (tables and figures) comparing them. `validation/run.sh` installs the reference
//! simulators and calls this.

use crate::plot::{line_chart, Axes};
use core::time::Duration;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use tcpfec_proto::Scheme;
use tcpfec_sim::metrics::mean_sd;
use tcpfec_sim::{LossSpec, Scenario, Start, Topology};

/// Where the reference simulators are and what to run (the `validate` command's flags).
#[derive(Debug, Clone)]
pub struct Options {
    /// The ns-2 binary.
    pub ns2: Option<PathBuf>,
    /// The compiled validation/ns3/scenario.cc.
    pub ns3: Option<PathBuf>,
    /// Directory holding path.tcl and dumbbell.tcl.
    pub tcl_dir: PathBuf,
    /// Which comparison.
    pub set: Set,
    /// Seeds per point.
    pub seeds: u64,
    /// A few points only.
    pub quick: bool,
    /// Directory for validation.csv and the figures (default by [`Set`]).
    pub out: Option<PathBuf>,
    /// The markdown report to write (default by [`Set`]).
    pub report: Option<PathBuf>,
    /// Re-render the report and figures from an earlier run's validation.csv.
    pub from_csv: Option<PathBuf>,
}

/// A family of comparisons, with its own points, pairings and report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// Reno, NewReno, SACK and CUBIC against ns-2.35 and ns-3.37.
    Baselines,
    /// `bbr1` and `bbr` against ns-3.37's `TcpBbr` (BBR v1).
    Bbr,
}

impl Options {
    fn out(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| match self.set {
            Set::Baselines => "docs/results/validation".into(),
            Set::Bbr => "docs/results/validation-bbr".into(),
        })
    }

    fn report(&self) -> PathBuf {
        self.report.clone().unwrap_or_else(|| match self.set {
            Set::Baselines => "docs/results/validation.md".into(),
            Set::Bbr => "docs/results/validation-bbr.md".into(),
        })
    }

    fn pairs(&self) -> (&'static [Pairing], &'static [Pairing]) {
        match self.set {
            Set::Baselines => (PATH_PAIRS, DUMBBELL_PAIRS),
            Set::Bbr => (BBR_PAIRS, BBR_PAIRS),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Point {
    /// Sato ch. 4 path: bottleneck delay, loss fraction, delayed ACKs.
    Path {
        delay_ms: u32,
        loss: f64,
        delack: bool,
    },
    /// Sato ch. 5 dumbbell: flows and bottleneck delay.
    Dumbbell { flows: u32, delay_ms: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Sim {
    Tcpfec,
    Ns2,
    Ns3,
}

impl Sim {
    fn name(self) -> &'static str {
        match self {
            Sim::Tcpfec => "tcpfec",
            Sim::Ns2 => "ns-2",
            Sim::Ns3 => "ns-3",
        }
    }
}

/// One comparison: a reference simulator's variant against a tcpfec scheme.
struct Pairing {
    reference: Sim,
    ref_variant: &'static str,
    scheme: &'static str,
    label: &'static str,
}

const PATH_PAIRS: &[Pairing] = &[
    Pairing {
        reference: Sim::Ns2,
        ref_variant: "sack1",
        scheme: "sack",
        label: "ns-2 Agent/TCP/Sack1 vs tcpfec sack",
    },
    Pairing {
        reference: Sim::Ns2,
        ref_variant: "newreno",
        scheme: "newreno",
        label: "ns-2 Agent/TCP/Newreno vs tcpfec newreno",
    },
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "newreno-sack",
        scheme: "sack",
        label: "ns-3 TcpNewReno+SACK vs tcpfec sack",
    },
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "cubic",
        scheme: "cubic",
        label: "ns-3 TcpCubic vs tcpfec cubic",
    },
];

const DUMBBELL_PAIRS: &[Pairing] = &[
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "newreno-sack",
        scheme: "sack",
        label: "ns-3 TcpNewReno+SACK vs tcpfec sack",
    },
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "newreno",
        scheme: "newreno",
        label: "ns-3 TcpNewReno (no SACK) vs tcpfec newreno",
    },
    Pairing {
        reference: Sim::Ns2,
        ref_variant: "newreno",
        scheme: "newreno",
        label: "ns-2 Agent/TCP/Newreno vs tcpfec newreno",
    },
];

/// ns-3.37's `TcpBbr` is version 1: `bbr1` is the like-for-like comparison; `bbr`
/// (version 3) is shown against the same runs to say how far v3 departs from v1.
const BBR_PAIRS: &[Pairing] = &[
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "bbr",
        scheme: "bbr1",
        label: "ns-3 TcpBbr vs tcpfec bbr1",
    },
    Pairing {
        reference: Sim::Ns3,
        ref_variant: "bbr",
        scheme: "bbr",
        label: "ns-3 TcpBbr (v1) vs tcpfec bbr (v3)",
    },
];

#[derive(Debug, Clone)]
struct Job {
    point: Point,
    sim: Sim,
    variant: &'static str,
    seed: u64,
}

#[derive(Debug, Clone, Default)]
struct Measure {
    /// Goodput over the steady window (20–220 s path, 20–60 s dumbbell).
    goodput: f64,
    /// Goodput over 0–20 s (dumbbell).
    early: Option<f64>,
    flows: Vec<f64>,
    fast_recoveries: Option<f64>,
    timeouts: Option<f64>,
    /// Jain's index when the per-flow values are not at hand (read back from CSV).
    jain: Option<f64>,
}

impl Measure {
    fn jain(&self) -> f64 {
        self.jain
            .unwrap_or_else(|| tcpfec_sim::metrics::jain(&self.flows))
    }
}

fn points(set: Set, quick: bool) -> (Vec<Point>, Vec<Point>) {
    match set {
        Set::Baselines => baseline_points(quick),
        Set::Bbr => bbr_points(quick),
    }
}

/// The BBR set: the baselines' delay sweep at 0.05 % and a loss sweep at D = 200 ms that
/// reaches 5 %, without delayed ACKs (BBR's model does not depend on them), and the
/// dumbbells.
fn bbr_points(quick: bool) -> (Vec<Point>, Vec<Point>) {
    let delays: &[u32] = if quick {
        &[200]
    } else {
        &[10, 50, 100, 200, 300]
    };
    let losses: &[f64] = if quick {
        &[0.01]
    } else {
        &[0.00001, 0.0001, 0.001, 0.005, 0.01, 0.05]
    };
    let path = |delay_ms, loss| Point::Path {
        delay_ms,
        loss,
        delack: false,
    };
    let mut out: Vec<Point> = delays.iter().map(|&d| path(d, 0.0005)).collect();
    out.extend(losses.iter().map(|&p| path(200, p)));
    let (_, dumbbell) = baseline_points(quick);
    (out, dumbbell)
}

fn baseline_points(quick: bool) -> (Vec<Point>, Vec<Point>) {
    let delays: &[u32] = if quick {
        &[10, 200]
    } else {
        &[10, 50, 100, 200, 300]
    };
    let losses: &[f64] = if quick {
        &[0.0001, 0.005]
    } else {
        &[0.00001, 0.0001, 0.0005, 0.001, 0.005, 0.01]
    };
    let mut path = Vec::new();
    for delack in [false, true] {
        for &d in delays {
            path.push(Point::Path {
                delay_ms: d,
                loss: 0.0005,
                delack,
            });
        }
        for &p in losses {
            if p != 0.0005 {
                path.push(Point::Path {
                    delay_ms: 200,
                    loss: p,
                    delack,
                });
            }
        }
    }
    let mut dumbbell = Vec::new();
    for flows in if quick { vec![8] } else { vec![8, 16] } {
        for d in if quick { vec![100] } else { vec![50, 100, 200] } {
            dumbbell.push(Point::Dumbbell { flows, delay_ms: d });
        }
    }
    (path, dumbbell)
}

fn path_scenario(delay_ms: u32, loss: f64, delack: bool, scheme: &str, seed: u64) -> Scenario {
    Scenario {
        scheme: Scheme::parse(scheme).expect("built-in"),
        delay: Duration::from_millis(delay_ms as u64),
        loss: LossSpec::bernoulli(loss),
        delayed_ack: delack,
        seed,
        ..Scenario::default()
    }
}

fn dumbbell_scenario(
    flows: u32,
    delay_ms: u32,
    scheme: &str,
    seed: u64,
    window: (u64, u64),
) -> Scenario {
    Scenario {
        topology: Topology::Dumbbell,
        flows,
        bottleneck_bps: 50_000_000,
        access_bps: 100_000_000,
        delay: Duration::from_millis(delay_ms as u64),
        access_delay: (Duration::from_millis(1), Duration::from_millis(5)),
        buffer: 300,
        packet_size: 1040,
        loss: LossSpec::None,
        scheme: Scheme::parse(scheme).expect("built-in"),
        duration: Duration::from_secs(60),
        window: (Duration::from_secs(window.0), Duration::from_secs(window.1)),
        start: Start::Uniform {
            from: Duration::ZERO,
            to: Duration::from_secs(1),
        },
        seed,
        ..Scenario::default()
    }
}

fn parse_kv(text: &str) -> BTreeMap<String, String> {
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run_external(cmd: &mut Command) -> Result<BTreeMap<String, String>, String> {
    let what = format!("{cmd:?}");
    let out = crate::bench::stdout_of(cmd, &what)?;
    let text = String::from_utf8_lossy(&out);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("goodput_mbps="))
        .unwrap_or("");
    Ok(parse_kv(line))
}

fn num(kv: &BTreeMap<String, String>, k: &str) -> Option<f64> {
    kv.get(k).and_then(|v| v.parse().ok())
}

fn list(kv: &BTreeMap<String, String>, k: &str) -> Vec<f64> {
    kv.get(k)
        .map(|v| v.split(';').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

fn run_job(job: &Job, opts: &Options) -> Result<Measure, String> {
    match (job.sim, job.point) {
        (
            Sim::Tcpfec,
            Point::Path {
                delay_ms,
                loss,
                delack,
            },
        ) => {
            let r = tcpfec_sim::run(&path_scenario(
                delay_ms,
                loss,
                delack,
                job.variant,
                job.seed,
            ));
            Ok(Measure {
                goodput: r.goodput_mbps,
                early: None,
                flows: r.flows.iter().map(|f| f.goodput_mbps).collect(),
                fast_recoveries: Some(r.fast_recoveries as f64),
                timeouts: Some(r.timeouts as f64),
                jain: None,
            })
        }
        (Sim::Tcpfec, Point::Dumbbell { flows, delay_ms }) => {
            let late = tcpfec_sim::run(&dumbbell_scenario(
                flows,
                delay_ms,
                job.variant,
                job.seed,
                (20, 60),
            ));
            let early = tcpfec_sim::run(&dumbbell_scenario(
                flows,
                delay_ms,
                job.variant,
                job.seed,
                (0, 20),
            ));
            Ok(Measure {
                goodput: late.goodput_mbps,
                early: Some(early.goodput_mbps),
                flows: late.flows.iter().map(|f| f.goodput_mbps).collect(),
                fast_recoveries: Some(late.fast_recoveries as f64),
                timeouts: Some(late.timeouts as f64),
                jain: None,
            })
        }
        (Sim::Ns2, point) => {
            let ns = opts.ns2.as_ref().ok_or("ns-2 not available")?;
            let mut cmd = Command::new(ns);
            match point {
                Point::Path {
                    delay_ms,
                    loss,
                    delack,
                } => {
                    let agent = if job.variant == "newreno" {
                        "Newreno"
                    } else {
                        "Sack1"
                    };
                    cmd.arg(opts.tcl_dir.join("path.tcl")).args([
                        delay_ms.to_string(),
                        loss.to_string(),
                        job.seed.to_string(),
                        (delack as u8).to_string(),
                        "50".into(),
                        "220".into(),
                        "20".into(),
                        agent.into(),
                    ]);
                }
                Point::Dumbbell { flows, delay_ms } => {
                    cmd.arg(opts.tcl_dir.join("dumbbell.tcl")).args([
                        flows.to_string(),
                        delay_ms.to_string(),
                        job.seed.to_string(),
                    ]);
                }
            }
            let kv = run_external(&mut cmd)?;
            let cuts = num(&kv, "cwnd_cuts");
            let timeouts = num(&kv, "timeouts");
            Ok(Measure {
                goodput: num(&kv, "goodput_mbps").ok_or("ns-2 printed no goodput")?,
                early: num(&kv, "goodput_early_mbps"),
                flows: list(&kv, "flows"),
                // ns-2 counts window cuts for congestion; those not caused by a timeout are
                // fast recoveries.
                fast_recoveries: cuts.zip(timeouts).map(|(c, t)| (c - t).max(0.0)),
                timeouts,
                jain: None,
            })
        }
        (Sim::Ns3, point) => {
            let bin = opts.ns3.as_ref().ok_or("ns-3 scenario not available")?;
            let mut cmd = Command::new(bin);
            cmd.arg(format!("--variant={}", job.variant))
                .arg(format!("--seed={}", job.seed));
            match point {
                Point::Path {
                    delay_ms,
                    loss,
                    delack,
                } => {
                    cmd.args([
                        format!("--delayMs={delay_ms}"),
                        format!("--loss={loss}"),
                        format!("--delack={}", delack as u8),
                    ]);
                }
                Point::Dumbbell { flows, delay_ms } => {
                    cmd.args([
                        "--topology=dumbbell".to_string(),
                        format!("--flows={flows}"),
                        format!("--delayMs={delay_ms}"),
                        "--loss=0".into(),
                        "--buffer=300".into(),
                        "--segment=1000".into(),
                        "--bottleneck=50Mbps".into(),
                        "--accessMinMs=1".into(),
                        "--accessMaxMs=5".into(),
                        "--duration=60".into(),
                        "--wstart=20".into(),
                        "--startSpread=1".into(),
                    ]);
                }
            }
            let kv = run_external(&mut cmd)?;
            Ok(Measure {
                goodput: num(&kv, "goodput_mbps").ok_or("ns-3 printed no goodput")?,
                early: num(&kv, "goodput_early_mbps"),
                flows: list(&kv, "flows"),
                fast_recoveries: num(&kv, "fast_recoveries"),
                timeouts: num(&kv, "timeouts"),
                jain: None,
            })
        }
    }
}

fn jobs(opts: &Options) -> Vec<Job> {
    let (path, dumbbell) = points(opts.set, opts.quick);
    let (path_pairs, dumbbell_pairs) = opts.pairs();
    let have = |s: Sim| match s {
        Sim::Tcpfec => true,
        Sim::Ns2 => opts.ns2.is_some(),
        Sim::Ns3 => opts.ns3.is_some(),
    };
    let mut out = Vec::new();
    for (pts, pairs) in [(&path, path_pairs), (&dumbbell, dumbbell_pairs)] {
        for &point in pts.iter() {
            for pair in pairs {
                for seed in 1..=opts.seeds {
                    if have(pair.reference) {
                        out.push(Job {
                            point,
                            sim: pair.reference,
                            variant: pair.ref_variant,
                            seed,
                        });
                    }
                    out.push(Job {
                        point,
                        sim: Sim::Tcpfec,
                        variant: pair.scheme,
                        seed,
                    });
                }
            }
        }
    }
    // tcpfec runs appear once per (point, scheme, seed) even if two pairings share them.
    let mut seen = std::collections::HashSet::new();
    out.retain(|j| seen.insert(format!("{:?}{:?}{}{}", j.point, j.sim, j.variant, j.seed)));
    // Longest first (ns-3, low delay) so the parallel tail is short.
    out.sort_by_key(|j| std::cmp::Reverse(j.sim));
    out
}

type Results = Vec<(Job, Measure)>;

fn collect<'a>(res: &'a Results, point: Point, sim: Sim, variant: &str) -> Vec<&'a Measure> {
    res.iter()
        .filter(|(j, _)| j.point == point && j.sim == sim && j.variant == variant)
        .map(|(_, m)| m)
        .collect()
}

fn point_label(p: Point) -> String {
    match p {
        Point::Path {
            delay_ms,
            loss,
            delack,
        } => format!(
            "D={delay_ms} ms, p={}%{}",
            loss * 100.0,
            if delack { ", delack" } else { "" }
        ),
        Point::Dumbbell { flows, delay_ms } => format!("N={flows}, D={delay_ms} ms"),
    }
}

/// RTT of a path point: 2 × (D + 2 × 1 ms access), seconds.
fn path_rtt(delay_ms: u32) -> f64 {
    2.0 * (delay_ms as f64 + 2.0) / 1e3
}

/// Mathis et al., Mb/s of 1460-byte segments.
fn mathis(delay_ms: u32, p: f64, b: f64) -> f64 {
    tcpfec_sim::models::mathis(p, b) * 1460.0 * 8.0 / path_rtt(delay_ms) / 1e6
}

/// PFTK with T0 = max(200 ms, RTT) (the RTO on these stable paths), Mb/s.
fn pftk(delay_ms: u32, p: f64, b: f64) -> f64 {
    let rtt = path_rtt(delay_ms);
    tcpfec_sim::models::pftk(p, rtt, rtt.max(0.2), b) * 1460.0 * 8.0 / 1e6
}

fn table(
    res: &Results,
    points: &[Point],
    pair: &Pairing,
    md: &mut String,
    summary: &mut Vec<String>,
) {
    let _ = writeln!(md, "\n### {}\n", pair.label);
    let _ = writeln!(
        md,
        "| point | {} goodput (Mb/s) | tcpfec goodput (Mb/s) | diff | FR ref / tcpfec | RTO ref / tcpfec |",
        pair.reference.name()
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    let (mut within, mut total) = (0, 0);
    for &p in points {
        let r = collect(res, p, pair.reference, pair.ref_variant);
        let t = collect(res, p, Sim::Tcpfec, pair.scheme);
        if r.is_empty() || t.is_empty() {
            continue;
        }
        let g = |v: &[&Measure]| mean_sd(&v.iter().map(|m| m.goodput).collect::<Vec<_>>());
        let c = |v: &[&Measure], f: fn(&Measure) -> Option<f64>| {
            let x: Vec<f64> = v.iter().filter_map(|m| f(m)).collect();
            if x.is_empty() {
                "–".to_string()
            } else {
                format!("{:.1}", mean_sd(&x).0)
            }
        };
        let ((rm, rs), (tm, ts)) = (g(&r), g(&t));
        let diff = (tm - rm) / rm * 100.0;
        total += 1;
        if diff.abs() <= 10.0 {
            within += 1;
        }
        let _ = writeln!(
            md,
            "| {} | {rm:.3} ± {rs:.3} | {tm:.3} ± {ts:.3} | {diff:+.1}% {} | {} / {} | {} / {} |",
            point_label(p),
            if diff.abs() <= 10.0 { "✓" } else { "✗" },
            c(&r, |m| m.fast_recoveries),
            c(&t, |m| m.fast_recoveries),
            c(&r, |m| m.timeouts),
            c(&t, |m| m.timeouts),
        );
    }
    summary.push(format!(
        "- {}: {within} of {total} points within 10 %",
        pair.label
    ));
}

fn dumbbell_table(res: &Results, points: &[Point], pair: &Pairing, md: &mut String) {
    let _ = writeln!(md, "\n### {} — windows and fairness\n", pair.label);
    let _ = writeln!(
        md,
        "| point | sim | 0–20 s | 20–60 s | 0–60 s | Jain 20–60 s |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for &p in points {
        for (sim, variant) in [
            (pair.reference, pair.ref_variant),
            (Sim::Tcpfec, pair.scheme),
        ] {
            let v = collect(res, p, sim, variant);
            if v.is_empty() {
                continue;
            }
            let early = mean_sd(&v.iter().filter_map(|m| m.early).collect::<Vec<_>>()).0;
            let late = mean_sd(&v.iter().map(|m| m.goodput).collect::<Vec<_>>()).0;
            let jain = mean_sd(
                &v.iter()
                    .map(|m| tcpfec_sim::metrics::jain(&m.flows))
                    .collect::<Vec<_>>(),
            )
            .0;
            let _ = writeln!(
                md,
                "| {} | {} {} | {early:.2} | {late:.2} | {:.2} | {jain:.3} |",
                point_label(p),
                sim.name(),
                variant,
                (early * 20.0 + late * 40.0) / 60.0
            );
        }
    }
}

fn figure_path(
    res: &Results,
    points: &[Point],
    by_delay: bool,
    delack: bool,
    set: Set,
    out: &Path,
) -> Result<PathBuf, String> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let selected: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| match *p {
            Point::Path {
                delay_ms,
                loss,
                delack: da,
            } => {
                da == delack
                    && if by_delay {
                        loss == 0.0005
                    } else {
                        delay_ms == 200
                    }
            }
            _ => false,
        })
        .collect();
    let x_of = |p: Point| match p {
        Point::Path { delay_ms, loss, .. } => {
            if by_delay {
                delay_ms as f64
            } else {
                loss * 100.0
            }
        }
        _ => 0.0,
    };
    for (sim, variant, label) in [
        (Sim::Ns2, "sack1", "ns-2 Sack1"),
        (Sim::Ns2, "newreno", "ns-2 Newreno"),
        (Sim::Tcpfec, "newreno", "tcpfec newreno"),
        (Sim::Ns3, "newreno-sack", "ns-3 NewReno+SACK"),
        (Sim::Tcpfec, "sack", "tcpfec sack"),
        (Sim::Ns3, "cubic", "ns-3 CUBIC"),
        (Sim::Tcpfec, "cubic", "tcpfec cubic"),
        (Sim::Ns3, "bbr", "ns-3 TcpBbr"),
        (Sim::Tcpfec, "bbr1", "tcpfec bbr1"),
        (Sim::Tcpfec, "bbr", "tcpfec bbr"),
    ] {
        let mut pts: Vec<(f64, f64)> = selected
            .iter()
            .filter_map(|&p| {
                let v = collect(res, p, sim, variant);
                (!v.is_empty()).then(|| {
                    (
                        x_of(p),
                        mean_sd(&v.iter().map(|m| m.goodput).collect::<Vec<_>>()).0,
                    )
                })
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !pts.is_empty() {
            series.push((label.to_string(), pts));
        }
    }
    let b = if delack { 2.0 } else { 1.0 };
    let model = |f: fn(u32, f64, f64) -> f64| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = selected
            .iter()
            .map(|&p| match p {
                Point::Path { delay_ms, loss, .. } => (x_of(p), f(delay_ms, loss, b).min(97.33)),
                _ => (0.0, 0.0),
            })
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    // The loss-based models describe the window-based baselines only.
    if set == Set::Baselines {
        series.push(("Mathis".into(), model(mathis)));
        series.push(("PFTK".into(), model(pftk)));
    }
    let name = format!(
        "path-{}{}.svg",
        if by_delay { "delay" } else { "loss" },
        if delack { "-delack" } else { "" }
    );
    let file = out.join(&name);
    let axes = Axes {
        x_desc: if by_delay {
            "bottleneck one-way delay D [ms]"
        } else {
            "packet loss rate [%]"
        },
        y_desc: "goodput [Mb/s]",
        x_log: !by_delay,
        y_log: true,
    };
    let title = if by_delay {
        format!(
            "Sato ch. 4 path, p = 0.05 %{}",
            if delack { ", delayed ACKs" } else { "" }
        )
    } else {
        format!(
            "Sato ch. 4 path, D = 200 ms{}",
            if delack { ", delayed ACKs" } else { "" }
        )
    };
    line_chart(&file, &title, &axes, &series)?;
    Ok(PathBuf::from(name))
}

/// Reads the runs of an earlier `validation.csv`.
fn read_csv(path: &Path) -> Result<Results, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let variants: Vec<&'static str> = PATH_PAIRS
        .iter()
        .chain(DUMBBELL_PAIRS)
        .chain(BBR_PAIRS)
        .flat_map(|p| [p.ref_variant, p.scheme])
        .collect();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        let bad = || format!("{}:{}: malformed row", path.display(), n + 1);
        if c.len() != 13 {
            return Err(bad());
        }
        let f = |i: usize| c[i].parse::<f64>().ok();
        let point = match c[0] {
            "path" => Point::Path {
                delay_ms: c[1].parse().map_err(|_| bad())?,
                loss: c[2].parse().map_err(|_| bad())?,
                delack: c[3] == "1",
            },
            "dumbbell" => Point::Dumbbell {
                flows: c[4].parse().map_err(|_| bad())?,
                delay_ms: c[1].parse().map_err(|_| bad())?,
            },
            _ => return Err(bad()),
        };
        let sim = match c[5] {
            "tcpfec" => Sim::Tcpfec,
            "ns-2" => Sim::Ns2,
            "ns-3" => Sim::Ns3,
            _ => return Err(bad()),
        };
        let variant = *variants.iter().find(|v| **v == c[6]).ok_or_else(bad)?;
        let job = Job {
            point,
            sim,
            variant,
            seed: c[7].parse().map_err(|_| bad())?,
        };
        let m = Measure {
            goodput: f(8).ok_or_else(bad)?,
            early: f(9),
            flows: Vec::new(),
            fast_recoveries: f(10),
            timeouts: f(11),
            jain: f(12),
        };
        out.push((job, m));
    }
    Ok(out)
}

/// Runs everything (or reads an earlier run) and writes the CSV file, figures and report.
pub fn run(opts: &Options) -> Result<(), String> {
    let out = opts.out();
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Some(csv) = &opts.from_csv {
        let results = read_csv(csv)?;
        return report(opts, &results);
    }
    let jobs = jobs(opts);
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, eta {eta}",
        )
        .expect("valid template"),
    );
    let results: Vec<Result<(Job, Measure), String>> = jobs
        .into_par_iter()
        .map(|job| {
            let m = run_job(&job, opts);
            bar.inc(1);
            m.map(|m| (job, m))
        })
        .collect();
    bar.finish_and_clear();
    let results: Results = results.into_iter().collect::<Result<_, _>>()?;
    write_csv(&results, &out)?;
    report(opts, &results)
}

fn report(opts: &Options, results: &Results) -> Result<(), String> {
    let results = results.clone();
    let (path, dumbbell) = points(opts.set, opts.quick);
    let (path_pairs, dumbbell_pairs) = opts.pairs();
    let (out, report_file) = (opts.out(), opts.report());
    let mut md = String::new();
    let mut summary = Vec::new();
    for pair in path_pairs {
        table(&results, &path, pair, &mut md, &mut summary);
    }
    for pair in dumbbell_pairs {
        table(&results, &dumbbell, pair, &mut md, &mut summary);
        dumbbell_table(&results, &dumbbell, pair, &mut md);
    }
    let mut figs = Vec::new();
    let delacks: &[bool] = match opts.set {
        Set::Baselines => &[false, true],
        Set::Bbr => &[false],
    };
    for by_delay in [true, false] {
        for &delack in delacks {
            figs.push(figure_path(
                &results, &path, by_delay, delack, opts.set, &out,
            )?);
        }
    }
    let report = render(opts, &summary, &md, &figs);
    std::fs::write(&report_file, report).map_err(|e| format!("{}: {e}", report_file.display()))?;
    println!("{}", summary.join("\n"));
    println!("wrote {} and {}", report_file.display(), out.display());
    Ok(())
}

fn write_csv(res: &Results, out: &Path) -> Result<(), String> {
    let mut s = String::from("scenario,delay_ms,loss,delack,flows,sim,variant,seed,goodput_mbps,goodput_0_20_mbps,fast_recoveries,timeouts,jain\n");
    for (j, m) in res {
        let (kind, d, p, da, n) = match j.point {
            Point::Path {
                delay_ms,
                loss,
                delack,
            } => ("path", delay_ms, loss, delack as u8, 1),
            Point::Dumbbell { flows, delay_ms } => ("dumbbell", delay_ms, 0.0, 0, flows),
        };
        let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
        let _ = writeln!(
            s,
            "{kind},{d},{p},{da},{n},{},{},{},{},{},{},{},{}",
            j.sim.name(),
            j.variant,
            j.seed,
            m.goodput,
            opt(m.early),
            opt(m.fast_recoveries),
            opt(m.timeouts),
            m.jain()
        );
    }
    std::fs::write(out.join("validation.csv"), s).map_err(|e| e.to_string())
}

fn render(opts: &Options, summary: &[String], tables: &str, figs: &[PathBuf]) -> String {
    let out = opts.out();
    let rel = |f: &PathBuf| {
        let fig_dir = out.strip_prefix("docs").unwrap_or(&out);
        fig_dir.join(f).display().to_string()
    };
    let (title, notes, script) = match opts.set {
        Set::Baselines => (
            "Validation against ns-2 and ns-3",
            include_str!("../../../validation/NOTES.md"),
            "validation/run.sh",
        ),
        Set::Bbr => (
            "Validation of the BBR schemes against ns-3's TcpBbr",
            include_str!("../../../validation/NOTES-bbr.md"),
            "validation/run.sh --bbr",
        ),
    };
    let mut s = String::new();
    let _ = writeln!(s, "# {title}\n");
    let _ = writeln!(
        s,
        "Generated by `{script}{}` ({} seeds per point). Every number below is a mean over seeds; `±` is the standard deviation. Raw runs: `{}/validation.csv`.\n",
        if opts.quick { " --quick" } else { "" },
        opts.seeds,
        out.display()
    );
    let _ = writeln!(s, "## Summary\n\n{}\n", summary.join("\n"));
    let _ = writeln!(s, "{notes}");
    let _ = writeln!(s, "## Figures\n");
    for f in figs {
        let _ = writeln!(s, "![{}]({})\n", f.display(), rel(f));
    }
    let _ = writeln!(s, "## Tables{tables}");
    s
}
