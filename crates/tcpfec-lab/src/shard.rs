//! Splitting an experiment's or a sweep's run list into deterministic shards (one per
//! task of a job array), checking that a set of shards makes up the whole run list
//! again, and gathering their rows back into run order.

use crate::sweep::Run;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The K-th of N shards (K counted from 1, as `--shard K/N` writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, 1..=count.
    pub index: usize,
    /// How many shards in all.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard '{s}': expected K/N with 1 <= K <= N, e.g. 2/4");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The directory a shard writes into: `shard-K-of-N`.
    pub fn dir_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

/// The runs of `shard`, as indices into `runs`, in run order. Runs are dealt by expected
/// cost (simulator events), not by count: the costliest first, each to the shard with
/// the least cost so far (ties to the lower shard), so a shard of long 400 ms points
/// does not run for hours while another idles. Deterministic: every task of an array
/// computes the same split.
pub fn select(runs: &[Run], shard: Shard) -> Vec<usize> {
    let mut order: Vec<(usize, f64)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (i, r.scenario.estimated_events()))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut load = vec![0.0f64; shard.count];
    let mut mine = Vec::new();
    for (i, cost) in order {
        let least = (0..shard.count)
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .expect("at least one shard");
        load[least] += cost;
        if least + 1 == shard.index {
            mine.push(i);
        }
    }
    mine.sort_unstable();
    mine
}

/// Above this many runs a sweep is dealt by [`select_streamed`]: the cost list of
/// [`select`] alone would take 16 bytes a run, and the run list 5 kB a run.
pub const STREAMED_SPLIT: usize = 100_000;

/// The runs of `shard` among `n` runs whose expected costs `cost` gives, dealt in run
/// order, each to the shard with the least cost so far (ties to the lower shard): what
/// [`select`] does without sorting by cost first, so nothing but the shards' loads and
/// this shard's ids is held, whatever the sweep's size. Greedy in order is within one
/// run's cost of the best split, so with many runs the shards still finish together.
pub fn select_streamed(
    n: usize,
    mut cost: impl FnMut(usize) -> Result<f64, String>,
    shard: Shard,
) -> Result<Vec<usize>, String> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    /// A shard's load, ordered for a min-heap (then by index).
    #[derive(PartialEq)]
    struct Load(f64, usize);
    impl Eq for Load {}
    impl PartialOrd for Load {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Load {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
        }
    }
    let mut loads: BinaryHeap<Reverse<Load>> =
        (0..shard.count).map(|k| Reverse(Load(0.0, k))).collect();
    let mut mine = Vec::new();
    for i in 0..n {
        let c = cost(i)?;
        let Reverse(Load(load, k)) = loads.pop().expect("at least one shard");
        if k + 1 == shard.index {
            mine.push(i);
        }
        loads.push(Reverse(Load(load + c, k)));
    }
    Ok(mine)
}

/// Runs `shard` of `runs` (after `limits` accept its part) and writes its rows into
/// `out`: `results.csv`, `flows.csv` with run-list-wide run numbers, `records.jsonl`.
/// Returns the shard's run ids and outcomes; the caller adds what its kind of run keeps
/// besides, and the manifest. `label` names the run in the progress line on stderr.
pub fn run(
    label: &str,
    runs: &[Run],
    shard: Shard,
    limits: &crate::sweep::Limits,
    progress: bool,
    out: &Path,
) -> Result<(Vec<usize>, Vec<crate::runner::Outcome>), String> {
    let ids = select(runs, shard);
    let mine: Vec<Run> = ids.iter().map(|&i| runs[i].clone()).collect();
    run_selected(label, (ids, mine), runs.len(), shard, limits, progress, out)
}

/// [`run`] for a shard whose runs (`ids` and the runs themselves) are chosen already,
/// of `total` runs in all.
pub fn run_selected(
    label: &str,
    (ids, mine): (Vec<usize>, Vec<Run>),
    total: usize,
    shard: Shard,
    limits: &crate::sweep::Limits,
    progress: bool,
    out: &Path,
) -> Result<(Vec<usize>, Vec<crate::runner::Outcome>), String> {
    limits.check(&mine)?;
    let fail = |e: std::io::Error| format!("{}: {e}", out.display());
    std::fs::create_dir_all(out).map_err(fail)?;
    eprintln!(
        "{label}: shard {}/{}: {} of {} runs",
        shard.index,
        shard.count,
        mine.len(),
        total
    );
    let outcomes = crate::runner::run_all(mine, progress);
    crate::output::write_csv_numbered(out, &outcomes, &ids).map_err(fail)?;
    write_records(out, &outcomes)?;
    Ok((ids, outcomes))
}

