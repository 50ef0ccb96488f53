//! The real-network commands: keygen, send, recv, tunnel, relay. Thin glue over
//! `tcpfec-net`: parse flags, build endpoints, show progress, print counters.

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcpfec_channel::{units, LossSpec};
use tcpfec_net::control::CloseCode;
use tcpfec_net::path_cache::{self, PathCache};
use tcpfec_net::printable::printable;
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig};
use tcpfec_net::stream::Watch;
use tcpfec_net::transfer::{self, FileEvent, FileOutcome};
use tcpfec_net::tunnel::{self, TunnelStats};
use tcpfec_net::{
    Endpoint, EndpointConfig, EndpointStats, Psk, RetryPolicy, Stream, DEFAULT_SCHEME,
};
use tcpfec_proto::{Scheme, Stats};

pub use crate::auth_cli::Security;
use crate::auth_cli::{ClientAuth, Keys, ServerAuth};

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

/// `tcpfec keygen`.
#[derive(Args)]
pub struct KeygenArgs {
    /// Where to write the key (refuses to overwrite; mode 0600). With --pair, the
    /// private key; the public key goes to FILE.pub.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// A key pair (X25519) instead of a pre-shared key: FILE stays on this machine
    /// (--identity FILE), FILE.pub goes to the peers (a server lists it in its
    /// --authorized-keys, a client pins it with --server-key).
    #[arg(long)]
    pair: bool,
    /// With --pair: the comment after the public key in FILE.pub [default: USER@HOST].
    #[arg(long, requires = "pair")]
    comment: Option<String>,
}

/// `tcpfec send`.
#[derive(Args)]
#[command(override_usage = "tcpfec send [OPTIONS] <FILE>... <ADDR>")]
pub struct SendArgs {
    /// Files to send, then the receiver's address (HOST:PORT).
    #[arg(required = true, num_args = 2.., value_name = "FILE|ADDR")]
    args: Vec<String>,
    #[command(flatten)]
    security: Security,
    #[command(flatten)]
    server_auth: ClientAuth,
    /// Congestion-control / FEC scheme for the data direction. The default, auto,
    /// measures the loss at the receiver (rate and burst length, congestion drops left
    /// out) and sizes Reed-Solomon blocks to it: about 1 % repair on a clean path, more as
    /// loss grows, and repairs for its retransmissions too, over BBR v3 which does not
    /// slow down for losses FEC repaired (docs/design/auto.md). `tcpfec schemes` lists the
    /// others; `sack` spends nothing on repair.
    #[arg(long, default_value = DEFAULT_SCHEME)]
    scheme: String,
    #[command(flatten)]
    resume: ResumeOpt,
    #[command(flatten)]
    report: Report,
}

/// `tcpfec recv`.
#[derive(Args)]
pub struct RecvArgs {
    /// UDP address to listen on, e.g. 0.0.0.0:7000.
    #[arg(long)]
    listen: String,
    /// Directory to store received files in (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Overwrite existing files.
    #[arg(long)]
    force: bool,
    /// Exit after the first connection (exit status says whether it succeeded).
    #[arg(long)]
    once: bool,
    /// Store each peer's files under its own subdirectory of --out, named as the peer is
    /// in --authorized-keys (or by its key's fingerprint). Needs --identity.
    #[arg(long)]
    out_per_peer: bool,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    security: Security,
    #[command(flatten)]
    peers: ServerAuth,
    #[command(flatten)]
    validation: Validation,
    #[command(flatten)]
    config: ConfigArg,
    /// Scheme for the answers this side sends (tiny; the sender chooses its own).
    #[arg(long, default_value = "sack")]
    scheme: String,
    #[command(flatten)]
    report: Report,
}

