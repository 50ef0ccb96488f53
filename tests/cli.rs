//! The command line as a user meets it: the demo, JSON output, sweeps and bad input.

mod common;

use common::without_column;

fn tcpfec(args: &[&str]) -> std::process::Output {
    common::tcpfec().args(args).output().expect("run tcpfec")
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
        "flow_goodput_mbps",
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
        (
            &["sim", "--duration", "99999999999999999999min"],
            "--duration",
        ),
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

/// Asserts that `args` fails at once with exit status 2 and one line naming `needle`.
fn refused_quickly(args: &[&str], needle: &str) {
    let started = std::time::Instant::now();
    let out = tcpfec(args);
    let took = started.elapsed();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    // Refused before simulating anything: well within a second, on any machine.
    assert!(took.as_secs_f64() < 1.0, "{args:?} took {took:?}");
}

#[test]
fn degenerate_values_are_refused_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--max-window", "0"], "--max-window"),
        (&["--buffer", "0"], "--buffer"),
        (&["--host-buffer", "0"], "--host-buffer"),
        (&["--bottleneck", "11999bit"], "--bottleneck"),
        (&["--access-rate", "1kbit"], "--access-rate"),
        (
            &["--packet-size", "1000", "--bottleneck", "7kbit"],
            "--bottleneck",
        ),
        (&["--min-rto", "0s"], "--min-rto"),
        (&["--min-rto", "2min"], "--min-rto"),
        (&["--start", "300s"], "--start"),
        (&["--start", "0s..300s"], "--start"),
        (&["--start", "100s", "--window", "0s..50s"], "--start"),
        (&["--duration", "100000s"], "--duration"),
        (&["--duration", "99999999999999999999999s"], "--duration"),
        (&["--delay", "2min"], "--delay"),
        (&["--access-delay", "1ms..2min"], "--access-delay"),
        (&["--packet-size", "40"], "--packet-size"),
        (&["--flows", "0"], "--flows"),
        (&["--flows", "-3"], "--flows"),
        (&["--flows", "200000"], "--flows"),
        (&["--background", "4294967295"], "--background"),
        (&["--seeds", "0"], "--seeds"),
        (
            &["--seed", "18446744073709551615", "--seeds", "2"],
            "--seed",
        ),
        (&["--loss", "nan"], "--loss"),
        (
            &["--loss-schedule", "1%/2%@10000000000000s"],
            "--loss-schedule",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["sim", "-q"];
        all.extend_from_slice(args);
        refused_quickly(&all, needle);
    }
}

