//! Repair on time for streams (`auto` while the application limits the sender): the
//! source packets are cut into intervals by time, not by count, and each interval ends
//! with repairs of the sliding-window code (`fec::window`) over it and the interval
//! before, so a loss waits at most an interval for the repair that rebuilds it.
//!
//! An interval ends a set wait after its first packet left (a share of the delay budget,
//! from the sender), or when it holds as many packets as a block of the bulk code would,
//! or when the stream ends. Not at once when the application pauses: a repair sent right
//! behind its packet shares its loss bursts.
//!
//! It gets as many repairs as the channel estimate asks for its packets (possibly none on a
//! clean path; half of what two intervals need, a fraction carried to the next interval),
//! and at least one every [`PROBE_EVERY`] packets, so a path that starts to lose is
//! protected before the estimate has seen it.

use super::window::{WindowEncoder, WindowRepair, MAX_WINDOW};
use crate::time::Instant;
use core::time::Duration;
use std::collections::VecDeque;

/// Source packets between two repairs at most, whatever the estimate (the bulk code's
/// clean-path probe is one repair per 64 packets).
pub const PROBE_EVERY: u32 = 64;

/// Intervals a repair covers: the one it ends and the one before it. A loss the first
/// repairs could not rebuild (more losses than repairs) is covered again by the next
/// interval's repairs, an interval later; older losses are left to retransmission rather
/// than held in every equation, where one unsolved loss would keep later ones unsolved.
const COVERED_INTERVALS: usize = 2;

/// The interval being filled.
#[derive(Debug, Clone, Copy)]
struct Interval {
    /// Its first segment.
    first: u64,
    /// Its packets.
    packets: u32,
    /// When its first and its latest packet left.
    opened: Instant,
    last_sent: Instant,
    /// When its repairs are due.
    deadline: Instant,
}

/// How an interval's repairs are sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sizing {
    /// The stream goes on: the next interval's repairs, one wait later, cover this one
    /// too, and the two share what they need.
    Pooled,
    /// The stream paused or ended: the next repairs may come a round trip later (the
    /// next request of an exchange) or never, so the interval gets all it needs alone.
    Alone,
}

/// What an interval's repairs cover: the segments `[from, to]`, of which those from
/// `interval` on are the interval's own (their first repairs) and those before it the
/// interval before's (their last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Covered {
    /// First segment covered.
    pub from: u64,
    /// First segment of the interval that ended.
    pub interval: u64,
    /// Last segment covered.
    pub to: u64,
    /// Repairs made (none on a path the estimate shows clean).
    pub repairs: u8,
}

/// The sender's state for streams.
#[derive(Debug, Default)]
pub(crate) struct StreamRepairs {
    enc: WindowEncoder,
    open: Option<Interval>,
    /// First segments of the intervals a repair covers, oldest first.
    covered: VecDeque<u64>,
    /// Source packets since the last repair.
    since_repair: u32,
    /// Repairs owed but not yet sent, below one.
    credit: f64,
    ready: VecDeque<WindowRepair>,
    /// Repairs made.
    pub repairs: u64,
}

impl StreamRepairs {
    /// A first transmission of `seg` left at `now` as part of a stream; `wait` is how long
    /// a new interval may wait for more packets, `longest` the most packets it may hold.
    /// Returns true if the interval is now full (its repairs are due).
    pub fn on_sent(
        &mut self,
        now: Instant,
        seg: u64,
        payload: &bytes::Bytes,
        wait: Duration,
        longest: u32,
    ) -> bool {
        self.enc.add(seg, payload);
        if payload.is_empty() {
            return false;
        }
        self.since_repair += 1;
        let i = self.open.get_or_insert(Interval {
            first: seg,
            packets: 0,
            opened: now,
            last_sent: now,
            deadline: now + wait,
        });
        i.packets += 1;
        i.last_sent = now;
        i.packets >= longest.max(1)
    }

    /// The sender left the stream for bulk data: later stream packets start a new window
    /// (the open interval must be closed first).
    pub fn restart(&mut self) {
        debug_assert!(self.open.is_none());
        self.enc.clear();
        self.covered.clear();
    }

    /// When the open interval's repairs are due, if one is open.
    pub fn deadline(&self) -> Option<Instant> {
        self.open.map(|i| i.deadline)
    }

