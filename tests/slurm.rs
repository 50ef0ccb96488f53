//! The Slurm recipes of `deploy/slurm/` on a real Slurm: a `tcpfec sim` sweep and a
//! `tcpfec reproduce` experiment, each submitted as a 4-task job array with its merge as
//! a dependent job, must write what one process writes. Skipped, with a message, where
//! no Slurm answers; `sudo deploy/slurm/single-node.sh` sets up a one-node Slurm.

mod common;

use common::without_column;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the test cannot run here, if it cannot.
fn no_slurm() -> Option<String> {
    let answers = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
    };
    if !answers("sbatch", &["--version"]) {
        return Some("sbatch not found".into());
    }
    if !answers("sinfo", &["-h", "-t", "idle,mixed,allocated", "-o", "%n"]) {
        return Some("sbatch is there but no Slurm node is up".into());
    }
    None
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `script` from `deploy/slurm` in `dir` with `tcpfec` first on the PATH (Slurm
/// passes the environment on to the jobs) and SBATCH_WAIT set, so every `sbatch` in it
/// returns only when its job has ended.
fn submit(dir: &Path, script: &str, args: &[&str]) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tcpfec"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(root().join("deploy/slurm").join(script))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("SBATCH_WAIT", "1")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .output()
        .expect("run the submit script");
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tcpfec(dir: &Path, args: &[&str]) {
    let out = common::tcpfec()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tcpfec");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn a_slurm_job_array_of_four_shards_merges_into_what_one_process_writes() {
    if let Some(why) = no_slurm() {
        eprintln!(
            "skipped: {why}. To run this test, start a one-node Slurm: \
             sudo deploy/slurm/single-node.sh (installs slurm-wlm and munge)"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("tcpfec-slurm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A sweep from a settings file.
    std::fs::write(
        dir.join("sweep.toml"),
        "scheme = [\"reno\", \"sack\", \"anker-8-1\"]\ndelay = [\"5ms\", \"20ms\", \"80ms\"]\n\
         duration = \"3s\"\nloss = \"1%\"\n",
    )
    .unwrap();
    tcpfec(
        &dir,
        &["sim", "-q", "--config", "sweep.toml", "--csv", "one"],
    );
    submit(&dir, "submit-sweep.sh", &["sweep.toml", "4", "array"]);
    for k in 1..=4 {
        let shard = dir.join(format!("array/shard-{k}-of-4"));
        assert!(
            shard.join("manifest.json").exists(),
            "task {k} wrote nothing"
        );
    }
    assert_eq!(
        without_column(&read(&dir, "array/results.csv"), "wall_s"),
        without_column(&read(&dir, "one/results.csv"), "wall_s")
    );
    assert_eq!(read(&dir, "array/flows.csv"), read(&dir, "one/flows.csv"));
    // An experiment, through reproduce.sbatch and merge.sbatch.
    std::fs::write(
        dir.join("tiny.toml"),
        r#"
id = "tiny"
title = "Tiny"
seeds = 2
quick_seeds = 1
[base]
duration = "3s"
loss = "1%"
[[figure]]
id = "f"
title = "f"
x = "delay"
x_values = ["5ms", "20ms", "80ms"]
x_label = "Delay"
series = ["reno", "sack"]
metric = "goodput_mbps"
y_label = "Goodput"
"#,
    )
    .unwrap();
    tcpfec(&dir, &["reproduce", "tiny.toml", "-q", "--out", "tiny-one"]);
    submit(&dir, "submit.sh", &["tiny.toml", "4", "tiny"]);
    assert_eq!(
        without_column(&read(&dir, "results/tiny/results.csv"), "wall_s"),
        without_column(&read(&dir, "tiny-one/results.csv"), "wall_s")
    );
    for f in ["flows.csv", "report.md", "f.csv"] {
        assert_eq!(
            read(&dir, &format!("results/tiny/{f}")),
            read(&dir, &format!("tiny-one/{f}")),
            "{f}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
