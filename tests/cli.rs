//! The command line as a user meets it: the demo, JSON output, sweeps and bad input.

use std::process::Command;

fn tcpfec(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tcpfec"))
        .args(args)
        .output()
        .expect("run tcpfec")
}

fn without_wall_time(json: &str) -> Vec<serde_json::Value> {
    json.lines()
        .map(|l| {
            let mut v: serde_json::Value =
                serde_json::from_str(l).expect("one JSON object per line");
            v.as_object_mut().unwrap().remove("wall_s");
            v
        })
        .collect()
}

const SHORT: &[&str] = &[
    "sim",
    "--delay",
    "20ms",
    "--duration",
    "20s",
    "--loss",
    "0.5%",
    "--json",
    "-q",
];

#[test]
fn same_seed_gives_identical_json() {
    // wall_s is the one field that measures the machine rather than the simulation.
    let a = tcpfec(SHORT);
    let b = tcpfec(SHORT);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let (a, b) = (
        String::from_utf8(a.stdout).unwrap(),
        String::from_utf8(b.stdout).unwrap(),
    );
    assert_eq!(without_wall_time(&a), without_wall_time(&b));
    let v = &without_wall_time(&a)[0];
    for key in [
        "scheme",
        "seed",
        "delay",
        "goodput_mbps",
        "flows",
        "retransmission_rate",
        "data_loss_rate",
        "fast_recoveries",
        "timeouts",
        "completion_time_s",
        "events",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert!(v["goodput_mbps"].as_f64().unwrap() > 0.0);
}

#[test]
fn comma_lists_sweep_every_combination_in_order() {
    let mut args = SHORT.to_vec();
    args.extend(["--scheme", "reno,sack", "--buffer", "20,50", "--seeds", "2"]);
    let out = tcpfec(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = without_wall_time(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(rows.len(), 8);
    let keys: Vec<(String, String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["scheme"].as_str().unwrap().to_string(),
                r["buffer"].as_str().unwrap().to_string(),
                r["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys[0], ("reno".into(), "20".into(), 1));
    assert_eq!(keys[1], ("reno".into(), "20".into(), 2));
    assert_eq!(keys[7], ("sack".into(), "50".into(), 2));
}

#[test]
fn bad_input_is_one_clear_line_and_exit_code_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["sim", "--scheme", "warp"], "unknown scheme"),
        (&["sim", "--bottleneck", "-5mbit"], "--bottleneck"),
        (&["sim", "--delay", "20xs"], "--delay"),
        (&["sim", "--config", "/nonexistent/x.toml"], "--config"),
        (&["sim", "--window", "10s..500s"], "--window"),
        (&["sim", "--ge", "1,2,3"], "--ge"),
    ];
    for (args, needle) in cases {
        let out = tcpfec(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn toml_config_runs_and_flags_override_it() {
    let dir = std::env::temp_dir().join(format!("tcpfec-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        "delay = \"20ms\"\nduration = \"10s\"\nscheme = [\"reno\", \"cubic\"]\n",
    )
    .unwrap();
    let out = tcpfec(&[
        "sim",
        "--config",
        file.to_str().unwrap(),
        "--scheme",
        "sack",
        "--json",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = without_wall_time(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["scheme"], "sack");
    assert_eq!(rows[0]["delay"], "20ms");
    std::fs::write(&file, "delay = ").unwrap();
    let out = tcpfec(&["sim", "--config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_writes_a_table_and_a_figure() {
    let dir = std::env::temp_dir().join(format!("tcpfec-demo-{}", std::process::id()));
    let out = tcpfec(&["demo", "--out", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for scheme in ["tahoe", "newreno", "sack", "cubic"] {
        assert!(text.contains(scheme), "{text}");
    }
    let svg = std::fs::read_to_string(dir.join("cwnd.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("polyline"),
        "not a line plot"
    );
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "header + 4 schemes");
    std::fs::remove_dir_all(&dir).ok();
}

/// Degenerate or oversized input is refused at once with the flag named and exit 2,
/// before any simulation or allocation happens.
#[test]
fn degenerate_and_oversized_input_is_refused_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--max-window", "0"], "--max-window"),
        (&["--buffer", "0"], "--buffer"),
        (&["--host-buffer", "0"], "--host-buffer"),
        (&["--bottleneck", "10bit"], "--bottleneck"),
        (&["--access-rate", "1kbit"], "--access-rate"),
        (&["--min-rto", "0ms"], "--min-rto"),
        (&["--start", "300s"], "--start"),
        (&["--start", "10s..250s"], "--start"),
        (&["--duration", "2000min"], "--duration"),
        (&["--flows", "1000000"], "--i-know"),
        (
            &["--bottleneck", "100gbit", "--duration", "80000s"],
            "--i-know",
        ),
        (
            &["--delay", "1ms,2ms,3ms", "--seeds", "5000"],
            "--max-runs 15000",
        ),
        (&["--seeds", "0"], "--seeds"),
    ];
    for (args, flag) in cases {
        let start = std::time::Instant::now();
        let o = tcpfec(&[&["sim", "-q"], *args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{args:?}"
        );
    }
    // The caps move with the flags that name them.
    let o = tcpfec(&[
        "sim",
        "-q",
        "--delay",
        "1ms,2ms",
        "--seeds",
        "2",
        "--max-runs",
        "4",
        "--duration",
        "1s",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Reproduce checks its seeds too.
    let o = tcpfec(&["reproduce", "anker", "--seeds", "100000"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--seeds"));
}

#[test]
fn config_files_must_be_small_regular_files() {
    let dir = std::env::temp_dir().join(format!("tcpfec-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.toml");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).unwrap();
    for path in [
        big.as_path(),
        dir.as_path(),
        std::path::Path::new("/dev/zero"),
    ] {
        let o = tcpfec(&["sim", "-q", "--config", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", path.display());
        assert!(String::from_utf8_lossy(&o.stderr).contains("--config"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 40 000 dumbbell flows used to need 25 GB for routing tables (one entry per pair of
/// nodes); routes are now kept per router, so such a run starts and ends normally.
#[test]
fn forty_thousand_flows_fit_in_memory() {
    let o = tcpfec(&[
        "sim",
        "-q",
        "--json",
        "--topology",
        "dumbbell",
        "--flows",
        "40000",
        "--duration",
        "200ms",
        "--delay",
        "10ms",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["flows"].as_array().unwrap().len(), 40_000);
}
