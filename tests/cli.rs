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
        (&["sim", "--duration", "99999999999999999999min"], "--duration"),
        (&["bench", "fuzz", "--scheme", "warp"], "--scheme"),
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

#[test]
fn bench_fuzz_runs_every_scheme_and_counts_no_lost_byte() {
    let out = tcpfec(&["bench", "fuzz", "--schedules", "3", "--jobs", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for scheme in tcpfec_fuzz::pair::SCHEMES {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(scheme))
            .unwrap_or_else(|| panic!("no line for {scheme}:\n{text}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], "3", "{line}");
        assert_eq!(&cols[4..7], ["0", "0", "0"], "wrong, missing, failures: {line}");
    }
    assert!(text.lines().any(|l| l.starts_with("total")), "{text}");
}
