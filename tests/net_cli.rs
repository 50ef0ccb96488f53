//! The real-network commands as a user meets them: keygen, recv, send with a hash check,
//! refusal of an existing file, and a clear fast error for a wrong key.

mod common;

use common::wait_event;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The program, with Careful Resume off: the user's path cache would carry what one
/// test learnt into the next (the cache has its own tests in tcpfec-net).
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tcpfec"));
    c.env("TCPFEC_NO_RESUME", "1");
    c
}

/// `tcpfec send FILE ADDR --key-file KEY`, ready for more arguments.
fn send(file: &Path, addr: &str, key: &Path) -> Command {
    let mut c = bin();
    c.arg("send").arg(file).arg(addr).arg("--key-file").arg(key);
    c
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tcpfec-netcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `dir`, sorted (temporary files included).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn keygen(path: &Path) {
    let o = bin()
        .args(["keygen", "--out", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A scratch directory with a fresh key (`DIR/key`) and an empty receive directory
/// (`DIR/out`).
fn keyed_scratch(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let key = dir.join("key");
    keygen(&key);
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    (dir, key, out)
}

/// Spawns `cmd` with piped output and returns it with the first line it writes to
/// stdout (`from_stderr`: stderr) — the line where the command reports its address.
fn spawn_reporting(cmd: &mut Command, from_stderr: bool) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    if from_stderr {
        BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line)
    } else {
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line)
    }
    .unwrap();
    (child, line)
}

/// Starts `tcpfec recv --once --json` and returns it with the address it listens on.
fn start_recv(key: &Path, out: &Path, extra: &[&str]) -> (Child, String) {
    let mut cmd = bin();
    cmd.args([
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--once",
        "--json",
        "--key-file",
    ])
    .arg(key)
    .arg("--out")
    .arg(out)
    .args(extra);
    let (child, line) = spawn_reporting(&mut cmd, false);
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    (child, v["addr"].as_str().unwrap().to_string())
}

#[test]
fn send_and_receive_a_file_then_refuse_to_overwrite_it() {
    let (dir, key, out) = keyed_scratch("xfer");
    let file = dir.join("data.bin");
    let bytes: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i * 7 + i / 1000) as u8)
        .collect();
    std::fs::write(&file, &bytes).unwrap();

    let (recv, addr) = start_recv(&key, &out, &[]);
    let o = send(&file, &addr, &key).arg("--json").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["bytes"], 3_000_000);
    let r = recv.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(out.join("data.bin")).unwrap(), bytes);
    assert_eq!(listing(&out), ["data.bin"]); // no temporary file left

    // The same again: the receiver refuses, the sender says why, nothing is overwritten.
    let (recv, addr) = start_recv(&key, &out, &[]);
    let o = send(&file, &addr, &key).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    let _ = recv.wait_with_output();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The bytes follow the header without waiting for the receiver's go-ahead; a refusal
