//! Runs a list of simulations in parallel (one per core) with a progress bar, keeping the
//! results in input order so output does not depend on scheduling.

use crate::sweep::Run;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::time::Instant as WallClock;
use tcpfec_sim::RunResult;

/// A finished run with its wall-clock time.
pub struct Outcome {
    /// The run.
    pub run: Run,
    /// Its metrics.
    pub result: RunResult,
    /// Wall-clock seconds it took.
    pub wall_s: f64,
}

/// Runs every simulation; shows a progress bar on stderr when `progress` is set.
pub fn run_all(runs: Vec<Run>, progress: bool) -> Vec<Outcome> {
    run_all_with(runs, progress, None).expect("untraced runs cannot fail")
}

/// Where [`run_all_with`] writes traces, and how much per file.
#[derive(Default)]
pub struct Traces {
    /// qlog traces of both ends of every flow (the directory exists).
    pub qlog_dir: Option<std::path::PathBuf>,
    /// A pcapng capture per flow (the directory exists).
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Most bytes per file.
    pub limit: u64,
}

/// [`run_all`], writing the traces `traces` asks for (files named `runNNNN-flowF…`, NNNN
/// the run's position in the sweep) when it is given.
pub fn run_all_with(
    runs: Vec<Run>,
    progress: bool,
    traces: Option<&Traces>,
) -> Result<Vec<Outcome>, String> {
    let bar = if progress && runs.len() > 1 {
        let b = ProgressBar::new(runs.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} runs, eta {eta}",
            )
            .expect("valid template"),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let out: Result<Vec<Outcome>, String> = runs
        .into_par_iter()
        .enumerate()
        .map(|(i, run)| {
            let t = WallClock::now();
            let result = match traces {
                None => tcpfec_sim::run(&run.scenario),
                Some(t) => {
                    let files = tcpfec_sim::sim::TraceFiles {
                        qlog_dir: t.qlog_dir.clone(),
                        pcap_dir: t.pcap_dir.clone(),
                        name: format!("run{i:04}"),
                        limit: t.limit,
                    };
                    tcpfec_sim::sim::run_traced(&run.scenario, &files)
                        .map_err(|e| format!("--qlog/--pcap: {e}"))?
                }
            };
            let wall_s = t.elapsed().as_secs_f64();
            bar.inc(1);
            Ok(Outcome {
                run,
                result,
                wall_s,
            })
        })
        .collect();
    bar.finish_and_clear();
    out
}