#[test]
fn config_files_are_checked_like_flags_and_limited_in_size() {
    let dir = std::env::temp_dir().join(format!("tcpfec-cli-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.toml");
    let path = file.to_str().unwrap();
    for (text, needle) in [
        ("buffer = 0\n", "--buffer"),
        ("max_window = [10, 0]\n", "--max-window"),
        ("min-rto = \"0ms\"\n", "--min-rto"),
        ("duration = \"10s\"\nstart = \"20s\"\n", "--start"),
    ] {
        std::fs::write(&file, text).unwrap();
        refused_quickly(&["sim", "--config", path], needle);
    }
    // Two MiB of comments: valid TOML, but no settings file is that large.
    std::fs::write(&file, "# padding\n".repeat(210_000)).unwrap();
    refused_quickly(&["sim", "--config", path], "larger than 1024 KiB");
    // An endless file is refused after the first MiB, not read to exhaustion.
    if std::path::Path::new("/dev/zero").exists() {
        refused_quickly(&["sim", "--config", "/dev/zero"], "larger than 1024 KiB");
    }
    // An experiment file for `reproduce` goes through the same checks.
    std::fs::write(
        &file,
        "id = \"x\"\ntitle = \"x\"\nseeds = 1\nquick_seeds = 1\n[base]\nbuffer = \"0\"\n\
         [[figure]]\nid = \"f\"\ntitle = \"f\"\nx = \"delay\"\nx_values = [\"10ms\"]\n\
         x_label = \"x\"\nseries = [\"sack\"]\nmetric = \"goodput_mbps\"\ny_label = \"y\"\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = out_dir.to_str().unwrap();
    refused_quickly(&["reproduce", path, "--out", out, "-q"], "--buffer");
    std::fs::write(&file, "# padding\n".repeat(210_000)).unwrap();
    refused_quickly(
        &["reproduce", path, "--out", out, "-q"],
        "larger than 1024 KiB",
    );
    assert!(
        !out_dir.exists(),
        "nothing written for a refused experiment"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn oversized_sweeps_are_refused_before_starting_with_the_override() {
    // 20 000 runs, over the default of 10 000.
    refused_quickly(&["sim", "--seeds", "20000"], "--max-runs 20000");
    // 2^63 seeds at two delays: 2^64 runs, more than a u64 counts.
    refused_quickly(
        &[
            "sim",
            "--seeds",
            "9223372036854775808",
            "--delay",
            "1ms,2ms",
        ],
        "more runs than can be counted",
    );
    // One run of a simulated day at 10 Gb/s: some 4e11 events, over a hundred core-hours.
    refused_quickly(
        &["sim", "--bottleneck", "10gbit", "--duration", "86400s"],
        "--i-know",
    );
    // The same on `reproduce`: a built-in experiment with a million seeds per point.
    refused_quickly(
        &["reproduce", "sato-ch4", "--seeds", "1000000", "-q"],
        "--max-runs 1000000",
    );
    // The overrides are accepted: 12 000 one-millisecond runs are allowed with --max-runs.
    let out = tcpfec(&[
        "sim",
        "--seeds",
        "12000",
        "--max-runs",
        "12000",
        "--duration",
        "1ms",
        "--json",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        12_000
    );
}

#[test]
fn ten_thousand_flows_run_in_bounded_memory() {
    // The measurement wrapper reports the peak resident size of the one child it runs.
    let exe = env!("CARGO_BIN_EXE_tcpfec");
    let out = tcpfec(&[
        "bench",
        "sim",
        "--measure",
        "--",
        exe,
        "sim",
        "--topology",
        "dumbbell",
        "--flows",
        "10000",
        "--duration",
        "1ms",
        "--json",
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak_mb = v["peak_rss_mb"].as_f64().unwrap();
    // About 40 KB per flow; a table of routes between 20 002 nodes alone would be 1.6 GB.
    assert!(peak_mb < 1000.0, "peak {peak_mb} MB for 10 000 flows");
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
    for scheme in [
        "tahoe",
        "newreno",
        "sack",
        "cubic",
        "bbr1",
        "bbr",
        "anker-8-1",
        "auto",
    ] {
        assert!(text.contains(scheme), "{text}");
    }
    // FEC on this path is the point of the demo: auto must close most of the gap.
    let closed: f64 = text
        .lines()
        .find(|l| l.starts_with("auto:"))
        .and_then(|l| l.split("closes ").nth(1))
        .and_then(|l| l.split(' ').next())
        .and_then(|v| v.parse().ok())
        .expect("auto's line says how much of the gap it closes");
    assert!(closed > 50.0, "{text}");
    // And it says where it stands against BBR, the best without FEC on this path.
    let auto_line = text.lines().find(|l| l.starts_with("auto:")).unwrap();
    assert!(
        auto_line.contains("the best scheme without FEC (bbr"),
        "{auto_line}"
    );
    let svg = std::fs::read_to_string(dir.join("cwnd.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("polyline"),
        "not a line plot"
    );
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9, "header + 8 schemes");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_fuzz_runs_every_scheme_and_counts_no_lost_byte() {
    let out = tcpfec(&["bench", "fuzz", "--schedules", "3", "--jobs", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for scheme in tcpfec_fuzz::pair::SCHEMES {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(scheme))
            .unwrap_or_else(|| panic!("no line for {scheme}:\n{text}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], "3", "{line}");
        assert_eq!(
            &cols[4..7],
            ["0", "0", "0"],
            "wrong, missing, failures: {line}"
        );
    }
    assert!(text.lines().any(|l| l.starts_with("total")), "{text}");
}

#[test]
fn the_trace_shows_auto_following_a_loss_change() {
    let dir = std::env::temp_dir().join(format!("tcpfec-auto-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = tcpfec(&[
        "sim",
        "-q",
        "--scheme",
        "auto",
        "--delay",
        "20ms",
        "--bottleneck",
        "20mbit",
        "--buffer",
        "70",
        "--loss-schedule",
        "0%/5%@10s",
        "--duration",
        "20s",
        "--trace",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("cwnd-0.csv")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, p, m) = (col("time_s"), col("auto_loss_rate"), col("auto_m"));
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    let at = |s: f64| rows.iter().find(|r| r[t] >= s).unwrap();
    // Clean: no loss estimated, one probe repair per block.
    assert_eq!((at(9.5)[p], at(9.5)[m]), (0.0, 1.0));
    // Five seconds into 5 % loss the estimate and the repairs have followed.
    let lossy = at(15.0);
    assert!((0.03..0.07).contains(&lossy[p]), "{lossy:?}");
    assert!(lossy[m] >= 2.0, "{lossy:?}");
}

#[test]
fn a_report_is_rebuilt_from_its_results_and_a_foreign_results_file_is_refused() {
    let dir = std::env::temp_dir().join(format!("tcpfec-report-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tiny.toml");
    std::fs::write(
        &file,
        r#"
id = "tiny"
title = "Tiny"
seeds = 2
quick_seeds = 1
[base]
delay = "20ms"
duration = "5s"
loss = "0.5%"
[[figure]]
id = "f"
title = "f"
x = "delay"
x_values = ["10ms", "20ms"]
x_label = "Delay"
series = ["reno", "sack"]
metric = "goodput_mbps"
y_label = "Goodput"
[[figure]]
id = "capped"
title = "capped"
x = "delay"
x_values = ["10ms"]
x_label = "Delay"
series = ["sack"]
metric = "goodput_mbps"
y_label = "Goodput"
[figure.set]
max-window = "4"
[[figure]]
id = "transfer"
title = "transfer"
x = "delay"
x_values = ["10ms"]
x_label = "Delay"
series = ["sack"]
metric = "transfer_mbps"
y_label = "Mb/s"
[figure.set]
transfer = "100KB"
[[figure]]
id = "shared"
title = "shared"
x = "delay"
x_values = ["10ms"]
x_label = "Delay"
series = ["sack"]
metric = "goodput_mbps/background_goodput_mbps"
y_label = "Ratio"
[figure.set]
topology = "dumbbell"
background = "1"
background-scheme = "reno"
[[claim]]
text = "sack beats reno"
figure = "f"
kind = "above"
a = "sack"
b = "reno"
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "reproduce",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ];
        v.extend_from_slice(extra);
        tcpfec(&v)
    };
    let ran = args(&[]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    std::fs::remove_file(out.join("report.md")).unwrap();
    let transfer_figure = std::fs::read_to_string(out.join("transfer.csv")).unwrap();
    let shared_figure = std::fs::read_to_string(out.join("shared.csv")).unwrap();
    let again = args(&["--report-only"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        report
    );
    // A metric derived from the settings (a transfer's Mb/s) has no column of its own:
    // it is derived again, and its figure comes back the same.
    assert_eq!(
        std::fs::read_to_string(out.join("transfer.csv")).unwrap(),
        transfer_figure
    );
    // So does a ratio to the background flows' goodput, which has a column.
    assert_eq!(
        std::fs::read_to_string(out.join("shared.csv")).unwrap(),
        shared_figure
    );
    // A setting only some runs have gets a column, empty in the other rows.
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let capped = header
        .iter()
        .position(|c| *c == "max_window")
        .expect("column");
    let cells: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(cells.iter().filter(|r| r[capped] == "4").count(), 2);
    assert!(cells
        .iter()
        .filter(|r| r[capped] != "4")
        .all(|r| r[capped].is_empty()));
    // A file from before that column existed is read by position and written back whole.
    std::fs::write(
        out.join("results.csv"),
        without_column(&csv, "max_window") + "\n",
    )
    .unwrap();
    let legacy = args(&["--report-only"]);
    assert!(
        legacy.status.success(),
        "{}",
        String::from_utf8_lossy(&legacy.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        report
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.csv")).unwrap(),
        csv
    );
    // The results of other runs (here: seed 2's row claims to be seed 7) are refused.
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let seed_col = header.iter().position(|c| *c == "seed").unwrap();
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let mut cells: Vec<&str> = lines[2].split(',').collect();
    cells[seed_col] = "7";
    lines[2] = cells.join(",");
    std::fs::write(out.join("results.csv"), lines.join("\n") + "\n").unwrap();
    let refused = args(&["--report-only"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("row 2 has seed = \"7\""), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A CSV file without column `name` (cells without commas, as tcpfec writes them here).
#[test]
fn four_shards_merge_into_exactly_what_one_process_writes() {
    let dir = std::env::temp_dir().join(format!("tcpfec-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sweep.toml");
    let experiment = r#"
id = "sweep"
title = "Sweep"
seeds = 2
quick_seeds = 1
[base]
duration = "4s"
loss = "1%"
[[figure]]
id = "f"
title = "f"
x = "delay"
x_values = ["5ms", "20ms", "80ms"]
x_label = "Delay"
series = ["reno", "sack", "anker-8-1"]
metric = "goodput_mbps"
y_label = "Goodput"
[[figure]]
id = "total"
title = "total"
x = "delay"
x_values = ["5ms", "80ms"]
x_label = "Delay"
series = ["reno", "sack"]
metric = "total_goodput_mbps"
y_label = "Goodput"
[[figure]]
id = "cwnd"
title = "cwnd"
x = "time"
x_values = []
seeds = 1
x_label = "Time"
series = ["reno", "anker-8-1"]
metric = "cwnd"
y_label = "cwnd"
[[claim]]
text = "sack beats reno"
figure = "f"
kind = "above"
a = "sack"
b = "reno"
"#;
    std::fs::write(&file, experiment).unwrap();
    let file = file.to_str().unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    ok(tcpfec(&["reproduce", file, "--out", &path("one"), "-q"]));
    // The shards as separate processes, in a shuffled order.
    for k in [3, 1, 4, 2] {
        let shard = format!("{k}/4");
        let out = path(&format!("s{k}"));
        ok(tcpfec(&[
            "reproduce",
            file,
            "--shard",
            &shard,
            "--out",
            &out,
            "-q",
        ]));
    }
    let shards: Vec<String> = [2, 4, 1, 3].map(|k| path(&format!("s{k}"))).to_vec();
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    let merged = path("merged");
    args.extend(["--out", &merged]);
    ok(tcpfec(&args));
    let read = |d: &str, f: &str| std::fs::read_to_string(dir.join(d).join(f)).unwrap();
    assert_eq!(
        without_column(&read("merged", "results.csv"), "wall_s"),
        without_column(&read("one", "results.csv"), "wall_s")
    );
    // Figures of a derived metric, and of time series, too.
    for f in [
        "flows.csv",
        "report.md",
        "f.csv",
        "f.svg",
        "total.csv",
        "cwnd.csv",
        "cwnd.svg",
        "samples.csv",
    ] {
        assert_eq!(read("merged", f), read("one", f), "{f}");
    }
    // A metric derived from two columns (the flows' goodput and the background flows')
    // comes back from results.csv alone.
    let total = read("one", "total.csv");
    ok(tcpfec(&[
        "reproduce",
        file,
        "--out",
        &path("one"),
        "--report-only",
    ]));
    assert_eq!(read("one", "total.csv"), total);
    // A file from before one of those columns existed cannot draw it without simulating.
    let csv = read("one", "results.csv");
    std::fs::write(
        dir.join("one").join("results.csv"),
        without_column(&csv, "background_goodput_mbps") + "\n",
    )
    .unwrap();
    let e = tcpfec(&["reproduce", file, "--out", &path("one"), "--report-only"]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("total: its metric total_goodput_mbps"),
        "{msg}"
    );
    // A time series can, from samples.csv.
    let start = experiment.find("[[figure]]\nid = \"total\"").unwrap();
    let end = start + 1 + experiment[start + 1..].find("[[figure]]").unwrap();
    let series_only = format!("{}{}", &experiment[..start], &experiment[end..]);
    std::fs::write(dir.join("series.toml"), &series_only).unwrap();
    let series_file = dir.join("series.toml");
    let series_file = series_file.to_str().unwrap();
    ok(tcpfec(&[
        "reproduce",
        series_file,
        "--out",
        &path("series"),
        "-q",
    ]));
    let before = read("series", "cwnd.csv");
    std::fs::remove_file(dir.join("series").join("cwnd.csv")).unwrap();
    ok(tcpfec(&[
        "reproduce",
        series_file,
        "--out",
        &path("series"),
        "--report-only",
    ]));
    assert_eq!(read("series", "cwnd.csv"), before);
    assert!(read("one", "total.csv")
        .lines()
        .nth(1)
        .is_some_and(|l| !l.contains("NaN")));
    assert!(read("one", "cwnd.csv").lines().count() > 50);
    // Every shard ran something: balanced by cost, not all in one.
    for k in 1..=4 {
        let rows = read(&format!("s{k}"), "results.csv").lines().count() - 1;
        assert!(rows >= 1, "shard {k} has no runs");
    }
    // A missing shard is named; so is one given twice.
    let e = tcpfec(&[
        "merge", &shards[0], &shards[1], &shards[2], "--out", &merged,
    ]);
    assert!(!e.status.success());
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(msg.contains("missing shards: 3/4"), "{msg}");
    let e = tcpfec(&[
        "merge", &shards[0], &shards[0], &shards[1], &shards[2], &shards[3],
    ]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("in both"));
    // A shard of an edited experiment does not mix with the others.
    std::fs::write(dir.join("sweep.toml"), experiment.replace("4s", "3s")).unwrap();
    let edited = path("edited");
    ok(tcpfec(&[
        "reproduce",
        file,
        "--shard",
        "3/4",
        "--out",
        &edited,
        "-q",
    ]));
    let e = tcpfec(&["merge", &shards[0], &shards[1], &edited, &shards[3]]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(msg.contains("is a shard of another run"), "{msg}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sim_sweep_in_four_shards_merges_into_what_one_process_writes() {
    let dir = std::env::temp_dir().join(format!("tcpfec-sim-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    // Gilbert–Elliott models hold commas: the manifest must carry the list intact.
    let sweep = |duration: &str, extra: &[&str]| -> std::process::Output {
        let mut args = vec![
            "sim",
            "-q",
            "--scheme",
            "reno,sack,anker-8-1",
            "--delay",
            "5ms,20ms,80ms",
            "--ge",
            "0.01,0.5,0,1;0.002,0.3,0,1",
            "--duration",
            duration,
            "--seeds",
            "2",
        ];
        args.extend_from_slice(extra);
        tcpfec(&args)
    };
    let one = ok(sweep("3s", &["--csv", &path("one")]));
    assert!(String::from_utf8_lossy(&one.stdout).contains("results.csv"));
    let sharded = path("sharded");
    for k in [3, 1, 4, 2] {
        let shard = format!("{k}/4");
        ok(sweep("3s", &["--shard", &shard, "--csv", &sharded]));
    }
    let shard_dir = |k: usize| path(&format!("sharded/shard-{k}-of-4"));
    let shards: Vec<String> = [2, 4, 1, 3].map(shard_dir).to_vec();
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(String::as_str));
    ok(tcpfec(&args));
    let read = |d: &str, f: &str| std::fs::read_to_string(dir.join(d).join(f)).unwrap();
    let merged = read("sharded", "results.csv");
    assert_eq!(merged.lines().count(), 1 + 36);
    assert_eq!(
        without_column(&merged, "wall_s"),
        without_column(&read("one", "results.csv"), "wall_s")
    );
    assert_eq!(read("sharded", "flows.csv"), read("one", "flows.csv"));
    // A shard of another sweep, and a shard that went missing, are refused by name.
    ok(sweep("2s", &["--shard", "3/4", "--csv", &path("other")]));
    let other = path("other/shard-3-of-4");
    let e = tcpfec(&["merge", &shards[0], &shards[1], &other, &shards[3]]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(msg.contains("is a shard of another run"), "{msg}");
    let e = tcpfec(&["merge", &shards[0], &shards[1], &shards[2]]);
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(msg.contains("missing shards: 3/4"), "{msg}");
    // A shard needs somewhere to put its rows.
    let e = sweep("3s", &["--shard", "1/4"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("--shard needs --csv"));
    std::fs::remove_dir_all(&dir).unwrap();
}
