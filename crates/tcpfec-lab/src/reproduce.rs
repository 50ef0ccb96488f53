//! `tcpfec reproduce`: runs an experiment described in `experiments/<id>.toml` (figures as
//! sweeps, claims as checks) and writes CSV files, SVG figures and `report.md`.

use crate::plot::{line_chart, Axes as ChartAxes};
use crate::runner::Outcome;
use crate::shard::Manifest;
use crate::sweep::{Axes, Limits, Run};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tcpfec_sim::metrics::mean_sd;

/// Experiments shipped with tcpfec (the TOML files of `experiments/`).
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "sato-ch3",
        include_str!("../../../experiments/sato-ch3.toml"),
    ),
    (
        "sato-ch4",
        include_str!("../../../experiments/sato-ch4.toml"),
    ),
    (
        "sato-ch5",
        include_str!("../../../experiments/sato-ch5.toml"),
    ),
    ("anker", include_str!("../../../experiments/anker.toml")),
    ("ferlin", include_str!("../../../experiments/ferlin.toml")),
    ("teshima", include_str!("../../../experiments/teshima.toml")),
    ("botos", include_str!("../../../experiments/botos.toml")),
    (
        "adaptive",
        include_str!("../../../experiments/adaptive.toml"),
    ),
    ("latency", include_str!("../../../experiments/latency.toml")),
    (
        "coexistence",
        include_str!("../../../experiments/coexistence.toml"),
    ),
];

#[derive(Debug, Deserialize)]
struct Experiment {
    id: String,
    title: String,
    seeds: u64,
    quick_seeds: u64,
    base: BTreeMap<String, String>,
    #[serde(default)]
    quick_base: BTreeMap<String, String>,
    figure: Vec<Figure>,
    #[serde(default)]
    claim: Vec<Claim>,
    /// Check this scheme's delivery delay against the on-time targets at every point of
    /// the delay figures (`crate::targets`).
    delay_targets: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Figure {
    id: String,
    title: String,
    x: String,
    x_values: Vec<String>,
    quick_x_values: Option<Vec<String>>,
    /// How an x value becomes the setting of `x`: `{}` is the x value and `{series}` the
    /// series value (then the series is part of the x setting, and `series_axis` only
    /// names it).
    x_format: Option<String>,
    x_label: String,
    #[serde(default)]
    x_log: bool,
    #[serde(default = "default_series_axis")]
    series_axis: String,
    series: Vec<String>,
    quick_series: Option<Vec<String>>,
    metric: String,
    y_label: String,
    /// Settings of this figure only, over the experiment's base; the value [`UNSET`]
    /// removes a base setting (e.g. `loss` where the figure sets `ge`).
    #[serde(default)]
    set: BTreeMap<String, String>,
    /// Settings of this figure in `--quick` runs, over `set`.
    #[serde(default)]
    quick_set: BTreeMap<String, String>,
    /// Seeds per point for this figure (overrides the experiment's).
    seeds: Option<u64>,
    /// Plot every series relative to this series value (which is run but not drawn).
    divide_by: Option<String>,
    /// Closed-form curves drawn beside the simulation (see [`model_value`]).
    #[serde(default)]
    models: Vec<String>,
    /// Tabulate this series against the best of the others at every point
    /// (`crate::compare`).
    compare: Option<String>,
    /// A scheme run at the figure's settings without the x or series setting, drawn as
    /// one more series (flat across x): the conventional TCP the figure compares with.
    baseline: Option<String>,
}

impl Figure {
    /// The x values run (the reduced list with `--quick`, if the figure has one).
    fn xs(&self, quick: bool) -> Vec<String> {
        match (&self.quick_x_values, quick) {
            (Some(q), true) => q.clone(),
            _ => self.x_values.clone(),
        }
    }

