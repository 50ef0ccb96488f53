//! `tcpfec bench net --emu`: tcpfec schemes and kernel TCP (CUBIC, BBR) on the same
//! emulated links (`tcpfec emu`), in one invocation. Each run is `tcpfec perf` in the
//! two namespaces, as a user would run it: bulk goodput for a fixed time, and the wall
//! time of a 10 MB test from the client's start (connection set-up included); or, with
//! a delay test, a paced stream's delivery delay or exchanges' round trips, and the bytes
//! each contender put on the link per byte of the test.

use crate::child::{spawn_with_line_rest_dropped, Killed};
use crate::emu_cli::counts_json;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tcpfec_channel::LossSpec;
use tcpfec_net::emu::{self, EmuConfig, Emulator};
use tcpfec_net::link::{LinkSpec, DEFAULT_MAX_BYTES};
use tcpfec_net::perf::kernel_tcp;
use tcpfec_net::{Psk, DEFAULT_SCHEME};
use tcpfec_proto::Scheme;
use tcpfec_sim::metrics::jain;

/// A scheme named `SCHEME+resume` in `--schemes` runs `perf --resume`: its bulk run saves
/// the path, and its completion run resumes from it (Careful Resume).
const RESUME_SUFFIX: &str = "+resume";

/// What one transport is on the command line of `tcpfec perf`.
#[derive(Debug, Clone)]
pub enum Contender {
    /// A tcpfec scheme.
    Tcpfec {
        /// The scheme.
        scheme: String,
        /// Runs `perf --resume` (named `SCHEME+resume`).
        resume: bool,
    },
    /// Kernel TCP with this congestion control.
    Tcp(String),
}

impl Contender {
    fn label(&self) -> String {
        match self {
            Contender::Tcpfec { scheme, resume } => {
                let suffix = if *resume { RESUME_SUFFIX } else { "" };
                format!("tcpfec {scheme}{suffix}")
            }
            Contender::Tcp(c) => format!("TCP {c}"),
        }
    }

    fn args(&self, key: &Path) -> Vec<String> {
        match self {
            Contender::Tcpfec { scheme, resume } => {
                let mut v = vec![
                    "--scheme".into(),
                    scheme.clone(),
                    "--key-file".into(),
                    key.display().to_string(),
                ];
                if *resume {
                    v.push("--resume".into());
                }
                v
            }
            // The server challenges kernel TCP clients for the key too.
            Contender::Tcp(c) => vec![
                "--tcp".into(),
                "--congestion".into(),
                c.clone(),
                "--key-file".into(),
                key.display().to_string(),
            ],
        }
    }
}

/// How long a completion run (`--emu-bytes`) may take before it counts as not done.
pub const COMPLETION_LIMIT: Duration = Duration::from_secs(120);

/// The benchmark's settings.
pub struct Plan {
    /// Link rate, b/s.
    pub rate: u64,
    /// Round-trip time (half each way).
    pub rtt: Duration,
    /// Loss conditions a → b.
    pub losses: Vec<LossSpec>,
    /// Seconds per bulk run (the first third is start-up, reported apart).
    pub seconds: f64,
    /// Bytes of the completion runs (0: bulk runs only).
    pub bytes: u64,
    /// Seed of the emulated link's loss.
    pub seed: u64,
    /// Drop-tail queue per direction, packets (`None`: one BDP, at least 64).
    pub queue: Option<usize>,
    /// Longest a completion run may take.
    pub limit: Duration,
    /// Who races.
    pub contenders: Vec<Contender>,
    /// JSON lines instead of a table.
    pub json: bool,
    /// A delay test instead of bulk and completion runs.
    pub delay: Option<DelayTest>,
    /// Instead: each contender against one kernel TCP flow of this congestion control.
    pub against: Option<String>,
    /// Instead: several flows of each contender sharing the link.
    pub flows: Option<FlowsTest>,
}

/// Several flows of one transport on the link at once.
#[derive(Debug, Clone, Copy)]
pub struct FlowsTest {
    /// How many.
    pub flows: usize,
    /// Flow i starts `stagger · i / flows` after the first.
    pub stagger: Duration,
}

