//! The impairment relay: a UDP proxy that puts the simulator's link model (rate,
//! one-way delay, drop-tail queue, Bernoulli or Gilbert–Elliott loss) between two real
//! endpoints, so tcpfec can be tried on a bad path on one machine.
//!
//! Clients send to the listen address; each client gets its own upstream socket towards
//! the target (like a NAT), so the target sees one peer per client. All clients share one
//! link per direction, as flows share a bottleneck.
//!
//! Everything the relay holds is bounded, so a flood cannot exhaust the machine: each
//! direction keeps at most `max_bytes` in its queue and in propagation (even without a
//! rate limit), the hand-over between tasks is a bounded channel, and upstream sockets
//! are capped in number (beyond `max_sources` the client heard from least recently is
//! forgotten) and expire after `idle_expiry` without traffic from their client.

use crate::link::LinkModel;
pub use crate::link::{DirCounts, DirStats, LinkSpec, DEFAULT_MAX_BYTES};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_channel::Rng;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// IPv4 + UDP header bytes, charged per datagram against the rate as on a real link.
pub const IP_UDP_HEADER: usize = 28;
/// Default number of clients (source addresses) served at once.
pub const DEFAULT_MAX_SOURCES: usize = 1024;
/// Default idle time after which a client's upstream socket is closed.
pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(60);
/// Datagrams waiting between the socket readers and a link before new ones are dropped
/// (at most 64 MiB even if every one is a maximum-size datagram).
const HANDOVER_QUEUE: usize = 1024;

/// The relay's settings.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Where clients send.
    pub listen: SocketAddr,
    /// Where the relay forwards to.
    pub to: SocketAddr,
    /// listen → to.
    pub forward: LinkSpec,
    /// to → listen.
    pub back: LinkSpec,
    /// Seed of the loss models (runs are repeatable in their loss pattern).
    pub seed: u64,
    /// Most clients served at once; a new one beyond them replaces the client heard from
    /// least recently.
    pub max_sources: usize,
    /// A client's upstream socket closes after this long without a datagram from it.
    pub idle_expiry: Duration,
}

/// A running relay; dropping it stops it.
pub struct Relay {
    /// Where what the relay forwards is captured (`capture_to`).
    capture: Capture,
    local: SocketAddr,
    to: SocketAddr,
    /// listen → to counters.
    pub forward: Arc<DirStats>,
    /// to → listen counters.
    pub back: Arc<DirStats>,
    /// Clients with an upstream socket now.
    sources: Arc<AtomicU64>,
    /// Bytes each direction holds now (forward, back).
    held: [Arc<AtomicU64>; 2],
    /// While set, both directions drop everything (a link blackout).
    blackout: Arc<AtomicBool>,
    /// The listen socket, to know when every task has let go of it.
    listen: Arc<UdpSocket>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Where a datagram leaving a link goes.
#[derive(Clone)]
struct Target {
    socket: Arc<UdpSocket>,
    /// `None`: the socket is connected.
    to: Option<SocketAddr>,
}

type Item = (Target, Vec<u8>);

impl Relay {
    /// Writes every datagram the relay forwards, both ways, into `w` from now on, as it
    /// leaves the relay (what the impairments let through), with wall-clock timestamps.
    pub fn capture_to(&self, w: tcpfec_qlog::PcapWriter) {
        *self.capture.writer() = Some(w);
        self.capture.on.store(true, Ordering::Relaxed);
    }

    /// Writes out what the capture has buffered.
    pub fn flush_capture(&self) {
        if let Some(w) = self.capture.writer().as_mut() {
            let _ = w.flush();
        }
    }

