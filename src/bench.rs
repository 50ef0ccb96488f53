//! `tcpfec bench sim`: simulator speed on two reference scenarios, each in its own process
//! so that its peak memory is measured alone.

use core::time::Duration;
use serde_json::json;
use std::process::Command;
use std::time::Instant as WallClock;
use tcpfec_proto::Scheme;
use tcpfec_sim::{LossSpec, Scenario, Start, Topology};

/// The reference scenarios: (id, description, scenario).
pub fn scenarios() -> Vec<(&'static str, &'static str, Scenario)> {
    let path = Scenario {
        delay: Duration::from_millis(10),
        window: (Duration::ZERO, Duration::from_secs(220)),
        ..Scenario::default()
    };
    let dumbbell = Scenario {
        topology: Topology::Dumbbell,
        flows: 16,
        bottleneck_bps: 50_000_000,
        access_bps: 100_000_000,
        delay: Duration::from_millis(100),
        access_delay: (Duration::from_millis(1), Duration::from_millis(5)),
        buffer: 300,
        packet_size: 1040,
        loss: LossSpec::None,
        scheme: Scheme::parse("newreno").expect("built-in"),
        duration: Duration::from_secs(60),
        window: (Duration::ZERO, Duration::from_secs(60)),
        start: Start::Uniform {
            from: Duration::ZERO,
            to: Duration::from_secs(1),
        },
        ..Scenario::default()
    };
    vec![
        (
            "sato-ch4-path",
            "path 100 Mb/s, D 10 ms, p 0.05 %, SACK, 220 s",
            path,
        ),
        (
            "dumbbell-16",
            "16 NewReno flows, 50 Mb/s, D 100 ms, buffer 300, 1000 B segments, 60 s",
            dumbbell,
        ),
    ]
}

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Runs one reference scenario in this process and prints one JSON line.
pub fn child(id: &str) -> Result<(), String> {
    let (_, _, sc) = scenarios()
        .into_iter()
        .find(|s| s.0 == id)
        .ok_or_else(|| format!("unknown bench scenario '{id}'"))?;
    let t = WallClock::now();
    let r = tcpfec_sim::run(&sc);
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"id": id, "wall_s": wall, "events": r.events, "data_packets": r.data_packets,
               "goodput_mbps": r.goodput_mbps, "peak_rss_mb": peak_rss_mb()})
    );
    Ok(())
}

/// Runs every reference scenario in a child process and prints a table.
pub fn run(repeat: u32) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    println!("simulator speed, single-threaded, best of {repeat} run(s) per scenario");
    println!(
        "{:<15} {:>9} {:>12} {:>14} {:>16} {:>10}  what",
        "scenario", "wall s", "events", "events/s", "data pkts/s", "peak MB"
    );
    for (id, what, _) in scenarios() {
        let mut best: Option<serde_json::Value> = None;
        for _ in 0..repeat.max(1) {
            let out = Command::new(&exe)
                .args(["bench", "sim", "--child", id])
                .output()
                .map_err(|e| format!("cannot run bench child: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "bench child failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                .map_err(|e| format!("bench child printed no result: {e}"))?;
            if best
                .as_ref()
                .is_none_or(|b| v["wall_s"].as_f64() < b["wall_s"].as_f64())
            {
                best = Some(v);
            }
        }
        let v = best.expect("at least one run");
        let wall = v["wall_s"].as_f64().unwrap_or(f64::NAN);
        let events = v["events"].as_u64().unwrap_or(0);
        let pkts = v["data_packets"].as_u64().unwrap_or(0);
        println!(
            "{:<15} {:>9.3} {:>12} {:>14.0} {:>16.0} {:>10.1}  {}",
            id,
            wall,
            events,
            events as f64 / wall,
            pkts as f64 / wall,
            v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            what
        );
    }
    Ok(())
}