/// A test of delay rather than throughput.
#[derive(Debug, Clone)]
pub enum DelayTest {
    /// `perf -b RATE -l LENGTH`.
    Stream {
        /// The rate, as `perf -b` reads it.
        rate: String,
        /// Bytes per message.
        length: u32,
    },
    /// `perf --rr -l LENGTH`.
    Exchange {
        /// Bytes per request and response.
        length: u32,
    },
}

impl DelayTest {
    fn args(&self, seconds: f64) -> Vec<String> {
        let mut v = match self {
            DelayTest::Stream { rate, length } => {
                vec!["-b".into(), rate.clone(), "-l".into(), length.to_string()]
            }
            DelayTest::Exchange { length } => {
                vec!["--rr".into(), "-l".into(), length.to_string()]
            }
        };
        // The start-up's first round trips are window-limited for every transport:
        // left out, as iperf3's --omit leaves out slow start.
        let omit = (seconds / 10.0).min(3.0);
        v.extend([
            "-t".into(),
            seconds.to_string(),
            "-O".into(),
            omit.to_string(),
        ]);
        v
    }

    /// The key of its percentiles in `perf --json`'s `end.tcpfec`.
    fn key(&self) -> &'static str {
        match self {
            DelayTest::Stream { .. } => "delivery_delay_ms",
            DelayTest::Exchange { .. } => "round_trip_ms",
        }
    }
}

impl Plan {
    /// The link's bandwidth-delay product in 1500-byte packets.
    fn bdp_packets(&self) -> f64 {
        self.rate as f64 * self.rtt.as_secs_f64() / 8.0 / 1500.0
    }

    /// The drop-tail queue per direction, packets: as given, or one BDP (at least 64).
    fn queue_packets(&self) -> usize {
        self.queue.unwrap_or((self.bdp_packets() as usize).max(64))
    }

    /// Width of the table's first column: the longest contender's label.
    fn label_width(&self) -> usize {
        self.contenders
            .iter()
            .map(|c| c.label().len())
            .max()
            .unwrap_or(0)
            .max("transport".len())
    }
}

/// The default field: tcpfec's `sack` and default scheme, and the kernel's `cubic` and
/// `bbr` where it has them; `schemes` replaces the tcpfec part and `kernel` the kernel's
/// (comma-separated, `none` for none).
pub fn contenders(schemes: Option<&str>, kernel: Option<&str>) -> Result<Vec<Contender>, String> {
    let list = |s: &str| -> Vec<String> {
        match s.trim() {
            "none" => Vec::new(),
            s => s.split(',').map(|x| x.trim().to_string()).collect(),
        }
    };
    let tcpfec = schemes.map_or_else(|| vec!["sack".into(), DEFAULT_SCHEME.into()], list);
    let mut v = Vec::new();
    for s in tcpfec {
        let (scheme, resume) = match s.strip_suffix(RESUME_SUFFIX) {
            Some(base) => (base.to_string(), true),
            None => (s, false),
        };
        Scheme::parse(&scheme).map_err(|e| format!("--schemes: {e}"))?;
        v.push(Contender::Tcpfec { scheme, resume });
    }
    let have = kernel_tcp::available();
    match kernel {
        None => {
            for cc in ["cubic", "bbr"] {
                if have.iter().any(|h| h == cc) {
                    v.push(Contender::Tcp(cc.into()));
                } else {
                    eprintln!("note: this kernel has no TCP {cc}; left out");
                }
            }
        }
        Some(k) => {
            for cc in list(k) {
                if !have.contains(&cc) {
                    return Err(format!(
                        "--kernel: this kernel has no TCP {cc} (it has: {})",
                        have.join(", ")
                    ));
                }
                v.push(Contender::Tcp(cc));
            }
        }
    }
    if v.is_empty() {
        return Err("--schemes none and --kernel none leave nothing to race".into());
    }
    Ok(v)
}

