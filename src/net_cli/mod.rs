//! The real-network commands: keygen, send, recv, tunnel, relay. Thin glue over
//! `tcpfec-net`: parse flags, build endpoints, show progress, print counters. This module
//! holds what the commands share (flags, runtimes, counters as text and JSON, progress,
//! signals); each command lives in its own module.

use crate::auth_cli::Keys;
pub use crate::auth_cli::Security;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_net::control::CloseCode;
use tcpfec_net::path_cache::{self, PathCache};
use tcpfec_net::stream::Watch;
use tcpfec_net::{Endpoint, EndpointConfig, EndpointStats, RetryPolicy};
use tcpfec_proto::{Scheme, Stats};

mod files;
mod forwarding;
mod keygen;
mod relay;

pub use files::{recv, send, RecvArgs, SendArgs};
pub use forwarding::{tunnel, TunnelSide};
pub use keygen::{keygen, KeygenArgs};
pub use relay::{relay, Link, LinkArgs, RelayArgs};

/// `--config FILE` of the long-running commands ([`crate::config_file`] expands it before
/// the command line is parsed; the path stays here for a reload).
#[derive(Args, Clone, Default)]
pub struct ConfigArg {
    /// Read flags from a TOML file: each key is a long flag name (`listen =
    /// "0.0.0.0:7000"`, `threads = 4`, `out-per-peer = true`, lists for flags that repeat).
    /// Flags given on the command line win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Counter output flags.
#[derive(Args, Clone)]
pub struct Report {
    /// Print connection counters at exit and whenever SIGUSR1 arrives.
    #[arg(long)]
    stats: bool,
    /// Machine-readable output: one JSON object per event on stdout, no progress bar.
    #[arg(long)]
    json: bool,
    /// Seconds without an authentic packet after which a connection is declared dead.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    idle_timeout: f64,
    #[command(flatten)]
    qlog: QlogArg,
}

/// `--qlog DIR` of the commands that talk.
#[derive(Args, Clone, Default)]
pub struct QlogArg {
    /// Write a qlog trace (JSON-SEQ, for qvis) of every connection into DIR (created if
    /// missing): SIDE-UNIXMS-PEER-ID.sqlog, packets, losses, congestion metrics and FEC
    /// events (docs/guide/traces.md). Off by default; the QLOGDIR environment variable
    /// turns it on as for QUIC tools.
    #[arg(long, value_name = "DIR", env = "QLOGDIR")]
    pub qlog: Option<PathBuf>,
}

impl QlogArg {
    /// Sets `cfg` to trace into the directory, creating it.
    pub(crate) fn apply(&self, cfg: &mut EndpointConfig) -> Result<(), String> {
        if let Some(dir) = &self.qlog {
            std::fs::create_dir_all(dir).map_err(|e| format!("--qlog {}: {e}", dir.display()))?;
            cfg.qlog_dir = Some(dir.clone());
        }
        Ok(())
    }
}

/// Careful Resume for a connecting side.
#[derive(Args, Clone)]
pub struct ResumeOpt {
    /// Start every connection afresh instead of resuming from what the last connection
    /// to the same address learnt (Careful Resume, RFC 9959: half the saved rate × RTT,
    /// paced, checked against the current RTT, retreating on congestion). The saved
    /// paths live in $XDG_CACHE_HOME/tcpfec/paths (else ~/.cache/tcpfec/paths), one line
    /// per address, nothing secret, for an hour; TCPFEC_NO_RESUME=1 also turns it off.
    #[arg(long)]
    no_resume: bool,
}

impl ResumeOpt {
    /// The path cache to use, unless turned off.
    pub(crate) fn cache(&self) -> Option<Arc<PathCache>> {
        path_cache(!self.no_resume)
    }
}

/// The user's path cache if `wanted` and not turned off by the environment; what was
/// wrong with the file is printed as warnings.
pub(crate) fn path_cache(wanted: bool) -> Option<Arc<PathCache>> {
    if !wanted || !path_cache::resume_enabled_by_env() {
        return None;
    }
    let file = path_cache::default_file()?;
    let (cache, warnings) = PathCache::open(&file, path_cache::DEFAULT_LIFETIME);
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Some(Arc::new(cache))
}

/// Address validation by a listening side.
#[derive(Args, Clone)]
pub struct Validation {
    /// When a new client must first prove its address with a cookie round trip (Retry):
    /// `when-busy` only while 64 clients have not yet proven theirs (a flood of spoofed
    /// packets), so the first byte of data arrives 1.5 round trips after the client
    /// starts; `always` for every client, one round trip more.
    #[arg(long, value_enum, default_value = "when-busy")]
    retry: RetryMode,
}

/// `--retry` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RetryMode {
    WhenBusy,
    Always,
}

impl Validation {
    fn apply(&self, cfg: &mut EndpointConfig) {
        cfg.retry = match self.retry {
            RetryMode::WhenBusy => RetryPolicy::WhenBusy,
            RetryMode::Always => RetryPolicy::Always,
        };
    }
}