    /// Ends the open interval: `repairs_for(n)` repairs for its `n` packets, a fraction
    /// of one carried to the next interval (at least one once [`PROBE_EVERY`] packets went
    /// without), over it and the interval before.
    /// Returns what the repairs cover (`repairs` 0 if none were made), if an interval was
    /// open.
    pub fn close(
        &mut self,
        now: Instant,
        ended: bool,
        mut repairs_for: impl FnMut(usize, Sizing) -> f64,
    ) -> Option<Covered> {
        let i = self.open.take()?;
        self.covered.push_back(i.first);
        while self.covered.len() > COVERED_INTERVALS {
            self.covered.pop_front();
        }
        // A stream that sent nothing in the second half of the interval has paused.
        let paused = now.saturating_since(i.last_sent) * 2 > now.saturating_since(i.opened);
        let m = if ended || paused {
            self.credit = 0.0;
            repairs_for(i.packets as usize, Sizing::Alone).ceil() as usize
        } else {
            // What the interval owes, fractions carried to the next (whose repairs cover
            // this interval too), never more than one interval's worth owed.
            let need = repairs_for(i.packets as usize, Sizing::Pooled);
            self.credit = (self.credit + need).min(need.ceil().max(1.0));
            let m = self.credit.floor() as usize;
            self.credit -= m as f64;
            m
        };
        let mut m = m;
        if m == 0 && self.since_repair >= PROBE_EVERY {
            m = 1;
        }
        let from = self.covered.front().copied().unwrap_or(i.first);
        // A repair covers at most MAX_WINDOW packets: the newest ones.
        let newest = self.enc.newest().unwrap_or(i.first);
        let from = from.max(newest.saturating_sub(MAX_WINDOW as u64 - 1));
        let mut made = 0;
        for _ in 0..m {
            if let Some(r) = self.enc.repair(from) {
                self.ready.push_back(r);
                made += 1;
            }
        }
        self.repairs += made;
        if made > 0 {
            self.since_repair = 0;
        }
        Some(Covered {
            from,
            interval: i.first,
            to: newest,
            repairs: made as u8,
        })
    }

    /// Segments below `una` are acknowledged.
    pub fn forget_below(&mut self, una: u64) {
        self.enc.forget_below(una);
    }

    /// The next repair ready to send.
    pub fn pop_ready(&mut self) -> Option<WindowRepair> {
        self.ready.pop_front()
    }

    /// True while an interval is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    fn p() -> Bytes {
        Bytes::from_static(&[7u8; 100])
    }

    #[test]
    fn an_interval_ends_at_its_deadline_with_repairs_over_it_and_the_one_before() {
        let mut s = StreamRepairs::default();
        let wait = Duration::from_millis(10);
        for (k, seg) in (0..4u64).enumerate() {
            assert!(!s.on_sent(ms(k as u64 * 3), seg, &p(), wait, 100));
        }
        assert_eq!(s.deadline(), Some(ms(10)));
        let c = s
            .close(ms(10), false, |n, _| if n >= 4 { 1.0 } else { 0.0 })
            .unwrap();
        assert_eq!((c.from, c.interval, c.to, c.repairs), (0, 0, 3, 1));
        let r = s.pop_ready().unwrap();
        assert_eq!((r.first, r.count), (0, 4));
        assert!(s.pop_ready().is_none() && s.deadline().is_none());
        for seg in 4..7u64 {
            s.on_sent(ms(12 + seg), seg, &p(), wait, 100);
        }
        let c = s.close(ms(30), false, |_, _| 2.0).unwrap();
        assert_eq!((c.from, c.interval, c.to, c.repairs), (0, 4, 6, 2));
        let r = s.pop_ready().unwrap();
        assert_eq!((r.first, r.count), (0, 7), "covers the interval before too");
        assert_eq!(s.pop_ready().unwrap().first, 0);
        for seg in 7..9u64 {
            s.on_sent(ms(30 + seg), seg, &p(), wait, 100);
        }
        s.close(ms(45), false, |_, _| 1.0);
        assert_eq!(s.pop_ready().unwrap().first, 4, "two intervals, no more");
    }

    #[test]
    fn an_interval_of_a_stream_that_paused_or_ended_is_sized_alone() {
        let wait = Duration::from_millis(10);
        let sized = |s: &mut StreamRepairs, now, ended| {
            let mut seen = None;
            s.close(now, ended, |_, sizing| {
                seen = Some(sizing);
                1.0
            });
            while s.pop_ready().is_some() {}
            seen.unwrap()
        };
        let mut s = StreamRepairs::default();
        // Sending through the interval: the next interval follows at once.
        for t in [0, 4, 8] {
            s.on_sent(ms(t), t, &p(), wait, 100);
        }
        assert_eq!(sized(&mut s, ms(10), false), Sizing::Pooled);
        // One request, then silence for the rest of the interval.
        s.on_sent(ms(20), 20, &p(), wait, 100);
        assert_eq!(sized(&mut s, ms(30), false), Sizing::Alone);
        // The last interval of a stream that ends.
        for t in [40, 44, 48] {
            s.on_sent(ms(t), t, &p(), wait, 100);
        }
        assert_eq!(sized(&mut s, ms(50), true), Sizing::Alone);
    }

    #[test]
    fn a_full_interval_is_due_at_once() {
        let mut s = StreamRepairs::default();
        let wait = Duration::from_secs(1);
        assert!(!s.on_sent(ms(0), 0, &p(), wait, 3));
        assert!(!s.on_sent(ms(0), 1, &p(), wait, 3));
        assert!(s.on_sent(ms(0), 2, &p(), wait, 3));
    }

    #[test]
    fn a_clean_path_still_gets_a_probe_repair_every_so_often() {
        let mut s = StreamRepairs::default();
        let wait = Duration::from_millis(10);
        let mut repairs = 0;
        for seg in 0..(PROBE_EVERY as u64 * 4) {
            s.on_sent(ms(seg), seg, &p(), wait, 1);
            s.close(ms(seg), false, |_, _| 0.0);
            while s.pop_ready().is_some() {
                repairs += 1;
            }
        }
        assert_eq!(repairs, 4);
    }
}