/// One measurement.
struct Outcome {
    /// Mb/s over the whole bulk run, and after its first third.
    bulk: Option<(f64, f64)>,
    /// Retransmissions and repairs of the bulk run.
    bulk_counts: (u64, u64),
    /// Wall seconds of the completion run (None: it did not finish within the limit).
    completion: Option<f64>,
    /// The completion run's own seconds as `perf` reports them (`end.sum_sent.seconds`):
    /// from the data connection's start, after its handshake and the control exchange,
    /// to the receiver's close.
    completion_data: Option<f64>,
    /// The completion run's retransmissions, and the packets the link dropped a → b
    /// during it (queue full, loss model).
    completion_counts: (u64, u64, u64),
}

/// Runs the benchmark.
pub fn run(plan: &Plan) -> Result<(), String> {
    if !emu::privileged() {
        return Err("bench net --emu needs root (network namespaces, TUN devices)".into());
    }
    remove_abandoned_namespaces();
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = std::env::temp_dir().join(format!("tcpfec-emu-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let key = dir.join("key");
    let _ = std::fs::remove_file(&key);
    // `+resume` runs save and read their paths here, not in the user's cache. Set before
    // any child or thread starts.
    std::env::set_var(tcpfec_net::path_cache::FILE_ENV, dir.join("paths"));
    Psk::generate()
        .write_new(&key)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    let queue = plan.queue_packets();
    if !plan.json {
        println!(
            "emulated link (tcpfec emu): {} Mb/s, RTT {:?}, drop-tail queue {queue} packets ({:.2} BDP of 1500-byte packets), loss a -> b",
            plan.rate as f64 / 1e6,
            plan.rtt,
            queue as f64 / plan.bdp_packets().max(1e-9),
        );
    }
    if let (Some(f), false) = (&plan.flows, plan.json) {
        println!(
            "{} flows of each transport (one `tcpfec perf` each) for {:.0} s, started {:.0} ms \
             apart; goodput per flow after the first third, and Jain's index",
            f.flows,
            plan.seconds,
            f.stagger.as_secs_f64() * 1e3 / f.flows as f64,
        );
        println!(
            "{:<w$} {:>12} {:>7} {:>10}  flows' Mb/s, least first",
            "transport",
            "loss",
            "jain",
            "total Mb/s",
            w = plan.label_width()
        );
    } else if let (Some(cc), false) = (&plan.against, plan.json) {
        println!(
            "each transport and one kernel TCP {cc} flow (`tcpfec perf --tcp --congestion {cc}`) \
             started together for {:.0} s; goodput after the first third",
            plan.seconds
        );
        println!(
            "{:<w$} {:>12} {:>10} {:>10} {:>8}",
            "transport",
            "loss",
            "Mb/s",
            format!("{cc} Mb/s"),
            "ratio",
            w = plan.label_width()
        );
    } else if let (Some(d), false) = (&plan.delay, plan.json) {
        println!(
            "`tcpfec perf {}` in the namespaces; delays in ms; wire: bytes the sender put on the link (a -> b) per byte of the test, less one",
            d.args(plan.seconds).join(" ")
        );
        println!(
            "{:<w$} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8}",
            "transport",
            "loss",
            "p50",
            "p99",
            "p99.9",
            "max",
            "retr",
            "repair",
            "wire",
            w = plan.label_width()
        );
    } else if !plan.json {
        println!(
            "bulk: {:.0} s of `tcpfec perf`, goodput over all of it and after the first third; \
             {} MB: wall time of `tcpfec perf -n` from the client's start, and `data`, perf's own \
             time from the data connection's start (after the handshakes) to the receiver's close",
            plan.seconds,
            plan.bytes / 1_000_000
        );
        println!(
            "{:<w$} {:>12} {:>12} {:>14} {:>8} {:>8} {:>12} {:>8}",
            "transport",
            "loss",
            "bulk Mb/s",
            "steady Mb/s",
            "retr",
            "repair",
            format!("{} MB s", plan.bytes / 1_000_000),
            "data s",
            w = plan.label_width()
        );
    }
    for &l in &plan.losses {
        let link = LinkSpec {
            rate_bps: Some(plan.rate),
            delay: plan.rtt / 2,
            queue,
            max_bytes: DEFAULT_MAX_BYTES,
            loss: LossSpec::None,
        };
        let emu = Emulator::start(&EmuConfig {
            name: format!("tfbench{}", std::process::id()),
            forward: LinkSpec { loss: l, ..link },
            back: link,
            seed: plan.seed,
        })
        .map_err(|e| format!("emu: {e}"))?;
        let server = start_server(&exe, emu.b.name(), &key)?;
        for c in &plan.contenders {
            if let Some(f) = &plan.flows {
                let goodputs = flows_run(&exe, &emu, &key, c, f, plan)?;
                report_flows(plan, l, c, f, &goodputs);
                continue;
            }
            if let Some(cc) = &plan.against {
                let (own, other) = against_run(&exe, &emu, &key, c, cc, plan)?;
                report_against(plan, l, c, cc, own, other);
                continue;
            }
            if let Some(d) = &plan.delay {
                let (before, _) = emu.counts();
                let v = delay_run(&exe, &emu, &key, c, d, plan)?;
                let (after, _) = emu.counts();
                report_delay(
                    plan,
                    l,
                    c,
                    d,
                    &v,
                    after.received_bytes - before.received_bytes,
                );
                continue;
            }
            let o = measure(&exe, &emu, &key, c, plan)?;
            let (f, _) = emu.counts();
            report(plan, l, c, &o, counts_json(&f));
        }
        drop(server);
        drop(emu);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// `tcpfec perf --server` in side b, stopped when dropped.
/// The namespaces a bench killed by a signal left behind (`tfbenchPID-a`, `-b`, named
/// after a process that no longer runs): removed, each with a line saying so. A run
/// interrupted by SIGINT or SIGKILL cannot remove its own.
fn remove_abandoned_namespaces() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("tfbench")
            .and_then(|r| r.strip_suffix("-a").or_else(|| r.strip_suffix("-b")))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let gone = Command::new("ip").args(["netns", "del", &name]).status();
            if gone.is_ok_and(|s| s.success()) {
                eprintln!("removed network namespace {name}, left by an interrupted bench");
            }
        }
    }
}

fn start_server(exe: &Path, ns: &str, key: &Path) -> Result<Killed, String> {
    let mut cmd = netns_exec(ns, exe);
    cmd.args(["perf", "--server", "--json", "--listen"])
        .arg(format!("{}:5201", emu::ADDR_B))
        .arg("--key-file")
        .arg(key);
    let (server, line) = spawn_with_line_rest_dropped(cmd)?;
    if !line.contains("listening") {
        return Err(format!("the perf server did not start: {line}"));
    }
    Ok(server)
}

fn netns_exec(ns: &str, exe: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(exe);
    c
}

/// Runs `perf` in side a with `args`, at most `limit`; its JSON and wall seconds.
fn perf(
    exe: &Path,
    ns: &str,
    args: &[String],
    limit: Duration,
) -> Result<Option<(Value, f64)>, String> {
    let start = Instant::now();
    let mut child = netns_exec(ns, exe)
        .arg("perf")
        .arg(emu::ADDR_B.to_string())
        .arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run perf: {e}"))?;
    // Read while it runs: a long test's JSON outgrows the pipe's buffer, and a child
    // blocked on a full pipe never exits.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let stderr = drain(child.stderr.take().map(|r| Box::new(r) as _));
    // Polling the child is fine: runs last seconds, and 10 ms is far below their spread.
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let secs = start.elapsed().as_secs_f64();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "perf {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&stderr).trim()
        ));
    }
    let v = serde_json::from_slice(&stdout).map_err(|e| format!("perf output: {e}"))?;
    Ok(Some((v, secs)))
}

