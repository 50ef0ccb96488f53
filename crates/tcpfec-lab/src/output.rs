//! Writes results as a terminal table, JSON lines, or CSV files.

use crate::runner::Outcome;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::path::Path;

fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, |x| json!(x))
}

/// One JSON object per run: its parameters, seed and metrics.
pub fn run_json(o: &Outcome) -> Value {
    let mut m = Map::new();
    for (k, v) in &o.run.params {
        m.insert(k.replace('-', "_"), json!(v));
    }
    let r = &o.result;
    m.insert("seed".into(), json!(o.run.scenario.seed));
    m.insert("goodput_mbps".into(), json!(r.goodput_mbps));
    m.insert("throughput_mbps".into(), json!(r.throughput_mbps));
    // The number of flows is a scenario parameter (and a sweep axis); the per-flow
    // goodputs go under a name of their own so that neither overwrites the other.
    m.entry("flows").or_insert_with(|| json!(r.flows.len()));
    m.insert(
        "flow_goodput_mbps".into(),
        json!(r.flows.iter().map(|f| f.goodput_mbps).collect::<Vec<_>>()),
    );
    m.insert("retransmission_rate".into(), json!(r.retransmission_rate));
    m.insert("data_loss_rate".into(), json!(r.data_loss_rate));
    m.insert("redundancy_rate".into(), json!(r.redundancy_rate));
    m.insert(
        "effective_recovery_rate".into(),
        json!(r.effective_recovery_rate),
    );
    m.insert("recovered_packets".into(), json!(r.recovered_packets));
    m.insert("unrecoverable_groups".into(), json!(r.unrecoverable_groups));
    m.insert("fast_recoveries".into(), json!(r.fast_recoveries));
    m.insert("timeouts".into(), json!(r.timeouts));
    m.insert("completion_time_s".into(), opt(r.completion_time_s));
    let resumes: Vec<&str> = r.flows.iter().filter_map(|f| f.resume).collect();
    if !resumes.is_empty() {
        m.insert("resume_outcomes".into(), json!(resumes));
    }
    m.insert("incomplete_flows".into(), json!(r.incomplete_flows));
    m.insert("jain_fairness".into(), json!(r.jain_fairness));
    m.insert(
        "background_goodput_mbps".into(),
        json!(r.background_goodput_mbps),
    );
    m.insert("jitter_mean_ms".into(), json!(r.jitter_mean_ms));
    m.insert("jitter_std_ms".into(), json!(r.jitter_std_ms));
    for (name, v) in delay_columns(r.delay.as_ref()) {
        m.insert(name.into(), opt(v));
    }
    m.insert("one_way_delay_ms".into(), json!(r.one_way_delay_ms));
    m.insert("data_packets".into(), json!(r.data_packets));
    m.insert("packets_total".into(), json!(r.packets_total));
    m.insert("events".into(), json!(r.events));
    m.insert("wall_s".into(), json!(o.wall_s));
    insert_derived(&o.run.scenario, &mut m);
    Value::Object(m)
}

/// The metrics derived from a run's others and its settings, which `results.csv` has no
/// column for: inserted into the record `m` by [`run_json`], and again by [`read_csv`]
/// so that `--report-only` can draw figures of them.
fn insert_derived(scenario: &tcpfec_sim::Scenario, m: &mut Map<String, Value>) {
    let metric = |name: &str| m.get(name).and_then(Value::as_f64);
    let (completion, goodput) = (metric("completion_time_s"), metric("goodput_mbps"));
    let background = metric("background_goodput_mbps");
    if let Some(x) = transfer_mbps(scenario, completion) {
        m.insert("transfer_mbps".into(), json!(x));
    }
    if let Some(x) = goodput.and_then(|g| target_share(scenario, g)) {
        m.insert("target_share".into(), json!(x));
    }
    if let (Some(g), Some(b)) = (goodput, background) {
        m.insert("total_goodput_mbps".into(), json!(g + b));
    }
}

