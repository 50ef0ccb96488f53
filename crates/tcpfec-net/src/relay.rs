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
//! are capped in number and expire after `idle_expiry` without traffic from their client.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_sim::loss::{LossModel, LossSpec};
use tcpfec_sim::rng::Rng;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// IPv4 + UDP header bytes, charged per datagram against the rate as on a real link.
pub const IP_UDP_HEADER: usize = 28;
/// Default bound on the bytes one direction holds (queued and propagating): 1 Gb/s times
/// a quarter of a second, far above any queue worth emulating, far below a memory problem.
pub const DEFAULT_MAX_BYTES: usize = 32 << 20;
/// Default number of clients (source addresses) served at once.
pub const DEFAULT_MAX_SOURCES: usize = 1024;
/// Default idle time after which a client's upstream socket is closed.
pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(60);
/// Datagrams waiting between the socket readers and a link before new ones are dropped
/// (at most 64 MiB even if every one is a maximum-size datagram).
const HANDOVER_QUEUE: usize = 1024;
/// Bookkeeping charged per datagram against `max_bytes`, so a flood of tiny or empty
/// datagrams is bounded too.
const PER_DATAGRAM: usize = 128;

/// One direction of the emulated path.
#[derive(Debug, Clone, Copy)]
pub struct LinkSpec {
    /// Bits per second; `None` for no rate limit.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail queue limit, packets (waiting for serialisation).
    pub queue: usize,
    /// Most bytes held by this direction, queued and propagating together; more are
    /// dropped (counted as overflow).
    pub max_bytes: usize,
    /// Random loss.
    pub loss: LossSpec,
}

impl LinkSpec {
    /// A link that only delays.
    pub fn delay_only(delay: Duration) -> Self {
        LinkSpec {
            rate_bps: None,
            delay,
            queue: usize::MAX,
            max_bytes: DEFAULT_MAX_BYTES,
            loss: LossSpec::None,
        }
    }
}

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
    /// Most clients served at once; datagrams from more are dropped.
    pub max_sources: usize,
    /// A client's upstream socket closes after this long without a datagram from it.
    pub idle_expiry: Duration,
}

/// Counters of one direction.
#[derive(Debug, Default)]
pub struct DirStats {
    /// Datagrams that arrived at the relay.
    pub received: AtomicU64,
    /// Datagrams delivered.
    pub delivered: AtomicU64,
    /// Dropped by the loss model.
    pub lost: AtomicU64,
    /// Dropped because the queue was full (in packets, or in bytes held).
    pub overflow: AtomicU64,
    /// Dropped because the relay already served its maximum of clients.
    pub refused_sources: AtomicU64,
}

/// A snapshot of [`DirStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirCounts {
    /// Datagrams that arrived at the relay.
    pub received: u64,
    /// Datagrams delivered.
    pub delivered: u64,
    /// Dropped by the loss model.
    pub lost: u64,
    /// Dropped because the queue was full (in packets, or in bytes held).
    pub overflow: u64,
    /// Dropped because the relay already served its maximum of clients.
    pub refused_sources: u64,
}

impl DirStats {
    /// Reads the counters.
    pub fn snapshot(&self) -> DirCounts {
        DirCounts {
            received: self.received.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            overflow: self.overflow.load(Ordering::Relaxed),
            refused_sources: self.refused_sources.load(Ordering::Relaxed),
        }
    }
}