fn measure(
    exe: &Path,
    emu: &Emulator,
    key: &Path,
    c: &Contender,
    plan: &Plan,
) -> Result<Outcome, String> {
    let mut args = c.args(key);
    args.extend(["-t".into(), plan.seconds.to_string()]);
    let limit = Duration::from_secs_f64(plan.seconds * 3.0 + 60.0);
    let bulk = perf(exe, emu.a.name(), &args, limit)?;
    let (bulk, bulk_counts) = match &bulk {
        Some((v, _)) => (Some(goodputs(v, plan.seconds / 3.0)), counts(v)),
        None => (None, (0, 0)),
    };
    if plan.bytes == 0 {
        return Ok(Outcome {
            bulk,
            bulk_counts,
            completion: None,
            completion_data: None,
            completion_counts: (0, 0, 0),
        });
    }
    let mut args = c.args(key);
    args.extend(["-n".into(), plan.bytes.to_string()]);
    let (before, _) = emu.counts();
    let run = perf(exe, emu.a.name(), &args, plan.limit)?;
    let (after, _) = emu.counts();
    Ok(Outcome {
        bulk,
        bulk_counts,
        completion: run.as_ref().map(|(_, s)| *s),
        completion_data: run
            .as_ref()
            .and_then(|(v, _)| v["end"]["sum_sent"]["seconds"].as_f64()),
        completion_counts: (
            run.as_ref().map_or(0, |(v, _)| counts(v).0),
            after.overflow - before.overflow,
            after.lost - before.lost,
        ),
    })
}

