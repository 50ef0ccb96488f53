//! The impairment relay: a UDP proxy that puts the simulator's link model (rate,
//! one-way delay, drop-tail queue, Bernoulli or Gilbert–Elliott loss) between two real
//! endpoints, so tcpfec can be tried on a bad path on one machine.
//!
//! Clients send to the listen address; each client gets its own upstream socket towards
//! the target (like a NAT), so the target sees one peer per client. All clients share one
//! link per direction, as flows share a bottleneck.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_sim::loss::{LossModel, LossSpec};
use tcpfec_sim::rng::Rng;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// IPv4 + UDP header bytes, charged per datagram against the rate as on a real link.
pub const IP_UDP_HEADER: usize = 28;

/// One direction of the emulated path.
#[derive(Debug, Clone, Copy)]
pub struct LinkSpec {
    /// Bits per second; `None` for no rate limit.
    pub rate_bps: Option<u64>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail queue limit, packets (waiting for serialisation).
    pub queue: usize,
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
    /// Dropped because the queue was full.
    pub overflow: AtomicU64,
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
    /// Dropped because the queue was full.
    pub overflow: u64,
}

impl DirStats {
    /// Reads the counters.
    pub fn snapshot(&self) -> DirCounts {
        DirCounts {
            received: self.received.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            overflow: self.overflow.load(Ordering::Relaxed),
        }
    }
}

/// A running relay; dropping it stops it.
pub struct Relay {
    local: SocketAddr,
    /// listen → to counters.
    pub forward: Arc<DirStats>,
    /// to → listen counters.
    pub back: Arc<DirStats>,
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
        let (ftx, frx) = mpsc::unbounded_channel::<Item>();
        let (btx, brx) = mpsc::unbounded_channel::<Item>();
        let mut tasks = vec![
            tokio::spawn(run_link(
                cfg.forward,
                Rng::new(cfg.seed, 1),
                frx,
                forward.clone(),
            )),
            tokio::spawn(run_link(cfg.back, Rng::new(cfg.seed, 2), brx, back.clone())),
        ];
        tasks.push(tokio::spawn(accept_clients(
            listen,
            cfg.to,
            ftx,
            btx,
            forward.clone(),
            back.clone(),
        )));
        Ok(Relay {
            local,
            forward,
            back,
            tasks,
        })
    }

    /// The address clients send to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Reads from the listen socket; makes an upstream socket (and its reader) per client.
async fn accept_clients(
    listen: Arc<UdpSocket>,
    to: SocketAddr,
    ftx: mpsc::UnboundedSender<Item>,
    btx: mpsc::UnboundedSender<Item>,
    fstats: Arc<DirStats>,
    bstats: Arc<DirStats>,
) {
    let mut upstream: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    let mut readers = Vec::new();
    let mut buf = vec![0u8; 65_536];
    loop {
        let Ok((n, from)) = listen.recv_from(&mut buf).await else {
            continue; // ICMP errors surface here on some systems; the relay keeps going.
        };
        fstats.received.fetch_add(1, Ordering::Relaxed);
        let up = match upstream.get(&from) {
            Some(u) => u.clone(),
            None => {
                let bind: SocketAddr = if to.is_ipv4() {
                    "0.0.0.0:0".parse().expect("address")
                } else {
                    "[::]:0".parse().expect("address")
                };
                let Ok(sock) = UdpSocket::bind(bind).await else {
                    continue;
                };
                if sock.connect(to).await.is_err() {
                    continue;
                }
                let sock = Arc::new(sock);
                upstream.insert(from, sock.clone());
                readers.push(tokio::spawn(read_upstream(
                    sock.clone(),
                    Target {
                        socket: listen.clone(),
                        to: Some(from),
                    },
                    btx.clone(),
                    bstats.clone(),
                )));
                sock
            }
        };
        let _ = ftx.send((
            Target {
                socket: up,
                to: None,
            },
            buf[..n].to_vec(),
        ));
    }
}

/// Reads the target's answers to one client and hands them to the back link.
async fn read_upstream(
    sock: Arc<UdpSocket>,
    back_to: Target,
    btx: mpsc::UnboundedSender<Item>,
    stats: Arc<DirStats>,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        match sock.recv(&mut buf).await {
            Ok(n) => {
                stats.received.fetch_add(1, Ordering::Relaxed);
                if btx.send((back_to.clone(), buf[..n].to_vec())).is_err() {
                    return;
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
        let Some(rate) = self.spec.rate_bps else {
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
        Some(done + self.spec.delay)
    }
}

/// One direction: admits datagrams as they come and delivers them when due. Delivery times
/// never decrease (constant delay after a FIFO queue), so a FIFO holds the packets in flight.
async fn run_link(
    spec: LinkSpec,
    rng: Rng,
    mut rx: mpsc::UnboundedReceiver<Item>,
    stats: Arc<DirStats>,
) {
    let mut link = Link {
        spec,
        loss: LossModel::new(spec.loss, rng),
        busy_until: Instant::now(),
        epoch: Instant::now(),
        queued: VecDeque::new(),
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
                let now = Instant::now();
                if let Some(at) = link.admit(now, d.len(), &stats) {
                    flight.push_back((at, (target, d)));
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
                loss: LossSpec::None,
            },
            loss: LossModel::new(LossSpec::None, Rng::new(1, 1)),
            busy_until: Instant::now(),
            epoch: Instant::now(),
            queued: VecDeque::new(),
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
}