    /// The series values run (the reduced list with `--quick`, if the figure has one).
    fn series_values(&self, quick: bool) -> Vec<String> {
        match (&self.quick_series, quick) {
            (Some(q), true) => q.clone(),
            _ => self.series.clone(),
        }
    }
}

fn default_series_axis() -> String {
    "scheme".into()
}

#[derive(Debug, Deserialize)]
struct Claim {
    text: String,
    figure: String,
    kind: String,
    a: Option<String>,
    b: Option<String>,
    tolerance: Option<f64>,
    series_value: Option<String>,
    low: Option<f64>,
    high: Option<f64>,
    /// Check only these x values (default: all of the figure's).
    at: Option<Vec<String>>,
    /// The report section the claim is listed under (default: the chapter's claims);
    /// sensitivity checks go under their own.
    section: Option<String>,
    /// The paper's own sentence the claim reads (with where it stands), shown beside it.
    quote: Option<String>,
    /// Why the claim differs, with the evidence (a run of this experiment or another):
    /// printed under the section when the verdict is "differs".
    why: Option<String>,
}

/// A value in a claim's evidence: three decimals from 1 up, three significant digits
/// below (retransmission rates of 0.0005 would all read 0.001 otherwise).
fn num(v: f64) -> String {
    if !v.is_finite() || v == 0.0 || v.abs() >= 1.0 {
        return format!("{v:.3}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(3) as usize;
    format!("{v:.decimals$}")
}

/// The report section of claims that name none.
const MAIN_CLAIMS: &str = "Claims of the chapter";

/// A figure's `set` value that removes the base's setting of that key.
const UNSET: &str = "unset";

/// What `reproduce` was asked.
pub struct Options {
    /// Experiment id (built in) or path to a TOML file.
    pub experiment: String,
    /// Reduced sweep.
    pub quick: bool,
    /// Seeds per point (overrides the file).
    pub seeds: Option<u64>,
    /// Output directory (default `results/<id>`).
    pub out: Option<PathBuf>,
    /// Show a progress bar.
    pub progress: bool,
    /// Simulate nothing: rebuild the figures and the report from the `results.csv` an
    /// earlier run of the same experiment left in the output directory.
    pub report_only: bool,
    /// Run only this shard of the run list, writing its rows and a manifest for
    /// `tcpfec merge` (see [`crate::shard`]).
    pub shard: Option<crate::shard::Shard>,
    /// How large the sweep may be.
    pub limits: Limits,
}

/// Experiment `name` and the hash of its text (shards of an edited file do not mix).
fn load(name: &str) -> Result<(Experiment, String), String> {
    let text = source(name)?;
    let exp = toml::from_str(&text).map_err(|e| format!("experiment '{name}': {}", e.message()))?;
    Ok((exp, crate::shard::text_hash(&text)))
}

/// Parses experiment `text` and plans its runs as `reproduce --quick` would, refusing more
/// than `max_runs`; returns how many runs it has. Reads nothing else and simulates
/// nothing: for checking an experiment file (and for fuzzing the parser).
pub fn plan_text(text: &str, max_runs: u64) -> Result<usize, String> {
    let exp: Experiment = toml::from_str(text).map_err(|e| e.message().to_string())?;
    let opts = Options {
        experiment: String::new(),
        quick: true,
        seeds: None,
        out: None,
        progress: false,
        report_only: false,
        shard: None,
        limits: Limits {
            max_runs,
            i_know: false,
        },
    };
    let mut base = exp.base.clone();
    base.extend(exp.quick_base.clone());
    let (runs, _) = plan(&exp, &opts, exp.quick_seeds, &base)?;
    Ok(runs.len())
}

/// An experiment expanded into its runs: what a whole run, a shard and a merge start from.
struct Planned {
    exp: Experiment,
    /// Hash of the experiment's text.
    hash: String,
    seeds: u64,
    /// The base settings in force (with `--quick`, the quick ones over them).
    base: BTreeMap<String, String>,
    runs: Vec<Run>,
    /// Each figure's points, as indices into `runs`.
    cells: Vec<Vec<Cell>>,
    /// Output directory: `--out`, or `results/<id>`.
    out: PathBuf,
}

/// Loads and plans the experiment `opts` names.
fn prepare(opts: &Options) -> Result<Planned, String> {
    let (exp, hash) = load(&opts.experiment)?;
    let seeds = opts.seeds.unwrap_or(if opts.quick {
        exp.quick_seeds
    } else {
        exp.seeds
    });
    let mut base = exp.base.clone();
    if opts.quick {
        base.extend(exp.quick_base.clone());
    }
    let (runs, cells) = plan(&exp, opts, seeds, &base)?;
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&exp.id));
    Ok(Planned {
        exp,
        hash,
        seeds,
        base,
        runs,
        cells,
        out,
    })
}

/// Flow 0's samples of one run, as the time-series figures draw them.
#[derive(Debug, Clone, Default, PartialEq)]
struct Samples {
    delivered: Vec<(f64, f64)>,
    cwnd: Vec<(f64, f64)>,
    redundancy: Vec<(f64, f64)>,
}

/// File in which a run (or a shard) keeps the samples of its time-series runs, from which
/// `--report-only` and a merge redraw those figures.
const SAMPLES_FILE: &str = "samples.csv";

impl Samples {
    fn of(r: &tcpfec_sim::RunResult) -> Samples {
        let first = |s: &[Vec<(f64, f64)>]| s.first().cloned().unwrap_or_default();
        Samples {
            delivered: first(&r.delivered_series),
            cwnd: first(&r.cwnd_series),
            redundancy: first(&r.redundancy_series),
        }
    }

    /// The samples of every run of `outcomes`, by run.
    fn of_all(outcomes: &[Outcome]) -> Vec<Samples> {
        outcomes.iter().map(|o| Samples::of(&o.result)).collect()
    }

    /// Writes `dir/samples.csv` (run, series, time, value) from `rows`: (run number in
    /// the experiment, its run, its samples), of which the sampled runs are kept. Values
    /// are written in Rust's shortest round-trip form, so they read back the same.
    fn write<'a>(
        dir: &Path,
        rows: impl Iterator<Item = (usize, &'a Run, &'a Samples)>,
    ) -> Result<(), String> {
        let mut csv = String::from("run,series,time_s,value\n");
        for (i, run, s) in rows {
            if run.scenario.cwnd_sample.is_none() {
                continue;
            }
            for (name, pts) in [
                ("delivered", &s.delivered),
                ("cwnd", &s.cwnd),
                ("redundancy", &s.redundancy),
            ] {
                for (t, v) in pts {
                    let _ = writeln!(csv, "{i},{name},{t},{v}");
                }
            }
        }
        let path = dir.join(SAMPLES_FILE);
        std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads `dir/samples.csv` (a shard's, or a whole run's) into `all` (by run).
    fn read(dir: &Path, all: &mut [Samples]) -> Result<(), String> {
        let path = dir.join(SAMPLES_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (written by a tcpfec that kept no samples: run it again)",
                path.display()
            )
        })?;
        for (n, line) in text.lines().enumerate().skip(1) {
            let bad = || format!("{}: line {}: '{line}'", path.display(), n + 1);
            let cells: Vec<&str> = line.split(',').collect();
            let [run, name, t, v] = cells[..] else {
                return Err(bad());
            };
            let run: usize = run.parse().map_err(|_| bad())?;
            let point = (
                t.parse::<f64>().map_err(|_| bad())?,
                v.parse::<f64>().map_err(|_| bad())?,
            );
            let s = all.get_mut(run).ok_or_else(bad)?;
            match name {
                "delivered" => s.delivered.push(point),
                "cwnd" => s.cwnd.push(point),
                "redundancy" => s.redundancy.push(point),
                _ => return Err(bad()),
            }
        }
        Ok(())
    }
}

/// Whether any figure of `exp` is a time series: its runs' samples then go to
/// `samples.csv`, from which `--report-only` and a merge redraw it.
fn has_time_series(exp: &Experiment) -> bool {
    exp.figure.iter().any(|f| f.x == "time")
}

/// Refuses to draw a figure from `records` read back from `results.csv` when its metric
/// is not a column there (a derived one such as `total_goodput_mbps`): it would come out
/// empty rather than wrong, but silently.
fn refuse_missing_metrics(exp: &Experiment, records: &[serde_json::Value]) -> Result<(), String> {
    for fig in exp.figure.iter().filter(|f| f.x != "time") {
        for name in fig.metric.split('/') {
            if !records.iter().any(|r| r.get(name).is_some()) {
                return Err(format!(
                    "{}: its metric {name} is not a column of results.csv; run the experiment without --report-only",
                    fig.id
                ));
            }
        }
    }
    Ok(())
}

/// The text of experiment `name`: a built-in one, or the file at that path.
fn source(name: &str) -> Result<String, String> {
    Ok(match BUILT_IN.iter().find(|(id, _)| *id == name) {
        Some((_, t)) => t.to_string(),
        None => crate::sweep::read_settings_file(Path::new(name)).map_err(|e| {
            let ids: Vec<&str> = BUILT_IN.iter().map(|b| b.0).collect();
            format!(
                "'{name}' is neither a built-in experiment ({}) nor a usable file: {e}",
                ids.join(", ")
            )
        })?,
    })
}