/// `c` and one kernel TCP flow of congestion control `cc`, started together for the
/// plan's seconds: each one's goodput (Mb/s) after the first third.
fn against_run(
    exe: &Path,
    emu: &Emulator,
    key: &Path,
    c: &Contender,
    cc: &str,
    plan: &Plan,
) -> Result<(f64, f64), String> {
    let limit = Duration::from_secs_f64(plan.seconds * 3.0 + 60.0);
    let seconds = plan.seconds.to_string();
    let mut own = c.args(key);
    own.extend(["-t".into(), seconds.clone()]);
    let mut other = Contender::Tcp(cc.to_string()).args(key);
    other.extend(["-t".into(), seconds]);
    let ns = emu.a.name().to_string();
    let (exe2, ns2) = (exe.to_path_buf(), ns.clone());
    let competitor = std::thread::spawn(move || perf(&exe2, &ns2, &other, limit));
    let mine = perf(exe, &ns, &own, limit);
    let theirs = competitor
        .join()
        .map_err(|_| "the competing flow's thread failed".to_string())?;
    let warm = plan.seconds / 3.0;
    let goodput = |r: Result<Option<(Value, f64)>, String>, who: &str| match r? {
        Some((v, _)) => Ok(goodputs(&v, warm).1),
        None => Err(format!("{who}: the run did not end")),
    };
    Ok((goodput(mine, &c.label())?, goodput(theirs, cc)?))
}

/// `f.flows` flows of `c` on the link, each its own `perf` for `plan.seconds`, started
/// `f.stagger` apart in all: each one's goodput after the first third of its run.
fn flows_run(
    exe: &Path,
    emu: &Emulator,
    key: &Path,
    c: &Contender,
    f: &FlowsTest,
    plan: &Plan,
) -> Result<Vec<f64>, String> {
    let limit = Duration::from_secs_f64(plan.seconds * 3.0 + 60.0);
    let mut args = c.args(key);
    args.extend(["-t".into(), plan.seconds.to_string()]);
    let runs: Vec<_> = (0..f.flows)
        .map(|i| {
            let (exe, ns, args) = (exe.to_path_buf(), emu.a.name().to_string(), args.clone());
            let after = f.stagger * i as u32 / f.flows as u32;
            std::thread::spawn(move || {
                // The start of a flow is the measurement's input, not a wait for a result.
                std::thread::sleep(after);
                perf(&exe, &ns, &args, limit)
            })
        })
        .collect();
    let warm = plan.seconds / 3.0;
    let mut shares = Vec::with_capacity(runs.len());
    for (i, run) in runs.into_iter().enumerate() {
        let r = run
            .join()
            .map_err(|_| format!("flow {i}: its thread failed"))??;
        match r {
            Some((v, _)) => shares.push(goodputs(&v, warm).1),
            None => return Err(format!("{} flow {i}: the run did not end", c.label())),
        }
    }
    Ok(shares)
}

