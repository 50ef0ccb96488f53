//! `tcpfec sim`: one sweep of scenarios, printed as a table or as JSON lines, and written
//! as CSV and time series if asked; or one shard of the sweep, for a job array, whose
//! rows `tcpfec merge` joins into what one process would have written.

use crate::output;
use crate::shard::{Manifest, Shard, SweepSpec};
use crate::sweep::{Axes, Limits, Run};
use std::path::PathBuf;

/// What `tcpfec sim` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sweep's settings (flags and `--config` merged).
    pub axes: Axes,
    /// First seed.
    pub seed: u64,
    /// Seeds per point.
    pub seeds: u64,
    /// How large the sweep may be.
    pub limits: Limits,
    /// One JSON object per run on stdout instead of a table.
    pub json: bool,
    /// Also write `results.csv` and `flows.csv` here (a shard writes into
    /// `shard-K-of-N/` below it).
    pub csv: Option<PathBuf>,
    /// Write each run's time series here.
    pub trace: Option<PathBuf>,
    /// Write a qlog trace of both ends of every flow here.
    pub qlog: Option<PathBuf>,
    /// Write a pcapng capture of every flow here.
    pub pcap: Option<PathBuf>,
    /// Show a progress bar.
    pub progress: bool,
    /// Run only this shard of the runs.
    pub shard: Option<Shard>,
}

/// Runs the sweep (or its shard) and prints and writes what `opts` asks for.
pub fn run(opts: &Options) -> Result<(), String> {
    if let Some(shard) = opts.shard {
        return run_shard(opts, shard);
    }
    let mut runs = opts.axes.expand(opts.seed, opts.seeds, &opts.limits)?;
    opts.limits.check(&runs)?;
    if opts.trace.is_some() {
        for r in &mut runs {
            r.scenario.cwnd_sample = Some(core::time::Duration::from_millis(100));
        }
    }
    let traces = trace_files(opts, &runs)?;
    let outcomes = crate::runner::run_all_with(runs, opts.progress, traces.as_ref())?;
    print_outcomes(opts, &outcomes);
    if !opts.json {
        for (what, dir) in [("qlog traces", &opts.qlog), ("pcapng captures", &opts.pcap)] {
            if let Some(d) = dir {
                eprintln!("wrote {what} into {}", d.display());
            }
        }
    }
    if let Some(dir) = &opts.trace {
        output::write_traces(dir, &outcomes)
            .map_err(|e| format!("--trace {}: {e}", dir.display()))?;
    }
    if let Some(dir) = &opts.csv {
        output::write_csv(dir, &outcomes).map_err(|e| format!("--csv {}: {e}", dir.display()))?;
        if !opts.json {
            println!("wrote {}/results.csv and flows.csv", dir.display());
        }
    }
    Ok(())
}

/// Most trace files one `sim --qlog`/`--pcap` writes (qlog: two per flow per run;
/// pcapng: one).
pub const MAX_TRACE_FILES: usize = 2000;

/// Checks that the traces `opts` asks of `runs` fit the bounds, and creates their
/// directories.
fn trace_files(opts: &Options, runs: &[Run]) -> Result<Option<crate::runner::Traces>, String> {
    if opts.qlog.is_none() && opts.pcap.is_none() {
        return Ok(None);
    }
    let flows: usize = runs
        .iter()
        .map(|r| (r.scenario.flows + r.scenario.background) as usize)
        .sum();
    let files = flows * (2 * opts.qlog.is_some() as usize + opts.pcap.is_some() as usize);
    if files > MAX_TRACE_FILES {
        return Err(format!(
            "--qlog/--pcap: this sweep would write {files} trace files (qlog: two per flow \
             per run, pcap: one); the limit is {MAX_TRACE_FILES}: trace fewer runs or flows"
        ));
    }
    for (flag, dir) in [("--qlog", &opts.qlog), ("--pcap", &opts.pcap)] {
        if let Some(d) = dir {
            std::fs::create_dir_all(d).map_err(|e| format!("{flag} {}: {e}", d.display()))?;
        }
    }
    Ok(Some(crate::runner::Traces {
        qlog_dir: opts.qlog.clone(),
        pcap_dir: opts.pcap.clone(),
        limit: tcpfec_qlog::DEFAULT_FILE_LIMIT,
    }))
}

