//! A one-directional link: drop-tail FIFO queue, serialisation at a fixed rate, propagation
//! delay, and an optional loss model.
//!
//! The queue is modelled without per-packet departure events: because service is FIFO at a
//! constant rate, each packet's transmission start is known when it is enqueued, so only
//! its arrival at the far end needs an event. The queue limit counts packets waiting for
//! the transmitter; the packet being serialised is not in the queue (as in ns-2 and ns-3).

use crate::loss::LossModel;
use crate::rng::Rng;
use std::collections::VecDeque;

/// Outcome of offering a packet to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// The packet will reach the far end at this time (ns).
    Arrives(u64),
    /// The queue was full.
    QueueDrop,
    /// The loss model dropped it (after it used the link's capacity).
    Lost,
}

/// One direction of a point-to-point link.
#[derive(Debug, Clone)]
pub struct Link {
    /// Node at the far end.
    pub to: u32,
    rate_bps: u64,
    delay_ns: u64,
    capacity: usize,
    /// Transmission start times of packets not yet started at the last offer.
    waiting_starts: VecDeque<u64>,
    last_finish: u64,
    loss: LossModel,
    /// Packets dropped by the full queue.
    pub queue_drops: u64,
    /// Packets dropped by the loss model.
    pub random_drops: u64,
    /// Packets accepted for transmission.
    pub accepted: u64,
    /// Random delay added to each packet's arrival, uniform below `jitter_ns`, and the
    /// last arrival (a later packet never overtakes it).
    jitter: Option<(u64, Rng)>,
    last_arrival: u64,
}

impl Link {
    /// Its one-way propagation delay, ns.
    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// A link to node `to` at `rate_bps` with one-way `delay_ns` and room for `capacity`
    /// waiting packets.
    pub fn new(to: u32, rate_bps: u64, delay_ns: u64, capacity: usize, loss: LossModel) -> Self {
        Link {
            to,
            rate_bps,
            delay_ns,
            capacity,
            waiting_starts: VecDeque::new(),
            last_finish: 0,
            loss,
            queue_drops: 0,
            random_drops: 0,
            accepted: 0,
            jitter: None,
            last_arrival: 0,
        }
    }

    /// Delays each packet's arrival by a random time, uniform below `jitter_ns`, keeping
    /// the order of the packets (`Scenario::send_jitter`).
    pub fn set_jitter(&mut self, jitter_ns: u64, rng: Rng) {
        self.jitter = (jitter_ns > 0).then_some((jitter_ns, rng));
    }

    /// Serialisation time of `bytes` in ns.
    #[inline]
    pub fn tx_time(&self, bytes: u32) -> u64 {
        (bytes as u64 * 8_000_000_000).div_ceil(self.rate_bps)
    }

    /// Packets waiting (not being serialised) at time `now`.
    pub fn queue_len(&mut self, now: u64) -> usize {
        while self.waiting_starts.front().is_some_and(|&s| s <= now) {
            self.waiting_starts.pop_front();
        }
        self.waiting_starts.len()
    }