/// One line (or JSON object) of a `--flows` run.
fn report_flows(plan: &Plan, l: LossSpec, c: &Contender, f: &FlowsTest, goodputs: &[f64]) {
    let mut sorted = goodputs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let total: f64 = sorted.iter().sum();
    if plan.json {
        println!(
            "{}",
            json!({
                "bench": "emu-flows", "transport": c.label(), "flows": f.flows,
                "stagger_s": f.stagger.as_secs_f64(), "loss": l.mean_loss(), "loss_model": l,
                "rate_bps": plan.rate, "rtt_ms": plan.rtt.as_secs_f64() * 1e3,
                "queue_packets": plan.queue_packets(), "seconds": plan.seconds,
                "goodputs_mbps": goodputs, "jain": jain(goodputs), "total_mbps": total,
            })
        );
        return;
    }
    let each: Vec<String> = sorted.iter().map(|g| format!("{g:.1}")).collect();
    println!(
        "{:<w$} {:>12} {:>7.3} {:>10.1}  {}",
        c.label(),
        l.label(),
        jain(goodputs),
        total,
        each.join(" "),
        w = plan.label_width()
    );
}

/// One line (or JSON object) of an `--against` run.
fn report_against(plan: &Plan, l: LossSpec, c: &Contender, cc: &str, own: f64, other: f64) {
    let ratio = own / other.max(1e-9);
    if plan.json {
        println!(
            "{}",
            json!({
                "bench": "emu-against", "transport": c.label(), "against": cc,
                "loss": l.mean_loss(), "loss_model": l, "rate_bps": plan.rate,
                "rtt_ms": plan.rtt.as_secs_f64() * 1e3, "queue_packets": plan.queue_packets(),
                "seconds": plan.seconds,
                "goodput_mbps": own, "against_goodput_mbps": other, "ratio": ratio,
            })
        );
        return;
    }
    println!(
        "{:<w$} {:>12} {:>10.1} {:>10.1} {:>8.2}",
        c.label(),
        l.label(),
        own,
        other,
        ratio,
        w = plan.label_width()
    );
}

/// One delay test of `c`: `perf`'s JSON.
fn delay_run(
    exe: &Path,
    emu: &Emulator,
    key: &Path,
    c: &Contender,
    d: &DelayTest,
    plan: &Plan,
) -> Result<Value, String> {
    let mut args = c.args(key);
    args.extend(d.args(plan.seconds));
    // A transport that cannot carry the stream ends it 10 s behind schedule; what it
    // holds then still drains.
    let limit = Duration::from_secs_f64(plan.seconds * 3.0 + 120.0);
    match perf(exe, emu.a.name(), &args, limit)? {
        Some((v, _)) => Ok(v),
        None => Err(format!("{}: the delay test did not end", c.label())),
    }
}

/// A delay test's line (or JSON object): the percentiles, the sender's retransmissions
/// and repairs, and `wire` bytes on the link a → b per byte the test moved.
fn report_delay(plan: &Plan, l: LossSpec, c: &Contender, d: &DelayTest, v: &Value, wire: u64) {
    let p = &v["end"]["tcpfec"][d.key()];
    let moved = v["end"]["sum_sent"]["bytes"].as_f64().unwrap_or(0.0);
    let overhead = wire as f64 / moved.max(1.0) - 1.0;
    let (retr, repair) = counts(v);
    if plan.json {
        println!(
            "{}",
            json!({
                "bench": "emu-delay", "transport": c.label(), "loss": l.mean_loss(),
                "loss_model": l, "rate_bps": plan.rate, "rtt_ms": plan.rtt.as_secs_f64() * 1e3,
                "queue_packets": plan.queue_packets(),
                "test": d.args(plan.seconds).join(" "), d.key(): p, "retransmits": retr,
                "repairs_sent": repair, "bytes": moved, "link_bytes_a_to_b": wire,
                "wire_overhead": overhead,
            })
        );
        return;
    }
    let ms = |k: &str| p[k].as_f64().map_or("-".into(), |x| format!("{x:.1}"));
    println!(
        "{:<w$} {:>12} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7.1}%",
        c.label(),
        l.label(),
        ms("p50"),
        ms("p99"),
        ms("p999"),
        ms("max"),
        retr,
        repair,
        overhead * 100.0,
        w = plan.label_width()
    );
}

