//! `tcpfec tunnel client|server`: TCP connections (and UDP datagrams) forwarded over
//! tcpfec, like kcptun.

use super::files::reloaded;
use super::{
    cpus, endpoint_config, endpoint_json, exit_stopped, on_sigusr1, resolve, runtime_with, say,
    scheme, ConfigArg, Report, ResumeOpt, StopSignals, Threads, Validation,
};
use crate::auth_cli::{ClientAuth, Security, ServerAuth};
use clap::Subcommand;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tcpfec_net::printable::printable;
use tcpfec_net::tunnel::TunnelStats;
use tcpfec_net::{tunnel, Endpoint, EndpointStats, DEFAULT_SCHEME};

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

impl TunnelSide {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            TunnelSide::Server { report, .. } | TunnelSide::Client { report, .. } => report.json,
        }
    }
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