/// Leading number of an axis value ("200ms" → 200, "0.05%" → 0.05).
fn numeric(v: &str) -> f64 {
    let end = v
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.'))
        .map_or(v.len(), |(i, _)| i);
    v[..end].parse().unwrap_or(f64::NAN)
}

/// A run's value of `metric`: a field of its JSON record, or the ratio of two ("a/b").
fn metric_value(run: &serde_json::Value, metric: &str) -> f64 {
    let field = |name: &str| run[name].as_f64().unwrap_or(f64::NAN);
    match metric.split_once('/') {
        Some((a, b)) => field(a) / field(b),
        None => field(metric),
    }
}

/// Sampling interval of time-series figures.
const SAMPLE: std::time::Duration = std::time::Duration::from_millis(100);

/// Mean of one figure's points, by (series value, x value).
type PointMeans = HashMap<(String, String), f64>;

/// One figure's points: means, and standard deviations over seeds (a tie is a
/// difference within one of them).
struct Points {
    means: PointMeans,
    sds: PointMeans,
}

/// How a claim came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Verdict {
    Agree,
    /// The difference the claim is about lies within one standard deviation over seeds
    /// (the larger of the two points'): too small to call with this many seeds.
    Tie,
    Differ,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Tie => "tie",
            Verdict::Differ => "**differ**",
        }
    }
}

struct Cell {
    series: String,
    x: String,
    runs: Vec<usize>,
    /// The scenario of the point's first run (closed-form curves read it).
    scenario: tcpfec_sim::Scenario,
}

/// Expands every figure of `exp` into runs, sharing identical runs between figures; also
/// returns, per figure, its points and the runs of each. Refuses, as it goes, more runs
/// or points than `opts.limits` allow.
fn plan(
    exp: &Experiment,
    opts: &Options,
    seeds: u64,
    base: &BTreeMap<String, String>,
) -> Result<(Vec<Run>, Vec<Vec<Cell>>), String> {
    let mut runs: Vec<Run> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut cells: Vec<Vec<Cell>> = Vec::new();
    let mut points = 0usize;
    for fig in &exp.figure {
        let time_series = fig.x == "time";
        let xs = if time_series {
            vec!["time".to_string()]
        } else {
            fig.xs(opts.quick)
        };
        let series = fig.series_values(opts.quick);
        let mut fig_cells = Vec::new();
        let fig_seeds = match (fig.seeds, opts.seeds, opts.quick) {
            (_, Some(n), _) => n,
            (Some(n), None, false) => n,
            (Some(n), None, true) => n.min(exp.quick_seeds.max(1) * 5),
            (None, _, _) => seeds,
        };
        let mut series = series;
        if let Some(d) = &fig.divide_by {
            if !series.contains(d) {
                series.push(d.clone());
            }
        }
        if let Some(b) = &fig.baseline {
            series.push(b.clone());
        }
        let series_in_x = fig
            .x_format
            .as_ref()
            .is_some_and(|f| f.contains("{series}"));
        for s in &series {
            for x in &xs {
                let mut axes = Axes::default();
                for (k, v) in base {
                    axes.set(k, v)
                        .map_err(|e| format!("{}: base: {e}", exp.id))?;
                }
                for (k, v) in &fig.set {
                    if v == UNSET {
                        axes.unset(k);
                        continue;
                    }
                    axes.set(k, v)
                        .map_err(|e| format!("{}: set: {e}", fig.id))?;
                }
                if opts.quick {
                    for (k, v) in &fig.quick_set {
                        axes.set(k, v)
                            .map_err(|e| format!("{}: quick_set: {e}", fig.id))?;
                    }
                }
                let is_baseline = fig.baseline.as_ref() == Some(s);
                if is_baseline {
                    axes.set("scheme", s)
                        .map_err(|e| format!("{}: baseline: {e}", fig.id))?;
                } else if !series_in_x {
                    axes.set(&fig.series_axis, s)
                        .map_err(|e| format!("{}: {e}", fig.id))?;
                }
                if !time_series && !is_baseline {
                    let xv = fig
                        .x_format
                        .as_ref()
                        .map_or(x.clone(), |f| f.replace("{series}", s).replace("{}", x));
                    axes.set(&fig.x, &xv)
                        .map_err(|e| format!("{}: {e}", fig.id))?;
                }
                let mut ids = Vec::new();
                let point_runs = axes
                    .expand(1, fig_seeds, &opts.limits)
                    .map_err(|e| format!("{}: {e}", fig.id))?;
                let scenario = point_runs[0].scenario.clone();
                for mut run in point_runs {
                    let mut key: Vec<String> =
                        run.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    key.sort();
                    let mut key = format!("{} seed={}", key.join(" "), run.scenario.seed);
                    if time_series {
                        run.scenario.cwnd_sample = Some(SAMPLE);
                        key.push_str(" sampled");
                    }
                    let id = *index.entry(key).or_insert_with(|| {
                        runs.push(run.clone());
                        runs.len() - 1
                    });
                    ids.push(id);
                }
                // Bounds the memory of a file with absurdly many points or runs.
                points += 1;
                opts.limits
                    .check_runs(Some(runs.len().max(points) as u64))?;
                fig_cells.push(Cell {
                    series: s.clone(),
                    x: x.clone(),
                    runs: ids,
                    scenario,
                });
            }
        }
        cells.push(fig_cells);
    }
    Ok((runs, cells))
}