/// arrives while they flow and stops them: the sender says why, little of the file was
/// sent, and the receiver's file is untouched.
#[test]
fn a_refused_file_stops_while_its_bytes_flow() {
    let (dir, key, out) = keyed_scratch("refuse");
    const LEN: usize = 48 << 20;
    let file = dir.join("big.bin");
    let bytes: Vec<u8> = (0..LEN as u32).map(|i| (i ^ (i >> 11)) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    std::fs::write(out.join("big.bin"), b"theirs").unwrap();
    let (recv, addr) = start_recv(&key, &out, &[]);
    let o = send(&file, &addr, &key).arg("--json").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"].as_str().unwrap().contains("exists"), "{v}");
    // At most the send buffer (4 MiB) and a window's worth went out, not the file.
    let sent = v["stats"]["payload_bytes_sent"].as_u64().unwrap();
    assert!(
        sent < 8 << 20,
        "{sent} bytes of a refused {LEN}-byte file were sent"
    );
    let _ = recv.wait_with_output();
    assert_eq!(std::fs::read(out.join("big.bin")).unwrap(), b"theirs");
    assert_eq!(listing(&out), ["big.bin"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wrong_key_and_missing_key_fail_fast_and_clearly() {
    let dir = scratch("key");
    let (k1, k2) = (dir.join("k1"), dir.join("k2"));
    keygen(&k1);
    keygen(&k2);
    // keygen refuses to overwrite a key.
    let o = bin().args(["keygen", "--out"]).arg(&k1).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let file = dir.join("f");
    std::fs::write(&file, b"hello").unwrap();
    let (mut recv, addr) = start_recv(&k1, &out, &[]);
    let t = Instant::now();
    let o = send(&file, &addr, &k2).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("wrong key"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    recv.kill().unwrap();
    let _ = recv.wait();
    // No key at all: the flag is named.
    let o = bin().arg("send").arg(&file).arg(&addr).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--key-file"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tunnel_refuses_a_block_scheme_with_a_reason() {
    let out = bin()
        .args([
            "tunnel",
            "client",
            "--listen",
            "127.0.0.1:0",
            "--server",
            "127.0.0.1:9",
            "--insecure",
            "--scheme",
            "fectcp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--scheme") && err.contains("byte stream"),
        "{err}"
    );
}

/// Starts `tcpfec relay` towards `to` with `args`; returns it with its listening address.
fn start_relay(to: &str, args: &[&str]) -> (Child, String) {
    let mut cmd = bin();
    cmd.args(["relay", "--listen", "127.0.0.1:0", "--to", to])
        .args(args);
    // The relay reports "relay ADDR -> TO: …" on stderr.
    let (child, line) = spawn_reporting(&mut cmd, true);
    let addr = line.split_whitespace().nth(1).expect("relay address");
    (child, addr.to_string())
}

#[test]
fn fectcp_moves_a_file_through_a_lossy_relay() {
    let dir = scratch("fectcp");
    let key = dir.join("k");
    keygen(&key);
    let out = dir.join("out");
    let file = dir.join("block.bin");
    let bytes: Vec<u8> = (0..1_500_000u32)
        .map(|i| (i * 13 + i / 977) as u8)
        .collect();
    std::fs::write(&file, &bytes).unwrap();
    let (recv, addr) = start_recv(&key, &out, &[]);
    let (mut relay, via) = start_relay(
        &addr,
        &["--rate", "20mbit", "--delay", "10ms", "--loss", "5%"],
    );
    let o = send(&file, &via, &key)
        .args(["--scheme", "fectcp", "--json"])
        .output()
        .unwrap();
    relay.kill().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = recv.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(out.join("block.bin")).unwrap(), bytes);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // No retransmission: every lost symbol was replaced by a new one.
    assert_eq!(v["stats"]["retransmissions"], 0, "{v}");
}

/// Waits for `child` to exit with `code`; returns its output.
fn exits_with(child: Child, code: i32) -> std::process::Output {
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    o
}

/// Sends `sig` to a child process.
fn signal(child: &Child, sig: i32) {
    // SAFETY: kill() on a pid we own (the child has not been reaped yet).
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// A slow transfer (through a rate-limited relay) to a receiver that is in the middle of
/// writing the file; returns (receiver, its stdout lines, sender, relay, out dir).
fn transfer_in_progress(
    dir: &Path,
) -> (
    Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    Child,
    Child,
    PathBuf,
) {
    let key = dir.join("k");
    keygen(&key);
    let out = dir.join("out");
    let file = dir.join("big.bin");
    std::fs::write(&file, vec![7u8; 20_000_000]).unwrap();
    let (mut recv, addr) = start_recv(&key, &out, &[]);
    let (relay, via) = start_relay(&addr, &["--rate", "20mbit"]);
    let sender = send(&file, &via, &key)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(recv.stdout.take().unwrap()).lines();
    let v = wait_event(&mut lines, "receiving");
    assert_eq!(v["name"], "big.bin");
    (recv, lines, sender, relay, out)
}

#[test]
fn a_stopped_receiver_removes_its_partial_file_and_the_sender_hears_at_once() {
    let dir = scratch("stop-recv");
    let (recv, mut lines, sender, mut relay, out) = transfer_in_progress(&dir);
    signal(&recv, libc::SIGTERM);
    let stopped = Instant::now();
    let v = wait_event(&mut lines, "stopped");
    assert_eq!(v["signal"], "SIGTERM", "{v}");
    drop(lines);
    exits_with(recv, 143);
    assert!(listing(&out).is_empty(), "{:?}", listing(&out));
    let o = sender.wait_with_output().unwrap();
    // The sender learns it from the receiver's close, not from its 10 s idle timeout.
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the peer stopped"), "{err}");
    relay.kill().unwrap();
    let _ = relay.wait();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stopped_sender_tells_the_receiver_which_keeps_nothing_partial() {
    let dir = scratch("stop-send");
    let (recv, mut lines, sender, mut relay, out) = transfer_in_progress(&dir);
    signal(&sender, libc::SIGINT);
    let stopped = Instant::now();
    exits_with(sender, 130);
    let v = wait_event(&mut lines, "failed");
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    assert!(
        v["error"].as_str().unwrap().contains("the peer stopped"),
        "{v}"
    );
    drop(lines);
    let r = recv.wait_with_output().unwrap();
    assert_eq!(r.status.code(), Some(2)); // --once: the one connection failed
    assert!(listing(&out).is_empty(), "{:?}", listing(&out));
    relay.kill().unwrap();
    let _ = relay.wait();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Starts a blocking TCP echo server on loopback; returns its address.
fn tcp_echo() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut r = s.try_clone().unwrap();
                let _ = std::io::copy(&mut r, &mut s);
            });
        }
    });
    addr
}

/// The address in a "tunnel … on ADDR, …" line.
fn addr_in(line: &str) -> String {
    line.split_whitespace()
        .nth(3)
        .expect("address")
        .trim_end_matches(',')
        .to_string()
}

/// Stopping a tunnel server resets the connections it carried (the client's application
/// sees ECONNRESET, not a clean end of stream) and exits with 143; stopping the client
/// exits with 130.
#[test]
fn a_stopped_tunnel_resets_its_connections_and_exits_by_signal() {
    use std::io::{Read, Write};
    let dir = scratch("tunnel-stop");
    let key = dir.join("k");
    keygen(&key);
    let target = tcp_echo();
    let mut srv_cmd = bin();
    srv_cmd
        .args(["tunnel", "server", "--listen", "127.0.0.1:0", "--to"])
        .arg(target.to_string())
        .arg("--key-file")
        .arg(&key);
    let (server, line) = spawn_reporting(&mut srv_cmd, true);
    let srv_addr = addr_in(&line);
    let mut cli_cmd = bin();
    cli_cmd
        .args([
            "tunnel",
            "client",
            "--listen",
            "127.0.0.1:0",
            "--server",
            &srv_addr,
        ])
        .arg("--key-file")
        .arg(&key);
    let (client, line) = spawn_reporting(&mut cli_cmd, true);
    let entry = addr_in(&line);
    let mut app = std::net::TcpStream::connect(&entry).unwrap();
    app.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    app.write_all(b"ping").unwrap();
    let mut four = [0u8; 4];
    app.read_exact(&mut four).unwrap();
    assert_eq!(&four, b"ping");
    signal(&server, libc::SIGTERM);
    let stopped = Instant::now();
    exits_with(server, 143);
    let mut rest = Vec::new();
    let e = app.read_to_end(&mut rest).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
    signal(&client, libc::SIGINT);
    let o = exits_with(client, 130);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(log.contains("the peer stopped"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With `--json`, everything a command writes to standard output is JSON, one object per
/// line, from the listening event to the stop: a tunnel server and client forwarding one
/// connection, and a receiver, each stopped by a signal.
#[test]
fn json_output_is_all_json_lines_through_a_stop() {
    use std::io::{Read, Write};
    let dir = scratch("json-lines");
    let key = dir.join("k");
    keygen(&key);
    let target = tcp_echo();
    let mut srv_cmd = bin();
    srv_cmd
        .args([
            "tunnel",
            "server",
            "--json",
            "--listen",
            "127.0.0.1:0",
            "--to",
        ])
        .arg(target.to_string())
        .arg("--key-file")
        .arg(&key);
    let (server, line) = spawn_reporting(&mut srv_cmd, false);
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    assert_eq!(v["event"], "listening", "{line}");
    let srv_addr = v["addr"].as_str().unwrap().to_string();
    let mut cli_cmd = bin();
    cli_cmd
        .args(["tunnel", "client", "--json", "--listen", "127.0.0.1:0"])
        .args(["--server", &srv_addr, "--key-file"])
        .arg(&key);
    let (client, line) = spawn_reporting(&mut cli_cmd, false);
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    let entry = v["addr"].as_str().unwrap().to_string();
    let mut app = std::net::TcpStream::connect(&entry).unwrap();
    app.write_all(b"ping").unwrap();
    let mut four = [0u8; 4];
    app.read_exact(&mut four).unwrap();
    let out = dir.join("out");
    let (recv, _) = start_recv(&key, &out, &[]);
    for (child, status) in [(server, 143), (client, 130), (recv, 130)] {
        signal(
            &child,
            if status == 143 {
                libc::SIGTERM
            } else {
                libc::SIGINT
            },
        );
        let o = exits_with(child, status);
        let stdout = String::from_utf8(o.stdout).unwrap();
        let events: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        assert_eq!(
            events.last().unwrap()["event"],
            "stopped",
            "the stop is the last event: {stdout}"
        );
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Starts `tcpfec perf --server --json` on an ephemeral port, sharded over two sockets
/// whatever the machine; returns it and its address.
fn start_perf_server(key: &Path) -> (Child, String) {
    let (child, line) = spawn_reporting(
        bin().args([
            "perf",
            "--server",
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "2",
            "--json",
            "--key-file",
            key.to_str().unwrap(),
        ]),
        false,
    );
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    assert_eq!(v["tcp"], true, "{line}");
    (child, v["addr"].as_str().unwrap().to_string())
}

/// Runs `tcpfec perf ADDR ARGS --json` and returns its parsed output.
fn perf_json(addr: &str, key: &Path, args: &[&str]) -> serde_json::Value {
    let o = bin()
        .args(["perf", addr, "--json", "--key-file", key.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("perf --json prints one JSON document")
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn perf_json_counts_exactly_the_bytes_it_moved_over_tcpfec_and_kernel_tcp() {
    let (dir, key, _) = keyed_scratch("perf");
    let (mut server, addr) = start_perf_server(&key);
    for (args, protocol) in [
        // Four streams from four sockets, spread over the server's two shards.
        (&["-n", "3000001", "-P", "4", "-i", "0.2"][..], "tcpfec"),
        (&["-n", "2MB", "-R", "--scheme", "sack"][..], "tcpfec"),
        (&["-n", "2MB", "-R", "--tcp"][..], "TCP"),
    ] {
        let v = perf_json(&addr, &key, args);
        let want = if args.contains(&"3000001") {
            3_000_001
        } else {
            2_000_000
        };
        let end = &v["end"];
        assert_eq!(v["start"]["test_start"]["protocol"], protocol, "{args:?}");
        assert_eq!(u(&end["sum_sent"]["bytes"]), want, "{args:?}");
        assert_eq!(u(&end["sum_received"]["bytes"]), want, "{args:?}");
        let streams = end["streams"].as_array().unwrap();
        let per_stream: u64 = streams.iter().map(|s| u(&s["receiver"]["bytes"])).sum();
        assert_eq!(per_stream, want, "{args:?}");
        // Every delivered byte falls in exactly one interval.
        let in_intervals: u64 = v["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| u(&i["sum"]["bytes"]))
            .sum();
        assert_eq!(in_intervals, want, "{args:?}");
        let bps = end["sum_received"]["bits_per_second"].as_f64().unwrap();
        let secs = end["sum_received"]["seconds"].as_f64().unwrap();
        assert!(
            (bps - want as f64 * 8.0 / secs).abs() < 1e-6 * bps,
            "{args:?}"
        );
        assert!(
            end["cpu_utilization_percent"]["remote_total"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs `tcpfec ARGS`, asserts that it fails, and returns what it printed on stderr.
fn failure(args: &[&str]) -> String {
    let o = bin().args(args).output().unwrap();
    assert!(!o.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A delay test refused before anything runs: exit code 2 and one line naming the flag.
fn refused_at_once(args: &[&str], flag: &str) {
    let o = bin().args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(flag), "{args:?}: {err}");
}

#[test]
fn perf_delay_tests_refuse_what_cannot_run() {
    let base = ["perf", "127.0.0.1:9", "--insecure"];
    let with = |more: &[&'static str]| [&base[..], more].concat();
    refused_at_once(&with(&["-b", "0"]), "-b");
    refused_at_once(&with(&["-b", "fast"]), "-b");
    refused_at_once(&with(&["-b", "4M", "-l", "8"]), "-l");
    refused_at_once(&with(&["-b", "4M", "-l", "2MiB"]), "-l");
    refused_at_once(&with(&["--rr", "-R"]), "--rr");
    refused_at_once(&with(&["--rr", "-P", "2"]), "--rr");
    refused_at_once(&with(&["--rr", "-n", "1MB"]), "--rr");
    refused_at_once(&with(&["-l", "100"]), "-l");
}

#[test]
fn perf_delay_tests_count_their_messages_and_exchanges() {
    let (dir, key, _) = keyed_scratch("perf-delay");
    let (mut server, addr) = start_perf_server(&key);
    // A paced stream, each way and over kernel TCP: 4 Mb/s of 1000-byte messages for
    // 2 s is 1000 messages, every one of them received and timed.
    for args in [
        &["-b", "4M", "-l", "1000", "-t", "2", "-i", "0.5"][..],
        &["-b", "4M", "-l", "1000", "-t", "2", "-R"][..],
        &["-b", "4mbit", "-l", "1000", "-t", "2", "--tcp"][..],
    ] {
        let v = perf_json(&addr, &key, args);
        let end = &v["end"];
        assert_eq!(u(&end["sum_sent"]["bytes"]), 1_000_000, "{args:?}");
        assert_eq!(u(&end["sum_received"]["bytes"]), 1_000_000, "{args:?}");
        let d = &end["tcpfec"]["delivery_delay_ms"];
        assert_eq!(u(&d["messages"]), 1000, "{args:?}: {d}");
        assert_eq!(d["clock"], "shared", "{args:?}");
        let (p50, p99, max) = (
            d["p50"].as_f64().unwrap(),
            d["p99"].as_f64().unwrap(),
            d["max"].as_f64().unwrap(),
        );
        // Loopback: well under a second, and ordered.
        assert!(
            0.0 <= p50 && p50 <= p99 && p99 <= max && max < 1000.0,
            "{d}"
        );
        // The sender ran 2 s at 4 Mb/s: its rate is the schedule's.
        let bps = end["sum_sent"]["bits_per_second"].as_f64().unwrap();
        assert!((3.0e6..4.5e6).contains(&bps), "{args:?}: {bps}");
    }
    // Exchanges: every one counted, and the bytes are the requests'.
    let v = perf_json(&addr, &key, &["--rr", "-l", "100", "-t", "1"]);
    let end = &v["end"];
    let rt = &end["tcpfec"]["round_trip_ms"];
    let n = u(&rt["exchanges"]);
    assert!(n > 100, "{rt}");
    assert_eq!(u(&end["sum_sent"]["bytes"]), n * 100);
    assert_eq!(u(&end["sum_received"]["bytes"]), n * 100);
    let per_interval: u64 = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| u(&i["sum"]["tcpfec_delay_ms"]["count"]))
        .sum();
    assert_eq!(per_interval, n, "every exchange in exactly one interval");
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn perf_refuses_bad_requests_with_reasons() {
    let (dir, key, _) = keyed_scratch("perf-bad");
    assert!(failure(&["perf", "127.0.0.1:9", "-P", "0", "--insecure"]).contains("-P"));
    assert!(
        failure(&["perf", "127.0.0.1:9", "--threads", "2", "--insecure"])
            .contains("--threads: a server option")
    );
    let (mut server, addr) = start_perf_server(&key);
    let k = key.to_str().unwrap();
    let err = failure(&[
        "perf",
        &addr,
        "--tcp",
        "--congestion",
        "no-such-cc",
        "--key-file",
        k,
    ]);
    assert!(
        err.contains("no-such-cc") && err.contains("offers"),
        "{err}"
    );
    // Kernel TCP tests prove the key: a client without it, or with another, is refused.
    let err = failure(&["perf", &addr, "--tcp", "-n", "1MB", "--insecure"]);
    assert!(err.contains("asks kernel TCP clients for its key"), "{err}");
    let other = dir.join("other.key");
    keygen(&other);
    let o = other.to_str().unwrap();
    let err = failure(&["perf", &addr, "--tcp", "-n", "1MB", "--key-file", o]);
    assert!(err.contains("wrong key"), "{err}");
    let _ = server.kill();
    let _ = server.wait();
    // Limits set by the server's operator.
    let (mut small, line) = spawn_reporting(
        bin().args([
            "perf",
            "--server",
            "--listen",
            "127.0.0.1:0",
            "--json",
            "--max-streams",
            "1",
            "--max-seconds",
            "5",
            "--key-file",
            k,
        ]),
        false,
    );
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    let addr = v["addr"].as_str().unwrap().to_string();
    let err = failure(&["perf", &addr, "-P", "2", "-t", "1", "--key-file", k]);
    assert!(
        err.contains("streams must be 1 to 1 on this server"),
        "{err}"
    );
    let err = failure(&["perf", &addr, "-t", "10", "--key-file", k]);
    assert!(err.contains("at most 5 on this server"), "{err}");
    let _ = small.kill();
    let _ = small.wait();
    let _ = std::fs::remove_dir_all(dir);
}

/// A one-byte file over a 200 ms round trip: `send` exits about two round trips after
/// it starts (handshake; then the file, its hash and the end mark, answered by the
/// verdict and the receiver's end), not after the engine's linger.
#[test]
fn send_of_a_tiny_file_exits_within_two_and_a_half_round_trips() {
    let (dir, key, out) = keyed_scratch("tiny");
    let file = dir.join("one.bin");
    std::fs::write(&file, b"x").unwrap();
    let (recv, addr) = start_recv(&key, &out, &[]);
    let (mut relay, via) = start_relay(&addr, &["--delay", "100ms"]);
    let start = Instant::now();
    let o = send(&file, &via, &key).output().unwrap();
    let secs = start.elapsed().as_secs_f64();
    relay.kill().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = recv.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(out.join("one.bin")).unwrap(), b"x");
    // 2.5 round trips is 0.5 s; 0.1 s more for two process starts on a busy machine.
    assert!(secs < 0.6, "send took {secs:.3} s at a 200 ms round trip");
    let _ = std::fs::remove_dir_all(dir);
}

/// With both offloads off (as on kernels without UDP GSO/GRO) the data path falls back
/// to one datagram per system call and still moves every byte.
#[test]
fn perf_without_gso_and_gro_moves_every_byte() {
    let (dir, key, _) = keyed_scratch("perf-nooffload");
    let mut server = bin();
    server
        .args([
            "perf",
            "--server",
            "--no-tcp",
            "--listen",
            "127.0.0.1:0",
            "--json",
        ])
        .arg("--key-file")
        .arg(&key)
        .env("TCPFEC_NO_GRO", "1")
        .env("TCPFEC_NO_GSO", "1");
    let (mut server, line) = spawn_reporting(&mut server, false);
    let v: serde_json::Value = serde_json::from_str(&line).expect("listening event");
    let addr = v["addr"].as_str().unwrap().to_string();
    let o = bin()
        .args(["perf", &addr, "--json", "-n", "3MB", "--key-file"])
        .arg(&key)
        .env("TCPFEC_NO_GRO", "1")
        .env("TCPFEC_NO_GSO", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(u(&v["end"]["sum_received"]["bytes"]), 3_000_000);
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(dir);
}

/// The soak's short version: half a minute of transfer and tunnel through four loss phases
/// and three relay restarts (1 s outages), every byte checked, no stall past its bound,
/// descriptors flat, and 20 idle tunnel connections measured on a tunnel server.
#[test]
fn a_short_soak_verifies_every_byte_through_restarts() {
    let o = bin()
        .args([
            "bench",
            "soak",
            "--minutes",
            "0.5",
            "--idle-connections",
            "20",
            "--json",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let summary: serde_json::Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "summary")
        .unwrap_or_else(|| panic!("no summary: {out}{}", String::from_utf8_lossy(&o.stderr)));
    assert!(o.status.success(), "{summary}");
    assert_eq!(summary["ok"], true, "{summary}");
    assert!(
        summary["bytes_verified"].as_u64().unwrap() > 10_000_000,
        "{summary}"
    );
    assert!(
        summary["echoes_verified"].as_u64().unwrap() > 100,
        "{summary}"
    );
    assert!(
        summary["longest_transfer_stall_s"].as_f64().unwrap()
            <= summary["stall_bound_s"].as_f64().unwrap()
    );
    let per = summary["idle_server_kb_per_connection"].as_f64().unwrap();
    assert!(per > 0.0 && per < 1024.0, "{per} kB per idle connection");
}
