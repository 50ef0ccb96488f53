//! The receiving half: reassembly in segment order, SACK runs, and when to acknowledge.

use crate::time::Instant;
use crate::wire::{SackBlock, SackBlocks};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

/// Out-of-order segments further ahead than this are dropped (bounds memory).
const MAX_REORDER_SEGMENTS: u64 = 1 << 20;

/// A run of segments held out of order, with the time it last grew (RFC 2018 ordering).
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    touched: u64,
}

/// What the receiver reports in the next acknowledgement.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AckFields {
    pub ack: u64,
    pub window: u32,
    pub ts_ecr: u32,
    pub sack: SackBlocks,
    pub ece: bool,
}

#[derive(Debug)]
pub(crate) struct Receiver {
    rcv_nxt: u64,
    /// Slot `i` holds segment `rcv_nxt + i` if it arrived out of order.
    held: VecDeque<Option<(Bytes, bool)>>,
    held_bytes: usize,
    runs: Vec<Run>,
    touch_counter: u64,
    ready: VecDeque<Bytes>,
    ready_bytes: usize,
    fin_delivered: bool,
    window_limit: u32,
    delayed_ack: bool,
    delayed_ack_timeout: Duration,
    unacked_in_order: u32,
    ack_now: bool,
    delack_deadline: Option<Instant>,
    ts_recent: u32,
    ece_latched: bool,
    sack_enabled: bool,
    max_sack_blocks: usize,
    pub segments_received: u64,
    pub duplicate_segments: u64,
    pub bytes_delivered: u64,
}

impl Receiver {
    pub fn new(window_limit: u32, delayed_ack: bool, delayed_ack_timeout: Duration) -> Self {
        Receiver {
            rcv_nxt: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            runs: Vec::new(),
            touch_counter: 0,
            ready: VecDeque::new(),
            ready_bytes: 0,
            fin_delivered: false,
            window_limit,
            delayed_ack,
            delayed_ack_timeout,
            unacked_in_order: 0,
            ack_now: false,
            delack_deadline: None,
            ts_recent: 0,
            ece_latched: false,
            sack_enabled: false,
            max_sack_blocks: 3,
            segments_received: 0,
            duplicate_segments: 0,
            bytes_delivered: 0,
        }
    }

    pub fn enable_sack(&mut self, max_blocks: usize) {
        self.sack_enabled = true;
        self.max_sack_blocks = max_blocks.min(crate::wire::MAX_SACK_BLOCKS);
    }

    /// True once the peer's FIN has been delivered in order.
    pub fn fin_delivered(&self) -> bool {
        self.fin_delivered
    }