/// Runs the experiment and writes its outputs.
pub fn run(opts: &Options) -> Result<(), String> {
    let p = prepare(opts)?;
    if let Some(shard) = opts.shard {
        return run_shard(&p, opts, shard);
    }
    opts.limits.check(&p.runs)?;
    let out = &p.out;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "{}: {} runs ({} seeds per point){}",
        p.exp.id,
        p.runs.len(),
        p.seeds,
        if opts.quick { ", quick" } else { "" }
    );
    let (records, samples) = if opts.report_only {
        let records = crate::output::read_csv(&out.join("results.csv"), &p.runs)
            .map_err(|e| format!("{e}; run the experiment without --report-only"))?;
        refuse_missing_metrics(&p.exp, &records)?;
        let mut samples = vec![Samples::default(); p.runs.len()];
        if has_time_series(&p.exp) {
            Samples::read(out, &mut samples)
                .map_err(|e| format!("{e}; run the experiment without --report-only"))?;
        }
        // Rewritten with a column for every setting (older files lack some).
        crate::output::write_results_csv(out, p.runs.iter(), &records)
            .map_err(|e| format!("{}: {e}", out.display()))?;
        (records, samples)
    } else {
        let outcomes = crate::runner::run_all(p.runs.clone(), opts.progress);
        crate::output::write_csv(out, &outcomes).map_err(|e| format!("{}: {e}", out.display()))?;
        let records = outcomes.iter().map(crate::output::run_json).collect();
        let samples = Samples::of_all(&outcomes);
        if has_time_series(&p.exp) {
            let rows = p.runs.iter().zip(&samples).enumerate();
            Samples::write(out, rows.map(|(i, (r, s))| (i, r, s)))?;
        }
        (records, samples)
    };
    write_outputs(&p, opts, &records, &samples)
}

/// Runs one shard of the experiment: its rows, `flows.csv` with experiment-wide run
/// numbers, and the manifest `tcpfec merge` checks, in `--out` (default
/// `results/<id>/shard-K-of-N`).
fn run_shard(p: &Planned, opts: &Options, shard: crate::shard::Shard) -> Result<(), String> {
    let out = opts
        .out
        .clone()
        .unwrap_or_else(|| p.out.join(shard.dir_name()));
    let (ids, outcomes) =
        crate::shard::run(&p.exp.id, &p.runs, shard, &opts.limits, opts.progress, &out)?;
    let samples = Samples::of_all(&outcomes);
    let rows = ids.iter().zip(&outcomes).zip(&samples);
    Samples::write(&out, rows.map(|((&i, o), s)| (i, &o.run, s)))?;
    crate::shard::Manifest {
        experiment: opts.experiment.clone(),
        experiment_hash: p.hash.clone(),
        quick: opts.quick,
        seeds: opts.seeds,
        shard: shard.index,
        shards: shard.count,
        total_runs: p.runs.len(),
        runs: ids,
        version: env!("CARGO_PKG_VERSION").into(),
        sweep: None,
    }
    .write(&out)?;
    println!(
        "wrote {}; when every shard is done: tcpfec merge DIR... (one per shard)",
        out.display()
    );
    Ok(())
}

/// Merges the shard directories `dirs` of one `reproduce --shard` run (their `manifests`
/// already checked to be complete, see [`crate::merge`]) into `out` (default
/// `results/<id>`): the same `results.csv`, `flows.csv`, figures and report as a single
/// run, except the wall times. Refuses shards of an experiment file edited since.
pub fn merge(dirs: &[PathBuf], manifests: &[Manifest], out: Option<PathBuf>) -> Result<(), String> {
    let m = &manifests[0];
    let opts = Options {
        experiment: m.experiment.clone(),
        quick: m.quick,
        seeds: m.seeds,
        out,
        progress: false,
        report_only: false,
        shard: None,
        limits: Limits {
            max_runs: u64::MAX,
            i_know: true,
        },
    };
    let p = prepare(&opts)?;
    if p.hash != m.experiment_hash {
        return Err(format!(
            "merge: the experiment '{}' has changed since the shards ran (hash {} now, {} then)",
            m.experiment, p.hash, m.experiment_hash
        ));
    }
    if p.runs.len() != m.total_runs {
        return Err(format!(
            "merge: the experiment has {} runs now, the shards {}",
            p.runs.len(),
            m.total_runs
        ));
    }
    let (records, flows) = crate::shard::gather(dirs, manifests, &p.runs)?;
    let mut samples = vec![Samples::default(); p.runs.len()];
    crate::shard::write_merged(&p.out, &p.runs, &records, &flows)?;
    if has_time_series(&p.exp) {
        for dir in dirs {
            Samples::read(dir, &mut samples)?;
        }
        let rows = p.runs.iter().zip(&samples).enumerate();
        Samples::write(&p.out, rows.map(|(i, (r, s))| (i, r, s)))?;
    }
    eprintln!(
        "{}: {} runs from {} shards",
        p.exp.id,
        p.runs.len(),
        dirs.len()
    );
    write_outputs(&p, &opts, &records, &samples)
}