/// `tcpfec tunnel`.
#[derive(Subcommand)]
pub enum TunnelSide {
    /// Accept tcpfec connections and forward each to HOST:PORT.
    Server {
        /// UDP address to listen on.
        #[arg(long)]
        listen: String,
        /// Where to forward (TCP, and UDP with --udp).
        #[arg(long, value_name = "HOST:PORT")]
        to: String,
        /// Forward UDP datagrams too.
        #[arg(long)]
        udp: bool,
        /// Most forwarded connections (TCP connections and UDP flows) carried at once;
        /// beyond it a new one is closed with the reason, which its client reports. Each
        /// may hold a few MiB while its target or client is slow
        #[arg(long, default_value_t = tunnel::ServerLimits::default().max_connections, value_name = "N")]
        max_connections: usize,
        /// Most forwarded connections carried at once from one client IP address
        #[arg(long, default_value_t = tunnel::ServerLimits::default().max_per_peer, value_name = "N")]
        max_per_peer: usize,
        /// Forward only for these peers (names from --authorized-keys; repeat the flag or
        /// separate with commas). Other peers' connections are closed with the reason.
        #[arg(long, value_name = "NAME", value_delimiter = ',')]
        allow_peer: Vec<String>,
        #[command(flatten)]
        threads: Threads,
        #[command(flatten)]
        security: Security,
        #[command(flatten)]
        peers: ServerAuth,
        #[command(flatten)]
        validation: Validation,
        #[command(flatten)]
        config: ConfigArg,
        /// Scheme for the server → client direction (see `tcpfec send --help`).
        #[arg(long, default_value = DEFAULT_SCHEME)]
        scheme: String,
        #[command(flatten)]
        report: Report,
    },
    /// Accept local TCP connections (and UDP datagrams with --udp) and carry each over
    /// its own tcpfec connection to the tunnel server.
    Client {
        /// Local address to accept on, e.g. 127.0.0.1:8080.
        #[arg(long)]
        listen: String,
        /// The tunnel server's UDP address.
        #[arg(long)]
        server: String,
        /// Forward UDP datagrams too (same local port number).
        #[arg(long)]
        udp: bool,
        #[command(flatten)]
        security: Security,
        #[command(flatten)]
        server_auth: ClientAuth,
        #[command(flatten)]
        config: ConfigArg,
        /// Scheme for the client → server direction (see `tcpfec send --help`).
        #[arg(long, default_value = DEFAULT_SCHEME)]
        scheme: String,
        #[command(flatten)]
        resume: ResumeOpt,
        #[command(flatten)]
        report: Report,
    },
}

impl SendArgs {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.report.json
    }
}

impl RecvArgs {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.report.json
    }
}

impl TunnelSide {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            TunnelSide::Server { report, .. } | TunnelSide::Client { report, .. } => report.json,
        }
    }
}

/// `tcpfec relay`.
#[derive(Args)]
pub struct RelayArgs {
    /// UDP address clients send to.
    #[arg(long)]
    listen: String,
    /// UDP address to forward to.
    #[arg(long)]
    to: String,
    #[command(flatten)]
    link: LinkArgs,
    /// Most clients (source addresses) served at once; a new one beyond them replaces the
    /// client heard from least recently (as a NAT forgets its oldest mapping).
    #[arg(long, default_value_t = tcpfec_net::relay::DEFAULT_MAX_SOURCES, value_name = "N")]
    max_sources: usize,
    /// Seconds without a datagram from a client after which its upstream socket closes.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    idle_expiry: f64,
    /// Write every datagram the relay forwards (both ways, after the impairments) into
    /// this pcapng file, with wall-clock timestamps; contrib/wireshark/tcpfec.lua decodes
    /// the envelope (and, for --insecure runs, the engine packets inside).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    config: ConfigArg,
}

