//! Port forwarding over tcpfec: every TCP connection accepted by the tunnel client becomes
//! one tcpfec connection to the tunnel server, which opens a TCP connection to the target.
//! UDP datagrams are forwarded too: one tcpfec connection per UDP source address, each
//! datagram framed with a 2-byte length.
//!
//! The first byte a tunnel client writes on a new stream says what it carries.
//!
//! A forwarded TCP connection ends the way it ended at the far side: a clean close is a
//! clean close, but when the target refuses or resets, or the tcpfec connection dies,
//! the TCP connection on the other end is reset (not closed with an EOF that looks like
//! a normal end of stream), and both tunnel ends log why.

use crate::control::CloseCode;
use crate::endpoint::Endpoint;
use crate::stream::Stream;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::mpsc;

const KIND_TCP: u8 = 1;
const KIND_UDP: u8 = 2;
/// Datagrams queued towards one tcpfec stream before new ones are dropped (UDP semantics:
/// a slow path loses datagrams rather than buffering without bound).
const UDP_QUEUE: usize = 1024;

/// Something a tunnel end tells its operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelEvent {
    /// A forwarded connection ended with an error.
    Failed {
        /// Which connection: "connection from ADDR" (and "to TARGET" on the server).
        connection: String,
        /// What went wrong, and what was done about it.
        error: String,
    },
    /// A server refused a connection: it carries its limit ([`ServerLimits`]).
    Refused {
        /// Which connection: "connection from ADDR".
        connection: String,
        /// Which limit.
        reason: String,
    },
}

impl std::fmt::Display for TunnelEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TunnelEvent::Failed { connection, error } => write!(f, "tunnel: {connection}: {error}"),
            TunnelEvent::Refused { connection, reason } => {
                write!(f, "tunnel: {connection} refused: {reason}")
            }
        }
    }
}

/// Where a tunnel end's events go: nowhere by default, or to a function (the command line
/// prints them as text or JSON).
#[derive(Clone, Default)]
pub struct TunnelEvents(Option<Arc<EventFn>>);

/// What receives a tunnel end's events.
type EventFn = dyn Fn(&TunnelEvent) + Send + Sync;

impl TunnelEvents {
    /// Events go to `f`.
    pub fn to(f: impl Fn(&TunnelEvent) + Send + Sync + 'static) -> Self {
        TunnelEvents(Some(Arc::new(f)))
    }

    fn emit(&self, e: TunnelEvent) {
        if let Some(f) = &self.0 {
            f(&e);
        }
    }
}

impl std::fmt::Debug for TunnelEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "TunnelEvents(..)"
        } else {
            "TunnelEvents(none)"
        })
    }
}

/// Counters of a tunnel end, and where its events go.
#[derive(Debug, Default)]
pub struct TunnelStats {
    /// TCP connections forwarded.
    pub tcp_connections: AtomicU64,
    /// UDP flows (distinct source addresses) forwarded.
    pub udp_flows: AtomicU64,
    /// Forwarded connections that ended with an error.
    pub failures: AtomicU64,
    /// Connections refused because the server carried its limit ([`ServerLimits`]).
    pub refused: AtomicU64,
    /// Server: forwarded connections carried now.
    pub active: AtomicU64,
    /// Where events go.
    pub events: TunnelEvents,
}

/// How many forwarded connections (TCP connections and UDP flows) a tunnel server carries
/// at once. Each may hold its receive window (2 MiB, more on a fast path whose target
/// keeps up) and its send buffer (4 MiB) while its target or client is slow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// Over all clients.
    pub max_connections: usize,
    /// From one client IP address.
    pub max_per_peer: usize,
    /// Only these peers (by the name their key pair goes by,
    /// [`crate::Stream::peer_name`]) may forward; `None`: every peer the endpoint accepts.
    pub allowed_peers: Option<Arc<std::collections::BTreeSet<String>>>,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: 2048,
            max_per_peer: 512,
            allowed_peers: None,
        }
    }
}

/// The connections a tunnel server carries now per client address (the total is
/// `TunnelStats::active`, changed under the same lock).
#[derive(Default)]
struct Active {
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection: counted until dropped.
struct Admitted {
    active: Arc<Mutex<Active>>,
    stats: Arc<TunnelStats>,
    peer: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut a = self.active.lock().unwrap_or_else(|p| p.into_inner());
        self.stats.active.fetch_sub(1, Ordering::Relaxed);
        if let Some(n) = a.per_peer.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                a.per_peer.remove(&self.peer);
            }
        }
    }
}