/// The number of CPUs this process may use (2 if the system does not say).
pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How many cores a server uses.
#[derive(Args, Clone, Copy, Debug)]
pub struct Threads {
    /// Server: worker threads, and UDP sockets sharing the port (SO_REUSEPORT) that
    /// split the connections between them: one connection runs on one core, several
    /// spread over up to N. Default: the number of CPUs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
}

impl Threads {
    /// The number asked for, or the number of CPUs.
    pub fn count(&self) -> usize {
        self.threads.map_or_else(cpus, usize::from)
    }

    /// Whether the user gave `--threads`.
    pub fn is_set(&self) -> bool {
        self.threads.is_some()
    }
}

/// A multi-threaded runtime with `threads` workers.
pub(crate) fn runtime_with(threads: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}

/// The runtime of the client commands: a worker per CPU.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    runtime_with(cpus())
}

pub(crate) async fn resolve(flag: &str, s: &str) -> Result<SocketAddr, String> {
    tokio::net::lookup_host(s)
        .await
        .map_err(|e| format!("{flag}: cannot resolve '{s}': {e}"))?
        .next()
        .ok_or_else(|| format!("{flag}: '{s}' resolves to no address"))
}

/// Parses a scheme; `blocks_ok` says whether the command can use FECTCP, which moves
/// whole blocks (a file transfer can, an interactive tunnel cannot).
pub(crate) fn scheme(flag: &str, s: &str, blocks_ok: bool) -> Result<Scheme, String> {
    let scheme = Scheme::parse(s).map_err(|e| format!("{flag}: {e}"))?;
    if scheme.fountain.is_some() && !blocks_ok {
        return Err(format!(
            "{flag}: {s} moves whole blocks, each delivered only once complete; a tunnel needs a byte stream"
        ));
    }
    Ok(scheme)
}

fn endpoint_config(keys: &Keys, scheme: Scheme, r: &Report) -> Result<EndpointConfig, String> {
    if !(r.idle_timeout > 0.0 && r.idle_timeout < 86_400.0) {
        return Err("--idle-timeout: give seconds between 0 and 86400".into());
    }
    let mut cfg = EndpointConfig::new(keys.psk.clone(), scheme);
    cfg.idle_timeout = Duration::from_secs_f64(r.idle_timeout);
    r.qlog.apply(&mut cfg)?;
    Ok(cfg)
}

/// The engine counters as JSON.
pub fn stats_json(s: &Stats) -> Value {
    json!({
        "data_packets_sent": s.data_packets_sent,
        "retransmissions": s.retransmissions,
        "payload_bytes_sent": s.payload_bytes_sent,
        "bytes_acked": s.bytes_acked,
        "repairs_sent": s.repairs_sent,
        "fast_recoveries": s.fast_recoveries,
        "timeouts": s.timeouts,
        "segments_received": s.segments_received,
        "duplicate_segments": s.duplicate_segments,
        "bytes_delivered": s.bytes_delivered,
        "repairs_received": s.repairs_received,
        "recovered": s.recovered,
        "unrecoverable_groups": s.unrecoverable_groups,
        "srtt_ms": s.srtt.map(|d| d.as_secs_f64() * 1e3),
        "resume": s.resume.as_str(),
    })
}

/// The endpoint counters as JSON (every drop reason of [`EndpointStats::drop_reasons`]).
pub fn endpoint_json(e: &EndpointStats) -> Value {
    let mut v = json!({
        "datagrams_in": e.datagrams_in,
        "datagrams_out": e.datagrams_out,
        "bytes_in": e.bytes_in,
        "bytes_out": e.bytes_out,
        "dropped": e.dropped(),
        "retries_sent": e.retries_sent,
        "unvalidated_expired": e.unvalidated_expired,
        "rejects_sent": e.rejects_sent,
        "handshakes_accepted": e.handshakes_accepted,
        "keepalives_sent": e.keepalives_sent,
        "path_challenges_sent": e.path_challenges_sent,
        "migrations": e.migrations,
        "forwarded": e.forwarded,
    });
    for (name, n) in e.drop_reasons() {
        v[name] = json!(n);
    }
    v
}

/// Every drop reason as `name count`, in the JSON's names.
fn drops_text(e: &EndpointStats) -> String {
    e.drop_reasons()
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn stats_text(s: &Stats, e: &EndpointStats) -> String {
    format!(
        "sent {} data packets ({} retransmitted, {} repair), {} fast recoveries, {} timeouts; \
         received {} segments, {} recovered by FEC, {} unrecoverable groups; srtt {}; \
         datagrams in {} out {}, dropped {} ({})",
        s.data_packets_sent,
        s.retransmissions,
        s.repairs_sent,
        s.fast_recoveries,
        s.timeouts,
        s.segments_received,
        s.recovered,
        s.unrecoverable_groups,
        s.srtt
            .map_or("-".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3)),
        e.datagrams_in,
        e.datagrams_out,
        e.dropped(),
        drops_text(e),
    )
}

