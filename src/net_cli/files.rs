//! `tcpfec send` and `tcpfec recv`: files over one connection, with progress, a verdict
//! per file, and the receiver's service loop (authorized peers, reloads, stop signals).

use super::{
    bar, drive_bar, endpoint_config, endpoint_json, exit_stopped, on_sigusr1, print_failure,
    resolve, runtime, runtime_with, say, scheme, stats_json, stats_text, ConfigArg, Report,
    ResumeOpt, StopSignals, Threads, Validation,
};
use crate::auth_cli::{ClientAuth, Security, ServerAuth};
use clap::Args;
use indicatif::ProgressStyle;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcpfec_net::printable::printable;
use tcpfec_net::transfer::{FileEvent, FileOutcome};
use tcpfec_net::{transfer, Endpoint, Stream, DEFAULT_SCHEME};
use tcpfec_proto::Scheme;

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
pub(super) fn reloaded(json: bool, r: Result<(usize, usize), String>) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