/// The shard a job-array task runs when `--shard` is not given: Slurm's
/// `SLURM_ARRAY_TASK_ID` (counted from `SLURM_ARRAY_TASK_MIN`, default 0) of
/// `SLURM_ARRAY_TASK_COUNT` (or `shards`), or a Kubernetes Indexed Job's
/// `JOB_COMPLETION_INDEX` (from 0) of `shards`, read only with `--shards` (any Indexed
/// Job sets it). `None` outside a job array. `var` reads the environment (a parameter
/// so that tests need not set it).
pub fn from_job_array(
    shards: Option<usize>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<(Shard, &'static str)>, String> {
    let number = |name: &str| -> Result<Option<usize>, String> {
        var(name)
            .map(|v| {
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("{name}={v}: not a number"))
            })
            .transpose()
    };
    let (index, count, source) = if let Some(id) = number("SLURM_ARRAY_TASK_ID")? {
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let count = number("SLURM_ARRAY_TASK_COUNT")?
            .or(shards)
            .ok_or("SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor --shards")?;
        let index = id.checked_sub(min).ok_or(format!(
            "SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"
        ))?;
        (index, count, "SLURM_ARRAY_TASK_ID")
    } else if let (Some(index), Some(count)) = (number("JOB_COMPLETION_INDEX")?, shards) {
        (index, count, "JOB_COMPLETION_INDEX")
    } else {
        return match shards {
            Some(_) => Err("--shards needs a job array (SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX); use --shard K/N by hand".into()),
            None => Ok(None),
        };
    };
    if shards.is_some_and(|n| n != count) {
        return Err(format!(
            "--shards {} but the job array has {count} tasks",
            shards.unwrap_or_default()
        ));
    }
    if index >= count {
        return Err(format!(
            "{source} gives task {index} (from 0) of only {count}"
        ));
    }
    Ok(Some((
        Shard {
            index: index + 1,
            count,
        },
        source,
    )))
}

/// What a shard's directory says about itself (`manifest.json`), so that a merge can
/// check it belongs with the others.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// The experiment as given to `reproduce` (built-in id or file path).
    pub experiment: String,
    /// Hash of the experiment file's text: shards of edited files do not mix.
    pub experiment_hash: String,
    /// `--quick`.
    pub quick: bool,
    /// `--seeds`, if given.
    pub seeds: Option<u64>,
    /// This shard, 1..=shards.
    pub shard: usize,
    /// Shards in all.
    pub shards: usize,
    /// Runs of the whole experiment.
    pub total_runs: usize,
    /// The runs this shard ran (indices into the experiment's run list), in order.
    pub runs: Vec<usize>,
    /// tcpfec version that ran it.
    pub version: String,
    /// A `tcpfec sim` sweep (absent for `reproduce`): what a merge needs to rebuild its
    /// run list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSpec>,
}

/// A `tcpfec sim` sweep as its shards record it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepSpec {
    /// The settings, as a TOML table of lists (`sim --config` reads the same).
    pub settings: String,
    /// First seed.
    pub seed: u64,
    /// Seeds per point.
    pub seeds: u64,
}

impl SweepSpec {
    /// The sweep's hash: shards of different sweeps do not mix.
    pub fn hash(&self) -> String {
        text_hash(&format!(
            "{}\nseed = {}\nseeds = {}\n",
            self.settings, self.seed, self.seeds
        ))
    }
}

/// File name of a shard's manifest.
pub const MANIFEST: &str = "manifest.json";

impl Manifest {
    /// Writes `dir/manifest.json`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(MANIFEST), text + "\n")
            .map_err(|e| format!("{}: {e}", dir.display()))
    }

    /// Reads `dir/manifest.json`.
    pub fn read(dir: &Path) -> Result<Manifest, String> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (not the output of `tcpfec reproduce --shard` or `tcpfec sim --shard`?)",
                path.display()
            )
        })?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// FNV-1a over the experiment text, as 16 hex digits (stable across builds and machines).