    /// Offers a packet of `bytes` at time `now`.
    #[inline]
    pub fn offer(&mut self, now: u64, bytes: u32) -> Offer {
        if self.queue_len(now) >= self.capacity && self.last_finish > now {
            self.queue_drops += 1;
            return Offer::QueueDrop;
        }
        let tx = self.tx_time(bytes);
        // How long the link stood idle since the last packet left it: a burst of the
        // channel is a burst in time (`LossModel::drops_after_idle`).
        let idle = match self.accepted {
            0 => 0,
            _ => now.saturating_sub(self.last_finish),
        };
        let start = self.last_finish.max(now);
        let finish = start + tx;
        self.last_finish = finish;
        if start > now {
            self.waiting_starts.push_back(start);
        }
        self.accepted += 1;
        if self.loss.drops_after_idle(now, idle, tx) {
            self.random_drops += 1;
            return Offer::Lost;
        }
        let mut arrival = finish + self.delay_ns;
        if let Some((most, rng)) = self.jitter.as_mut() {
            arrival += (rng.uniform() * *most as f64) as u64;
            arrival = arrival.max(self.last_arrival);
            self.last_arrival = arrival;
        }
        Offer::Arrives(arrival)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::LossSpec;
    use crate::rng::Rng;

    fn link(cap: usize) -> Link {
        // 8 Mb/s: 1000 bytes take 1 ms. Delay 10 ms.
        Link::new(
            1,
            8_000_000,
            10_000_000,
            cap,
            LossModel::new(LossSpec::None, Rng::new(0, 0)),
        )
    }

    #[test]
    fn send_jitter_delays_each_packet_within_its_bound_and_keeps_the_order() {
        let mut l = link(usize::MAX);
        l.set_jitter(500_000, Rng::new(7, 1));
        let mut last = 0;
        let mut delayed = 0;
        for k in 0..1000u64 {
            // One packet every 2 ms: each leaves at once, 1 ms on the wire + 10 ms.
            let now = k * 2_000_000;
            let Offer::Arrives(t) = l.offer(now, 1000) else {
                panic!("dropped")
            };
            let plain = now + 1_000_000 + 10_000_000;
            assert!(t >= plain && t < plain + 500_000, "{t} vs {plain}");
            assert!(t >= last, "order kept");
            delayed += u64::from(t > plain);
            last = t;
        }
        assert!(delayed > 900, "nearly every packet is delayed: {delayed}");
    }

    /// Runs of consecutive losses among `n` packets of 1000 bytes offered every `gap_ns`
    /// on a Gilbert-Elliott link (mean burst 5 packets, 1 % of packet times bad):
    /// (losses, longest run).
    fn ge_losses(gap_ns: u64, n: u64) -> (u64, u64) {
        let spec = LossSpec::GilbertElliott {
            p: 0.002,
            r: 0.2,
            h: 0.0,
            k: 1.0,
        };
        let mut l = Link::new(
            1,
            8_000_000,
            0,
            usize::MAX,
            LossModel::new(spec, Rng::new(3, 1)),
        );
        let (mut lost, mut run, mut longest) = (0, 0, 0);
        for i in 0..n {
            if l.offer(i * gap_ns, 1000) == Offer::Lost {
                lost += 1;
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        (lost, longest)
    }

    #[test]
    fn a_gilbert_burst_is_a_burst_in_time() {
        // Back to back (a packet every 1 ms packet time): bursts of several packets.
        let (lost, longest) = ge_losses(1_000_000, 200_000);
        assert!((1_500..2_500).contains(&lost), "{lost}");
        assert!(longest >= 10, "{longest}");
        // One packet every 100 packet times: about as many losses per packet, but the
        // chain has forgotten its state in between, so the packet after a loss is lost
        // with the stationary 1 %, not with 1 - r = 80 % as before.
        let (lost, longest) = ge_losses(100_000_000, 200_000);
        assert!((1_500..2_500).contains(&lost), "{lost}");
        assert!(longest <= 3, "{longest}");
    }

    #[test]
    fn serialises_back_to_back_and_adds_delay() {
        let mut l = link(10);
        assert_eq!(l.offer(0, 1000), Offer::Arrives(11_000_000));
        assert_eq!(l.offer(0, 1000), Offer::Arrives(12_000_000));
        assert_eq!(l.offer(5_000_000, 1000), Offer::Arrives(16_000_000));
    }

    #[test]
    fn drop_tail_counts_waiting_packets_only() {
        let mut l = link(2);
        assert!(matches!(l.offer(0, 1000), Offer::Arrives(_))); // in service
        assert!(matches!(l.offer(0, 1000), Offer::Arrives(_))); // waiting 1
        assert!(matches!(l.offer(0, 1000), Offer::Arrives(_))); // waiting 2
        assert_eq!(l.offer(0, 1000), Offer::QueueDrop);
        // After 1 ms the first finished and the second is in service: room for one.
        assert!(matches!(l.offer(1_000_000, 1000), Offer::Arrives(_)));
        assert_eq!(l.offer(1_000_000, 1000), Offer::QueueDrop);
        assert_eq!(l.queue_drops, 2);
    }
}
