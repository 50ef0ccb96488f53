//! `auto`'s yield to other flows: a CUBIC window that only congestion moves, capping the
//! flight BBR allows (docs/design/coexistence.md).
//!
//! BBR ignores loss up to 2 % a round, so next to a CUBIC flow in a shallow buffer it
//! keeps its rate while CUBIC cuts at every drop. `auto`'s receiver tells the drops of a
//! full queue from the channel's (`loss_runs`), so `auto` can answer congestion the way
//! CUBIC does without answering the channel: when a round's congestion losses exceed what
//! the channel alone would have dropped among the packets that met the full queue
//! ([`CongestionTally`]), the cap falls to CUBIC's β = 0.7 times the flight (not below
//! BBR's BDP estimate) and grows back along CUBIC's curve (RFC 9438); the flight is the
//! smaller of BBR's window and the cap. Channel loss never moves it. Where the queue
//! never drains between marks, what fills it does not yield to loss, and the cap is
//! lifted until it drains.

use super::{CongestionControl, Cubic};
use crate::time::Instant;
use core::time::Duration;

/// Congestion losses of one round against what the channel would explain.
#[derive(Debug, Clone, Copy, Default)]
pub struct CongestionTally {
    /// Losses the receiver classed as congestion.
    lost: f64,
    /// How many of them the channel alone would have caused.
    expected: f64,
    /// Variance of that number.
    variance: f64,
    /// The channel's mean burst.
    burst: f64,
}

impl CongestionTally {
    /// A report: `lost` congestion losses among `packets` that met a full queue, on a
    /// channel losing `loss_rate` in runs of `mean_burst`.
    pub fn add(&mut self, lost: u64, packets: u64, loss_rate: f64, mean_burst: f64) {
        let (n, b) = (packets as f64, mean_burst.max(1.0));
        self.lost += lost as f64;
        self.expected += loss_rate * n;
        // Runs arrive about as a Poisson process (n·p/b of them) of geometric lengths
        // with mean b, whose second moment is 2b² − b.
        self.variance += loss_rate * n * (2.0 * b - 1.0);
        self.burst = b;
    }

    /// More congestion losses than the channel explains, beyond three standard
    /// deviations and one of its bursts: a queue overflowed. On a clean channel the
    /// first loss is one. (On a channel losing in bursts of 5, a burst that happened to
    /// meet a near-full queue cut lone flows often enough to cost up to 30 % of their
    /// goodput with the burst left out.)
    pub fn congested(&self) -> bool {
        // Asked on every ACK, and most rounds have no congestion loss: no square root then.
        if self.lost < 1.0 {
            return false;
        }
        let margin = 3.0 * self.variance.sqrt() + (self.burst - 1.0).max(0.0);
        self.lost > self.expected + margin
    }
}

/// The queueing delay the round trip shows: the latest above the smallest.
fn queueing((latest, min): (Duration, Duration)) -> Duration {
    latest.saturating_sub(min)
}

/// Whether a queueing delay is a queue worth the name: at least an eighth of the smallest
/// round trip, and 2 ms. A buffer shallower than that fills without a mark.
fn is_queue(queue: Duration, min: Duration) -> bool {
    queue >= (min / 8).max(Duration::from_millis(2))
}

/// What the sender knows when the receiver reports congestion losses.
#[derive(Debug, Clone, Copy)]
pub struct CongestionReport {
    /// The sender's cumulative ACK and next segment.
    pub span: (u64, u64),
    /// Segments in flight.
    pub flight: f64,
    /// The latest round trip and the smallest.
    pub rtt: (Duration, Duration),
    /// BBR has left its start-up.
    pub started_up: bool,
    /// BBR's BDP estimate, segments.
    pub bdp: Option<f64>,
    /// Congestion losses reported since the last report.
    pub lost: u64,
    /// Packets that met the full queue since the last report, those lost included.
    pub packets: u64,
    /// The channel's estimated loss rate and mean burst.
    pub channel: (f64, f64),
}