    /// Handles an arriving data (or FIN) segment.
    pub fn on_segment(
        &mut self,
        now: Instant,
        seg: u64,
        payload: Bytes,
        fin: bool,
        ts_val: u32,
        cwr: bool,
    ) {
        self.segments_received += 1;
        if cwr {
            self.ece_latched = false;
        }
        if seg < self.rcv_nxt || self.fin_delivered {
            self.duplicate_segments += 1;
            self.ack_now = true;
            return;
        }
        let off = seg - self.rcv_nxt;
        if off >= MAX_REORDER_SEGMENTS
            || self.held_bytes + self.ready_bytes + payload.len() > self.window_limit as usize
        {
            // Beyond what we promised to buffer: drop, and re-advertise our state.
            self.ack_now = true;
            return;
        }
        if off == 0 {
            let filled_hole = !self.held.is_empty();
            if self.unacked_in_order == 0 {
                self.ts_recent = ts_val;
            }
            self.deliver(payload, fin);
            if filled_hole {
                self.held.pop_front(); // the slot of the segment just delivered
                while let Some(Some(_)) = self.held.front() {
                    let (p, f) = self.held.pop_front().flatten().expect("checked Some");
                    self.held_bytes -= p.len();
                    self.deliver(p, f);
                }
                // The front slot (if any) is the next hole and belongs to rcv_nxt now.
                let nxt = self.rcv_nxt;
                self.runs.retain(|r| r.end > nxt);
                self.ack_now = true;
            } else if self.delayed_ack && !fin {
                self.unacked_in_order += 1;
                if self.unacked_in_order >= 2 {
                    self.ack_now = true;
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + self.delayed_ack_timeout);
                }
            } else {
                self.ack_now = true;
            }
            return;
        }
        let i = off as usize;
        if self.held.len() <= i {
            self.held.resize(i + 1, None);
        }
        if self.held[i].is_some() {
            self.duplicate_segments += 1;
        } else {
            self.held_bytes += payload.len();
            self.held[i] = Some((payload, fin));
            self.note_held(seg);
        }
        self.ack_now = true;
    }

    fn deliver(&mut self, payload: Bytes, fin: bool) {
        self.rcv_nxt += 1;
        if fin {
            self.fin_delivered = true;
        }
        if !payload.is_empty() {
            self.bytes_delivered += payload.len() as u64;
            self.ready_bytes += payload.len();
            self.ready.push_back(payload);
        }
    }

    fn note_held(&mut self, seg: u64) {
        self.touch_counter += 1;
        let t = self.touch_counter;
        let below = self.runs.iter().position(|r| r.end == seg);
        let above = self.runs.iter().position(|r| r.start == seg + 1);
        match (below, above) {
            (Some(b), Some(a)) => {
                self.runs[b].end = self.runs[a].end;
                self.runs[b].touched = t;
                self.runs.swap_remove(a);
            }
            (Some(b), None) => {
                self.runs[b].end = seg + 1;
                self.runs[b].touched = t;
            }
            (None, Some(a)) => {
                self.runs[a].start = seg;
                self.runs[a].touched = t;
            }
            (None, None) => self.runs.push(Run {
                start: seg,
                end: seg + 1,
                touched: t,
            }),
        }
    }

    /// Takes the next in-order chunk of application bytes.
    pub fn read_chunk(&mut self) -> Option<Bytes> {
        let b = self.ready.pop_front()?;
        self.ready_bytes -= b.len();
        Some(b)
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.ready_bytes
    }

    /// True if an acknowledgement should go out now.
    pub fn wants_ack(&self, now: Instant) -> bool {
        self.ack_now || self.delack_deadline.is_some_and(|d| d <= now)
    }

    /// Forces an acknowledgement (e.g. to answer a duplicate handshake packet).
    pub fn request_ack(&mut self) {
        self.ack_now = true;
    }

    /// Latches ECN-Echo until the sender answers with CWR (RFC 3168 §6.1.3).
    pub fn latch_ece(&mut self) {
        self.ece_latched = true;
    }

    /// Delayed-ACK deadline, if one is pending.
    pub fn timeout(&self) -> Option<Instant> {
        self.delack_deadline
    }

    /// Fields for an outgoing packet; marks the acknowledgement as sent.
    pub fn take_ack(&mut self) -> AckFields {
        self.ack_now = false;
        self.delack_deadline = None;
        self.unacked_in_order = 0;
        self.peek_ack()
    }

    /// Fields for an outgoing packet without changing the ACK state.
    pub fn peek_ack(&self) -> AckFields {
        let used = self.held_bytes + self.ready_bytes;
        let mut sack = SackBlocks::default();
        if self.sack_enabled && !self.runs.is_empty() {
            let mut order: Vec<&Run> = self.runs.iter().collect();
            order.sort_unstable_by_key(|r| core::cmp::Reverse(r.touched));
            for r in order.into_iter().take(self.max_sack_blocks) {
                sack.push(SackBlock {
                    start: r.start,
                    end: r.end,
                });
            }
        }
        AckFields {
            ack: self.rcv_nxt,
            window: (self.window_limit as usize).saturating_sub(used) as u32,
            ts_ecr: self.ts_recent,
            sack,
            ece: self.ece_latched,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx() -> Receiver {
        let mut r = Receiver::new(1 << 20, false, Duration::from_millis(100));
        r.enable_sack(3);
        r
    }

    fn data(n: u8) -> Bytes {
        Bytes::from(vec![n; 10])
    }

    #[test]
    fn reorders_and_reports_most_recent_run_first() {
        let mut r = rx();
        let t = Instant::ZERO;
        r.on_segment(t, 0, data(0), false, 1, false);
        r.on_segment(t, 2, data(2), false, 1, false);
        r.on_segment(t, 5, data(5), false, 1, false);
        r.on_segment(t, 3, data(3), false, 1, false);
        let a = r.take_ack();
        assert_eq!(a.ack, 1);
        assert_eq!(
            a.sack.as_slice(),
            &[
                SackBlock { start: 2, end: 4 },
                SackBlock { start: 5, end: 6 }
            ]
        );
        r.on_segment(t, 1, data(1), false, 1, false);
        let a = r.take_ack();
        assert_eq!(a.ack, 4);
        assert_eq!(a.sack.as_slice(), &[SackBlock { start: 5, end: 6 }]);
        let mut got = vec![];
        while let Some(c) = r.read_chunk() {
            got.push(c[0]);
        }
        assert_eq!(got, vec![0, 1, 2, 3]);
    }

    #[test]
    fn delayed_ack_every_second_segment_or_timeout() {
        let mut r = Receiver::new(1 << 20, true, Duration::from_millis(100));
        let t = Instant::ZERO;
        r.on_segment(t, 0, data(0), false, 1, false);
        assert!(!r.wants_ack(t));
        assert_eq!(r.timeout(), Some(Instant(100_000_000)));
        assert!(r.wants_ack(Instant(100_000_000)));
        r.on_segment(t, 1, data(1), false, 1, false);
        assert!(r.wants_ack(t));
        r.take_ack();
        // Out of order: immediate.
        r.on_segment(t, 3, data(3), false, 1, false);
        assert!(r.wants_ack(t));
    }

    #[test]
    fn duplicates_are_counted_not_delivered() {
        let mut r = rx();
        let t = Instant::ZERO;
        r.on_segment(t, 0, data(0), false, 1, false);
        r.on_segment(t, 0, data(0), false, 1, false);
        r.on_segment(t, 2, data(2), false, 1, false);
        r.on_segment(t, 2, data(2), false, 1, false);
        assert_eq!(r.duplicate_segments, 2);
        assert_eq!(r.bytes_delivered, 10);
    }
}