/// The sweep as a manifest records it, so that a merge can rebuild the run list.
fn spec(opts: &Options) -> SweepSpec {
    SweepSpec {
        settings: opts.axes.to_toml(),
        seed: opts.seed,
        seeds: opts.seeds,
    }
}

/// Runs one shard. A sweep of up to [`crate::shard::STREAMED_SPLIT`] runs is built and
/// dealt by cost; a larger one is dealt in run order while its runs are built one at a
/// time, and only this shard's are kept, so the shard's memory does not grow with the
/// sweep.
fn run_shard(opts: &Options, shard: Shard) -> Result<(), String> {
    let Some(dir) = &opts.csv else {
        return Err(
            "--shard needs --csv DIR: the shard's rows and manifest go to \
                    DIR/shard-K-of-N for `tcpfec merge`"
                .into(),
        );
    };
    if opts.trace.is_some() || opts.qlog.is_some() {
        return Err(
            "--trace and --qlog cannot be sharded: time series are written by one process".into(),
        );
    }
    let out = dir.join(shard.dir_name());
    let sweep = opts.axes.expansion(opts.seed, opts.seeds, &opts.limits)?;
    let total = sweep.len();
    let (ids, outcomes) = if total <= crate::shard::STREAMED_SPLIT {
        let runs = (0..total)
            .map(|i| sweep.run(i))
            .collect::<Result<Vec<Run>, String>>()?;
        crate::shard::run("sim", &runs, shard, &opts.limits, opts.progress, &out)?
    } else {
        let ids = crate::shard::select_streamed(
            total,
            |i| Ok(sweep.run(i)?.scenario.estimated_events()),
            shard,
        )?;
        let mine = ids
            .iter()
            .map(|&i| sweep.run(i))
            .collect::<Result<Vec<Run>, String>>()?;
        crate::shard::run_selected(
            "sim",
            (ids, mine),
            total,
            shard,
            &opts.limits,
            opts.progress,
            &out,
        )?
    };
    print_outcomes(opts, &outcomes);
    let sweep = spec(opts);
    Manifest {
        experiment: SIM_EXPERIMENT.into(),
        experiment_hash: sweep.hash(),
        quick: false,
        seeds: Some(opts.seeds),
        shard: shard.index,
        shards: shard.count,
        total_runs: total,
        runs: ids,
        version: env!("CARGO_PKG_VERSION").into(),
        sweep: Some(sweep),
    }
    .write(&out)?;
    if !opts.json {
        println!(
            "wrote {}; when every shard is done: tcpfec merge {}/shard-*",
            out.display(),
            dir.display()
        );
    }
    Ok(())
}

/// The `experiment` a sweep's shard manifest names.
pub const SIM_EXPERIMENT: &str = "sim";

fn print_outcomes(opts: &Options, outcomes: &[crate::runner::Outcome]) {
    if opts.json {
        for o in outcomes {
            println!("{}", output::run_json(o));
        }
    } else {
        print!("{}", output::table(outcomes, &opts.axes.swept()));
    }
}

/// Merges the shard directories of one `sim --shard` sweep (described by `sweep`, from
/// their manifests, already checked to be complete) into `out`: the `results.csv` and
/// `flows.csv` that `sim --csv` writes from one process.
pub fn merge(
    dirs: &[PathBuf],
    manifests: &[Manifest],
    sweep: &SweepSpec,
    out: &std::path::Path,
) -> Result<(), String> {
    let axes = Axes::from_toml(&sweep.settings).map_err(|e| format!("merge: manifest: {e}"))?;
    if sweep.hash() != manifests[0].experiment_hash {
        return Err("merge: the manifests' sweep does not match its hash (edited by hand?)".into());
    }
    let no_limits = Limits {
        max_runs: u64::MAX,
        i_know: true,
    };
    let runs = axes.expand(sweep.seed, sweep.seeds, &no_limits)?;
    if runs.len() != manifests[0].total_runs {
        return Err(format!(
            "merge: the sweep expands to {} runs here, the shards ran {} (another tcpfec?)",
            runs.len(),
            manifests[0].total_runs
        ));
    }
    let (records, flows) = crate::shard::gather(dirs, manifests, &runs)?;
    crate::shard::write_merged(out, &runs, &records, &flows)?;
    println!(
        "sim: {} runs from {} shards: wrote {}/results.csv and flows.csv",
        runs.len(),
        dirs.len(),
        out.display()
    );
    Ok(())
}
