//! Delivery-rate estimation, after draft-cheng-iccrg-delivery-rate-estimation-02.
//!
//! Every transmission records how much had been delivered when it left and when that
//! was; when it is acknowledged (cumulatively, by SACK, or because FEC rebuilt it at the
//! receiver), the difference is one sample of the rate at which the path delivers. The
//! interval is the longer of the send and the ACK phase of the sample, so neither an ACK
//! burst (ACK compression) nor a send burst inflates the rate. Samples taken while the
//! application had nothing to send are marked app-limited: they show less than the path
//! can carry, and a bandwidth filter takes them only if they raise its estimate.
//!
//! Volumes are in payload bytes. The estimator is pure bookkeeping: it never changes
//! what is sent.

use crate::time::Instant;
use core::time::Duration;

/// What is recorded about one transmission when it leaves (the draft's per-packet state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxState {
    /// Bytes delivered (connection-wide) when this packet was sent.
    pub delivered: u64,
    /// When `delivered` last grew, as of this packet's send.
    pub delivered_time: Instant,
    /// Send time of the first packet of the flight this packet belongs to.
    pub first_sent_time: Instant,
    /// When this packet was sent.
    pub sent_time: Instant,
    /// Its place in the connection's send order (0, 1, 2, …): packets sent at the same
    /// instant are still ordered, which RACK's "sent after" needs.
    pub order: u64,
    /// The application was not keeping the window full when it was sent.
    pub app_limited: bool,
    /// Bytes in flight when it was sent (itself excluded).
    pub in_flight: u64,
    /// Bytes declared lost (connection-wide) when it was sent.
    pub lost: u64,
    /// A retransmission: its ACK may be for an earlier transmission, so it gives no RTT.
    pub retransmission: bool,
}

/// One delivery-rate sample, produced per ACK that delivered something.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval`.
    pub delivered: u64,
    /// Length of the sample: max(send phase, ACK phase).
    pub interval: Duration,
    /// `delivered / interval`, bytes per second.
    pub rate: f64,
    /// The sample's newest packet was sent while application-limited.
    pub app_limited: bool,
    /// Bytes delivered (connection-wide) when the newest packet was sent; BBR counts
    /// round trips with it.
    pub prior_delivered: u64,
    /// Round-trip time of the newest packet acknowledged by this ACK (`None` if it was a
    /// retransmission: Karn's rule).
    pub rtt: Option<Duration>,
    /// Bytes this ACK newly acknowledged.
    pub newly_acked: u64,
    /// Bytes in flight when the newest packet was sent (BBR's `tx_in_flight`).
    pub tx_in_flight: u64,
    /// Bytes declared lost between the newest packet's send and now.
    pub lost: u64,
}

/// The newest delivered packet seen while processing one ACK.
#[derive(Debug, Clone, Copy)]
struct Newest {
    tx: TxState,
    seq: u64,
}

/// The connection-wide estimator state.
#[derive(Debug, Clone, Default)]
pub struct DeliveryRate {
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// Non-zero: the flow is application-limited until `delivered` passes this.
    app_limited_until: u64,
    newest: Option<Newest>,
    newly_acked: u64,
    lost: u64,
    /// Packets sent so far (the next `TxState::order`).
    sent: u64,
    /// Send order of the most recently sent packet delivered so far (RACK's clock).
    newest_delivered: Option<u64>,
    /// The path's minimum RTT as of the last sample (see [`DeliveryRate::on_delivered`]).
    min_rtt: Option<Duration>,
}

impl DeliveryRate {
    /// A fresh estimator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// True while samples are marked application-limited.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// Send order (`TxState::order`) of the most recently sent packet delivered so far.
    pub fn newest_delivered(&self) -> Option<u64> {
        self.newest_delivered
    }

    /// The send order the next packet will get.
    pub fn next_order(&self) -> u64 {
        self.sent
    }

    /// The send order of the packet sent last, if any.
    pub fn last_sent(&self) -> Option<u64> {
        self.sent.checked_sub(1)
    }

