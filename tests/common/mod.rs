//! Helpers the command-line test files share.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::process::Command;

/// The `tcpfec` binary under test, as a command to add arguments to. A test run inside a
/// Slurm job array must not shard the experiments it runs, so the array's task id is
/// removed from its environment.
pub fn tcpfec() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tcpfec"));
    c.env_remove("SLURM_ARRAY_TASK_ID");
    // No path cache carried from one test into the next.
    c.env("TCPFEC_NO_RESUME", "1");
    c
}

/// `csv` without its column `name` (say `wall_s`, the one thing a merge may change).
pub fn without_column(csv: &str, name: &str) -> String {
    // Cells split at commas outside double quotes (a Gilbert–Elliott model is one quoted
    // cell with commas in it).
    let cells = |line: &str| -> Vec<String> {
        let mut out = vec![String::new()];
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => {
                    out.push(String::new());
                    continue;
                }
                _ => {}
            }
            out.last_mut().unwrap().push(c);
        }
        out
    };
    let header = cells(csv.lines().next().unwrap_or_default());
    let at = header
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no {name} column"));
    csv.lines()
        .map(|l| {
            let mut row = cells(l);
            assert_eq!(row.len(), header.len(), "row of another width: {l}");
            row.remove(at);
            row.join(",")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads JSON lines (a command's `--json` output) until one has `"event": event`;
/// returns it.
pub fn wait_event(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    event: &str,
) -> serde_json::Value {
    for line in lines.by_ref() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if v["event"] == event {
            return v;
        }
    }
    panic!("no {event} event");
}