/// The delivery-delay percentiles under their column names (`None` where nothing was
/// delivered).
fn delay_columns(
    d: Option<&tcpfec_sim::metrics::DelaySummary>,
) -> [(&'static str, Option<f64>); 5] {
    [
        ("delay_p50_ms", d.map(|d| d.p50_ms)),
        ("delay_p90_ms", d.map(|d| d.p90_ms)),
        ("delay_p99_ms", d.map(|d| d.p99_ms)),
        ("delay_p999_ms", d.map(|d| d.p999_ms)),
        ("delay_max_ms", d.map(|d| d.max_ms)),
    ]
}

/// Average application throughput of a finished transfer, Mb/s (Botos' rho_av).
fn transfer_mbps(scenario: &tcpfec_sim::Scenario, completion_s: Option<f64>) -> Option<f64> {
    match (scenario.app, completion_s) {
        (tcpfec_sim::App::Transfer { bytes }, Some(t)) => Some(bytes as f64 * 8.0 / t / 1e6),
        _ => None,
    }
}

/// Goodput as a share of the target rate (or of what the application offered).
fn target_share(scenario: &tcpfec_sim::Scenario, goodput_mbps: f64) -> Option<f64> {
    scenario
        .target_rate_bps()
        .map(|bps| goodput_mbps * 1e6 / bps as f64)
}

/// Column names of `results.csv`, in order: every setting any run has (a figure may set
/// one the others leave out, such as `max-window`), then the metrics.
fn csv_columns<'a>(runs: impl Iterator<Item = &'a crate::sweep::Run>) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for run in runs {
        for (k, _) in &run.params {
            let col = k.replace('-', "_");
            if !cols.contains(&col) {
                cols.push(col);
            }
        }
    }
    for c in [
        "seed",
        "goodput_mbps",
        "throughput_mbps",
        "retransmission_rate",
        "data_loss_rate",
        "redundancy_rate",
        "effective_recovery_rate",
        "recovered_packets",
        "unrecoverable_groups",
        "fast_recoveries",
        "timeouts",
        "completion_time_s",
        "incomplete_flows",
        "jain_fairness",
        "background_goodput_mbps",
        "jitter_mean_ms",
        "jitter_std_ms",
        "delay_p50_ms",
        "delay_p90_ms",
        "delay_p99_ms",
        "delay_p999_ms",
        "delay_max_ms",
        "one_way_delay_ms",
        "data_packets",
        "packets_total",
        "events",
        "wall_s",
    ] {
        cols.push(c.to_string());
    }
    cols
}

/// `s` as one CSV cell: quoted (inner quotes doubled) if it holds a comma or a quote, as
/// a Gilbert-Elliott setting does.
pub fn csv_text(s: &str) -> String {
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => csv_text(s),
        // A list (or anything else with a comma) is one quoted cell.
        other => csv_cell(&Value::String(other.to_string())),
    }
}

/// Splits one line of `results.csv` into cells (a quoted cell may hold commas and `""`).
pub(crate) fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let cell = cells.last_mut().expect("never empty");
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            _ => cell.push(c),
        }
    }
    cells
}

/// Reads back the `results.csv` that [`write_csv`] wrote for `runs`: one record per run,
/// as [`run_json`] made it (settings as strings, metrics as numbers; a list stays a
/// string). Refuses a file whose rows are not exactly these runs in this order, naming
/// the first row that differs. Files written before every setting had a column lack the
/// settings the first run did not have: those rows are matched on the settings they
/// show, and the record takes the missing ones from the run.
pub fn read_csv(path: &Path, runs: &[crate::sweep::Run]) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = csv_cells(lines.next().unwrap_or_default());
    let rows: Vec<Vec<String>> = lines.map(csv_cells).collect();
    if rows.len() != runs.len() {
        return Err(format!(
            "{}: {} rows, but the experiment has {} runs",
            path.display(),
            rows.len(),
            runs.len()
        ));
    }
    let mut records = Vec::with_capacity(rows.len());
    for (i, (row, run)) in rows.iter().zip(runs).enumerate() {
        if row.len() != header.len() {
            return Err(format!(
                "{}: row {} has {} cells for {} columns",
                path.display(),
                i + 1,
                row.len(),
                header.len()
            ));
        }
        let settings: Vec<(String, &str)> = run
            .params
            .iter()
            .map(|(k, v)| (k.replace('-', "_"), v.as_str()))
            .collect();
        let seed = run.scenario.seed.to_string();
        let mut m = Map::new();
        // The columns before `seed` are settings: each must read as this run has it (empty
        // where the run has none), and so must the seed.
        let mut in_settings = true;
        for (col, cell) in header.iter().zip(row) {
            in_settings &= col != "seed";
            let want = if col == "seed" {
                Some(seed.as_str())
            } else if in_settings {
                Some(settings.iter().find(|(k, _)| k == col).map_or("", |s| s.1))
            } else {
                None
            };
            if let Some(want) = want.filter(|w| w != cell) {
                return Err(format!(
                    "{}: row {} has {col} = {cell:?} where this experiment's run {} has {}",
                    path.display(),
                    i + 1,
                    i + 1,
                    if want.is_empty() {
                        "none".into()
                    } else {
                        format!("{want:?}")
                    }
                ));
            }
            // Whole numbers stay integers, so a rewritten file reads "1", not "1.0".
            let v = match (cell.parse::<u64>(), cell.parse::<f64>()) {
                _ if cell.is_empty() => Value::Null,
                _ if in_settings => json!(cell),
                (Ok(n), _) => json!(n),
                (_, Ok(x)) => json!(x),
                _ => json!(cell),
            };
            m.insert(col.clone(), v);
        }
        for (k, v) in settings {
            m.entry(k).or_insert_with(|| json!(v));
        }
        insert_derived(&run.scenario, &mut m);
        records.push(Value::Object(m));
    }
    Ok(records)
}

