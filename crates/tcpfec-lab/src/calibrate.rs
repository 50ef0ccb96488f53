//! `tcpfec calibrate tfec`: the simulator sweep that builds TCP-TFEC's redundancy table
//! (Teshima §5.1, Fig. 6). For each loss rate it runs Reed-Solomon blocks of K = 100 with
//! a fixed repair count k and keeps the k with the highest goodput; the table ships as
//! `crates/tcpfec-proto/data/tfec-redundancy.csv` and `tfec` reads it at build time.

use crate::plot::{line_chart, Axes as ChartAxes};
use crate::sweep::Axes;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Loss rates of the table, percent (the paper's 0.1-20 %).
const LOSSES: &[&str] = &[
    "0.1", "0.5", "1", "2", "3", "5", "7", "10", "12", "15", "20",
];
/// Repair counts tried per block of 100.
const REPAIRS: &[u32] = &[
    1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 18, 20, 25, 30, 35, 40, 50, 60,
];

/// What `calibrate tfec` was asked.
pub struct Options {
    /// Where the table goes.
    pub table: PathBuf,
    /// Where the sweep's CSV and figure go.
    pub out: PathBuf,
    /// Fewer seeds and seconds.
    pub quick: bool,
    /// Show a progress bar.
    pub progress: bool,
}

/// The Teshima WLAN path without background flows: a 24 Mb/s lossy access-point link
/// (802.11g's usable rate; no CSMA/CA model), 500-packet AP queue, 1 KB segments, and a
/// 100-packet receiver window (about three times the path's bandwidth-delay product).
/// Without a receiver window, FEC that hides queue overflow from congestion control lets
/// cwnd grow until the 500-packet queue adds 170 ms and megabytes wait behind one hole.
pub const TESHIMA_PATH: &[(&str, &str)] = &[
    ("topology", "path"),
    ("bottleneck", "24mbit"),
    ("access-rate", "100mbit"),
    ("delay", "1ms"),
    ("access-delay", "5ms"),
    ("buffer", "500"),
    ("packet-size", "1040"),
    ("max-window", "100"),
];

/// Runs the sweep and writes the table, the raw CSV and the figure.
pub fn tfec(opts: &Options) -> Result<(), String> {
    let (seeds, duration, window) = if opts.quick {
        (1, "30s", "10s..30s")
    } else {
        (3, "120s", "20s..120s")
    };
    let mut axes = Axes::default();
    for (k, v) in TESHIMA_PATH {
        axes.set(k, v)?;
    }
    axes.set("duration", duration)?;
    axes.set("window", window)?;
    let loss_list: Vec<String> = LOSSES.iter().map(|l| format!("{l}%")).collect();
    axes.set("loss", &loss_list.join(","))?;
    let schemes: Vec<String> = REPAIRS
        .iter()
        .map(|k| format!("anker-100-{k}-newreno"))
        .collect();
    axes.set("scheme", &schemes.join(","))?;
    let runs = axes.expand(1, seeds, &crate::sweep::Limits::default())?;
    eprintln!(
        "calibrate tfec: {} runs ({} loss rates x {} repair counts x {seeds} seeds)",
        runs.len(),
        LOSSES.len(),
        REPAIRS.len()
    );
    let outcomes = crate::runner::run_all(runs, opts.progress);
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    crate::output::write_csv(&opts.out, &outcomes)
        .map_err(|e| format!("{}: {e}", opts.out.display()))?;
    let mut table = String::from(
        "loss_percent,repairs\n# repairs per 100 data packets with the highest goodput: `tcpfec calibrate tfec`\n",
    );
    let mut best_points = Vec::new();
    for (li, loss) in loss_list.iter().enumerate() {
        let mut best: Option<(u32, f64)> = None;
        for k in REPAIRS {
            let scheme = format!("anker-100-{k}-newreno");
            let vals: Vec<f64> = outcomes
                .iter()
                .filter(|o| {
                    o.run.params.iter().any(|(a, v)| a == "loss" && v == loss)
                        && o.run
                            .params
                            .iter()
                            .any(|(a, v)| a == "scheme" && *v == scheme)
                })
                .map(|o| o.result.goodput_mbps)
                .collect();
            let mean = vals.iter().sum::<f64>() / vals.len().max(1) as f64;
            // Ties go to the smaller redundancy (k grows along the list).
            if best.is_none_or(|b| mean > b.1) {
                best = Some((*k, mean));
            }
        }
        let (k, g) = best.expect("at least one repair count");
        let _ = writeln!(table, "{},{k}", LOSSES[li]);
        eprintln!("loss {loss}: best k = {k} ({g:.2} Mb/s)");
        best_points.push((
            LOSSES[li].parse::<f64>().unwrap_or(f64::NAN),
            1.0 + k as f64 / 100.0,
        ));
    }
    std::fs::write(&opts.table, &table).map_err(|e| format!("{}: {e}", opts.table.display()))?;
    line_chart(
        &opts.out.join("fig6.svg"),
        "Fig. 6: redundancy with the highest throughput (K = 100)",
        &ChartAxes {
            x_desc: "Packet loss rate [%]",
            y_desc: "Redundancy (K + k)/K",
            x_log: true,
            y_log: false,
        },
        &[("best redundancy".to_string(), best_points)],
    )?;
    println!(
        "wrote {} and {}/ (results.csv, fig6.svg)",
        opts.table.display(),
        opts.out.display()
    );
    Ok(())
}
