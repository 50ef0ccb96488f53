//! One direction of an emulated link in real time: the simulator's model (serialisation
//! at a rate, drop-tail queue, one-way delay, Bernoulli or Gilbert–Elliott loss) applied
//! to packets as they arrive. The UDP relay ([`crate::relay`]) and the TUN link emulator
//! ([`crate::emu`]) both run it; it only decides when a packet is delivered, or that it
//! is dropped and why.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tcpfec_channel::Rng;
use tcpfec_channel::{LossModel, LossSpec};

/// Default bound on the bytes one direction holds (queued and propagating): 1 Gb/s times
/// a quarter of a second, far above any queue worth emulating, far below a memory problem.
pub const DEFAULT_MAX_BYTES: usize = 32 << 20;

/// Bookkeeping charged per packet against `max_bytes`, so a flood of tiny or empty
/// packets is bounded too.
pub const PER_PACKET: usize = 128;

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

/// Counters of one direction.
#[derive(Debug, Default)]
pub struct DirStats {
    /// Packets that arrived at the link.
    pub received: AtomicU64,
    /// Bytes that arrived at the link (what the senders put on the wire).
    pub received_bytes: AtomicU64,
    /// Packets delivered.
    pub delivered: AtomicU64,
    /// Dropped by the loss model.
    pub lost: AtomicU64,
    /// Dropped because the queue was full (in packets, or in bytes held).
    pub overflow: AtomicU64,
    /// Clients forgotten (least recently heard first) to make room for a new one when
    /// the relay already served its maximum.
    pub evicted_sources: AtomicU64,
    /// Most packets ever waiting in the queue at once.
    pub queue_peak: AtomicU64,
    /// Bytes delivered.
    pub delivered_bytes: AtomicU64,
}

/// A snapshot of [`DirStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirCounts {
    /// Packets that arrived at the link.
    pub received: u64,
    /// Bytes that arrived at the link.
    pub received_bytes: u64,
    /// Packets delivered.
    pub delivered: u64,
    /// Dropped by the loss model.
    pub lost: u64,
    /// Dropped because the queue was full (in packets, or in bytes held).
    pub overflow: u64,
    /// Clients forgotten to make room for new ones (see [`DirStats::evicted_sources`]).
    pub evicted_sources: u64,
    /// Most packets ever waiting in the queue at once.
    pub queue_peak: u64,
    /// Bytes delivered.
    pub delivered_bytes: u64,
}

impl DirStats {
    /// Reads the counters.
    pub fn snapshot(&self) -> DirCounts {
        DirCounts {
            received: self.received.load(Ordering::Relaxed),
            received_bytes: self.received_bytes.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            overflow: self.overflow.load(Ordering::Relaxed),
            evicted_sources: self.evicted_sources.load(Ordering::Relaxed),
            queue_peak: self.queue_peak.load(Ordering::Relaxed),
            delivered_bytes: self.delivered_bytes.load(Ordering::Relaxed),
        }
    }

    /// Counts a packet of `len` bytes arriving at the link.
    pub fn on_received(&self, len: usize) {
        self.received.fetch_add(1, Ordering::Relaxed);
        self.received_bytes.fetch_add(len as u64, Ordering::Relaxed);
    }

    /// Counts a delivered packet of `len` bytes.
    pub fn on_delivered(&self, len: usize) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
        self.delivered_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
    }
}

/// The link state: serialisation horizon and the packets in the queue.
pub struct LinkModel {
    spec: LinkSpec,
    loss: LossModel,
    /// Bytes each packet carries on the wire beyond what is handed to `admit` (headers
    /// the carrier strips, as IP and UDP around a relayed datagram).
    header: usize,
    /// When the link finishes serialising everything accepted so far.
    busy_until: Instant,
    /// When the link was created: time-varying loss schedules count from here.
    epoch: Instant,
    /// Serialisation end times of queued packets (the queue occupancy).
    queued: VecDeque<Instant>,
    /// Bytes accepted and not yet delivered (queued or propagating).
    held: usize,
}

impl LinkModel {
    /// A link starting at `now`; its loss model draws from `rng`; each packet is charged
    /// `header` bytes more than its length against the rate.
    pub fn new(spec: LinkSpec, rng: Rng, header: usize, now: Instant) -> Self {
        LinkModel {
            spec,
            loss: LossModel::new(spec.loss, rng),
            header,
            busy_until: now,
            epoch: now,
            queued: VecDeque::new(),
            held: 0,
        }
    }

    /// Decides the fate of a packet of `len` bytes arriving at `now`: `Some(delivery
    /// time)`, or `None` with the counter that explains the drop already bumped.
    pub fn admit(&mut self, now: Instant, len: usize, stats: &DirStats) -> Option<Instant> {
        let since = now.saturating_duration_since(self.epoch).as_nanos() as u64;
        // The loss channel steps once per packet time, sent or not, as in the simulator
        // (`LossModel::drops_after_idle`): an idle link lets a burst end.
        let (idle_ns, packet_ns) = match self.spec.rate_bps {
            Some(rate) => (
                now.saturating_duration_since(self.busy_until).as_nanos() as u64,
                ((len + self.header) as u64 * 8_000_000_000).div_ceil(rate.max(1)),
            ),
            None => (0, 1),
        };
        if self.loss.drops_after_idle(since, idle_ns, packet_ns) {
            stats.lost.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        while self.queued.front().is_some_and(|&t| t <= now) {
            self.queued.pop_front();
        }
        let cost = len + PER_PACKET;
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
        let bits = ((len + self.header) * 8) as f64;
        let start = self.busy_until.max(now);
        let done = start + Duration::from_secs_f64(bits / rate as f64);
        self.busy_until = done;
        self.queued.push_back(done);
        stats
            .queue_peak
            .fetch_max(self.queued.len() as u64, Ordering::Relaxed);
        self.held += cost;
        Some(done + self.spec.delay)
    }

    /// A packet of `len` bytes left the link.
    pub fn release(&mut self, len: usize) {
        self.held -= len + PER_PACKET;
    }

    /// Bytes accepted and not yet delivered.
    pub fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: usize = 28;

    #[test]
    fn queue_limits_and_rate_spacing() {
        let stats = DirStats::default();
        let spec = LinkSpec {
            rate_bps: Some(8_000_000), // 1 MB/s: 1000 bytes take 1 ms
            delay: Duration::from_millis(10),
            queue: 3,
            max_bytes: DEFAULT_MAX_BYTES,
            loss: LossSpec::None,
        };
        let mut l = LinkModel::new(spec, Rng::new(1, 1), HEADER, Instant::now());
        let now = Instant::now() + Duration::from_millis(1);
        let a = l.admit(now, 1000 - HEADER, &stats).unwrap();
        let b = l.admit(now, 1000 - HEADER, &stats).unwrap();
        let near =
            |d: Duration, ms: u64| d.abs_diff(Duration::from_millis(ms)) < Duration::from_micros(1);
        assert!(near(a - now, 11), "{:?}", a - now);
        assert!(near(b - a, 1), "{:?}", b - a);
        l.admit(now, 972, &stats).unwrap();
        assert!(l.admit(now, 972, &stats).is_none(), "queue of 3 is full");
        assert_eq!(stats.snapshot().overflow, 1);
        assert_eq!(stats.snapshot().queue_peak, 3);
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
        let spec = LinkSpec {
            max_bytes: 10 * (1000 + PER_PACKET),
            ..LinkSpec::delay_only(Duration::from_secs(10))
        };
        let mut l = LinkModel::new(spec, Rng::new(1, 1), HEADER, Instant::now());
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