pub fn text_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Checks that `manifests` (one per shard directory, named by `dirs`) are the shards of
/// one experiment run, each run present exactly once; says what is wrong otherwise.
pub fn check_complete(manifests: &[Manifest], dirs: &[String]) -> Result<(), String> {
    let first = manifests
        .first()
        .ok_or("merge: no shard directories given")?;
    for (m, dir) in manifests.iter().zip(dirs).skip(1) {
        let same = m.experiment == first.experiment
            && m.experiment_hash == first.experiment_hash
            && m.quick == first.quick
            && m.seeds == first.seeds
            && m.total_runs == first.total_runs
            && m.shards == first.shards;
        if !same {
            return Err(format!(
                "merge: {dir} is a shard of another run ({} {}{}, {} runs, {} shards) than {} ({} {}{}, {} runs, {} shards)",
                m.experiment, m.experiment_hash, if m.quick { " --quick" } else { "" }, m.total_runs, m.shards,
                dirs[0], first.experiment, first.experiment_hash, if first.quick { " --quick" } else { "" }, first.total_runs, first.shards
            ));
        }
        if m.version != first.version {
            return Err(format!(
                "merge: {dir} was run by tcpfec {} and {} by {}: results of different versions do not mix",
                m.version, dirs[0], first.version
            ));
        }
    }
    let mut owner: Vec<Option<usize>> = vec![None; first.total_runs];
    for (s, m) in manifests.iter().enumerate() {
        for &r in &m.runs {
            let slot = owner.get_mut(r).ok_or(format!(
                "merge: {} lists run {r} of {}",
                dirs[s], first.total_runs
            ))?;
            if let Some(other) = *slot {
                return Err(format!(
                    "merge: run {r} is in both {} and {} (a shard given twice?)",
                    dirs[other], dirs[s]
                ));
            }
            *slot = Some(s);
        }
    }
    let missing: Vec<usize> = (0..first.total_runs)
        .filter(|&r| owner[r].is_none())
        .collect();
    if !missing.is_empty() {
        let have: Vec<String> = manifests
            .iter()
            .map(|m| format!("{}/{}", m.shard, m.shards))
            .collect();
        let absent: Vec<String> = (1..=first.shards)
            .filter(|k| !manifests.iter().any(|m| m.shard == *k))
            .map(|k| format!("{k}/{}", first.shards))
            .collect();
        return Err(format!(
            "merge: {} of {} runs missing (first: {:?}); shards given: {}; missing shards: {}",
            missing.len(),
            first.total_runs,
            &missing[..missing.len().min(5)],
            have.join(", "),
            absent.join(", ")
        ));
    }
    Ok(())
}

/// File in which a shard keeps each run's full record ([`crate::output::run_json`]),
/// one JSON object per line: `results.csv` holds only some metrics (a figure of, say,
/// background goodput needs more), and JSON numbers read back exactly.
pub const RECORDS: &str = "records.jsonl";

/// Writes the records of a shard's `outcomes` as `dir/records.jsonl`.
fn write_records(dir: &Path, outcomes: &[crate::runner::Outcome]) -> Result<(), String> {
    let mut text = String::new();
    for o in outcomes {
        text += &crate::output::run_json(o).to_string();
        text.push('\n');
    }
    let path = dir.join(RECORDS);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads `dir/records.jsonl`, the records of `runs` in order, checking that each is the
/// record of its run (same settings and seed).
fn read_records(dir: &Path, runs: &[Run]) -> Result<Vec<Value>, String> {
    let path = dir.join(RECORDS);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let records: Vec<Value> = text
        .lines()
        .enumerate()
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}: line {}: {e}", path.display(), n + 1))
        })
        .collect::<Result<_, _>>()?;
    if records.len() != runs.len() {
        return Err(format!(
            "{}: {} records for the {} runs its manifest lists",
            path.display(),
            records.len(),
            runs.len()
        ));
    }
    for (n, (record, run)) in records.iter().zip(runs).enumerate() {
        let mut want: Vec<(String, Value)> = run
            .params
            .iter()
            .map(|(k, v)| (k.replace('-', "_"), Value::from(v.as_str())))
            .collect();
        want.push(("seed".into(), Value::from(run.scenario.seed)));
        for (key, value) in want {
            if record.get(&key) != Some(&value) {
                return Err(format!(
                    "{}: line {}: {key} is {} where the run has {value}",
                    path.display(),
                    n + 1,
                    record.get(&key).unwrap_or(&Value::Null)
                ));
            }
        }
    }
    Ok(records)
}

/// The rows of complete shards `dirs` (with their `manifests`) of the run list `runs`:
/// each run's record, in run order, and the lines of the shards' `flows.csv` sorted by
/// run (a run's flows keep their order).
pub fn gather(
    dirs: &[PathBuf],
    manifests: &[Manifest],
    runs: &[Run],
) -> Result<(Vec<Value>, Vec<String>), String> {
    let mut records = vec![Value::Null; runs.len()];
    let mut flows: Vec<(usize, usize, String)> = Vec::new();
    for (dir, man) in dirs.iter().zip(manifests) {
        let mine: Vec<Run> = man.runs.iter().map(|&i| runs[i].clone()).collect();
        let rows = read_records(dir, &mine)?;
        for (&i, r) in man.runs.iter().zip(rows) {
            records[i] = r;
        }
        let path = dir.join("flows.csv");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (n, line) in text.lines().skip(1).enumerate() {
            let run = line
                .split(',')
                .next()
                .and_then(|c| c.parse().ok())
                .ok_or(format!("{}: line {}: no run number", path.display(), n + 2))?;
            flows.push((run, flows.len(), line.to_string()));
        }
    }
    flows.sort_by_key(|&(run, at, _)| (run, at));
    Ok((records, flows.into_iter().map(|(_, _, l)| l).collect()))
}