/// Counts a new connection from `peer` in, or says which limit it would pass.
fn admit(
    active: &Arc<Mutex<Active>>,
    stats: &Arc<TunnelStats>,
    limits: &ServerLimits,
    peer: IpAddr,
    name: Option<&str>,
) -> Result<Admitted, String> {
    if let Some(allowed) = &limits.allowed_peers {
        if !name.is_some_and(|n| allowed.contains(n)) {
            return Err("this tunnel server does not forward for this peer".into());
        }
    }
    let mut a = active.lock().unwrap_or_else(|p| p.into_inner());
    if stats.active.load(Ordering::Relaxed) as usize >= limits.max_connections {
        return Err(format!(
            "the tunnel server carries its limit of {} connections",
            limits.max_connections
        ));
    }
    let mine = a.per_peer.entry(peer).or_insert(0);
    if *mine >= limits.max_per_peer {
        return Err(format!(
            "the tunnel server carries its limit of {} connections from {peer}",
            limits.max_per_peer
        ));
    }
    *mine += 1;
    stats.active.fetch_add(1, Ordering::Relaxed);
    Ok(Admitted {
        active: active.clone(),
        stats: stats.clone(),
        peer,
    })
}

/// Tunnel server: accepts tcpfec streams on `endpoint` and connects each to `target`,
/// within the default [`ServerLimits`].
pub async fn serve(endpoint: Arc<Endpoint>, target: String, stats: Arc<TunnelStats>) {
    serve_within(endpoint, target, ServerLimits::default(), stats).await
}

/// [`serve`] within `limits`: a connection beyond them is closed at once with the reason
/// (its client reports it) and a [`TunnelEvent::Refused`].
pub async fn serve_within(
    endpoint: Arc<Endpoint>,
    target: String,
    limits: ServerLimits,
    stats: Arc<TunnelStats>,
) {
    let active = Arc::new(Mutex::new(Active::default()));
    while let Some(mut stream) = endpoint.accept().await {
        let peer = stream.peer_addr();
        let name = stream.peer_name();
        let admitted = match admit(&active, &stats, &limits, peer.ip(), name.as_deref()) {
            Ok(a) => a,
            Err(reason) => {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                stream.close_with(CloseCode::Application, &reason);
                stats.events.emit(TunnelEvent::Refused {
                    connection: connection_from(&stream),
                    reason,
                });
                continue;
            }
        };
        let target = target.clone();
        let stats = stats.clone();
        tokio::spawn(async move {
            let _admitted = admitted;
            let r = match stream.read_u8().await {
                Ok(KIND_TCP) => {
                    stats.tcp_connections.fetch_add(1, Ordering::Relaxed);
                    serve_tcp(stream, &target, &stats.events).await
                }
                Ok(KIND_UDP) => {
                    stats.udp_flows.fetch_add(1, Ordering::Relaxed);
                    serve_udp(stream, &target).await
                }
                Ok(_) => Err(io::Error::other("unknown tunnel stream kind")),
                // A client checking reachability and key opens and closes a stream.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(()),
                Err(e) => Err(e),
            };
            if r.is_err() {
                stats.failures.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// "connection from NAME (ADDRESS)", or from the address alone when the peer has no key
/// pair: how events name a forwarded connection.
fn connection_from(stream: &Stream) -> String {
    let addr = stream.peer_addr();
    match stream.peer_name() {
        Some(name) => format!("connection from {name} ({addr})"),
        None => format!("connection from {addr}"),
    }
}

async fn serve_tcp(mut stream: Stream, target: &str, events: &TunnelEvents) -> io::Result<()> {
    let mut tcp = match TcpStream::connect(target).await {
        Ok(t) => t,
        Err(e) => {
            events.emit(TunnelEvent::Failed {
                connection: connection_from(&stream),
                error: format!("cannot reach {target}: {e}"),
            });
            stream.close_with(CloseCode::TargetUnreachable, &e.to_string());
            return Err(e);
        }
    };
    let _ = tcp.set_nodelay(true);
    let r = tokio::io::copy_bidirectional(&mut tcp, &mut stream).await;
    end_forwarding(
        r,
        tcp,
        &stream,
        format!("{} to {target}", connection_from(&stream)),
        events,
    )
}

/// Ends one forwarded TCP connection after the copy loop. On an error, the side that did
/// not fail learns it as a reset: the TCP peer by an RST, the tunnel peer by a close with
/// a reason.
fn end_forwarding(
    r: io::Result<(u64, u64)>,
    tcp: TcpStream,
    stream: &Stream,
    connection: String,
    events: &TunnelEvents,
) -> io::Result<()> {
    let Err(e) = r else {
        return Ok(());
    };
    let error = match stream.error() {
        // The tunnel side failed (peer gone, closed with a reason, reset): reset TCP.
        Some(ne) => {
            reset(tcp);
            format!("{ne}; resetting the TCP connection")
        }
        // The TCP side failed (reset by its peer): tell the tunnel peer why.
        None => {
            stream.close_with(CloseCode::TargetReset, &e.to_string());
            format!("TCP side failed: {e}")
        }
    };
    events.emit(TunnelEvent::Failed { connection, error });
    Err(e)
}

/// Closes `tcp` with an RST instead of a FIN (SO_LINGER 0), so its peer sees an abort.
fn reset(tcp: TcpStream) {
    let _ = socket2::SockRef::from(&tcp).set_linger(Some(std::time::Duration::ZERO));
    drop(tcp);
}

async fn serve_udp(stream: Stream, target: &str) -> io::Result<()> {
    let sock = UdpSocket::bind(if target.starts_with('[') {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    })
    .await?;
    sock.connect(target).await?;
    let sock = Arc::new(sock);
    let (mut rd, mut wr) = tokio::io::split(stream);
    let up = sock.clone();
    let to_target = async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let Some(n) = read_frame(&mut rd, &mut buf).await? else {
                return io::Result::Ok(());
            };
            let _ = up.send(&buf[..n]).await;
        }
    };
    let from_target = async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let n = match sock.recv(&mut buf).await {
                Ok(n) => n,
                Err(_) => continue, // ICMP unreachable from the target: datagram lost
            };
            write_frame(&mut wr, &buf[..n]).await?;
        }
    };
    tokio::select! {
        r = to_target => r,
        r = from_target => r,
    }
}

async fn read_frame<R: tokio::io::AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
) -> io::Result<Option<usize>> {
    let n = match r.read_u16().await {
        Ok(n) => n as usize,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    };
    r.read_exact(&mut buf[..n]).await?;
    Ok(Some(n))
}