/// Marks in a row, each after a time in which the queue never drained, after which the
/// queue is taken to be kept full by a flow that does not yield to loss, and the cap is
/// lifted.
pub const UNYIELDING_STREAK: u32 = 3;

/// The cap: unbounded until the first mark.
#[derive(Debug, Clone, Default)]
pub struct CongestionCap {
    window: Option<Cubic>,
    tally: CongestionTally,
    /// Marks are ignored until the cumulative ACK passes this segment (one cut a round).
    recover: Option<u64>,
    /// The round the tally counts ends when the cumulative ACK passes this segment.
    round_end: u64,
    /// Smallest queueing delay seen since the last mark, and in the current round.
    floor_since_mark: Option<Duration>,
    floor_this_round: Option<Duration>,
    /// Marks in a row between which the queue never drained.
    streak: u32,
    /// The cap was lifted for a competitor that does not yield: marks are ignored until
    /// a round in which the queue drains.
    lifted: bool,
    /// Marks so far.
    pub marks: u64,
    /// Times the cap was lifted.
    pub lifts: u64,
}

impl CongestionCap {
    /// The most segments the flight may hold, if a mark has set a cap.
    pub fn limit(&self) -> Option<f64> {
        self.window.as_ref().map(|w| w.cwnd())
    }

    /// A report of congestion losses arrived (see [`CongestionReport`]).
    pub fn on_report(&mut self, now: Instant, report: &CongestionReport) {
        let CongestionReport {
            span: (una, nxt),
            flight,
            rtt,
            started_up,
            bdp,
            lost,
            packets,
            channel: (loss_rate, mean_burst),
        } = *report;
        self.next_round(una, nxt, rtt);
        self.tally.add(lost, packets, loss_rate, mean_burst);
        if !self.tally.congested() || self.recover.is_some_and(|r| una <= r) || self.lifted {
            return;
        }
        if !started_up {
            // BBR's start-up grows the queue every round, so every loss meets the largest
            // queue yet and reads as congestion, the channel's included (a 1 % bursty
            // link cut a 50 Mb/s, 400 ms flow to a quarter of its BDP at 3 s, and it
            // moved 14 Mb/s instead of 42). Start-up has its own exit on loss.
            self.tally = CongestionTally::default();
            return;
        }
        if !is_queue(queueing(rtt), rtt.1) {
            // The sender's own round trips show no queue that could be full: channel
            // losses the receiver's classification took for congestion (a clean
            // estimate early in a connection reads its first loss as congestion).
            self.tally = CongestionTally::default();
            return;
        }
        self.marks += 1;
        self.tally = CongestionTally::default();
        self.recover = Some(nxt.saturating_sub(1));
        // Whether the queue drained since the last mark: after a CUBIC flow's cut it
        // does (a loss-based flow leaves the queue once per epoch); a BBR flow keeps a
        // queue standing through every cut of ours.
        let standing = self.floor_since_mark.is_some_and(|q| is_queue(q, rtt.1));
        self.floor_since_mark = None;
        self.streak = if standing { self.streak + 1 } else { 0 };
        if self.streak >= UNYIELDING_STREAK {
            // Cutting further would only hand the link to what fills the queue (BBR
            // ignores up to 2 % loss a round, BBR v1 all of it): BBR's own answer to
            // loss again, until the queue drains.
            self.window = None;
            self.lifted = true;
            self.lifts += 1;
            self.streak = 0;
            return;
        }
        let w = self.window.get_or_insert_with(|| {
            let mut c = Cubic::new(1);
            c.window_mut().ssthresh = 0.0; // congestion avoidance from the first cut
            c
        });
        // The cut is from the flight that met the full queue, as CUBIC's from its window,
        // but not below BBR's BDP estimate: the flight counts data only, and on a lossy
        // path repairs and holes awaiting them make up a fifth of what is in the pipe (a
        // lone flow at 5 % loss, 10 Mb/s, RTT 400 ms was cut to 0.84 of its BDP and
        // moved 5.3 Mb/s instead of 7.5). Next to another flow the estimate is this
        // flow's share, which the cut then keeps until the estimate falls.
        let from = flight.max(2.0);
        w.window_mut().cwnd = from;
        w.on_congestion_event(now, from as u64);
        if let Some(bdp) = bdp {
            let cut = w.cwnd().max(bdp);
            w.window_mut().cwnd = cut;
        }
    }