/// The emulated link, shared by `relay` and `emu`. "Forward" is listen → to for the
/// relay, a → b for the emulator.
#[derive(Args, Clone)]
pub struct LinkArgs {
    /// Link rate each way, e.g. 50mbit [default: unlimited].
    #[arg(long)]
    rate: Option<String>,
    /// One-way delay each way, e.g. 50ms.
    #[arg(long, default_value = "0ms")]
    delay: String,
    /// Drop-tail queue per direction, packets [default: one bandwidth-delay product, at
    /// least 64].
    #[arg(long)]
    queue: Option<usize>,
    /// Most bytes one direction holds, queued and propagating, with or without --rate;
    /// more are dropped.
    #[arg(long, default_value_t = tcpfec_net::relay::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    max_bytes: usize,
    /// Random loss forward (relay: listen → to; emu: a → b), e.g. 1%.
    #[arg(long, default_value = "0")]
    loss: String,
    /// Gilbert-Elliott loss forward instead: p,r,h,k.
    #[arg(long)]
    ge: Option<String>,
    /// Random loss backward (relay: to → listen; emu: b → a).
    #[arg(long, default_value = "0")]
    loss_back: String,
    /// Gilbert-Elliott loss backward instead: p,r,h,k.
    #[arg(long)]
    ge_back: Option<String>,
    /// Seed of the loss models.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Both directions of a link.
pub struct Link {
    /// Forward.
    pub forward: LinkSpec,
    /// Backward.
    pub back: LinkSpec,
    /// Seed of the loss models.
    pub seed: u64,
}

impl Link {
    /// "rate 50 Mb/s, one-way delay 100ms, queue 833 packets, loss 1.000% forward, …".
    pub fn describe(&self) -> String {
        let f = &self.forward;
        format!(
            "rate {}, one-way delay {:?}, queue {}, loss {:.3}% forward, {:.3}% back",
            f.rate_bps
                .map_or("unlimited".into(), |r| format!("{} Mb/s", r as f64 / 1e6)),
            f.delay,
            if f.queue == usize::MAX {
                "unlimited".into()
            } else {
                format!("{} packets", f.queue)
            },
            f.loss.mean_loss() * 100.0,
            self.back.loss.mean_loss() * 100.0
        )
    }
}

impl LinkArgs {
    /// Checks the flags and builds both directions.
    pub fn link(&self) -> Result<Link, String> {
        let rate = self
            .rate
            .as_deref()
            .map(units::parse_rate)
            .transpose()
            .map_err(|e| format!("--rate: {e}"))?;
        let delay = units::parse_duration(&self.delay).map_err(|e| format!("--delay: {e}"))?;
        let queue = match (self.queue, rate) {
            (Some(q), _) => q.max(1),
            (None, Some(r)) => {
                ((r as f64 * 2.0 * delay.as_secs_f64() / 8.0 / 1500.0) as usize).max(64)
            }
            (None, None) => usize::MAX,
        };
        let fwd_loss = loss_spec("--loss", &self.loss, "--ge", &self.ge)?;
        let back_loss = loss_spec("--loss-back", &self.loss_back, "--ge-back", &self.ge_back)?;
        if self.max_bytes < 2048 {
            return Err("--max-bytes: give at least 2048 bytes (one datagram)".into());
        }
        let link = LinkSpec {
            rate_bps: rate,
            delay,
            queue,
            max_bytes: self.max_bytes,
            loss: LossSpec::None,
        };
        Ok(Link {
            forward: LinkSpec {
                loss: fwd_loss,
                ..link
            },
            back: LinkSpec {
                loss: back_loss,
                ..link
            },
            seed: self.seed,
        })
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

/// `tcpfec keygen`.
pub fn keygen(a: KeygenArgs) -> Result<(), String> {
    if a.pair {
        let comment = a.comment.clone().unwrap_or_else(default_comment);
        let pair = tcpfec_net::KeyPair::generate();
        let public = pair
            .write_new(&a.out, &comment)
            .map_err(|e| format!("--out: {e}"))?;
        eprintln!(
            "wrote a new key pair: {} (private, stays here) and {} (public: give it to the \
             peers)\npublic key: {} ({})",
            a.out.display(),
            public.display(),
            pair.public,
            pair.public.fingerprint()
        );
        return Ok(());
    }
    Psk::generate()
        .write_new(&a.out)
        .map_err(|e| format!("--out: {e}"))?;
    eprintln!(
        "wrote a new key to {}; copy it to the other machine over a safe channel",
        a.out.display()
    );
    Ok(())
}

/// `USER@HOST`, as ssh-keygen comments its keys.
fn default_comment() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "tcpfec".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{user}@{host}")
}

fn outcome_line(o: &FileOutcome) -> String {
    format!(
        "{}: {} bytes in {:.1} s ({:.1} Mb/s), BLAKE3 verified",
        printable(&o.name),
        o.bytes,
        o.secs,
        o.bytes as f64 * 8.0 / o.secs.max(1e-9) / 1e6
    )
}

fn outcome_json(o: &FileOutcome) -> Value {
    json!({"name": printable(&o.name), "bytes": o.bytes, "secs": o.secs})
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

/// `tcpfec send`.
pub fn send(a: SendArgs) -> Result<(), String> {
    let (files, addr) = a.args.split_at(a.args.len() - 1);
    let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
    let mut total = 0u64;
    for f in &files {
        let m = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
        if !m.is_file() {
            return Err(format!("{}: not a regular file", f.display()));
        }
        total += m.len();
    }
    let keys = a.security.keys()?;
    let mut cfg = endpoint_config(&keys, scheme("--scheme", &a.scheme, true)?, &a.report)?;
    cfg.peer_scheme = Some(Scheme::parse("sack").expect("built-in"));
    cfg.path_cache = a.resume.cache();
    let json = a.report.json;
    runtime()?.block_on(async move {
        let mut signals = StopSignals::new()?;
        let text = &addr[0];
        let addr = resolve("ADDR", text).await?;
        cfg.identity = a.server_auth.identity_config(&keys, &cfg, text, addr).await?;
        let ep = Endpoint::client(cfg)
            .await
            .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
        let mut s = tokio::select! {
            s = ep.connect(addr) => s.map_err(|e| e.to_string())?,
            stop = signals.next(&ep) => exit_stopped(&ep, stop, "nothing was sent", json).await,
        };
        let watch = s.watch();
        let w2 = watch.clone();
        let sig = on_sigusr1(move || {
            if json {
                json!({"stats": stats_json(&w2.stats()), "endpoint": endpoint_json(&w2.endpoint())})
                    .to_string()
            } else {
                stats_text(&w2.stats(), &w2.endpoint())
            }
        });
        let done = Arc::new(AtomicU64::new(0));
        let b = bar(total, json);
        let ticker = drive_bar(b.clone(), done.clone(), watch.clone(), true);
        let start = Instant::now();
        let blocks = s.moves_blocks();
        // Each file is reported the moment the receiver confirms it, so an error or a
        // stop later on does not hide what did arrive.
        let confirmed = std::sync::Mutex::new(Vec::new());
        let mut on_done = |o: &FileOutcome| {
            if !json {
                b.suspend(|| println!("{}", outcome_line(o)));
            }
            confirmed.lock().expect("not poisoned").push(o.clone());
        };
        let r = tokio::select! {
            r = transfer::send_files(&mut s, &files, &done, blocks, &mut on_done) => Ok(r),
            stop = signals.next(&ep) => Err(stop),
        };
        ticker.abort();
        sig.abort();
        b.finish_and_clear();
        let r = match r {
            Ok(r) => r,
            Err(stop) => {
                let n = confirmed.lock().expect("not poisoned").len();
                drop(s);
                let what = format!(
                    "{n} of {} file(s) confirmed stored; the receiver was told and discards the incomplete one",
                    files.len()
                );
                exit_stopped(&ep, stop, &what, json).await
            }
        };
        let stats = watch.stats();
        let est = watch.endpoint();
        drop(s);
        // Exit once both ends are confirmed, without the engine's linger.
        ep.wait_done(Duration::from_secs(2)).await;
        let secs = start.elapsed().as_secs_f64();
        if a.report.stats && !json {
            eprintln!("{}", stats_text(&stats, &est));
        }
        match r {
            Ok(outcomes) => {
                if json {
                    let v = json!({
                        "event": "sent",
                        "files": outcomes.iter().map(outcome_json).collect::<Vec<_>>(),
                        "secs": secs,
                        "goodput_mbps": total as f64 * 8.0 / secs / 1e6,
                        "scheme": a.scheme,
                        "stats": stats_json(&stats),
                        "endpoint": endpoint_json(&est),
                    });
                    println!("{v}");
                }
                Ok(())
            }
            Err(e) => {
                if json {
                    let stored = confirmed.lock().expect("not poisoned");
                    print_failure(json!({
                        "event": "failed",
                        "error": e.to_string(),
                        "files": stored.iter().map(outcome_json).collect::<Vec<_>>(),
                        "stats": stats_json(&stats),
                        "endpoint": endpoint_json(&est),
                    }));
                }
                Err(e.to_string())
            }
        }
    })
}

/// Receives one connection's files into `dir`, logging each stored file at once (text or
/// JSON) and the connection's failure, if any.
async fn receive_connection(
    mut s: Stream,
    dir: PathBuf,
    force: bool,
    json: bool,
    stats: bool,
    per_peer: bool,
) -> Result<(), String> {
    let addr = s.peer_addr();
    let name = s.peer_name();
    // The peer as logs name it: its name and address, or the address alone.
    let peer = match &name {
        Some(n) => format!("{n} ({addr})"),
        None => addr.to_string(),
    };
    let peer_json = json!(name);
    let dir = match (&name, per_peer) {
        // Names are checked to be one plain path component (identity::valid_name).
        (Some(n), true) => {
            let d = dir.join(n);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            d
        }
        _ => dir,
    };
    let done = Arc::new(AtomicU64::new(0));
    let b = bar(0, json);
    b.set_style(
        ProgressStyle::with_template("{bytes} {binary_bytes_per_sec} {msg}")
            .expect("valid template"),
    );
    let watch = s.watch();
    let ticker = drive_bar(b.clone(), done.clone(), watch.clone(), false);
    let mut on_event = |e: FileEvent| match e {
        FileEvent::Receiving { name, bytes } if json => println!(
            "{}",
            json!({"event": "receiving", "from": addr.to_string(), "peer": peer_json, "name": printable(name), "bytes": bytes})
        ),
        FileEvent::Receiving { .. } => {}
        FileEvent::Stored(o) if json => {
            let mut v = outcome_json(o);
            v["event"] = json!("received");
            v["from"] = json!(addr.to_string());
            v["peer"] = peer_json.clone();
            println!("{v}");
        }
        FileEvent::Stored(o) => b.suspend(|| println!("{} from {peer}", outcome_line(o))),
    };
    let r = transfer::receive_files(&mut s, &dir, force, &done, &mut on_event).await;
    ticker.abort();
    b.finish_and_clear();
    let st = watch.stats();
    let est = watch.endpoint();
    drop(s);
    match &r {
        Ok(_) if json => println!(
            "{}",
            json!({"event": "done", "from": addr.to_string(), "peer": peer_json, "stats": stats_json(&st)})
        ),
        Ok(_) => {}
        Err(e) if json => print_failure(
            json!({"event": "failed", "from": addr.to_string(), "peer": peer_json, "error": e.to_string()}),
        ),
        Err(e) => eprintln!("from {peer}: {e}; nothing incomplete was kept"),
    }
    if stats && !json {
        eprintln!("{}", stats_text(&st, &est));
    }
    r.map(|_| ()).map_err(|e| e.to_string())
}

/// Tells the operator how a reload of the authorized keys (SIGHUP) went.
fn reloaded(json: bool, r: Result<(usize, usize), String>) {
    match r {
        Ok((peers, closed)) => say(
            json,
            json!({"event": "reloaded", "peers": peers, "revoked_connections": closed}),
            format_args!(
                "reloaded the authorized keys: {peers} peer(s); {closed} connection(s) of removed peers closed"
            ),
        ),
        Err(e) => say(
            json,
            json!({"event": "reload_failed", "error": e}),
            format_args!("reload failed, the previous authorized keys stay in force: {e}"),
        ),
    }
}

/// `tcpfec recv`.
pub fn recv(a: RecvArgs) -> Result<(), String> {
    // A missing directory is created, as `mkdir -p` would.
    std::fs::create_dir_all(&a.out).map_err(|e| format!("--out {}: {e}", a.out.display()))?;
    let meta = std::fs::metadata(&a.out).map_err(|e| format!("--out {}: {e}", a.out.display()))?;
    if !meta.is_dir() {
        return Err(format!("--out {}: not a directory", a.out.display()));
    }
    let keys = a.security.keys()?;
    let mut cfg = endpoint_config(&keys, scheme("--scheme", &a.scheme, true)?, &a.report)?;
    cfg.identity = a.peers.identity_config(&keys)?;
    if a.out_per_peer && cfg.identity.is_none() {
        return Err(
            "--out-per-peer needs --identity: peers are told apart by their key pairs".into(),
        );
    }
    a.validation.apply(&mut cfg);
    let json = a.report.json;
    let threads = a.threads.count();
    runtime_with(threads)?.block_on(async move {
        let mut signals = StopSignals::new()?;
        let listen = resolve("--listen", &a.listen).await?;
        let ep = Endpoint::server(listen, cfg, threads)
            .await
            .map_err(|e| format!("--listen {listen}: {e}"))?;
        let local = ep.local_addr().map_err(|e| e.to_string())?;
        if json {
            println!("{}", json!({"event": "listening", "addr": local.to_string()}));
        } else {
            eprintln!("listening on {local}, storing into {}", a.out.display());
        }
        let ep = Arc::new(ep);
        let e2 = ep.clone();
        let _sig = on_sigusr1(move || format!("{}", endpoint_json(&e2.stats())));
        let _hup = a.peers.reload_on_sighup(ep.clone(), move |r| reloaded(json, r))?;
        let mut tasks = tokio::task::JoinSet::new();
        let mut accepted = false;
        let stop = loop {
            tokio::select! {
                s = ep.accept(), if !(a.once && accepted) => {
                    let s = s.ok_or("the endpoint closed")?;
                    accepted = true;
                    tasks.spawn(receive_connection(s, a.out.clone(), a.force, json, a.report.stats, a.out_per_peer));
                }
                Some(r) = tasks.join_next() => {
                    let r = r.map_err(|e| e.to_string())?;
                    if a.once {
                        ep.wait_done(Duration::from_secs(2)).await;
                        return r;
                    }
                }
                stop = signals.next(&ep) => break stop,
            }
        };
        // Dropping the transfers removes their temporary files; stored files stay.
        let open = tasks.len();
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        let what = format!(
            "{open} transfer(s) in progress were stopped and their incomplete files removed; \
             the senders were told; stored files are kept"
        );
        exit_stopped(&ep, stop, &what, json).await
    })
}

/// `tcpfec tunnel`.
pub fn tunnel(side: TunnelSide) -> Result<(), String> {
    let threads = match &side {
        TunnelSide::Server { threads, .. } => threads.count(),
        _ => cpus(),
    };
    runtime_with(threads)?.block_on(async move {
        let mut signals = StopSignals::new()?;
        let json = side.json();
        let stats = Arc::new(TunnelStats {
            events: tunnel::TunnelEvents::to(move |e| {
                let v = match e {
                    tunnel::TunnelEvent::Failed { connection, error } => {
                        json!({"event": "failed", "connection": connection, "error": error})
                    }
                    tunnel::TunnelEvent::Refused { connection, reason } => {
                        json!({"event": "refused", "connection": connection, "reason": reason})
                    }
                };
                say(json, v, format_args!("{e}"))
            }),
            ..TunnelStats::default()
        });
        match side {
            TunnelSide::Server {
                listen,
                to,
                udp: _,
                max_connections,
                max_per_peer,
                allow_peer,
                threads: _,
                security,
                peers,
                validation,
                config: _,
                scheme: sch,
                report,
            } => {
                if max_connections == 0 || max_per_peer == 0 {
                    return Err("--max-connections and --max-per-peer: give at least 1".into());
                }
                if let Some(bad) = allow_peer.iter().find(|n| !tcpfec_net::identity::valid_name(n)) {
                    return Err(format!("--allow-peer: '{}' is not a peer name", printable(bad)));
                }
                let keys = security.keys()?;
                let mut cfg = endpoint_config(&keys, scheme("--scheme", &sch, false)?, &report)?;
                cfg.identity = peers.identity_config(&keys)?;
                if !allow_peer.is_empty() && cfg.identity.is_none() {
                    return Err("--allow-peer needs --identity: peers are told apart by their key pairs".into());
                }
                let limits = tunnel::ServerLimits {
                    max_connections,
                    max_per_peer,
                    allowed_peers: (!allow_peer.is_empty())
                        .then(|| Arc::new(allow_peer.into_iter().collect())),
                };
                validation.apply(&mut cfg);
                let listen = resolve("--listen", &listen).await?;
                resolve("--to", &to).await?;
                let ep = Arc::new(
                    Endpoint::server(listen, cfg, threads)
                        .await
                        .map_err(|e| format!("--listen {listen}: {e}"))?,
                );
                let bound = ep.local_addr().map_err(|e| e.to_string())?;
                say(
                    report.json,
                    json!({"event": "listening", "addr": bound.to_string(), "to": to}),
                    format_args!("tunnel server on {bound}, forwarding to {to}"),
                );
                let _sig = sig_tunnel(ep.clone(), stats.clone());
                let json = report.json;
                let _hup = peers.reload_on_sighup(ep.clone(), move |r| reloaded(json, r))?;
                // UDP flows arrive as their own stream kind; --udp on the server only
                // documents intent, the client decides what it forwards.
                let stop = tokio::select! {
                    _ = tunnel::serve_within(ep.clone(), to, limits, stats.clone()) => None,
                    stop = signals.next(&ep) => Some(stop),
                };
                if report.stats || report.json {
                    println!("{}", tunnel_json(&ep.stats(), &stats));
                }
                match stop {
                    Some(stop) => {
                        let what = "open tunnel connections were closed";
                        exit_stopped(&ep, stop, what, report.json).await
                    }
                    None => Ok(()),
                }
            }
            TunnelSide::Client {
                listen,
                server,
                udp,
                security,
                server_auth,
                config: _,
                scheme: sch,
                resume,
                report,
            } => {
                let keys = security.keys()?;
                let mut cfg = endpoint_config(&keys, scheme("--scheme", &sch, false)?, &report)?;
                cfg.path_cache = resume.cache();
                let listen = resolve("--listen", &listen).await?;
                let text = server;
                let server = resolve("--server", &text).await?;
                cfg.identity = server_auth
                    .identity_config(&keys, &cfg, &text, server)
                    .await?;
                let ep = Arc::new(
                    Endpoint::client(cfg)
                        .await
                        .map_err(|e| format!("cannot open a UDP socket: {e}"))?,
                );
                // Check the server and key once up front, so a mistake shows now rather
                // than at the first forwarded connection.
                drop(ep.connect(server).await.map_err(|e| e.to_string())?);
                let tcp = tokio::net::TcpListener::bind(listen)
                    .await
                    .map_err(|e| format!("--listen {listen}: {e}"))?;
                // With port 0 the system picks one: report (and share with UDP) that one.
                let listen = tcp.local_addr().map_err(|e| e.to_string())?;
                let mut tasks = vec![tokio::spawn(tunnel::client_tcp(
                    ep.clone(),
                    tcp,
                    server,
                    stats.clone(),
                ))];
                if udp {
                    let u = tokio::net::UdpSocket::bind(listen)
                        .await
                        .map_err(|e| format!("--listen {listen} (UDP): {e}"))?;
                    tasks.push(tokio::spawn(tunnel::client_udp(
                        ep.clone(),
                        u,
                        server,
                        stats.clone(),
                    )));
                }
                let kinds = if udp { "TCP and UDP" } else { "TCP" };
                say(
                    report.json,
                    json!({"event": "listening", "addr": listen.to_string(), "server": server.to_string(), "udp": udp}),
                    format_args!("tunnel client on {listen} ({kinds}), server {server}"),
                );
                let _sig = sig_tunnel(ep.clone(), stats.clone());
                let stop = signals.next(&ep).await;
                for t in tasks {
                    t.abort();
                }
                if report.stats || report.json {
                    println!("{}", tunnel_json(&ep.stats(), &stats));
                }
                let what = "open tunnel connections were closed";
                exit_stopped(&ep, stop, what, report.json).await
            }
        }
    })
}

fn tunnel_json(e: &EndpointStats, t: &TunnelStats) -> Value {
    json!({
        "event": "stats",
        "tcp_connections": t.tcp_connections.load(Ordering::Relaxed),
        "udp_flows": t.udp_flows.load(Ordering::Relaxed),
        "failures": t.failures.load(Ordering::Relaxed),
        "refused": t.refused.load(Ordering::Relaxed),
        "active": t.active.load(Ordering::Relaxed),
        "endpoint": endpoint_json(e),
    })
}

fn sig_tunnel(ep: Arc<Endpoint>, t: Arc<TunnelStats>) -> tokio::task::JoinHandle<()> {
    on_sigusr1(move || tunnel_json(&ep.stats(), &t).to_string())
}

fn loss_spec(
    flag: &str,
    loss: &str,
    ge_flag: &str,
    ge: &Option<String>,
) -> Result<LossSpec, String> {
    match ge {
        Some(g) => LossSpec::parse_ge(g).map_err(|e| format!("{ge_flag}: {e}")),
        None => units::parse_probability(loss)
            .map(LossSpec::bernoulli)
            .map_err(|e| format!("{flag}: {e}")),
    }
}

/// `tcpfec relay`.
pub fn relay(a: RelayArgs) -> Result<(), String> {
    let link = a.link.link()?;
    if a.max_sources == 0 {
        return Err("--max-sources: give at least 1".into());
    }
    if !(a.idle_expiry > 0.0 && a.idle_expiry <= 86_400.0) {
        return Err("--idle-expiry: give seconds between 0 and 86400".into());
    }
    runtime()?.block_on(async move {
        let listen = resolve("--listen", &a.listen).await?;
        let to = resolve("--to", &a.to).await?;
        let relay = Relay::start(RelayConfig {
            listen,
            to,
            forward: link.forward,
            back: link.back,
            seed: link.seed,
            max_sources: a.max_sources,
            idle_expiry: Duration::from_secs_f64(a.idle_expiry),
        })
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
        eprintln!("relay {} -> {to}: {}", relay.local_addr(), link.describe());
        if let Some(path) = &a.pcap {
            let w = tcpfec_qlog::PcapWriter::create(path, u64::MAX)
                .map_err(|e| format!("--pcap {}: {e}", path.display()))?;
            relay.capture_to(w);
        }
        let (f, b) = (relay.forward.clone(), relay.back.clone());
        let text = move || {
            json!({"forward": format!("{:?}", f.snapshot()), "back": format!("{:?}", b.snapshot())})
                .to_string()
        };
        let t2 = text.clone();
        let _sig = on_sigusr1(t2);
        let _ = tokio::signal::ctrl_c().await;
        relay.flush_capture();
        println!("{}", text());
        Ok(())
    })
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

    /// A file name chosen by the peer cannot break a log line or reach the terminal.
    #[test]
    fn outcome_lines_escape_the_name_in_text_and_json() {
        let o = FileOutcome {
            name: "a\u{202e}b".into(),
            bytes: 1,
            secs: 1.0,
        };
        assert!(outcome_line(&o).starts_with("a\\u{202e}b: "));
        assert_eq!(outcome_json(&o)["name"], "a\\u{202e}b");
    }
}