    /// Binds the listen address and starts forwarding.
    pub async fn start(cfg: RelayConfig) -> io::Result<Relay> {
        let listen = Arc::new(UdpSocket::bind(cfg.listen).await?);
        let local = listen.local_addr()?;
        let forward = Arc::new(DirStats::default());
        let back = Arc::new(DirStats::default());
        let sources = Arc::new(AtomicU64::new(0));
        let held = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        let blackout = Arc::new(AtomicBool::new(false));
        let capture = Capture::default();
        let (ftx, frx) = mpsc::channel::<Item>(HANDOVER_QUEUE);
        let (btx, brx) = mpsc::channel::<Item>(HANDOVER_QUEUE);
        let link = |spec, stream, rx, stats: &Arc<DirStats>, held: &Arc<AtomicU64>| {
            tokio::spawn(run_link(
                spec,
                Rng::new(cfg.seed, stream),
                rx,
                LinkShared {
                    stats: stats.clone(),
                    held: held.clone(),
                    blackout: blackout.clone(),
                    capture: capture.clone(),
                },
            ))
        };
        let mut tasks = vec![
            link(cfg.forward, 1, frx, &forward, &held[0]),
            link(cfg.back, 2, brx, &back, &held[1]),
        ];
        tasks.push(tokio::spawn(accept_clients(
            listen.clone(),
            cfg.clone(),
            ftx,
            btx,
            forward.clone(),
            back.clone(),
            sources.clone(),
        )));
        Ok(Relay {
            capture,
            local,
            to: cfg.to,
            forward,
            back,
            sources,
            held,
            blackout,
            listen,
            tasks,
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The address the relay forwards to.
    pub fn to(&self) -> SocketAddr {
        self.to
    }

    /// Clients with an upstream socket now (at most `max_sources`).
    pub fn sources(&self) -> u64 {
        self.sources.load(Ordering::Relaxed)
    }

    /// Bytes held now (queued and propagating), forward and back.
    pub fn held_bytes(&self) -> (u64, u64) {
        (
            self.held[0].load(Ordering::Relaxed),
            self.held[1].load(Ordering::Relaxed),
        )
    }

    /// Starts (`true`) or ends a blackout: while it lasts every datagram is dropped both
    /// ways (counted as lost), as on a link that went down.
    pub fn set_blackout(&self, on: bool) {
        self.blackout.store(on, Ordering::Relaxed);
    }

    /// Stops the relay and waits until its sockets are closed, so that a new relay can
    /// bind the same listen address at once.
    pub async fn stop(mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        // Upstream readers also hold the listen socket; their aborts complete when the
        // runtime next polls them.
        while Arc::strong_count(&self.listen) > 1 {
            tokio::task::yield_now().await;
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One client's upstream socket towards the target.
struct Upstream {
    sock: Arc<UdpSocket>,
    reader: tokio::task::JoinHandle<()>,
    last_used: Instant,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        // The reader holds the socket: end it, or the socket would outlive its entry.
        self.reader.abort();
    }
}

/// Reads from the listen socket; makes an upstream socket (and its reader) per client,
/// at most `max_sources` of them, each closed after `idle_expiry` without traffic.
async fn accept_clients(
    listen: Arc<UdpSocket>,
    cfg: RelayConfig,
    ftx: mpsc::Sender<Item>,
    btx: mpsc::Sender<Item>,
    fstats: Arc<DirStats>,
    bstats: Arc<DirStats>,
    sources: Arc<AtomicU64>,
) {
    let mut upstream: HashMap<SocketAddr, Upstream> = HashMap::new();
    let mut buf = vec![0u8; 65_536];
    let mut sweep = tokio::time::interval(cfg.idle_expiry / 4);
    loop {
        let r = tokio::select! {
            r = listen.recv_from(&mut buf) => r,
            // Idle clients are closed even when no datagram arrives to notice them.
            _ = sweep.tick() => {
                let now = Instant::now();
                upstream.retain(|_, u| now.saturating_duration_since(u.last_used) < cfg.idle_expiry);
                sources.store(upstream.len() as u64, Ordering::Relaxed);
                continue;
            }
        };
        let Ok((n, from)) = r else {
            continue; // ICMP errors surface here on some systems; the relay keeps going.
        };
        fstats.on_received(n);
        let now = Instant::now();
        if !upstream.contains_key(&from) {
            if upstream.len() >= cfg.max_sources {
                // Make room from expired clients first, then by forgetting the client
                // heard from least recently, as a NAT forgets its oldest mapping: a new
                // client is never refused, and a live one loses its entry only to more
                // than `max_sources` clients heard since its last datagram.
                upstream
                    .retain(|_, u| now.saturating_duration_since(u.last_used) < cfg.idle_expiry);
            }
            if upstream.len() >= cfg.max_sources {
                let oldest = upstream
                    .iter()
                    .min_by_key(|(_, u)| u.last_used)
                    .map(|(a, _)| *a);
                if let Some(a) = oldest {
                    upstream.remove(&a);
                    fstats.evicted_sources.fetch_add(1, Ordering::Relaxed);
                }
            }
            let Some(u) = open_upstream(&listen, cfg.to, from, &btx, &bstats).await else {
                continue;
            };
            upstream.insert(from, u);
        }
        sources.store(upstream.len() as u64, Ordering::Relaxed);
        let u = upstream.get_mut(&from).expect("inserted above");
        u.last_used = now;
        let item = (
            Target {
                socket: u.sock.clone(),
                to: None,
            },
            buf[..n].to_vec(),
        );
        if ftx.try_send(item).is_err() {
            fstats.overflow.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A new upstream socket for client `from`, connected to `to`, with its reader.
async fn open_upstream(
    listen: &Arc<UdpSocket>,
    to: SocketAddr,
    from: SocketAddr,
    btx: &mpsc::Sender<Item>,
    bstats: &Arc<DirStats>,
) -> Option<Upstream> {
    let bind: SocketAddr = if to.is_ipv4() {
        "0.0.0.0:0".parse().expect("address")
    } else {
        "[::]:0".parse().expect("address")
    };
    let sock = UdpSocket::bind(bind).await.ok()?;
    sock.connect(to).await.ok()?;
    let sock = Arc::new(sock);
    let reader = tokio::spawn(read_upstream(
        sock.clone(),
        Target {
            socket: listen.clone(),
            to: Some(from),
        },
        btx.clone(),
        bstats.clone(),
    ));
    Some(Upstream {
        sock,
        reader,
        last_used: Instant::now(),
    })
}

/// Reads the target's answers to one client and hands them to the back link.
async fn read_upstream(
    sock: Arc<UdpSocket>,
    back_to: Target,
    btx: mpsc::Sender<Item>,
    stats: Arc<DirStats>,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        match sock.recv(&mut buf).await {
            Ok(n) => {
                stats.on_received(n);
                match btx.try_send((back_to.clone(), buf[..n].to_vec())) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        stats.overflow.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return,
                }
            }
            // The target's port may be closed for a while (ICMP unreachable): keep reading.
            Err(_) => tokio::task::yield_now().await,
        }
    }
}

/// What a link task shares with the relay handle.
struct LinkShared {
    stats: Arc<DirStats>,
    /// Bytes the link holds, for [`Relay::held_bytes`].
    held: Arc<AtomicU64>,
    blackout: Arc<AtomicBool>,
    capture: Capture,
}

/// The capture of what the relay forwards, if one was asked for ([`Relay::capture_to`]):
/// the flag is read for every datagram, so a relay that captures nothing takes no lock.
#[derive(Clone, Default)]
struct Capture {
    on: Arc<AtomicBool>,
    writer: Arc<std::sync::Mutex<Option<tcpfec_qlog::PcapWriter>>>,
}

impl Capture {
    fn writer(&self) -> std::sync::MutexGuard<'_, Option<tcpfec_qlog::PcapWriter>> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Writes datagram `d`, just sent from `socket` to `to`, into the capture (IPv4 only; a
/// capture that fails to write stops, the relay goes on).
fn capture(c: &Capture, socket: &UdpSocket, to: Option<SocketAddr>, d: &[u8]) {
    if !c.on.load(Ordering::Relaxed) {
        return;
    }
    let mut guard = c.writer();
    let Some(w) = guard.as_mut() else {
        return;
    };
    let to = to.or_else(|| socket.peer_addr().ok());
    if let (Ok(SocketAddr::V4(src)), Some(SocketAddr::V4(dst))) = (socket.local_addr(), to) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        if w.udp(now, src, dst, d).is_err() {
            *guard = None;
            c.on.store(false, Ordering::Relaxed);
        }
    }
}

/// One direction: admits datagrams as they come and delivers them when due. Delivery times
/// never decrease (constant delay after a FIFO queue), so a FIFO holds the packets in flight.
async fn run_link(spec: LinkSpec, rng: Rng, mut rx: mpsc::Receiver<Item>, shared: LinkShared) {
    let stats = &shared.stats;
    let mut link = LinkModel::new(spec, rng, IP_UDP_HEADER, std::time::Instant::now());
    let mut flight: VecDeque<(Instant, Item)> = VecDeque::new();
    let far = Duration::from_secs(3600);
    loop {
        let next = flight
            .front()
            .map_or_else(|| Instant::now() + far, |(t, _)| *t);
        tokio::select! {
            biased;
            _ = tokio::time::sleep_until(next), if !flight.is_empty() => {
                let now = Instant::now();
                while flight.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, (target, d)) = flight.pop_front().expect("non-empty");
                    link.release(d.len());
                    shared.held.store(link.held() as u64, Ordering::Relaxed);
                    if shared.blackout.load(Ordering::Relaxed) {
                        // What was on the wire when the link went down is gone too.
                        stats.lost.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let sent = match target.to {
                        Some(to) => target.socket.send_to(&d, to).await,
                        None => target.socket.send(&d).await,
                    };
                    if sent.is_ok() {
                        stats.on_delivered(d.len());
                        capture(&shared.capture, &target.socket, target.to, &d);
                    }
                }
            }
            item = rx.recv() => {
                let Some((target, d)) = item else { return };
                if shared.blackout.load(Ordering::Relaxed) {
                    stats.lost.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let now = Instant::now();
                if let Some(at) = link.admit(now.into_std(), d.len(), stats) {
                    flight.push_back((Instant::from_std(at), (target, d)));
                    shared.held.store(link.held() as u64, Ordering::Relaxed);
                }
            }
        }
    }
}