/// Figures, figure CSVs and `report.md` of an experiment from its runs' records (a
/// time-series figure reads the runs' `samples`), into `p.out`.
fn write_outputs(
    p: &Planned,
    opts: &Options,
    records: &[serde_json::Value],
    samples: &[Samples],
) -> Result<(), String> {
    let Planned {
        exp,
        seeds,
        base,
        cells,
        out,
        ..
    } = p;
    let mut report = String::new();
    let _ = writeln!(report, "# {}\n", exp.title);
    let _ = writeln!(
        report,
        "Reproduced by `tcpfec reproduce {}{}` with {} seed(s) per point; every value is a mean (± standard deviation) over seeds. Scenario: {}. Raw runs: `results.csv`.\n",
        exp.id,
        if opts.quick { " --quick" } else { "" },
        seeds,
        base.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    );
    let mut means: HashMap<(String, String, String), f64> = HashMap::new();
    let mut sds: HashMap<(String, String, String), f64> = HashMap::new();
    let mut fig_md = String::new();
    let mut compared: Option<(String, Vec<crate::compare::Row>)> = None;
    for (fig, fcells) in exp.figure.iter().zip(cells) {
        let (md, Points { means: m, sds: s }) = figure_outputs(fig, fcells, records, samples, out)?;
        for ((series, x), v) in s {
            sds.insert((fig.id.clone(), series, x), v);
        }
        fig_md += &md;
        if let Some(c) = &fig.compare {
            let xs = fig.xs(opts.quick);
            let rows = crate::compare::rows(
                &fig.id,
                &fig.metric,
                c,
                &fig.series_values(opts.quick),
                &xs,
                &m,
            );
            compared
                .get_or_insert_with(|| (c.clone(), Vec::new()))
                .1
                .extend(rows);
        }
        for ((s, x), v) in m {
            means.insert((fig.id.clone(), s, x), v);
        }
    }
    // Claims by section, in the order their sections first appear.
    let mut sections: Vec<&str> = Vec::new();
    for c in &exp.claim {
        let name = c.section.as_deref().unwrap_or(MAIN_CLAIMS);
        if !sections.contains(&name) {
            sections.push(name);
        }
    }
    for section in sections {
        let mut table = String::new();
        let mut whys = String::new();
        let mut counts = [0usize; 3];
        for c in exp
            .claim
            .iter()
            .filter(|c| c.section.as_deref().unwrap_or(MAIN_CLAIMS) == section)
        {
            let fig = exp
                .figure
                .iter()
                .find(|f| f.id == c.figure)
                .ok_or(format!("claim refers to unknown figure {}", c.figure))?;
            let (verdict, evidence) = check_claim(c, fig, &means, &sds, opts.quick);
            counts[verdict as usize] += 1;
            let quote = c.quote.as_deref().unwrap_or("");
            let _ = writeln!(
                table,
                "| {} | {quote} | {} | {evidence} |",
                c.text,
                verdict.label()
            );
            if verdict == Verdict::Differ {
                let why = c
                    .why
                    .as_deref()
                    .unwrap_or("Not explained yet: no run has shown the cause.");
                let _ = writeln!(whys, "- **{}** {why}\n", c.text);
            }
        }
        let _ = writeln!(
            report,
            "## {section}\n\n{} agree, {} tie, {} differ. A tie: the difference the claim is about lies within one standard deviation over seeds (the larger of the two points').\n",
            counts[0], counts[1], counts[2]
        );
        let _ = writeln!(
            report,
            "| claim | the text | verdict | evidence |\n|---|---|---|---|\n{table}"
        );
        if !whys.is_empty() {
            let _ = writeln!(report, "Why these differ:\n\n{whys}");
        }
    }
    if let Some((name, rows)) = &compared {
        let (md, csv) = crate::compare::section(name, rows);
        let _ = writeln!(report, "\n{md}");
        std::fs::write(out.join("compare.csv"), csv).map_err(|e| e.to_string())?;
    }
    if let Some(scheme) = &exp.delay_targets {
        let mut rows = Vec::new();
        for (fig, fcells) in exp.figure.iter().zip(cells) {
            if !fig.metric.starts_with("delay_") {
                continue;
            }
            for c in fcells.iter().filter(|c| &c.series == scheme) {
                rows.push(crate::targets::row(&crate::targets::Point {
                    figure: &fig.id,
                    x: &c.x,
                    scenario: &c.scenario,
                    runs: c.runs.iter().map(|&i| &records[i]).collect(),
                }));
            }
        }
        let (md, csv) = crate::targets::section(scheme, &rows);
        let _ = writeln!(report, "\n{md}");
        std::fs::write(out.join("targets.csv"), csv).map_err(|e| e.to_string())?;
    }
    let _ = writeln!(report, "\n{fig_md}");
    std::fs::write(out.join("report.md"), report).map_err(|e| e.to_string())?;
    println!("wrote {}/report.md, figures and CSV files", out.display());
    Ok(())
}

/// One figure's CSV, SVG and report section from the runs' records (`run_json`); a
/// time-series figure reads the runs' `samples`.
fn figure_outputs(
    fig: &Figure,
    cells: &[Cell],
    records: &[serde_json::Value],
    samples: &[Samples],
    out: &Path,
) -> Result<(String, Points), String> {
    if fig.x == "time" {
        return time_series_outputs(fig, cells, samples, out);
    }
    let mut csv = format!("{},{},mean,sd,n\n", fig.series_axis, fig.x);
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut means = HashMap::new();
    let mut sds = HashMap::new();
    let mut md = format!(
        "## {}\n\n![{}]({}.svg)\n\n| {} | {} | {} |\n|---|---|---|\n",
        fig.title, fig.id, fig.id, fig.series_axis, fig.x_label, fig.y_label
    );
    // Mean and standard deviation of every cell, then (optionally) relative to a series.
    let mut stats: Vec<(f64, f64, usize)> = cells
        .iter()
        .map(|c| {
            let vals: Vec<f64> = c
                .runs
                .iter()
                .map(|&i| metric_value(&records[i], &fig.metric))
                .collect();
            let (mean, sd) = mean_sd(&vals);
            (mean, sd, vals.len())
        })
        .collect();
    if let Some(d) = &fig.divide_by {
        let base: HashMap<&str, f64> = cells
            .iter()
            .zip(&stats)
            .filter(|(c, _)| &c.series == d)
            .map(|(c, st)| (c.x.as_str(), st.0))
            .collect();
        for (c, st) in cells.iter().zip(stats.iter_mut()) {
            let b = base.get(c.x.as_str()).copied().unwrap_or(f64::NAN);
            st.0 /= b;
            st.1 /= b;
        }
    }
    for (c, &(mean, sd, n)) in cells.iter().zip(&stats) {
        if fig.divide_by.as_ref() == Some(&c.series) && !fig.series.contains(&c.series) {
            continue;
        }
        let _ = writeln!(csv, "{},{},{mean},{sd},{n}", c.series, c.x);
        let _ = writeln!(md, "| {} | {} | {mean:.4} ± {sd:.4} |", c.series, c.x);
        means.insert((c.series.clone(), c.x.clone()), mean);
        sds.insert((c.series.clone(), c.x.clone()), sd);
        match series.iter_mut().find(|(s, _)| *s == c.series) {
            Some((_, pts)) => pts.push((numeric(&c.x), mean)),
            None => series.push((c.series.clone(), vec![(numeric(&c.x), mean)])),
        }
    }
    for model in &fig.models {
        let label = format!("{model} (model)");
        let mut pts = Vec::new();
        let mut seen = Vec::new();
        for c in cells {
            if seen.contains(&c.x) {
                continue;
            }
            seen.push(c.x.clone());
            let v = model_value(model, &fig.metric, &c.scenario)?;
            let _ = writeln!(csv, "{label},{},{v},0,0", c.x);
            let _ = writeln!(md, "| {label} | {} | {v:.4} |", c.x);
            means.insert((label.clone(), c.x.clone()), v);
            pts.push((numeric(&c.x), v));
        }
        series.push((label, pts));
    }
    std::fs::write(out.join(format!("{}.csv", fig.id)), csv).map_err(|e| e.to_string())?;
    // Goodputs and delays span orders of magnitude between schemes.
    let y_log = fig.metric == "goodput_mbps" || fig.metric.starts_with("delay_");
    let axes = ChartAxes {
        x_desc: &fig.x_label,
        y_desc: &fig.y_label,
        x_log: fig.x_log,
        y_log,
    };
    // Counts can be zero: keep them on a linear axis.
    line_chart(
        &out.join(format!("{}.svg", fig.id)),
        &fig.title,
        &axes,
        &series,
    )?;
    Ok((md, Points { means, sds }))
}

