//! Two-process loopback throughput, as users run it: `tcpfec perf` (server and client
//! processes, encrypted) and, with `--quinn`, the quinn (QUIC) reference in
//! `benches/quinn-bulk` moving the same bytes. Reports Gb/s and bytes per CPU-second of
//! each side, and tcpfec's ratio to quinn.

use crate::child::{spawn_with_line, spawn_with_line_rest_dropped};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One two-process measurement.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Goodput, Gb/s.
    pub gbps: f64,
    /// Bytes per CPU-second of the sender and of the receiver.
    pub sender_bpcs: f64,
    /// See `sender_bpcs`.
    pub receiver_bpcs: f64,
}

/// `tcpfec perf` between two processes on loopback: `bytes` with `scheme`, encrypted.
pub fn tcpfec_perf(exe: &Path, key: &Path, scheme: &str, bytes: u64) -> Result<Measured, String> {
    let mut server = Command::new(exe);
    server
        .args([
            "perf",
            "--server",
            "--no-tcp",
            "--json",
            "--listen",
            "127.0.0.1:0",
            "--key-file",
        ])
        .arg(key);
    let (_server, line) = spawn_with_line_rest_dropped(server)?;
    let v: Value = serde_json::from_str(&line).map_err(|e| format!("perf server: {e}: {line}"))?;
    let addr = v["addr"]
        .as_str()
        .ok_or("perf server gave no address")?
        .to_string();
    let out = Command::new(exe)
        .args([
            "perf",
            &addr,
            "--json",
            "--scheme",
            scheme,
            "-n",
            &bytes.to_string(),
            "--key-file",
        ])
        .arg(key)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "perf: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let end = &v["end"];
    Ok(Measured {
        gbps: end["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0)
            / 1e9,
        sender_bpcs: end["tcpfec"]["sender_bytes_per_cpu_second"]
            .as_f64()
            .unwrap_or(0.0),
        receiver_bpcs: end["tcpfec"]["receiver_bytes_per_cpu_second"]
            .as_f64()
            .unwrap_or(0.0),
    })
}

/// The quinn reference's source and binary.
fn quinn_paths() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/quinn-bulk");
    let bin = dir.join("target/release/quinn-bulk");
    (dir, bin)
}

/// Builds the quinn reference if it is not built yet (cargo fetches quinn from the
/// registry the first time).
fn build_quinn() -> Result<PathBuf, String> {
    let (dir, bin) = quinn_paths();
    if !dir.join("Cargo.toml").exists() {
        return Err(format!(
            "{} is missing (run from a source checkout)",
            dir.display()
        ));
    }
    eprintln!("building the quinn reference in {} ...", dir.display());
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() || !bin.exists() {
        return Err("building benches/quinn-bulk failed".into());
    }
    Ok(bin)
}

/// quinn between two processes on loopback, `bytes` over one stream.
pub fn quinn(bytes: u64) -> Result<Measured, String> {
    let bin = build_quinn()?;
    let cert = std::env::temp_dir().join(format!("quinn-bulk-{}.der", std::process::id()));
    let mut server = Command::new(&bin);
    server
        .args(["server", "--listen", "127.0.0.1:0", "--cert"])
        .arg(&cert);
    let (mut server, line) = spawn_with_line(server)?;
    let v: Value = serde_json::from_str(&line).map_err(|e| format!("quinn server: {e}: {line}"))?;
    let addr = v["listening"]
        .as_str()
        .ok_or("quinn server gave no address")?
        .to_string();
    let out = Command::new(&bin)
        .args(["client", &addr, "--bytes", &bytes.to_string(), "--cert"])
        .arg(&cert)
        .output()
        .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&cert);
    if !out.status.success() {
        return Err(format!(
            "quinn client: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let c: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(server.0.stdout.as_mut().expect("piped"))
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let s: Value = serde_json::from_str(&line).map_err(|e| format!("quinn server: {e}: {line}"))?;
    let bpcs = |v: &Value| {
        v["bytes"].as_f64().unwrap_or(0.0)
            / (v["cpu_user"].as_f64().unwrap_or(0.0) + v["cpu_system"].as_f64().unwrap_or(0.0))
                .max(1e-9)
    };
    Ok(Measured {
        gbps: c["bytes"].as_f64().unwrap_or(0.0) * 8.0 / c["seconds"].as_f64().unwrap_or(1.0) / 1e9,
        sender_bpcs: bpcs(&c),
        receiver_bpcs: bpcs(&s),
    })
}

/// Prints one row (text or JSON).
pub fn print(name: &str, m: &Measured, bytes: u64, as_json: bool) {
    if as_json {
        println!(
            "{}",
            json!({"bench": "loopback-2proc", "transport": name, "bytes": bytes, "gbps": m.gbps,
                   "sender_bytes_per_cpu_s": m.sender_bpcs, "receiver_bytes_per_cpu_s": m.receiver_bpcs})
        );
    } else {
        println!(
            "{:<22} {:>8.2} {:>16.2} {:>16.2}",
            name,
            m.gbps,
            m.sender_bpcs / 1e9,
            m.receiver_bpcs / 1e9
        );
    }
}