    /// Bytes declared lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// `bytes` of payload were declared lost (each loss counted once per transmission).
    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
    }

    /// A packet leaves at `now` with `in_flight` bytes already in flight (`retransmission`:
    /// it was sent before). Returns what to keep with the packet.
    pub fn on_send(&mut self, now: Instant, in_flight: u64, retransmission: bool) -> TxState {
        if in_flight == 0 {
            // A new flight after an idle period: its samples start now, not at the last ACK.
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        self.sent += 1;
        TxState {
            order: self.sent - 1,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            app_limited: self.app_limited_until != 0,
            in_flight,
            lost: self.lost,
            retransmission,
        }
    }

    /// The sender had nothing to send while the window had room (`in_flight` bytes out):
    /// samples are app-limited until what is in flight now has been delivered.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// A packet of `bytes` payload, numbered `seq`, sent with `tx`, was delivered at `now`
    /// (call once per packet, the first time it is acknowledged by any means).
    ///
    /// A retransmission acknowledged sooner than the minimum RTT after it left was not
    /// delivered by that transmission: an earlier one arrived, or FEC rebuilt it. Its bytes
    /// count, but it neither times the sample nor moves RACK's clock (RFC 8985 §6.2 skips
    /// it the same way). Taken as the newest packet, each such ACK started a new BBR round:
    /// after a startup overshoot whose holes FEC rebuilt while their retransmissions were
    /// on the way, rounds came one per ACK, and the lower bounds, cut by 0.7 in every
    /// round with a loss, took a 50 Mb/s flow to 0.6 Mb/s for the rest of the run.
    pub fn on_delivered(&mut self, now: Instant, tx: &TxState, seq: u64, bytes: u64) {
        self.delivered += bytes;
        self.delivered_time = now;
        self.newly_acked += bytes;
        let too_soon = tx.retransmission
            && self
                .min_rtt
                .is_some_and(|m| now.saturating_since(tx.sent_time) < m);
        if too_soon {
            return;
        }
        if self.newest_delivered.is_none_or(|o| tx.order > o) {
            self.newest_delivered = Some(tx.order);
        }
        let newer = self
            .newest
            .is_none_or(|n| (tx.sent_time, seq) > (n.tx.sent_time, n.seq));
        if newer {
            self.newest = Some(Newest { tx: *tx, seq });
            // The next sample's send phase starts where this one's ended.
            self.first_sent_time = tx.sent_time;
        }
    }

    /// A repair packet of `bytes`, sent with `tx` to protect a group whose last member is
    /// `seq`, has left the network at `now` (a packet sent after it was delivered, or the
    /// cumulative ACK passed its group). Repairs use the bottleneck like data and are
    /// paced like data, so the path's rate counts them: without them a code of K data and
    /// M repair packets shows only K/(K+M) of the rate the flow gets, and a controller
    /// whose probes raise the rate by less than (K+M)/K (BBR's 1.25) sees its estimate
    /// shrink with every cycle. The receiver does not acknowledge repairs, so the sender
    /// cannot tell which arrived: the repair gives no RTT (send it with `retransmission`
    /// set) and does not move RACK's clock.
    pub fn on_repair_delivered(&mut self, now: Instant, tx: &TxState, seq: u64, bytes: u64) {
        let rack = self.newest_delivered;
        self.on_delivered(now, tx, seq, bytes);
        self.newest_delivered = rack;
    }

    /// Ends the processing of one ACK: the sample it gives, if any. `min_rtt` is the
    /// path's minimum RTT so far; a sample shorter than it is an artefact (a spurious
    /// retransmission acknowledged early) and is dropped.
    pub fn take_sample(&mut self, now: Instant, min_rtt: Option<Duration>) -> Option<RateSample> {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        self.min_rtt = min_rtt;
        let newly_acked = core::mem::take(&mut self.newly_acked);
        let n = self.newest.take()?;
        let send_elapsed = n.tx.sent_time.saturating_since(n.tx.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(n.tx.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        if interval.is_zero() || min_rtt.is_some_and(|m| interval < m) {
            return None;
        }
        let delivered = self.delivered - n.tx.delivered;
        Some(RateSample {
            delivered,
            interval,
            rate: delivered as f64 / interval.as_secs_f64(),
            app_limited: n.tx.app_limited,
            prior_delivered: n.tx.delivered,
            rtt: (!n.tx.retransmission).then(|| now.saturating_since(n.tx.sent_time)),
            newly_acked,
            tx_in_flight: n.tx.in_flight,
            lost: self.lost - n.tx.lost,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    /// Ten 1000-byte packets sent back to back at t = 0 over a 100 ms path whose
    /// bottleneck spaces them 10 ms apart; every number below is worked by hand from the
    /// draft's rules.
    #[test]
    fn steady_flight_measures_the_bottleneck_rate() {
        let mut r = DeliveryRate::new();
        let txs: Vec<TxState> = (0..10).map(|i| r.on_send(ms(0), i * 1000, false)).collect();
        // The first ACK at 100 ms: delivered 1000 bytes since t = 0 (delivered_time of
        // the flight's start): 1000 B / 100 ms.
        r.on_delivered(ms(100), &txs[0], 0, 1000);
        let s = r.take_sample(ms(100), None).unwrap();
        assert_eq!(s.delivered, 1000);
        assert_eq!(s.interval, Duration::from_millis(100));
        assert!((s.rate - 10_000.0).abs() < 1e-6);
        assert_eq!(s.rtt, Some(Duration::from_millis(100)));
        // Packet 1's sample still reaches back to t = 0: 2000 B over 110 ms.
        r.on_delivered(ms(110), &txs[1], 1, 1000);
        let s = r.take_sample(ms(110), None).unwrap();
        assert_eq!(
            (s.delivered, s.interval),
            (2000, Duration::from_millis(110))
        );
        // A packet sent one ACK later measures exactly one bottleneck slot per packet.
        let t = r.on_send(ms(110), 8000, false);
        for (i, tx) in txs.iter().enumerate().skip(2) {
            r.on_delivered(ms(100 + 10 * i as u64), tx, i as u64, 1000);
            r.take_sample(ms(100 + 10 * i as u64), None);
        }
        r.on_delivered(ms(210), &t, 10, 1000);
        let s = r
            .take_sample(ms(210), Some(Duration::from_millis(100)))
            .unwrap();
        // Delivered since t's send (2000 then): 11 000 − 2000 = 9000 B. The ACK phase is
        // 100 ms, but t's send phase reaches back to the send of the newest packet
        // delivered before it (packet 1, t = 0): 110 ms, the longer, is the interval.
        assert_eq!(s.delivered, 9000);
        assert_eq!(s.interval, Duration::from_millis(110));
        assert!((s.rate - 9000.0 / 0.110).abs() < 1e-6);
        assert_eq!(s.prior_delivered, 2000);
        assert_eq!(s.tx_in_flight, 8000);
    }

    /// A retransmission's ACK gives a rate but no RTT: it may acknowledge the original.
    #[test]
    fn a_retransmission_gives_no_rtt() {
        let mut r = DeliveryRate::new();
        let _first = r.on_send(ms(0), 0, false);
        let again = r.on_send(ms(300), 0, true);
        r.on_delivered(ms(301), &again, 0, 1000);
        let s = r.take_sample(ms(301), None).unwrap();
        assert_eq!(s.rtt, None);
        assert_eq!(s.delivered, 1000);
    }

    /// Losses count against the samples of packets sent before them.
    #[test]
    fn losses_after_a_send_are_charged_to_its_sample() {
        let mut r = DeliveryRate::new();
        let a = r.on_send(ms(0), 0, false);
        r.on_lost(3000);
        let b = r.on_send(ms(1), 1000, false);
        r.on_lost(500);
        r.on_delivered(ms(100), &a, 0, 1000);
        assert_eq!(r.take_sample(ms(100), None).unwrap().lost, 3500);
        r.on_delivered(ms(101), &b, 1, 1000);
        assert_eq!(r.take_sample(ms(101), None).unwrap().lost, 500);
        assert_eq!(r.lost(), 3500);
    }

    /// A retransmission acknowledged 5 ms after it left, on a 100 ms path, was not
    /// delivered by itself: it counts as delivered but neither starts a sample (a new BBR
    /// round) nor moves RACK's clock.
    #[test]
    fn a_retransmission_acknowledged_within_min_rtt_does_not_time_the_sample() {
        let mut r = DeliveryRate::new();
        let a = r.on_send(ms(0), 0, false);
        r.on_send(ms(1), 1000, false);
        r.on_delivered(ms(100), &a, 0, 1000);
        assert!(r
            .take_sample(ms(100), Some(Duration::from_millis(100)))
            .is_some());
        assert_eq!(r.newest_delivered(), Some(a.order));
        // b is resent at 150 ms; its first copy's ACK comes at 155 ms.
        let b_again = r.on_send(ms(150), 0, true);
        r.on_delivered(ms(155), &b_again, 1, 1000);
        assert_eq!(r.delivered(), 2000);
        assert_eq!(r.newest_delivered(), Some(a.order), "RACK's clock stays");
        assert!(r
            .take_sample(ms(155), Some(Duration::from_millis(100)))
            .is_none());
        // Acknowledged a round trip after it left, the same retransmission times the
        // sample (without an RTT: Karn's rule).
        let mut late = DeliveryRate::new();
        late.on_send(ms(0), 0, false);
        let again = late.on_send(ms(150), 0, true);
        late.take_sample(ms(100), Some(Duration::from_millis(100)));
        late.on_delivered(ms(250), &again, 0, 1000);
        let s = late
            .take_sample(ms(250), Some(Duration::from_millis(100)))
            .unwrap();
        assert_eq!((s.prior_delivered, s.rtt), (0, None));
    }

    /// An ACK that arrives compressed (many packets acknowledged at once after a pause)
    /// does not inflate the rate: the send phase bounds the interval from below.
    #[test]
    fn ack_compression_is_bounded_by_the_send_phase() {
        let mut r = DeliveryRate::new();
        // Ten packets paced 10 ms apart (t = 0..90 ms).
        let txs: Vec<TxState> = (0..10)
            .map(|i| r.on_send(ms(10 * i), i * 1000, false))
            .collect();
        // All acknowledged by one ACK at 200 ms.
        for (i, tx) in txs.iter().enumerate() {
            r.on_delivered(ms(200), tx, i as u64, 1000);
        }
        let s = r.take_sample(ms(200), None).unwrap();
        // ACK phase: 200 ms since delivered_time 0 → 10 000 B / 200 ms = 50 kB/s; the send
        // phase (90 ms) is shorter, so the ACK phase is the interval.
        assert_eq!(s.interval, Duration::from_millis(200));
        assert_eq!(s.newly_acked, 10_000);
        // Next flight: sent as a burst at 200 ms, acknowledged in one ACK 1 ms later
        // (compressed). ack_elapsed = 1 ms but send_elapsed for the newest = 0: the
        // sample is shorter than min_rtt and dropped rather than reported as 10 MB/s.
        let burst: Vec<TxState> = (0..10)
            .map(|i| r.on_send(ms(200), i * 1000, false))
            .collect();
        for (i, tx) in burst.iter().enumerate() {
            r.on_delivered(ms(201), tx, 10 + i as u64, 1000);
        }
        assert_eq!(
            r.take_sample(ms(201), Some(Duration::from_millis(100))),
            None
        );
    }

    /// Samples are app-limited from the moment the application runs dry until what was
    /// in flight then has been delivered.
    #[test]
    fn app_limited_marks_samples_until_the_flight_is_delivered() {
        let mut r = DeliveryRate::new();
        let a = r.on_send(ms(0), 0, false);
        let b = r.on_send(ms(0), 1000, false);
        r.on_app_limited(2000);
        assert!(r.is_app_limited());
        let c = r.on_send(ms(5), 2000, false);
        assert!(!a.app_limited && !b.app_limited && c.app_limited);
        r.on_delivered(ms(100), &a, 0, 1000);
        let s = r.take_sample(ms(100), None).unwrap();
        assert!(!s.app_limited);
        assert!(r.is_app_limited(), "1000 of 2000 bytes delivered");
        r.on_delivered(ms(101), &b, 1, 1000);
        r.take_sample(ms(101), None);
        assert!(r.is_app_limited(), "exactly the mark: not yet past it");
        r.on_delivered(ms(105), &c, 2, 1000);
        let s = r.take_sample(ms(105), None).unwrap();
        assert!(s.app_limited, "c was sent app-limited");
        assert!(!r.is_app_limited());
    }

    /// A repair counts as delivered bytes, but gives no RTT and leaves RACK's clock alone.
    #[test]
    fn a_repair_counts_without_rtt_or_rack_clock() {
        let mut r = DeliveryRate::new();
        let a = r.on_send(ms(0), 0, false);
        let repair = r.on_send(ms(1), 1000, true);
        r.on_delivered(ms(100), &a, 0, 1000);
        r.take_sample(ms(100), None);
        r.on_repair_delivered(ms(102), &repair, 0, 1000);
        let s = r.take_sample(ms(102), None).unwrap();
        // Delivered since the repair left (nothing then): both packets.
        assert_eq!((s.delivered, s.newly_acked, s.rtt), (2000, 1000, None));
        assert_eq!(r.delivered(), 2000);
        assert_eq!(r.newest_delivered(), Some(a.order));
    }

    /// A packet acknowledged out of order (SACK) before an older one: the newest packet
    /// of the ACK decides the sample, whatever the order of the calls.
    #[test]
    fn newest_packet_decides_the_sample() {
        let mut r = DeliveryRate::new();
        let a = r.on_send(ms(0), 0, false);
        let b = r.on_send(ms(10), 1000, false);
        r.on_delivered(ms(120), &b, 1, 1000);
        r.on_delivered(ms(120), &a, 0, 1000);
        let s = r.take_sample(ms(120), None).unwrap();
        assert_eq!(s.rtt, Some(Duration::from_millis(110)));
        assert_eq!(s.prior_delivered, 0);
        assert_eq!(s.delivered, 2000);
        assert_eq!((s.tx_in_flight, s.lost), (1000, 0));
        // send phase 10 ms (b sent 10 ms after the flight began), ACK phase 120 ms.
        assert_eq!(s.interval, Duration::from_millis(120));
        assert_eq!(r.take_sample(ms(121), None), None, "nothing new delivered");
    }
}