/// Writes the gathered rows of [`gather`] as `out/results.csv` and `out/flows.csv`.
pub fn write_merged(
    out: &Path,
    runs: &[Run],
    records: &[Value],
    flows: &[String],
) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", out.display());
    std::fs::create_dir_all(out).map_err(fail)?;
    crate::output::write_results_csv(out, runs.iter(), records).map_err(fail)?;
    let mut f = String::from(crate::output::FLOWS_HEADER);
    for line in flows {
        f += line;
        f.push('\n');
    }
    std::fs::write(out.join("flows.csv"), f).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dealt in order, every run goes to exactly one of the shards, and no shard's load
    /// exceeds another's by more than the costliest run.
    #[test]
    fn a_streamed_deal_covers_every_run_once_and_balances() {
        let cost = |i: usize| ((i * 7919) % 97 + 1) as f64;
        let n = 10_000;
        let count = 7;
        let mut seen = vec![0u32; n];
        let mut loads = Vec::new();
        for index in 1..=count {
            let mine = select_streamed(n, |i| Ok(cost(i)), Shard { index, count }).unwrap();
            for &i in &mine {
                seen[i] += 1;
            }
            loads.push(mine.iter().map(|&i| cost(i)).sum::<f64>());
        }
        assert!(seen.iter().all(|&k| k == 1));
        let (lo, hi) = loads
            .iter()
            .fold((f64::MAX, 0.0f64), |m, &l| (m.0.min(l), m.1.max(l)));
        assert!(hi - lo <= 97.0, "loads {loads:?}");
        // A cost that cannot be computed stops the deal with its reason.
        let e = select_streamed(
            3,
            |i| if i == 2 { Err("bad".into()) } else { Ok(1.0) },
            Shard { index: 1, count: 2 },
        );
        assert_eq!(e, Err("bad".to_string()));
    }

    #[test]
    fn shards_parse_and_bad_ones_are_refused() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "2", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_job_array_task_finds_its_shard_in_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        // Slurm array 1-4: task 3 is shard 3/4.
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        let (sh, from) = from_job_array(None, slurm).unwrap().unwrap();
        assert_eq!(
            (sh, from),
            (Shard { index: 3, count: 4 }, "SLURM_ARRAY_TASK_ID")
        );
        // Kubernetes: index 0 of --shards 8 is shard 1/8.
        let k8s = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(
            from_job_array(Some(8), k8s).unwrap().unwrap().0,
            Shard { index: 1, count: 8 }
        );
        // Without --shards an Indexed Job's index is not read.
        assert_eq!(
            from_job_array(None, env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap(),
            None
        );
        // Out of range, a count that disagrees, and no array at all.
        assert!(from_job_array(Some(2), env(&[("JOB_COMPLETION_INDEX", "2")])).is_err());
        let slurm4 = env(&[
            ("SLURM_ARRAY_TASK_ID", "0"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert!(from_job_array(Some(3), slurm4).is_err());
        assert_eq!(from_job_array(None, env(&[])).unwrap(), None);
        assert!(from_job_array(Some(4), env(&[])).is_err());
    }

    fn manifest(shard: usize, runs: Vec<usize>) -> Manifest {
        Manifest {
            experiment: "x".into(),
            experiment_hash: text_hash("x"),
            quick: false,
            seeds: None,
            shard,
            shards: 2,
            total_runs: 4,
            runs,
            version: "1".into(),
            sweep: None,
        }
    }

    #[test]
    fn a_missing_or_doubled_run_and_a_foreign_shard_are_named() {
        let dirs: Vec<String> = ["a", "b"].map(String::from).to_vec();
        let ok = [manifest(1, vec![0, 3]), manifest(2, vec![1, 2])];
        assert!(check_complete(&ok, &dirs).is_ok());
        let e = check_complete(&[manifest(1, vec![0, 3])], &dirs[..1]).unwrap_err();
        assert!(
            e.contains("2 of 4 runs missing") && e.contains("missing shards: 2/2"),
            "{e}"
        );
        let e =
            check_complete(&[manifest(1, vec![0, 3]), manifest(1, vec![0, 3])], &dirs).unwrap_err();
        assert!(e.contains("run 0 is in both a and b"), "{e}");
        let mut other = manifest(2, vec![1, 2]);
        other.experiment_hash = text_hash("y");
        let e = check_complete(&[manifest(1, vec![0, 3]), other], &dirs).unwrap_err();
        assert!(e.contains("b is a shard of another run"), "{e}");
    }
}