/// Prints counters from `get` on every SIGUSR1 until the task is aborted.
pub(crate) fn on_sigusr1<F: Fn() -> String + Send + 'static>(
    get: F,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut sig) = signal(SignalKind::user_defined1()) else {
                return;
            };
            while sig.recv().await.is_some() {
                eprintln!("{}", get());
            }
        }
        #[cfg(not(unix))]
        {
            let _ = get;
            std::future::pending::<()>().await;
        }
    })
}

fn bar(total: u64, json: bool) -> ProgressBar {
    if json || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(total);
    b.set_style(
        ProgressStyle::with_template(
            "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}",
        )
        .expect("valid template"),
    );
    b
}

/// Keeps a progress bar current from a byte counter and the connection's counters.
fn drive_bar(
    b: ProgressBar,
    done: Arc<AtomicU64>,
    watch: Watch,
    sender: bool,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tick.tick().await;
            b.set_position(done.load(Ordering::Relaxed));
            let s = watch.stats();
            b.set_message(if sender {
                format!(
                    "| rexmit {} ({:.2}%) repair {} timeouts {}",
                    s.retransmissions,
                    100.0 * s.retransmissions as f64 / s.data_packets_sent.max(1) as f64,
                    s.repairs_sent,
                    s.timeouts
                )
            } else {
                format!(
                    "| recovered {} unrecoverable {} dup {}",
                    s.recovered, s.unrecoverable_groups, s.duplicate_segments
                )
            });
        }
    })
}

/// A stop request from the operator: which signal, and the conventional exit status
/// (128 + the signal's number).
#[derive(Debug, Clone, Copy)]
struct Stop {
    signal: &'static str,
    status: i32,
}

/// SIGINT and SIGTERM, caught from the start of a command so that it can clean up and
/// tell its peers before it exits.
struct StopSignals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn new() -> Result<Self, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let err = |e| format!("cannot catch signals: {e}");
        Ok(StopSignals {
            int: signal(SignalKind::interrupt()).map_err(err)?,
            term: signal(SignalKind::terminate()).map_err(err)?,
        })
    }

    /// Waits for the next SIGINT or SIGTERM, and marks every connection of `ep` to close
    /// before returning: the caller's `select!` then drops the transfers, and a stream
    /// dropped before the close would send its peer a FIN, read there as a transfer cut
    /// short rather than an interruption.
    async fn next(&mut self, ep: &Endpoint) -> Stop {
        let stop = tokio::select! {
            _ = self.int.recv() => Stop { signal: "SIGINT", status: 130 },
            _ = self.term.recv() => Stop { signal: "SIGTERM", status: 143 },
        };
        ep.begin_close_all(CloseCode::Interrupted, "");
        stop
    }
}

/// Tells every peer of `ep` that this side was stopped, then ends the process with the
/// signal's exit status. Callers drop their transfers first, so incomplete files are gone.
async fn exit_stopped(ep: &Endpoint, stop: Stop, what: &str, json: bool) -> ! {
    ep.close_all(CloseCode::Interrupted, "", Duration::from_secs(1))
        .await;
    say(
        json,
        json!({"event": "stopped", "signal": stop.signal, "detail": what}),
        format_args!("stopped by {}: {what}", stop.signal),
    );
    tcpfec_qlog::flush_all(Duration::from_secs(2));
    std::process::exit(stop.status)
}

/// Tells the operator something: with `--json` as one JSON object on standard output (so
/// every line there is JSON), otherwise as text on standard error.
fn say(json: bool, event: Value, text: std::fmt::Arguments<'_>) {
    if json {
        println!("{event}");
    } else {
        eprintln!("{text}");
    }
}

/// Set once a failure has been told as a JSON `failed` event ([`print_failure`]).
static FAILURE_PRINTED: AtomicBool = AtomicBool::new(false);

/// Prints a `failed` event that ends a command's JSON output.
fn print_failure(v: Value) {
    FAILURE_PRINTED.store(true, Ordering::Relaxed);
    println!("{v}");
}

/// With `--json`, a command's fatal error also goes to standard output as an `error`
/// event (unless a `failed` event told it already), so a reader of the JSON stream learns
/// why it ended.
pub fn json_error(json: bool, r: Result<(), String>) -> Result<(), String> {
    if let (true, Err(e)) = (json, &r) {
        if !FAILURE_PRINTED.load(Ordering::Relaxed) {
            println!("{}", json!({"event": "error", "error": e}));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `--stats` text names every drop reason the JSON has, with its count.
    #[test]
    fn stats_text_lists_every_drop_reason_of_the_json() {
        let e = EndpointStats {
            malformed: 11,
            auth_failed: 12,
            replayed: 13,
            unknown_conn: 14,
            wrong_source: 15,
            bad_inner: 16,
            unexpected: 17,
            bad_token: 18,
            token_reused: 19,
            ..EndpointStats::default()
        };
        let text = stats_text(&Stats::default(), &e);
        let json = endpoint_json(&e);
        for (name, n) in e.drop_reasons() {
            assert_eq!(json[name], n, "{name}");
            assert!(text.contains(&format!("{name} {n}")), "{name}: {text}");
        }
        assert_eq!(json["dropped"], 11 + 12 + 13 + 14 + 15 + 16 + 17 + 18 + 19);
    }
}