/// Writes `results.csv` into `dir`: one row per run, from its record ([`run_json`]).
pub fn write_results_csv<'a>(
    dir: &Path,
    runs: impl Iterator<Item = &'a crate::sweep::Run>,
    records: &[Value],
) -> std::io::Result<()> {
    let cols = csv_columns(runs);
    let mut s = cols.join(",") + "\n";
    for j in records {
        let row: Vec<String> = cols.iter().map(|c| csv_cell(&j[c])).collect();
        s += &(row.join(",") + "\n");
    }
    std::fs::write(dir.join("results.csv"), s)
}

/// Writes `results.csv` (one row per run) and `flows.csv` (one row per flow) into `dir`.
pub fn write_csv(dir: &Path, outcomes: &[Outcome]) -> std::io::Result<()> {
    let ids: Vec<usize> = (0..outcomes.len()).collect();
    write_csv_numbered(dir, outcomes, &ids)
}

/// [`write_csv`] for runs numbered `ids` in their experiment (a shard's runs keep their
/// experiment-wide numbers in `flows.csv`, so merged shards read as one run).
pub fn write_csv_numbered(dir: &Path, outcomes: &[Outcome], ids: &[usize]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if outcomes.is_empty() {
        return Ok(());
    }
    let records: Vec<Value> = outcomes.iter().map(run_json).collect();
    write_results_csv(dir, outcomes.iter().map(|o| &o.run), &records)?;
    let mut f = String::from(FLOWS_HEADER);
    for (&i, o) in ids.iter().zip(outcomes) {
        for (k, fl) in o.result.flows.iter().enumerate() {
            let delays: Vec<String> = delay_columns(fl.delay.as_ref())
                .iter()
                .map(|(_, v)| v.map_or(String::new(), |x| x.to_string()))
                .collect();
            let _ = writeln!(
                f,
                "{i},{},{k},{},{},{},{},{},{},{},{},{},{}",
                o.run.scenario.seed,
                fl.goodput_mbps,
                fl.throughput_mbps,
                fl.retransmission_rate,
                fl.data_loss_rate,
                fl.fast_recoveries,
                fl.timeouts,
                fl.completion_time_s
                    .map_or(String::new(), |x| x.to_string()),
                fl.mean_rtt_ms.map_or(String::new(), |x| x.to_string()),
                delays.join(","),
                fl.one_way_delay_ms,
            );
        }
    }
    std::fs::write(dir.join("flows.csv"), f)
}

/// Header of `flows.csv`.
pub const FLOWS_HEADER: &str = "run,seed,flow,goodput_mbps,throughput_mbps,retransmission_rate,data_loss_rate,fast_recoveries,timeouts,completion_time_s,mean_rtt_ms,delay_p50_ms,delay_p90_ms,delay_p99_ms,delay_p999_ms,delay_max_ms,one_way_delay_ms\n";