/// A figure over time: each series is the first seed's run of its cell, sampled every
/// 100 ms; `goodput` is binned per second, `cwnd` and `redundancy` drawn as sampled.
fn time_series_outputs(
    fig: &Figure,
    cells: &[Cell],
    samples: &[Samples],
    out: &Path,
) -> Result<(String, Points), String> {
    let mut csv = format!("{},time_s,value\n", fig.series_axis);
    let mut series = Vec::new();
    for c in cells {
        let r = &samples[c.runs[0]];
        let pts: Vec<(f64, f64)> = match fig.metric.as_str() {
            "goodput" => {
                let d = &r.delivered;
                // Every 10th sample is one second apart.
                d.iter()
                    .step_by(10)
                    .collect::<Vec<_>>()
                    .windows(2)
                    .map(|w| (w[1].0, (w[1].1 - w[0].1) * 8.0 / (w[1].0 - w[0].0) / 1e6))
                    .collect()
            }
            "cwnd" => r.cwnd.clone(),
            "redundancy" => r.redundancy.clone(),
            other => {
                return Err(format!(
                    "{}: time series metric '{other}' (goodput, cwnd, redundancy)",
                    fig.id
                ))
            }
        };
        for (t, v) in &pts {
            let _ = writeln!(csv, "{},{t:.1},{v}", c.series);
        }
        series.push((c.series.clone(), pts));
    }
    std::fs::write(out.join(format!("{}.csv", fig.id)), csv).map_err(|e| e.to_string())?;
    line_chart(
        &out.join(format!("{}.svg", fig.id)),
        &fig.title,
        &ChartAxes {
            x_desc: &fig.x_label,
            y_desc: &fig.y_label,
            x_log: false,
            y_log: false,
        },
        &series,
    )?;
    let md = format!(
        "## {}\n\n![{}]({}.svg)\n\nTime series of the first seed: `{}.csv`.\n\n",
        fig.title, fig.id, fig.id, fig.id
    );
    Ok((
        md,
        Points {
            means: HashMap::new(),
            sds: HashMap::new(),
        },
    ))
}

/// A closed-form value for one point of a figure, in the figure's metric.
///
/// Models: `pftk` (TCP with timeouts, Anker eq. 15) and `anker-fec-N` (TCP-FEC with (N,1)
/// blocks and timeouts, eq. 15 with p′ of eq. 12); both turn a rate into the completion
/// time of the point's transfer, capped by its receiver window, with T0 = 4 RTT as Anker
/// takes it, over the scenario's empty-queue round trip.
fn model_value(model: &str, metric: &str, sc: &tcpfec_sim::Scenario) -> Result<f64, String> {
    use tcpfec_sim::models;
    if metric != "completion_time_s" {
        return Err(format!("model {model}: only completion_time_s is modelled"));
    }
    let bytes = match sc.app {
        tcpfec_sim::App::Transfer { bytes } => bytes,
        _ => return Err(format!("model {model}: needs a finite transfer")),
    };
    let p = match sc.loss {
        tcpfec_sim::LossSpec::Bernoulli { p } => p,
        _ => return Err(format!("model {model}: needs Bernoulli loss")),
    };
    let packets = (bytes as f64 / sc.mss() as f64).ceil();
    let rtt = sc.base_rtt_s();
    let t0 = 4.0 * rtt;
    // Packets per second allowed by the receiver window and by the bottleneck.
    let cap = sc
        .max_window
        .map_or(f64::INFINITY, |w| w as f64 / rtt)
        .min(sc.bottleneck_bps as f64 / (sc.packet_size as f64 * 8.0));
    let data_rate = if model == "pftk" {
        models::pftk(p, rtt, t0, 1.0).min(cap)
    } else if let Some(n) = model.strip_prefix("anker-fec-") {
        let n: u32 = n
            .parse()
            .map_err(|_| format!("model {model}: block size is not a number"))?;
        // Repairs take window and link space: data moves at N/(N+1) of the packet rate.
        let share = n as f64 / (n + 1) as f64;
        models::fec_xor_with_timeouts(p, n, rtt, t0, 1.0).min(cap * share)
    } else {
        return Err(format!("unknown model '{model}' (pftk, anker-fec-N)"));
    };
    Ok(packets / data_rate)
}

/// Means or standard deviations of every experiment's points, by (figure, series, x).
type AllPoints = HashMap<(String, String, String), f64>;

/// Checks a claim. "above", "below" and "argmax_in" can come out as a tie (see
/// [`Verdict::Tie`]); the other kinds agree or differ.
fn check_claim(
    c: &Claim,
    fig: &Figure,
    means: &AllPoints,
    sds: &AllPoints,
    quick: bool,
) -> (Verdict, String) {
    let point = |m: &AllPoints, s: &str, x: &str| {
        m.get(&(fig.id.clone(), s.to_string(), x.to_string()))
            .copied()
            .unwrap_or(f64::NAN)
    };
    let mut xs = fig.xs(quick);
    if let Some(at) = &c.at {
        xs.retain(|x| at.contains(x));
    }
    if xs.is_empty() {
        return (
            Verdict::Differ,
            "none of the claim's x values was run".into(),
        );
    }
    match c.kind.as_str() {
        "above" | "below" => {
            let (a, b) = (
                c.a.clone().unwrap_or_default(),
                c.b.clone().unwrap_or_default(),
            );
            let sign = if c.kind == "above" { 1.0 } else { -1.0 };
            let mut verdict = Verdict::Agree;
            let mut ev = Vec::new();
            for x in &xs {
                let (va, vb) = (point(means, &a, x), point(means, &b, x));
                let sd = point(sds, &a, x).max(point(sds, &b, x));
                let d = sign * (va - vb);
                let here = if !d.is_finite() {
                    Verdict::Differ
                } else if d.abs() <= sd {
                    Verdict::Tie
                } else if d > 0.0 {
                    Verdict::Agree
                } else {
                    Verdict::Differ
                };
                verdict = verdict.max(here);
                let mark = if here == Verdict::Tie { " (tie)" } else { "" };
                ev.push(format!("{x}: {} vs {}{mark}", num(va), num(vb)));
            }
            (verdict, format!("{a} vs {b} — {}", ev.join("; ")))
        }
        "argmax_in" => {
            let s = c.series_value.clone().unwrap_or_default();
            let (lo, hi) = (c.low.unwrap_or(f64::MIN), c.high.unwrap_or(f64::MAX));
            let inside = |x: &String| (lo..=hi).contains(&numeric(x));
            let best_of = |pick: &dyn Fn(&String) -> bool| {
                xs.iter()
                    .filter(|x| pick(x))
                    .map(|x| (x, point(means, &s, x), point(sds, &s, x)))
                    .filter(|p| p.1.is_finite())
                    .max_by(|p, q| p.1.total_cmp(&q.1))
            };
            let (Some(best), Some(best_in)) = (best_of(&|_| true), best_of(&inside)) else {
                return (Verdict::Differ, "no points".into());
            };
            let best_out = best_of(&|x| !inside(x));
            // The claimed range wins clearly, loses clearly, or is within one sd.
            let verdict = if inside(best.0) {
                match best_out {
                    Some(o) if best.1 - o.1 <= best.2.max(o.2) => Verdict::Tie,
                    _ => Verdict::Agree,
                }
            } else if best.1 - best_in.1 <= best.2.max(best_in.2) {
                Verdict::Tie
            } else {
                Verdict::Differ
            };
            let ev = format!(
                "best {} for {s}: {} ({} ± {}); best in the claimed range: {} ({} ± {})",
                fig.x_label,
                best.0,
                num(best.1),
                num(best.2),
                best_in.0,
                num(best_in.1),
                num(best_in.2)
            );
            (verdict, ev)
        }
        _ => {
            let (ok, ev) = check_plain(c, fig, means, &xs, quick);
            (if ok { Verdict::Agree } else { Verdict::Differ }, ev)
        }
    }
}