/// Goodput (Mb/s) of a perf run over all of it, and over the intervals after `warm`.
fn goodputs(v: &Value, warm: f64) -> (f64, f64) {
    let all = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0)
        / 1e6;
    let (mut bytes, mut secs) = (0.0, 0.0);
    for i in v["intervals"].as_array().into_iter().flatten() {
        let s = &i["sum"];
        if s["start"].as_f64().unwrap_or(0.0) >= warm {
            bytes += s["bytes"].as_f64().unwrap_or(0.0);
            secs += s["seconds"].as_f64().unwrap_or(0.0);
        }
    }
    (
        all,
        if secs > 0.0 {
            bytes * 8.0 / secs / 1e6
        } else {
            0.0
        },
    )
}

fn counts(v: &Value) -> (u64, u64) {
    let s = &v["end"]["sum_sent"];
    (
        s["retransmits"].as_u64().unwrap_or(0),
        s["tcpfec_repairs_sent"].as_u64().unwrap_or(0),
    )
}

fn report(plan: &Plan, l: LossSpec, c: &Contender, o: &Outcome, link: Value) {
    let p = l.mean_loss();
    if plan.json {
        println!(
            "{}",
            json!({
                "bench": "emu", "transport": c.label(), "loss": p, "loss_model": l,
                "rate_bps": plan.rate, "rtt_ms": plan.rtt.as_secs_f64() * 1e3,
                "queue_packets": plan.queue_packets(), "seed": plan.seed,
                "seconds": plan.seconds,
                "bulk_mbps": o.bulk.map(|b| b.0), "steady_mbps": o.bulk.map(|b| b.1),
                "retransmits": o.bulk_counts.0, "repairs_sent": o.bulk_counts.1,
                "completion_bytes": plan.bytes, "completion_s": o.completion,
                "completion_data_s": o.completion_data,
                "completion_retransmits": o.completion_counts.0,
                "completion_queue_drops": o.completion_counts.1,
                "completion_loss_drops": o.completion_counts.2,
                "link_a_to_b": link,
            })
        );
        return;
    }
    let limit = if plan.bytes == 0 {
        "-".to_string()
    } else {
        format!(">{:.0}", plan.limit.as_secs_f64())
    };
    println!(
        "{:<w$} {:>12} {:>12} {:>14} {:>8} {:>8} {:>12} {:>8}",
        c.label(),
        l.label(),
        o.bulk.map_or("-".into(), |b| format!("{:.1}", b.0)),
        o.bulk.map_or("-".into(), |b| format!("{:.1}", b.1)),
        o.bulk_counts.0,
        o.bulk_counts.1,
        o.completion.map_or(limit, |s| format!("{s:.2}")),
        o.completion_data.map_or("-".into(), |s| format!("{s:.2}")),
        w = plan.label_width()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_leaves_a_side_out_and_both_none_is_refused() {
        let only_ours = contenders(Some("auto,sack+resume"), Some("none")).unwrap();
        let labels: Vec<String> = only_ours.iter().map(|c| c.label()).collect();
        assert_eq!(labels.len(), 2, "{labels:?}");
        assert!(only_ours
            .iter()
            .all(|c| matches!(c, Contender::Tcpfec { .. })));
        assert!(contenders(Some("none"), Some("none")).is_err());
        assert!(contenders(Some("no-such-scheme"), Some("none")).is_err());
    }
}