/// A fixed-width table for the terminal: the swept parameters, then the main metrics.
pub fn table(outcomes: &[Outcome], swept: &[String]) -> String {
    let mut s = String::new();
    let mut header: Vec<String> = swept.to_vec();
    if !header.iter().any(|h| h == "scheme") {
        header.insert(0, "scheme".into());
    }
    for h in &header {
        let _ = write!(s, "{h:>12} ");
    }
    let _ = writeln!(
        s,
        "{:>5} {:>10} {:>8} {:>8} {:>6} {:>6} {:>7} {:>8} {:>10}",
        "seed", "goodput", "rexmit", "loss", "FR", "RTO", "redund", "recovrd", "complete"
    );
    for o in outcomes {
        for h in &header {
            let v = o
                .run
                .params
                .iter()
                .find(|(k, _)| k == h)
                .map_or("", |(_, v)| v.as_str());
            let _ = write!(s, "{v:>12} ");
        }
        let r = &o.result;
        let _ = writeln!(
            s,
            "{:>5} {:>5.2} Mb/s {:>7.3}% {:>7.3}% {:>6} {:>6} {:>6.2}% {:>8} {:>10}",
            o.run.scenario.seed,
            r.goodput_mbps,
            r.retransmission_rate * 100.0,
            r.data_loss_rate * 100.0,
            r.fast_recoveries,
            r.timeouts,
            r.redundancy_rate * 100.0,
            r.recovered_packets,
            r.completion_time_s
                .map_or("-".into(), |c| format!("{c:.3} s")),
        );
    }
    s
}

/// Label of a run for traces and legends: its swept values, or its index.
fn run_label(o: &Outcome, index: usize, swept: &[String]) -> String {
    let parts: Vec<String> = o
        .run
        .params
        .iter()
        .filter(|(k, _)| swept.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if parts.is_empty() {
        format!("run {index}")
    } else {
        format!("{} seed={}", parts.join(" "), o.run.scenario.seed)
    }
}

/// Writes `cwnd-<run>.csv` (time, flow, cwnd, FEC group size, delivery rate) and
/// `delay-<run>.csv` (each flow's delivery-delay distribution in the measurement window,
/// as a CDF) for every run, and a figure of flow 0 of each run when there are few enough
/// runs to tell apart.
pub fn write_traces(dir: &Path, outcomes: &[Outcome]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let swept: Vec<String> = crate::sweep::AXES
        .iter()
        .map(|(a, _)| a.to_string())
        .filter(|a| {
            let first = outcomes
                .first()
                .and_then(|o| o.run.params.iter().find(|(k, _)| k == a));
            outcomes
                .iter()
                .any(|o| o.run.params.iter().find(|(k, _)| k == a) != first)
        })
        .collect();
    let mut series = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        let mut s = String::from(
            "time_s,flow,cwnd_segments,fec_group_size,delivery_rate_mbps,\
             auto_loss_rate,auto_mean_burst,auto_k,auto_m\n",
        );
        for (flow, pts) in o.result.cwnd_series.iter().enumerate() {
            fn at<T: Copy + Default>(series: &[Vec<(f64, T)>], flow: usize, k: usize) -> T {
                series
                    .get(flow)
                    .and_then(|v| v.get(k))
                    .map_or_else(T::default, |x| x.1)
            }
            for (k, (t, w)) in pts.iter().enumerate() {
                let g = at(&o.result.group_size_series, flow, k);
                let r = at(&o.result.delivery_rate_series, flow, k);
                let [p, burst, code_k, code_m] = at(&o.result.auto_series, flow, k);
                let _ = writeln!(
                    s,
                    "{t:.3},{flow},{w:.3},{g},{r:.3},{p:.6},{burst:.3},{code_k},{code_m}"
                );
            }
        }
        std::fs::write(dir.join(format!("cwnd-{i}.csv")), s).map_err(|e| e.to_string())?;
        let mut cdf = String::from("flow,delay_ms,share_at_or_below\n");
        for (flow, pts) in o.result.delay_cdf.iter().enumerate() {
            for (ms, share) in pts {
                let _ = writeln!(cdf, "{flow},{ms},{share:.6}");
            }
        }
        std::fs::write(dir.join(format!("delay-{i}.csv")), cdf).map_err(|e| e.to_string())?;
        if let Some(first) = o.result.cwnd_series.first() {
            series.push((run_label(o, i, &swept), first.clone()));
        }
    }
    if !series.is_empty() && series.len() <= 6 {
        crate::plot::cwnd_svg(
            &dir.join("cwnd.svg"),
            "congestion window of flow 0",
            &series,
        )?;
    }
    Ok(())
}