/// The claim kinds that only agree or differ, checked at `xs` (the figure's x values the
/// claim names).
fn check_plain(
    c: &Claim,
    fig: &Figure,
    means: &AllPoints,
    xs: &[String],
    quick: bool,
) -> (bool, String) {
    let get = |s: &str, x: &str| {
        means
            .get(&(fig.id.clone(), s.to_string(), x.to_string()))
            .copied()
            .unwrap_or(f64::NAN)
    };
    let (a, b) = (
        c.a.clone().unwrap_or_default(),
        c.b.clone().unwrap_or_default(),
    );
    let pairs: Vec<(String, f64, f64)> = xs
        .iter()
        .map(|x| (x.clone(), get(&a, x), get(&b, x)))
        .collect();
    let fmt = |f: &dyn Fn(f64, f64) -> bool| -> (bool, String) {
        let ok = pairs.iter().all(|(_, va, vb)| f(*va, *vb));
        let ev = pairs
            .iter()
            .map(|(x, va, vb)| format!("{x}: {} vs {}", num(*va), num(*vb)))
            .collect::<Vec<_>>()
            .join("; ");
        (ok, format!("{a} vs {b} — {ev}"))
    };
    match c.kind.as_str() {
        "close" => {
            let tol = c.tolerance.unwrap_or(0.1);
            fmt(&|x, y| (x / y - 1.0).abs() <= tol)
        }
        "crossover" => {
            let (first, last) = (pairs.first(), pairs.last());
            match (first, last) {
                (Some(f), Some(l)) if pairs.len() >= 2 => {
                    let ok = f.1 > f.2 && l.1 < l.2;
                    (
                        ok,
                        format!(
                            "{a} vs {b} at {}: {} vs {}; at {}: {} vs {}",
                            f.0,
                            num(f.1),
                            num(f.2),
                            l.0,
                            num(l.1),
                            num(l.2)
                        ),
                    )
                }
                _ => (false, "not enough points".into()),
            }
        }
        "ratio" => {
            let (lo, hi) = (c.low.unwrap_or(f64::MIN), c.high.unwrap_or(f64::MAX));
            let ok = pairs.iter().all(|(_, va, vb)| {
                let r = va / vb;
                r >= lo && r <= hi
            });
            let ev = pairs
                .iter()
                .map(|(x, va, vb)| format!("{x}: {:.2}", va / vb))
                .collect::<Vec<_>>()
                .join("; ");
            (ok, format!("{a} / {b} — {ev}"))
        }
        "min_ratio" => {
            let best = pairs
                .iter()
                .map(|(x, va, vb)| (x, va / vb))
                .min_by(|p, q| p.1.total_cmp(&q.1));
            match best {
                Some((x, r)) => {
                    let ok = r >= c.low.unwrap_or(f64::MIN) && r <= c.high.unwrap_or(f64::MAX);
                    (ok, format!("smallest {a} / {b}: {r:.2} at {x}"))
                }
                None => (false, "no points".into()),
            }
        }
        "falls" => {
            // Series a is lower at the last checked x than at the first.
            match (pairs.first(), pairs.last()) {
                (Some(f), Some(l)) if pairs.len() >= 2 => (
                    l.1 < f.1,
                    format!("{a}: {} at {} → {} at {}", num(f.1), f.0, num(l.1), l.0),
                ),
                _ => (false, "not enough points".into()),
            }
        }
        "spread" => {
            // max / min of series a over the checked x values.
            let vals: Vec<f64> = pairs.iter().map(|p| p.1).collect();
            let max = vals.iter().copied().fold(f64::MIN, f64::max);
            let min = vals.iter().copied().fold(f64::MAX, f64::min);
            let r = max / min;
            let ok =
                r.is_finite() && r >= c.low.unwrap_or(f64::MIN) && r <= c.high.unwrap_or(f64::MAX);
            (ok, format!("{a}: largest / smallest = {r:.2}"))
        }
        "within" => {
            let (lo, hi) = (c.low.unwrap_or(f64::MIN), c.high.unwrap_or(f64::MAX));
            let ok = pairs.iter().all(|(_, va, _)| *va >= lo && *va <= hi);
            let ev = pairs
                .iter()
                .map(|(x, va, _)| format!("{x}: {}", num(*va)))
                .collect::<Vec<_>>()
                .join("; ");
            let bounds = match (c.low, c.high) {
                (Some(l), Some(h)) => format!("in [{l}, {h}]"),
                (Some(l), None) => format!(">= {l}"),
                (None, Some(h)) => format!("<= {h}"),
                (None, None) => "any".into(),
            };
            (ok, format!("{a} {bounds} — {ev}"))
        }
        "lowest" | "highest" => {
            let series = fig.series_values(quick);
            let mut ok = true;
            let mut ev = Vec::new();
            for x in xs {
                let best = series
                    .iter()
                    .map(|s| (s, get(s, x)))
                    .filter(|(_, v)| v.is_finite())
                    .min_by(|p, q| {
                        if c.kind == "lowest" {
                            p.1.total_cmp(&q.1)
                        } else {
                            q.1.total_cmp(&p.1)
                        }
                    });
                match best {
                    Some((s, v)) => {
                        ok &= *s == a;
                        ev.push(format!("{x}: {s} ({})", num(v)));
                    }
                    None => ok = false,
                }
            }
            (ok, format!("{} — {}", c.kind, ev.join("; ")))
        }
        other => (false, format!("unknown claim kind '{other}'")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::SweepSize;

    fn size_of(id: &str, quick: bool) -> SweepSize {
        let opts = Options {
            experiment: id.into(),
            quick,
            seeds: None,
            out: None,
            report_only: false,
            shard: None,
            progress: false,
            limits: Limits::default(),
        };
        let p = prepare(&opts).unwrap();
        opts.limits.check(&p.runs).unwrap();
        SweepSize::of(&p.runs)
    }

    #[test]
    fn every_built_in_experiment_fits_the_default_limits() {
        for (id, _) in BUILT_IN {
            let full = size_of(id, false);
            let quick = size_of(id, true);
            assert!(quick.events < full.events, "{id}: {quick:?} vs {full:?}");
        }
    }

    /// Two points of one figure on a 1 Gb/s path for 1000 s: about 5e8 events per run.
    const COSTLY: &str = r#"
id = "costly"
title = "t"
seeds = 1
quick_seeds = 1
[base]
bottleneck = "1gbit"
duration = "1000s"
[[figure]]
id = "f"
title = "t"
x = "delay"
x_values = ["10ms", "20ms"]
x_label = "x"
series = ["sack"]
metric = "goodput_mbps"
y_label = "y"
"#;

    #[test]
    fn more_seeds_than_the_limits_allow_are_refused_before_running() {
        let exp: Experiment = toml::from_str(COSTLY).unwrap();
        let opts = |seeds| Options {
            experiment: "costly".into(),
            quick: false,
            seeds: Some(seeds),
            out: None,
            report_only: false,
            shard: None,
            progress: false,
            limits: Limits::default(),
        };
        // A million seeds per point: refused while expanding the first point.
        let e = plan(&exp, &opts(1_000_000), 1_000_000, &exp.base)
            .err()
            .expect("refused");
        assert!(e.contains("--max-runs 1000000"), "{e}");
        // 150 seeds: 300 runs, well within the count, but some 1.5e11 events.
        let (runs, _) = plan(&exp, &opts(150), 150, &exp.base).unwrap();
        let e = opts(150).limits.check(&runs).unwrap_err();
        assert!(e.contains("--i-know") && e.contains("300 run(s)"), "{e}");
        // 90 seeds: 9e10 events, within.
        let (runs, _) = plan(&exp, &opts(90), 90, &exp.base).unwrap();
        opts(90).limits.check(&runs).unwrap();
    }

    /// The verdict of a claim of `kind` (series "a" against "b", or the best x of "a"
    /// claimed at 2) on a figure whose points have the given (series, x, mean, sd).
    fn verdict(kind: &str, vals: &[(&str, &str, f64, f64)]) -> Verdict {
        let mut exp: Experiment = toml::from_str(&format!(
            r#"
id = "t"
title = "t"
seeds = 1
quick_seeds = 1
[base]
[[figure]]
id = "f"
title = "t"
x = "delay"
x_values = ["1", "2"]
x_label = "x"
series = ["a", "b"]
metric = "goodput_mbps"
y_label = "y"
[[claim]]
text = "t"
figure = "f"
kind = "{kind}"
a = "a"
b = "b"
series_value = "a"
low = 2
high = 2
"#
        ))
        .unwrap();
        let mut means = AllPoints::new();
        let mut sds = AllPoints::new();
        for &(s, x, m, sd) in vals {
            means.insert(("f".into(), s.into(), x.into()), m);
            sds.insert(("f".into(), s.into(), x.into()), sd);
        }
        let (fig, c) = (exp.figure.remove(0), exp.claim.remove(0));
        check_claim(&c, &fig, &means, &sds, false).0
    }

    #[test]
    fn small_values_keep_three_significant_digits_in_the_evidence() {
        assert_eq!(num(0.000512), "0.000512");
        assert_eq!(num(0.0284), "0.0284");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(num(12.3456), "12.346");
        assert_eq!(num(0.0), "0.000");
        assert_eq!(num(f64::NAN), "NaN");
    }

    #[test]
    fn a_difference_within_one_standard_deviation_is_a_tie() {
        let check = |vals: &[(&str, &str, f64, f64)]| verdict("above", vals);
        // Clearly above at both x: agree.
        let clear = [
            ("a", "1", 10.0, 1.0),
            ("b", "1", 5.0, 1.0),
            ("a", "2", 10.0, 1.0),
            ("b", "2", 5.0, 1.0),
        ];
        assert_eq!(check(&clear), Verdict::Agree);
        // Above at 1 by less than the larger sd (2): a tie.
        let close = [
            ("a", "1", 6.0, 2.0),
            ("b", "1", 5.0, 0.5),
            ("a", "2", 10.0, 1.0),
            ("b", "2", 5.0, 1.0),
        ];
        assert_eq!(check(&close), Verdict::Tie);
        // Clearly below at 2: differ, whatever the other point.
        let below = [
            ("a", "1", 6.0, 2.0),
            ("b", "1", 5.0, 0.5),
            ("a", "2", 1.0, 1.0),
            ("b", "2", 5.0, 1.0),
        ];
        assert_eq!(check(&below), Verdict::Differ);
        // argmax claimed at x = 2: best at 1 but within one sd of 2 is a tie; far off differs.
        let check = |vals: &[(&str, &str, f64, f64)]| verdict("argmax_in", vals);
        assert_eq!(
            check(&[("a", "1", 10.0, 1.0), ("a", "2", 9.5, 1.0)]),
            Verdict::Tie
        );
        assert_eq!(
            check(&[("a", "1", 10.0, 1.0), ("a", "2", 5.0, 1.0)]),
            Verdict::Differ
        );
        assert_eq!(
            check(&[("a", "1", 5.0, 1.0), ("a", "2", 10.0, 1.0)]),
            Verdict::Agree
        );
    }
}