/// A running relay; dropping it stops it.
pub struct Relay {
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
    /// Binds the listen address and starts forwarding.
    pub async fn start(cfg: RelayConfig) -> io::Result<Relay> {
        let listen = Arc::new(UdpSocket::bind(cfg.listen).await?);
        let local = listen.local_addr()?;
        let forward = Arc::new(DirStats::default());
        let back = Arc::new(DirStats::default());
        let sources = Arc::new(AtomicU64::new(0));
        let held = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
        let blackout = Arc::new(AtomicBool::new(false));
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
        fstats.received.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        if !upstream.contains_key(&from) {
            if upstream.len() >= cfg.max_sources {
                // Make room from expired clients first; refuse only when all are live.
                upstream
                    .retain(|_, u| now.saturating_duration_since(u.last_used) < cfg.idle_expiry);
            }
            if upstream.len() >= cfg.max_sources {
                fstats.refused_sources.fetch_add(1, Ordering::Relaxed);
                sources.store(upstream.len() as u64, Ordering::Relaxed);
                continue;
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
                stats.received.fetch_add(1, Ordering::Relaxed);
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

/// The link state: serialisation horizon and the packets in the queue.
struct Link {
    spec: LinkSpec,
    loss: LossModel,
    /// When the link finishes serialising everything accepted so far.
    busy_until: Instant,
    /// When the link was created: time-varying loss schedules count from here.
    epoch: Instant,
    /// Serialisation end times of queued packets (the queue occupancy).
    queued: VecDeque<Instant>,
    /// Bytes accepted and not yet delivered (queued or propagating).
    held: usize,
}

impl Link {
    /// Decides the fate of a datagram of `len` bytes arriving at `now`: `Some(delivery
    /// time)`, or `None` with the counter that explains the drop already bumped.
    fn admit(&mut self, now: Instant, len: usize, stats: &DirStats) -> Option<Instant> {
        let since = now.saturating_duration_since(self.epoch).as_nanos() as u64;
        if self.loss.drops(since) {
            stats.lost.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        while self.queued.front().is_some_and(|&t| t <= now) {
            self.queued.pop_front();
        }
        let cost = len + PER_DATAGRAM;
        if self.held + cost > self.spec.max_bytes {
            stats.overflow.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let Some(rate) = self.spec.rate_bps else {
            self.held += cost;
            return Some(now + self.spec.delay);
        };
        if self.queued.len() >= self.spec.queue {
            stats.overflow.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let bits = ((len + IP_UDP_HEADER) * 8) as f64;
        let start = self.busy_until.max(now);
        let done = start + Duration::from_secs_f64(bits / rate as f64);
        self.busy_until = done;
        self.queued.push_back(done);
        self.held += cost;
        Some(done + self.spec.delay)
    }

    /// A datagram of `len` bytes left the link.
    fn release(&mut self, len: usize) {
        self.held -= len + PER_DATAGRAM;
    }
}

/// What a link task shares with the relay handle.
struct LinkShared {
    stats: Arc<DirStats>,
    /// Bytes the link holds, for [`Relay::held_bytes`].
    held: Arc<AtomicU64>,
    blackout: Arc<AtomicBool>,
}

/// One direction: admits datagrams as they come and delivers them when due. Delivery times
/// never decrease (constant delay after a FIFO queue), so a FIFO holds the packets in flight.
async fn run_link(spec: LinkSpec, rng: Rng, mut rx: mpsc::Receiver<Item>, shared: LinkShared) {
    let stats = &shared.stats;
    let mut link = Link {
        spec,
        loss: LossModel::new(spec.loss, rng),
        busy_until: Instant::now(),
        epoch: Instant::now(),
        queued: VecDeque::new(),
        held: 0,
    };
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
                    shared.held.store(link.held as u64, Ordering::Relaxed);
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
                        stats.delivered.fetch_add(1, Ordering::Relaxed);
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
                if let Some(at) = link.admit(now, d.len(), stats) {
                    flight.push_back((at, (target, d)));
                    shared.held.store(link.held as u64, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_limits_and_rate_spacing() {
        let stats = DirStats::default();
        let mut l = Link {
            spec: LinkSpec {
                rate_bps: Some(8_000_000), // 1 MB/s: 1000 bytes take 1 ms
                delay: Duration::from_millis(10),
                queue: 3,
                max_bytes: DEFAULT_MAX_BYTES,
                loss: LossSpec::None,
            },
            loss: LossModel::new(LossSpec::None, Rng::new(1, 1)),
            busy_until: Instant::now(),
            epoch: Instant::now(),
            queued: VecDeque::new(),
            held: 0,
        };
        let now = Instant::now() + Duration::from_millis(1);
        let a = l.admit(now, 1000 - IP_UDP_HEADER, &stats).unwrap();
        let b = l.admit(now, 1000 - IP_UDP_HEADER, &stats).unwrap();
        let near =
            |d: Duration, ms: u64| d.abs_diff(Duration::from_millis(ms)) < Duration::from_micros(1);
        assert!(near(a - now, 11), "{:?}", a - now);
        assert!(near(b - a, 1), "{:?}", b - a);
        l.admit(now, 972, &stats).unwrap();
        assert!(l.admit(now, 972, &stats).is_none(), "queue of 3 is full");
        assert_eq!(stats.snapshot().overflow, 1);
        // After the first packet left the queue there is room again.
        assert!(l
            .admit(now + Duration::from_millis(1), 972, &stats)
            .is_some());
    }

    /// Without a rate limit nothing queues, but the bytes held while propagating are
    /// bounded all the same.
    #[test]
    fn bytes_held_are_bounded_without_a_rate() {
        let stats = DirStats::default();
        let mut l = Link {
            spec: LinkSpec {
                max_bytes: 10 * (1000 + PER_DATAGRAM),
                ..LinkSpec::delay_only(Duration::from_secs(10))
            },
            loss: LossModel::new(LossSpec::None, Rng::new(1, 1)),
            busy_until: Instant::now(),
            epoch: Instant::now(),
            queued: VecDeque::new(),
            held: 0,
        };
        let now = Instant::now();
        for _ in 0..10 {
            assert!(l.admit(now, 1000, &stats).is_some());
        }
        assert!(l.admit(now, 1, &stats).is_none());
        assert_eq!(stats.snapshot().overflow, 1);
        l.release(1000);
        assert!(l.admit(now, 1000, &stats).is_some());
    }
}