async fn write_frame<W: tokio::io::AsyncWrite + Unpin>(w: &mut W, d: &[u8]) -> io::Result<()> {
    let mut v = Vec::with_capacity(d.len() + 2);
    v.extend_from_slice(&(d.len() as u16).to_be_bytes());
    v.extend_from_slice(d);
    w.write_all(&v).await
}

/// Tunnel client, TCP: forwards every connection accepted on `listener` to `server`.
pub async fn client_tcp(
    endpoint: Arc<Endpoint>,
    listener: TcpListener,
    server: SocketAddr,
    stats: Arc<TunnelStats>,
) {
    loop {
        let Ok((mut tcp, _)) = listener.accept().await else {
            continue;
        };
        let endpoint = endpoint.clone();
        let stats = stats.clone();
        tokio::spawn(async move {
            stats.tcp_connections.fetch_add(1, Ordering::Relaxed);
            let _ = tcp.set_nodelay(true);
            let from = tcp
                .peer_addr()
                .map_or_else(|_| "?".to_string(), |a| a.to_string());
            let mut s = match endpoint.connect(server).await {
                Ok(s) => s,
                Err(e) => {
                    stats.events.emit(TunnelEvent::Failed {
                        connection: format!("connection from {from}"),
                        error: format!("cannot reach the tunnel server: {e}"),
                    });
                    stats.failures.fetch_add(1, Ordering::Relaxed);
                    reset(tcp);
                    return;
                }
            };
            let r = match s.write_all(&[KIND_TCP]).await {
                Ok(()) => tokio::io::copy_bidirectional(&mut tcp, &mut s).await,
                Err(e) => Err(e),
            };
            let connection = format!("connection from {from}");
            if end_forwarding(r, tcp, &s, connection, &stats.events).is_err() {
                stats.failures.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// Tunnel client, UDP: forwards datagrams arriving on `sock`, one tcpfec stream per source
/// address; answers go back to that address.
pub async fn client_udp(
    endpoint: Arc<Endpoint>,
    sock: UdpSocket,
    server: SocketAddr,
    stats: Arc<TunnelStats>,
) {
    let sock = Arc::new(sock);
    let mut flows: HashMap<SocketAddr, mpsc::Sender<Vec<u8>>> = HashMap::new();
    let mut buf = vec![0u8; 65_536];
    loop {
        let Ok((n, from)) = sock.recv_from(&mut buf).await else {
            continue;
        };
        if flows.get(&from).is_some_and(|tx| tx.is_closed()) {
            flows.remove(&from);
        }
        let tx = flows.entry(from).or_insert_with(|| {
            stats.udp_flows.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = mpsc::channel(UDP_QUEUE);
            tokio::spawn(udp_flow(
                endpoint.clone(),
                server,
                sock.clone(),
                from,
                rx,
                stats.clone(),
            ));
            tx
        });
        let _ = tx.try_send(buf[..n].to_vec());
    }
}

async fn udp_flow(
    endpoint: Arc<Endpoint>,
    server: SocketAddr,
    sock: Arc<UdpSocket>,
    from: SocketAddr,
    mut rx: mpsc::Receiver<Vec<u8>>,
    stats: Arc<TunnelStats>,
) {
    let r = async {
        let mut s = endpoint.connect(server).await?;
        s.write_all(&[KIND_UDP]).await?;
        let (mut rd, mut wr) = tokio::io::split(s);
        let out = async {
            while let Some(d) = rx.recv().await {
                write_frame(&mut wr, &d).await?;
            }
            io::Result::Ok(())
        };
        let back = async {
            let mut buf = vec![0u8; 65_536];
            while let Some(n) = read_frame(&mut rd, &mut buf).await? {
                let _ = sock.send_to(&buf[..n], from).await;
            }
            io::Result::Ok(())
        };
        tokio::select! {
            r = out => r,
            r = back => r,
        }
    }
    .await;
    if r.is_err() {
        stats.failures.fetch_add(1, Ordering::Relaxed);
    }
}
