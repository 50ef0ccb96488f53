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

/// Where [`run_all_with`] writes qlog traces, and how much per file.
pub struct Qlog {
    /// The directory (created if missing).
    pub dir: std::path::PathBuf,
    /// Most bytes per trace file.
    pub limit: u64,
}

/// [`run_all`], writing a qlog trace of both ends of every flow of every run into
/// `qlog`'s directory (`runNNNN-flowF-client.sqlog`, `…-server.sqlog`, NNNN the run's
/// position in the sweep) when it is given.
pub fn run_all_with(
    runs: Vec<Run>,
    progress: bool,
    qlog: Option<&Qlog>,
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
            let result = match qlog {
                None => tcpfec_sim::run(&run.scenario),
                Some(q) => {
                    let opts = tcpfec_sim::sim::QlogOptions {
                        dir: q.dir.clone(),
                        name: format!("run{i:04}"),
                        limit: q.limit,
                    };
                    tcpfec_sim::sim::run_traced(&run.scenario, &opts)
                        .map_err(|e| format!("--qlog {}: {e}", q.dir.display()))?
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
