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
    let out: Vec<Outcome> = runs
        .into_par_iter()
        .map(|run| {
            let t = WallClock::now();
            let result = tcpfec_sim::run(&run.scenario);
            let wall_s = t.elapsed().as_secs_f64();
            bar.inc(1);
            Outcome {
                run,
                result,
                wall_s,
            }
        })
        .collect();
    bar.finish_and_clear();
    out
}