    /// `acked` segments were newly acknowledged, with the round trips `rtt` (latest,
    /// smallest): the cap grows along CUBIC's curve, in time, whether or not it limits the
    /// flight. Grown only while it limited, it held BBR's probes at the flight of the
    /// last cut on a lone lossy path (10 % loss: 15 % of the goodput).
    pub fn on_ack(
        &mut self,
        now: Instant,
        (una, nxt): (u64, u64),
        rtt: Option<(Duration, Duration)>,
        acked: u64,
        srtt: Option<Duration>,
    ) {
        if let Some(rtt) = rtt {
            self.next_round(una, nxt, rtt);
        }
        if let Some(w) = self.window.as_mut() {
            w.on_ack(now, acked, srtt);
        }
    }

    /// Notes the queueing delay; a round ends when the cumulative ACK passes the segment
    /// that was next at its start, and the tally starts again. A round in which the
    /// queue drained ends a lift.
    fn next_round(&mut self, una: u64, nxt: u64, rtt: (Duration, Duration)) {
        let q = queueing(rtt);
        for floor in [&mut self.floor_since_mark, &mut self.floor_this_round] {
            *floor = Some(floor.map_or(q, |f| f.min(q)));
        }
        if una > self.round_end {
            if self.floor_this_round.is_some_and(|f| !is_queue(f, rtt.1)) {
                self.lifted = false;
            }
            self.floor_this_round = None;
            self.round_end = nxt;
            self.tally = CongestionTally::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_channel_is_congested_at_its_first_full_queue_loss() {
        let mut t = CongestionTally::default();
        t.add(0, 50, 0.0, 1.0);
        assert!(!t.congested());
        t.add(1, 10, 0.0, 1.0);
        assert!(t.congested());
    }

    #[test]
    fn channel_losses_at_a_full_queue_are_not_congestion() {
        // 2 % loss: 100 packets at a full queue lose about 2 of them to the channel.
        let mut t = CongestionTally::default();
        t.add(3, 100, 0.02, 1.0);
        assert!(!t.congested(), "3 of 100 at 2 % is the channel");
        t.add(10, 100, 0.02, 1.0);
        assert!(t.congested(), "13 of 200 at 2 % is not");
    }

    const QUEUED: (Duration, Duration) = (Duration::from_millis(150), Duration::from_millis(100));

    /// A report over the flight `span` of 100 segments, a 50 ms queue, BBR started up,
    /// `lost` of 5 packets lost, on a clean channel.
    fn full_queue(span: (u64, u64), lost: u64) -> CongestionReport {
        CongestionReport {
            span,
            flight: 100.0,
            rtt: QUEUED,
            started_up: true,
            bdp: None,
            lost,
            packets: 5,
            channel: (0.0, 1.0),
        }
    }

    /// That report, at `at`.
    fn report(c: &mut CongestionCap, at: Instant, span: (u64, u64), lost: u64) {
        c.on_report(at, &full_queue(span, lost));
    }

    #[test]
    fn losses_without_a_queue_in_the_round_trip_are_not_a_mark() {
        let mut c = CongestionCap::default();
        let no_queue = (Duration::from_millis(101), Duration::from_millis(100));
        let r = CongestionReport {
            rtt: no_queue,
            ..full_queue((1, 101), 3)
        };
        c.on_report(Instant::ZERO, &r);
        assert_eq!(c.marks, 0);
        assert!(c.limit().is_none());
    }

    #[test]
    fn losses_during_start_up_are_not_a_mark() {
        let mut c = CongestionCap::default();
        let r = CongestionReport {
            started_up: false,
            ..full_queue((1, 101), 3)
        };
        c.on_report(Instant::ZERO, &r);
        assert_eq!(c.marks, 0);
        assert!(c.limit().is_none());
    }

    #[test]
    fn one_burst_of_a_bursty_channel_is_not_congestion() {
        // 1 % loss in bursts of 5: a burst of 8 at a near-full queue of 100 packets.
        let mut t = CongestionTally::default();
        t.add(8, 100, 0.01, 5.0);
        assert!(!t.congested());
        t.add(12, 100, 0.01, 5.0);
        assert!(t.congested(), "20 of 200 is more than the channel");
    }

    #[test]
    fn a_mark_cuts_the_flight_by_beta_once_a_round_and_the_cap_regrows() {
        let mut c = CongestionCap::default();
        assert!(c.limit().is_none(), "no cap before a mark");
        let t0 = Instant::ZERO;
        report(&mut c, t0, (1, 101), 1);
        assert_eq!(c.marks, 1);
        let cap = c.limit().unwrap();
        assert!((cap - 70.0).abs() < 1e-9, "cut to 0.7 of the flight: {cap}");
        // A second report in the same round does not cut again.
        report(&mut c, t0, (50, 120), 5);
        assert_eq!(c.marks, 1);
        // It grows back along CUBIC's curve on ACKs.
        let rtt = Some(Duration::from_millis(100));
        for ms in 1..=5000u64 {
            c.on_ack(
                Instant::from_nanos(ms * 1_000_000),
                (120 + ms, 220 + ms),
                None,
                1,
                rtt,
            );
        }
        assert!(c.limit().unwrap() > 95.0, "regrown: {}", c.limit().unwrap());
    }

    #[test]
    fn a_queue_that_never_drains_between_marks_lifts_the_cap_until_it_does() {
        let mut c = CongestionCap::default();
        let rtt = Some(Duration::from_millis(100));
        let mut una = 1;
        // A standing queue of 50 ms through every cut: a competitor that does not yield.
        for mark in 0..=UNYIELDING_STREAK as u64 {
            let at = Instant::from_nanos(mark * 1_000_000_000);
            report(&mut c, at, (una, una + 100), 2);
            for _ in 0..4 {
                una += 101;
                c.on_ack(at, (una, una + 100), Some(QUEUED), 1, rtt);
            }
        }
        assert_eq!(c.lifts, 1);
        assert!(c.limit().is_none(), "lifted");
        // Marks while the queue stands are ignored.
        report(
            &mut c,
            Instant::from_nanos(9_000_000_000),
            (una, una + 100),
            2,
        );
        assert!(c.limit().is_none());
        // A round in which the queue drains, then a mark caps again.
        let drained = (Duration::from_millis(100), Duration::from_millis(100));
        for _ in 0..2 {
            una += 101;
            c.on_ack(
                Instant::from_nanos(9_500_000_000),
                (una, una + 100),
                Some(drained),
                1,
                rtt,
            );
        }
        report(
            &mut c,
            Instant::from_nanos(10_000_000_000),
            (una, una + 100),
            1,
        );
        assert!(c.limit().is_some());
    }

    #[test]
    fn a_queue_that_drains_between_marks_keeps_the_cap() {
        let mut c = CongestionCap::default();
        let rtt = Some(Duration::from_millis(100));
        let drained = (Duration::from_millis(101), Duration::from_millis(100));
        let mut una = 1;
        for mark in 0..6u64 {
            report(&mut c, Instant::from_nanos(mark), (una, una + 100), 1);
            // After each cut the queue empties (a CUBIC flow cut as well), then refills.
            for r in 0..4 {
                una += 101;
                let q = if r == 1 { drained } else { QUEUED };
                c.on_ack(Instant::from_nanos(mark), (una, una + 100), Some(q), 1, rtt);
            }
        }
        assert_eq!(c.marks, 6);
        assert_eq!(c.lifts, 0);
        assert!(c.limit().is_some());
    }
}
