//! `tcpfec bench fuzz`: seeded adversarial channel schedules × every scheme. Each run is a
//! client and a server engine over a channel that drops (singly and in bursts),
//! duplicates, reorders, holds back and corrupts datagrams as the seed says, then turns
//! clean; the server must have read exactly what the client wrote (and the other way
//! round), no byte wrong and none missing. See `tcpfec_fuzz::schedule`.

use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant as WallClock;
use tcpfec_fuzz::pair::SCHEMES;
use tcpfec_fuzz::schedule;

/// What `tcpfec bench fuzz` was asked for.
pub struct Options {
    /// Schedules per scheme.
    pub schedules: u64,
    /// First seed.
    pub seed: u64,
    /// Only these schemes (names from [`SCHEMES`]); empty: all.
    pub schemes: Vec<String>,
    /// Worker threads (None: all cores).
    pub jobs: Option<usize>,
    /// Directory for the pair fuzz inputs of failing runs.
    pub save_failures: Option<PathBuf>,
}

/// Totals of one scheme's runs.
#[derive(Default, Clone)]
struct Tally {
    runs: u64,
    bytes: u64,
    wrong: u64,
    missing: u64,
    datagrams: u64,
    /// (seed, why) of each failed run.
    failures: Vec<(u64, String)>,
}

impl Tally {
    /// One run's totals.
    fn one(seed: u64, out: tcpfec_fuzz::pair::Outcome) -> Tally {
        Tally {
            runs: 1,
            bytes: (out.written[0] + out.written[1]) as u64,
            wrong: out.wrong as u64,
            missing: out.missing as u64,
            datagrams: out.datagrams,
            failures: out.failure.map(|why| (seed, why)).into_iter().collect(),
        }
    }

    fn merge(mut self, o: Tally) -> Tally {
        self.runs += o.runs;
        self.bytes += o.bytes;
        self.wrong += o.wrong;
        self.missing += o.missing;
        self.datagrams += o.datagrams;
        self.failures.extend(o.failures);
        self
    }

    /// The table row of these totals, with `failures` failed runs and `wall_s` seconds.
    fn row(&self, name: &str, failures: usize, wall_s: f64) -> String {
        format!(
            "{name:<20} {:>8} {:>12} {:>11} {:>7} {:>8} {failures:>9} {wall_s:>8.1}",
            self.runs, self.bytes, self.datagrams, self.wrong, self.missing
        )
    }
}

/// The schemes to run: indices into [`SCHEMES`].
fn chosen(names: &[String]) -> Result<Vec<usize>, String> {
    if names.is_empty() {
        return Ok((0..SCHEMES.len()).collect());
    }
    names
        .iter()
        .map(|n| {
            SCHEMES.iter().position(|s| s == n).ok_or_else(|| {
                format!(
                    "--scheme: '{n}' is not one of the fuzzed schemes ({})",
                    SCHEMES.join(", ")
                )
            })
        })
        .collect()
}

/// Runs the schedules and prints a line per scheme and the totals; an error if any byte
/// was wrong or missing.
pub fn run(o: &Options) -> Result<(), String> {
    let schemes = chosen(&o.schemes)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(o.jobs.unwrap_or(0))
        .build()
        .map_err(|e| format!("--jobs: {e}"))?;
    println!(
        "{} seeded adversarial schedules (seeds {}..{}) x {} schemes",
        o.schedules,
        o.seed,
        o.seed + o.schedules,
        schemes.len()
    );
    println!(
        "{:<20} {:>8} {:>12} {:>11} {:>7} {:>8} {:>9} {:>8}",
        "scheme", "runs", "bytes", "datagrams", "wrong", "missing", "failures", "wall s"
    );
    let start = WallClock::now();
    let mut total = Tally::default();
    let mut failed: Vec<(usize, u64, String)> = Vec::new();
    for &i in &schemes {
        let t = WallClock::now();
        let mut tally = pool.install(|| {
            (o.seed..o.seed + o.schedules)
                .into_par_iter()
                .map(|seed| Tally::one(seed, schedule::run(seed, i)))
                .reduce(Tally::default, Tally::merge)
        });
        let wall = t.elapsed().as_secs_f64();
        println!("{}", tally.row(SCHEMES[i], tally.failures.len(), wall));
        failed.extend(tally.failures.drain(..).map(|(s, w)| (i, s, w)));
        total = total.merge(tally);
    }
    let wall = start.elapsed().as_secs_f64();
    println!("{}", total.row("total", failed.len(), wall));
    if failed.is_empty() {
        return Ok(());
    }
    failed.sort();
    for (i, seed, why) in failed.iter().take(20) {
        println!("FAILED {} seed {seed}: {why}", SCHEMES[*i]);
    }
    if let Some(dir) = &o.save_failures {
        save(dir, &failed)?;
    }
    Err(format!(
        "{} of {} runs failed ({} wrong, {} missing bytes); rerun one with \
         --scheme NAME --seed S --schedules 1, or --save-failures DIR for fuzz inputs",
        failed.len(),
        total.runs,
        total.wrong,
        total.missing
    ))
}

/// Writes each failing run as a pair fuzz input, named by scheme and seed.
fn save(dir: &PathBuf, failed: &[(usize, u64, String)]) -> Result<(), String> {
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--save-failures: cannot create {}: {e}", dir.display()))?;
    for (i, seed, _) in failed {
        let path = dir.join(format!("{}-seed-{seed}", SCHEMES[*i]));
        std::fs::write(&path, schedule::input(*seed, *i))
            .map_err(|e| format!("--save-failures: cannot write {}: {e}", path.display()))?;
    }
    println!(
        "wrote {} pair inputs to {} (replay: copy into fuzz/corpus/pair/)",
        failed.len(),
        dir.display()
    );
    Ok(())
}
