//! The sender's record of every unacknowledged segment: SACKed, lost, retransmitted.
//!
//! Counters are kept incrementally so that `pipe` (RFC 6675 §4) and the search for the next
//! segment to retransmit cost O(1) amortised per segment, not O(window) per ACK.

use crate::rate::{DeliveryRate, TxState};
use crate::time::Instant;
use crate::wire::{FecGroup, SackBlock};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

/// One unacknowledged segment.
#[derive(Debug, Clone)]
pub(crate) struct SentSegment {
    pub payload: Bytes,
    pub fin: bool,
    sacked: bool,
    lost: bool,
    /// Retransmitted since it was last marked lost (implies `lost`).
    retransmitted: bool,
    /// Delivery-rate state of its latest transmission.
    tx: TxState,
    /// FEC protection (see `Scoreboard::protect`); `None` for an unprotected segment.
    fec: Option<Protection>,
}

/// The FEC group a sent segment belongs to, as far as loss detection needs it.
#[derive(Debug, Clone, Copy)]
struct Protection {
    /// The first segment number sent after the group's repairs.
    bound: u64,
    /// The group, as last announced (a group closed early has fewer members).
    group: FecGroup,
    /// When the group's last repair left, once it has.
    repairs_sent: Option<Instant>,
    /// Protected by repairs of the sliding-window code (a stream's), not by a block.
    by_window: bool,
}

/// Outstanding segments `[una, una + len)` and their loss-recovery state.
#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    una: u64,
    segs: VecDeque<SentSegment>,
    bytes_outstanding: usize,
    sacked: usize,
    /// Lost and not SACKed.
    lost: usize,
    /// Lost, retransmitted and not SACKed: in flight again.
    retrans_out: usize,
    /// Known SACKed runs above `una`, sorted and disjoint, so repeated blocks cost nothing.
    sacked_runs: Vec<(u64, u64)>,
    /// Segments below `scan` have been judged by the RFC 6675 IsLost rule.
    scan: usize,
    sacked_below_scan: usize,
    /// No segment below this index waits for a retransmission.
    rexmit_hint: usize,
    /// Delivery-rate estimation: fed as segments leave and are first acknowledged.
    pub rate: DeliveryRate,
    /// Groups the receiver reported it could not rebuild that loss detection has not yet
    /// matched to a group of holes (`on_groups_failed`).
    failed_groups: u64,
    /// The group whose holes loss detection is passing (its first segment): one report
    /// of a failed group covers all of them.
    released_group: Option<u64>,
    /// The first hole the SACK rule left waiting, with a segment SACKed above it, waits
    /// for repairs that left at this time (`awaiting_repairs`).
    awaiting_repairs: Option<Instant>,
}

impl Scoreboard {
    /// First unacknowledged segment number.
    pub fn una(&self) -> u64 {
        self.una
    }
    /// Next segment number to assign.
    pub fn nxt(&self) -> u64 {
        self.una + self.segs.len() as u64
    }
    /// Outstanding segments.
    pub fn outstanding(&self) -> usize {
        self.segs.len()
    }
    /// Outstanding payload bytes.
    pub fn bytes_outstanding(&self) -> usize {
        self.bytes_outstanding
    }
    /// Segments believed in the network (RFC 6675 pipe, counted in segments).
    pub fn pipe(&self) -> usize {
        self.segs.len() - self.sacked - self.lost + self.retrans_out
    }
    /// The segment with number `seg`, if outstanding.
    pub fn get(&self, seg: u64) -> Option<&SentSegment> {
        self.index(seg).map(|i| &self.segs[i])
    }
    /// True if the first unacknowledged segment is marked lost.
    pub fn una_is_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.lost)
    }

    fn index(&self, seg: u64) -> Option<usize> {
        let i = seg.checked_sub(self.una)? as usize;
        (i < self.segs.len()).then_some(i)
    }

    /// Records a segment sent at `now` with `in_flight` bytes already in flight, and
    /// returns its number.
    pub fn push(&mut self, now: Instant, payload: Bytes, fin: bool, in_flight: u64) -> u64 {
        let seg = self.nxt();
        let tx = self.rate.on_send(now, in_flight, false);
        self.bytes_outstanding += payload.len();
        self.segs.push_back(SentSegment {
            payload,
            fin,
            sacked: false,
            lost: false,
            retransmitted: false,
            tx,
            fec: None,
        });
        seg
    }

    /// Cumulative ACK up to (not including) `ack`, arriving at `now`. Returns segments and
    /// payload bytes acked.
    pub fn ack_to(&mut self, now: Instant, ack: u64) -> (u64, usize) {
        let k = ack.saturating_sub(self.una).min(self.segs.len() as u64) as usize;
        let mut bytes = 0;
        for i in 0..k {
            let s = self.segs.pop_front().expect("k <= len");
            bytes += s.payload.len();
            if !s.sacked {
                let seq = self.una + i as u64;
                self.rate
                    .on_delivered(now, &s.tx, seq, s.payload.len() as u64);
            }
            if s.sacked {
                self.sacked -= 1;
                if i < self.scan {
                    self.sacked_below_scan -= 1;
                }
            } else if s.lost {
                self.lost -= 1;
                if s.retransmitted {
                    self.retrans_out -= 1;
                }
            }
        }
        self.bytes_outstanding -= bytes;
        self.una += k as u64;
        self.scan = self.scan.saturating_sub(k);
        self.rexmit_hint = self.rexmit_hint.saturating_sub(k);
        let una = self.una;
        self.sacked_runs.retain_mut(|r| {
            r.0 = r.0.max(una);
            r.0 < r.1
        });
        (k as u64, bytes)
    }

    /// Applies SACK blocks arriving at `now`; returns how many segments became SACKed.
    pub fn apply_sack(&mut self, now: Instant, blocks: &[SackBlock]) -> usize {
        let mut newly = 0;
        for b in blocks {
            let (start, end) = (b.start.max(self.una), b.end.min(self.nxt()));
            if start >= end {
                continue;
            }
            newly += self.sack_run(now, start, end);
        }
        newly
    }

    fn sack_run(&mut self, now: Instant, start: u64, end: u64) -> usize {
        // Walk the known runs and mark only the parts of [start, end) not yet SACKed
        // (no allocation: this runs for every block of every ACK).
        let mut newly = 0;
        let mut cursor = start;
        for r in 0..self.sacked_runs.len() {
            let (rs, re) = self.sacked_runs[r];
            if re <= cursor {
                continue;
            }
            if rs >= end {
                break;
            }
            if rs > cursor {
                newly += self.mark_sacked(now, cursor, rs);
            }
            cursor = cursor.max(re);
            if cursor >= end {
                break;
            }
        }
        if cursor < end {
            newly += self.mark_sacked(now, cursor, end);
        }
        if newly > 0 {
            self.insert_run(start, end);
        }
        newly
    }

    /// Marks segments `[from, to)` SACKed, keeping the counters; returns how many changed.
    fn mark_sacked(&mut self, now: Instant, from: u64, to: u64) -> usize {
        let mut newly = 0;
        for seg in from..to {
            let i = (seg - self.una) as usize;
            let s = &mut self.segs[i];
            if s.sacked {
                continue;
            }
            if s.lost {
                self.lost -= 1;
                if s.retransmitted {
                    self.retrans_out -= 1;
                }
            }
            s.sacked = true;
            s.lost = false;
            s.retransmitted = false;
            self.rate
                .on_delivered(now, &s.tx, seg, s.payload.len() as u64);
            self.sacked += 1;
            if i < self.scan {
                self.sacked_below_scan += 1;
            }
            newly += 1;
        }
        newly
    }

    fn insert_run(&mut self, start: u64, end: u64) {
        let runs = &mut self.sacked_runs;
        let pos = runs.partition_point(|r| r.1 < start);
        let mut s = start;
        let mut e = end;
        let mut j = pos;
        while j < runs.len() && runs[j].0 <= e {
            s = s.min(runs[j].0);
            e = e.max(runs[j].1);
            j += 1;
        }
        runs.splice(pos..j, std::iter::once((s, e)));
    }

    /// Segment `seg` is protected by FEC group `group`, whose repairs leave before any
    /// segment numbered `bound` or above: the receiver can rebuild it until those repairs
    /// have arrived, so SACKs of segments sent before them do not show it lost (see
    /// `mark_lost_by_sack`). A later call may only lower the bound; it replaces the group
    /// (one closed early has fewer members than first announced). `repairs_sent` is when
    /// the group's repairs left, once they have.
    pub fn protect(
        &mut self,
        seg: u64,
        group: FecGroup,
        bound: u64,
        repairs_sent: Option<Instant>,
    ) {
        self.protect_as(seg, group, bound, repairs_sent, false);
    }

    /// [`Scoreboard::protect`] by repairs of the sliding-window code: its duplicate ACKs
    /// do not start a fast retransmit either (`una_awaits_repairs`).
    pub fn protect_by_window(
        &mut self,
        seg: u64,
        group: FecGroup,
        bound: u64,
        repairs_sent: Option<Instant>,
    ) {
        self.protect_as(seg, group, bound, repairs_sent, true);
    }

    fn protect_as(
        &mut self,
        seg: u64,
        group: FecGroup,
        bound: u64,
        repairs_sent: Option<Instant>,
        by_window: bool,
    ) {
        if let Some(i) = self.index(seg) {
            let p = &mut self.segs[i].fec;
            let bound = p.map_or(bound, |old| old.bound.min(bound));
            let repairs_sent = repairs_sent.or(p.and_then(|old| old.repairs_sent));
            *p = Some(Protection {
                bound,
                group,
                repairs_sent,
                by_window,
            });
        }
    }

    /// True if the first unacknowledged segment is a hole the window code's repairs (and,
    /// with `blocks`, a block's repairs) may still rebuild: fewer than `dupthresh`
    /// segments sent after them are SACKed. Where the receiver does not withhold
    /// duplicate ACKs (a stream's receiver cannot tell which repairs will come; `auto`'s
    /// acknowledges every arrival unless the queue is full) every segment arriving behind
    /// the hole sends one, and counting them retransmitted holes the next repair was about
    /// to rebuild.
    pub fn una_awaits_repairs(&self, dupthresh: usize, blocks: bool) -> bool {
        self.segs.front().is_some_and(|s| {
            !s.sacked
                && !s.lost
                && s.fec.is_some_and(|p| {
                    (blocks || p.by_window) && self.sacked_from(p.bound) < dupthresh
                })
        })
    }

    /// Lowers the bound of segment `seg`'s protection to `bound`, if it is protected
    /// (`protect`); an unprotected segment stays so.
    pub fn lower_bound(&mut self, seg: u64, bound: u64) {
        if let Some(p) = self.index(seg).and_then(|i| self.segs[i].fec.as_mut()) {
            p.bound = p.bound.min(bound);
        }
    }

    /// When the repairs left that the first waiting hole (one with a segment SACKed above
    /// it that the SACK rule has not marked lost, `mark_lost_by_sack`) waits for, if they
    /// were the last packets sent; `None` if no hole waits for such repairs.
    pub fn awaiting_repairs(&self) -> Option<Instant> {
        self.awaiting_repairs
    }

    /// RACK's rule (RFC 8985 §6.2) for the repairs a hole waits for: a path that does not
    /// reorder delivers them within a round trip and a reordering window, and the
    /// receiver then acknowledges the rebuilt segment at once. Marks lost every waiting
    /// hole, in order and with a segment SACKed above it, whose group's repairs left at
    /// least `wait` before `now`, and stops at the first hole that may still be rebuilt.
    /// Only at the tail, where fewer than `dupthresh` segments were sent after the
    /// repairs: no later segment can then satisfy the SACK rule, which is safer wherever
    /// one can. (A transfer's FIN, sent after its last block's repairs, had kept the rule
    /// from its last holes, which then waited for the tail loss probe.) A hole may only look
    /// missing, since duplicate ACKs withheld while the receiver could still repair never
    /// carried their SACKs; in bulk transfers at 5 % loss applying this rule to every
    /// waiting hole raised retransmissions from 1.3 to 1.6 % of the packets. Returns how
    /// many were marked; the hole left waiting is found again by `mark_lost_by_sack`.
    pub fn mark_lost_awaiting_repairs(
        &mut self,
        now: Instant,
        wait: Duration,
        dupthresh: usize,
    ) -> usize {
        self.awaiting_repairs = None;
        let mut above = self.sacked - self.sacked_below_scan;
        let mut newly = 0;
        let mut i = self.scan;
        while i < self.segs.len() && above > 0 {
            let s = &self.segs[i];
            if s.sacked {
                above -= 1;
            } else if !s.lost {
                match self.tail_repairs_sent(s, dupthresh) {
                    Some(t) if t + wait <= now => {
                        self.set_lost(i);
                        newly += 1;
                    }
                    _ => break,
                }
            }
            i += 1;
        }
        newly
    }

    /// The receiver reported `n` more groups it cannot rebuild (its FEC counters).
    pub fn on_groups_failed(&mut self, n: u64) {
        self.failed_groups += n;
    }

    /// May the scan pass protected hole `p` before `dupthresh` segments sent after its
    /// group's repairs are SACKed? Only once the receiver has reported a group failed and
    /// the sender's view agrees that `p`'s group cannot be rebuilt: that view alone can
    /// be wrong, since duplicate ACKs the receiver withholds while it can still repair
    /// never carry their SACKs, and a segment that arrived may look missing.
    fn release_early(&mut self, p: &Protection, dupthresh: usize) -> bool {
        let reported = self.released_group == Some(p.group.first);
        if (!reported && self.failed_groups == 0) || !self.beyond_repair(&p.group, dupthresh) {
            return false;
        }
        if !reported {
            self.failed_groups -= 1;
            self.released_group = Some(p.group.first);
        }
        true
    }

    /// A protected hole is lost by the usual rule: its group is one the receiver could
    /// not rebuild, or one whose repairs were lost, which it counts as failed too.
    fn release(&mut self, p: &Protection) {
        if self.released_group != Some(p.group.first) {
            self.failed_groups = self.failed_groups.saturating_sub(1);
            self.released_group = Some(p.group.first);
        }
    }

    /// More members of `g` are known lost (not SACKed, with `dupthresh` SACKed segments
    /// above them: RFC 6675's rule) than the group has repairs, so its repairs cannot
    /// rebuild them and waiting for those repairs gains nothing. The receiver judges the
    /// same way when it stops withholding duplicate ACKs. A member retransmitted since
    /// does not count: once it arrives the repairs need not rebuild it, and the group's
    /// later holes may be repairable again.
    fn beyond_repair(&self, g: &FecGroup, dupthresh: usize) -> bool {
        let mut lost = 0;
        for i in 0..g.count as u64 {
            let seg = g.first + i * g.stride as u64;
            let Some(s) = self.get(seg) else {
                continue; // acknowledged, or not sent yet
            };
            if s.sacked || s.retransmitted {
                continue;
            }
            // Fewer segments are SACKed above a later member: none after this one counts.
            if self.sacked_from(seg + 1) < dupthresh {
                break;
            }
            lost += 1;
            if lost > g.repairs as usize {
                return true;
            }
        }
        false
    }

    /// SACKed segments numbered `from` or above.
    fn sacked_from(&self, from: u64) -> usize {
        self.sacked_runs
            .iter()
            .rev()
            .take_while(|r| r.1 > from)
            .map(|r| (r.1 - r.0.max(from)) as usize)
            .sum()
    }

    /// RFC 6675 IsLost: marks lost every un-SACKed segment with at least `dupthresh`
    /// SACKed segments above it. Returns how many were newly marked.
    ///
    /// A segment FEC protects needs its `dupthresh` SACKed segments above its group's
    /// repairs (`protect`): while the repairs may still arrive, the hole is one the
    /// receiver can fill itself, and a segment SACKed between the hole and the repairs
    /// says nothing about whether it will, unless the receiver has reported a group it
    /// cannot rebuild and this one misses more members than it has repairs
    /// (`release_early`). Bounds never decrease along the sequence,
    /// so the scan may still stop at the first segment not yet lost.
    pub fn mark_lost_by_sack(&mut self, dupthresh: usize) -> usize {
        if self.sacked == self.sacked_below_scan {
            // Nothing SACKed at or above the scan (most ACKs): no segment there has a
            // SACKed one above it, so none is lost and no hole waits for repairs.
            self.awaiting_repairs = None;
            return 0;
        }
        let mut newly = 0;
        while self.scan < self.segs.len() {
            let s = &self.segs[self.scan];
            let (sacked, lost, fec) = (s.sacked, s.lost, s.fec);
            let above = self.sacked - self.sacked_below_scan - sacked as usize;
            if above < dupthresh {
                break;
            }
            if let Some(p) = fec.filter(|_| !sacked && !lost) {
                if self.sacked_from(p.bound) >= dupthresh {
                    self.release(&p);
                } else if !self.release_early(&p, dupthresh) {
                    break;
                }
            }
            if sacked {
                self.sacked_below_scan += 1;
            } else if !lost {
                self.set_lost(self.scan);
                newly += 1;
            }
            self.scan += 1;
        }
        self.awaiting_repairs = self.first_waiting_hole().and_then(|i| {
            let s = &self.segs[i];
            self.tail_repairs_sent(s, dupthresh)
        });
        newly
    }

    /// Index of the first hole (neither SACKed nor lost) the scan stopped at or before,
    /// with a segment SACKed above it. The scan may stop on a SACKed segment whose own
    /// count above falls short, with the hole after it: the hole is what waits.
    fn first_waiting_hole(&self) -> Option<usize> {
        let mut above = self.sacked - self.sacked_below_scan;
        for (i, s) in self.segs.iter().enumerate().skip(self.scan) {
            if above == 0 {
                return None;
            }
            if s.sacked {
                above -= 1;
            } else if !s.lost {
                return Some(i);
            }
        }
        None
    }

    /// When the repairs of `s`'s block left, if `s` is a hole waiting for them (neither
    /// SACKed nor lost) and fewer than `dupthresh` segments were sent after them, so that
    /// no later segment can show it lost by the SACK rule.
    fn tail_repairs_sent(&self, s: &SentSegment, dupthresh: usize) -> Option<Instant> {
        let nxt = self.nxt();
        s.fec
            .filter(|p| !s.sacked && !s.lost && p.bound.saturating_add(dupthresh as u64) > nxt)
            .and_then(|p| p.repairs_sent)
    }

    fn set_lost(&mut self, i: usize) {
        let s = &mut self.segs[i];
        debug_assert!(!s.sacked && !s.lost);
        s.lost = true;
        s.retransmitted = false;
        self.rate.on_lost(s.payload.len() as u64);
        self.lost += 1;
        self.rexmit_hint = self.rexmit_hint.min(i);
    }

    /// Marks segment `seg` lost (if outstanding, not SACKed and not already lost).
    pub fn mark_lost(&mut self, seg: u64) {
        if let Some(i) = self.index(seg) {
            let s = &self.segs[i];
            if !s.sacked && !s.lost {
                self.set_lost(i);
            }
        }
    }

    /// Marks every un-SACKed outstanding segment lost and not yet retransmitted (after an
    /// RTO, or Tahoe's fast retransmit): they all go out again as the window allows.
    pub fn mark_all_lost(&mut self) {
        for s in self.segs.iter_mut() {
            if !s.sacked && (!s.lost || s.retransmitted) {
                // Counted once per transmission: a segment already lost and not sent
                // again has not been lost again.
                self.rate.on_lost(s.payload.len() as u64);
            }
            if !s.sacked {
                s.lost = true;
                s.retransmitted = false;
            }
        }
        self.lost = self.segs.len() - self.sacked;
        self.retrans_out = 0;
        self.rexmit_hint = 0;
        self.scan = self.segs.len();
        self.sacked_below_scan = self.sacked;
    }

    /// How many consecutive segments from `seg` on (at most `max`) are lost, not SACKed
    /// and not yet retransmitted: the retransmissions due back to back.
    pub fn due_run_from(&self, seg: u64, max: u64) -> u64 {
        let Some(i) = self.index(seg) else { return 0 };
        self.segs
            .range(i..)
            .take(max as usize)
            .take_while(|s| s.lost && !s.retransmitted && !s.sacked)
            .count() as u64
    }

    /// The lowest segment that is lost and not yet retransmitted.
    pub fn next_retransmission(&mut self) -> Option<u64> {
        if self.lost == self.retrans_out {
            return None;
        }
        while self.rexmit_hint < self.segs.len() {
            let s = &self.segs[self.rexmit_hint];
            if s.lost && !s.retransmitted {
                return Some(self.una + self.rexmit_hint as u64);
            }
            self.rexmit_hint += 1;
        }
        None
    }

    /// The send order (`TxState::order`) of segment `seg`'s last transmission, if it is
    /// outstanding and its retransmission is still believed in flight.
    pub fn retransmission_in_flight(&self, seg: u64) -> Option<u64> {
        let s = self.get(seg)?;
        (s.lost && s.retransmitted && !s.sacked).then_some(s.tx.order)
    }

    /// The retransmission of `seg` is lost too: it waits to be sent again.
    pub fn mark_retransmission_lost(&mut self, seg: u64) {
        if let Some(i) = self.index(seg) {
            let s = &mut self.segs[i];
            if s.lost && s.retransmitted && !s.sacked {
                s.retransmitted = false;
                self.retrans_out -= 1;
                self.rate.on_lost(s.payload.len() as u64);
                self.rexmit_hint = self.rexmit_hint.min(i);
            }
        }
    }

    /// The highest outstanding segment not SACKed (a tail loss probe resends it).
    pub fn newest_unsacked(&self) -> Option<u64> {
        let i = self.segs.iter().rposition(|s| !s.sacked)?;
        Some(self.una + i as u64)
    }

    /// Marks lost every outstanding segment last sent before send order `order` that is
    /// neither SACKed nor already lost (a packet sent at `order` or later has been
    /// delivered). Returns how many were marked.
    pub fn mark_lost_sent_before(&mut self, order: u64) -> usize {
        let mut newly = 0;
        for i in 0..self.segs.len() {
            let s = &self.segs[i];
            if !s.sacked && !s.lost && s.tx.order < order {
                self.set_lost(i);
                newly += 1;
            }
        }
        newly
    }

    /// Send order of the most recently sent segment delivered so far.
    pub fn newest_delivered(&self) -> Option<u64> {
        self.rate.newest_delivered()
    }

    /// Marks lost every segment in flight (neither SACKed nor lost) whose latest
    /// transmission was sent before the newest one delivered: RACK's rule (RFC 8985 §6.2)
    /// with no reordering window, by send order rather than by sequence, so that a
    /// flight's last segments count as lost once retransmissions sent after them arrive.
    /// Returns how many it marked.
    pub fn mark_lost_by_send_order(&mut self) -> usize {
        let Some(newest) = self.newest_delivered() else {
            return 0;
        };
        let mut newly = 0;
        for i in self.scan..self.segs.len() {
            let s = &self.segs[i];
            if !s.sacked && !s.lost && s.tx.order < newest {
                self.set_lost(i);
                newly += 1;
            }
        }
        newly
    }

    /// Records that segment `seg` was sent again at `now` with `in_flight` bytes already
    /// in flight. Returns true if it had been marked lost (a repair of a loss, not a probe
    /// of a segment still in flight).
    pub fn on_retransmitted(&mut self, now: Instant, seg: u64, in_flight: u64) -> bool {
        let Some(i) = self.index(seg) else {
            return false;
        };
        let s = &mut self.segs[i];
        s.tx = self.rate.on_send(now, in_flight, true);
        let repairs_loss = s.lost && !s.retransmitted;
        if repairs_loss {
            s.retransmitted = true;
            self.retrans_out += 1;
        }
        repairs_loss
    }

    #[cfg(test)]
    fn check_counters(&self) {
        let sacked = self.segs.iter().filter(|s| s.sacked).count();
        let lost = self.segs.iter().filter(|s| s.lost && !s.sacked).count();
        let rout = self
            .segs
            .iter()
            .filter(|s| s.lost && s.retransmitted && !s.sacked)
            .count();
        assert_eq!(
            (self.sacked, self.lost, self.retrans_out),
            (sacked, lost, rout)
        );
        let below = self
            .segs
            .iter()
            .take(self.scan)
            .filter(|s| s.sacked)
            .count();
        assert_eq!(self.sacked_below_scan, below);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::default();
        for _ in 0..n {
            sb.push(Instant::ZERO, Bytes::from_static(b"0123456789"), false, 0);
        }
        sb
    }

    fn blk(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    fn group(first: u64, count: u16, repairs: u8) -> FecGroup {
        FecGroup {
            first,
            count,
            stride: 1,
            repairs,
            retransmission_group: 0,
        }
    }

    #[test]
    fn sack_then_is_lost_marks_holes_with_three_sacked_above() {
        let mut sb = board(10);
        // Segment 0 and 4 lost; 1..4 and 5..8 SACKed.
        assert_eq!(sb.apply_sack(Instant::ZERO, &[blk(1, 4), blk(5, 8)]), 6);
        assert_eq!(
            sb.apply_sack(Instant::ZERO, &[blk(1, 4)]),
            0,
            "repeated blocks count once"
        );
        sb.mark_lost_by_sack(3);
        sb.check_counters();
        assert!(sb.una_is_lost());
        assert!(sb.get(4).unwrap().lost);
        assert!(!sb.get(8).unwrap().lost, "only 0 SACKed above segment 8");
        assert_eq!(sb.pipe(), 10 - 6 - 2);
        assert_eq!(sb.next_retransmission(), Some(0));
        sb.on_retransmitted(Instant::ZERO, 0, 0);
        assert_eq!(sb.next_retransmission(), Some(4));
        sb.on_retransmitted(Instant::ZERO, 4, 0);
        assert_eq!(sb.next_retransmission(), None);
        assert_eq!(sb.pipe(), 4);
        sb.check_counters();
        assert_eq!(sb.ack_to(Instant::ZERO, 4), (4, 40));
        sb.check_counters();
        assert_eq!(sb.pipe(), 3);
        assert_eq!(sb.ack_to(Instant::ZERO, 10), (6, 60));
        sb.check_counters();
        assert_eq!((sb.outstanding(), sb.bytes_outstanding()), (0, 0));
    }

    #[test]
    fn rto_marks_everything_unsacked_lost() {
        let mut sb = board(6);
        sb.apply_sack(Instant::ZERO, &[blk(2, 3)]);
        sb.mark_all_lost();
        sb.check_counters();
        assert_eq!(sb.pipe(), 0);
        let mut order = vec![];
        while let Some(s) = sb.next_retransmission() {
            sb.on_retransmitted(Instant::ZERO, s, 0);
            order.push(s);
        }
        assert_eq!(order, vec![0, 1, 3, 4, 5]);
        sb.check_counters();
    }

    /// A hole in an FEC group is lost only once `dupthresh` segments sent after the
    /// group's repairs are SACKed: those SACKed between the hole and the repairs do not
    /// count.
    #[test]
    fn a_protected_hole_waits_for_sacks_above_its_repairs() {
        let mut sb = board(12);
        // Segments 0..4 form a group whose repairs left before segment 4.
        for seg in 0..4 {
            sb.protect(seg, group(0, 4, 1), 6, None);
            sb.protect(seg, group(0, 4, 1), 4, None);
        }
        sb.apply_sack(Instant::ZERO, &[blk(1, 6)]);
        assert_eq!(
            sb.mark_lost_by_sack(3),
            0,
            "only 4 and 5 are above the repairs"
        );
        assert!(!sb.una_is_lost());
        sb.apply_sack(Instant::ZERO, &[blk(1, 7)]);
        assert_eq!(sb.mark_lost_by_sack(3), 1);
        assert!(sb.una_is_lost());
        // Unprotected segment 7 follows the plain rule: three SACKed above it.
        sb.apply_sack(Instant::ZERO, &[blk(8, 11)]);
        assert_eq!(sb.mark_lost_by_sack(3), 1);
        assert!(sb.get(7).unwrap().lost);
        sb.check_counters();
    }

    /// Duplicate ACKs for a hole its block's repairs may still rebuild start no fast
    /// retransmit where the sender waits for block repairs (`auto` acknowledging every
    /// arrival); elsewhere only the window code's repairs are waited for.
    #[test]
    fn duplicate_acks_wait_for_the_repairs_of_the_first_hole() {
        let mut sb = board(12);
        for seg in 0..4 {
            sb.protect(seg, group(0, 4, 1), 4, None);
        }
        sb.apply_sack(Instant::ZERO, &[blk(1, 6)]);
        assert!(
            sb.una_awaits_repairs(3, true),
            "only 4 and 5 are above the repairs"
        );
        assert!(
            !sb.una_awaits_repairs(3, false),
            "a block's, not the window code's"
        );
        sb.apply_sack(Instant::ZERO, &[blk(1, 7)]);
        assert!(
            !sb.una_awaits_repairs(3, true),
            "three above: the repairs came"
        );
    }

    /// A group missing more members than it has repairs cannot be rebuilt: once the
    /// receiver reports a failed group, its holes are lost by the plain rule, without
    /// waiting for SACKs above the repairs.
    #[test]
    fn a_hole_its_group_cannot_rebuild_is_lost_without_waiting_for_the_repairs() {
        let mut sb = board(12);
        for seg in 0..8 {
            sb.protect(seg, group(0, 8, 2), 8, None);
        }
        // Holes 0 and 1, three SACKed above both: two repairs may still rebuild them.
        sb.apply_sack(Instant::ZERO, &[blk(2, 5)]);
        assert_eq!(sb.mark_lost_by_sack(3), 0);
        // A third hole (5) with three SACKed above it: more than two repairs can rebuild,
        // but SACKs the receiver withheld may be missing: the holes wait for its report.
        sb.apply_sack(Instant::ZERO, &[blk(6, 9)]);
        assert_eq!(sb.mark_lost_by_sack(3), 0);
        sb.on_groups_failed(1);
        assert_eq!(sb.mark_lost_by_sack(3), 3);
        assert!([0, 1, 5].iter().all(|&s| sb.get(s).unwrap().lost));
        sb.check_counters();
    }

    /// Once a failed group's holes are retransmitted, its repairs need rebuild only the
    /// holes that follow: a later one waits for them again.
    #[test]
    fn a_hole_after_its_groups_retransmissions_waits_for_the_repairs() {
        let mut sb = board(16);
        // Repairs not yet sent: no SACK above them can show a hole lost.
        for seg in 0..11 {
            sb.protect(seg, group(0, 11, 2), 16, None);
        }
        sb.apply_sack(Instant::ZERO, &[blk(2, 5), blk(6, 9)]);
        sb.on_groups_failed(1);
        assert_eq!(sb.mark_lost_by_sack(3), 3); // 0, 1 and 5
        while let Some(seg) = sb.next_retransmission() {
            sb.on_retransmitted(Instant::ZERO, seg, 0);
        }
        // Hole 9, four SACKed above it: one hole for two repairs.
        sb.apply_sack(Instant::ZERO, &[blk(10, 14)]);
        assert_eq!(sb.mark_lost_by_sack(3), 0);
        assert!(!sb.get(9).unwrap().lost);
        sb.check_counters();
    }

    /// A flight's last block lost a data packet and its repair: the one segment SACKed
    /// above the hole cannot satisfy the SACK rule, but once the repair has had a round
    /// trip and a reordering window to arrive, the hole is lost.
    #[test]
    fn a_hole_whose_repairs_had_their_round_trip_is_lost() {
        let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        let mut sb = board(4);
        for seg in 0..4 {
            sb.protect(seg, group(0, 4, 1), 4, None);
        }
        sb.apply_sack(at(30), &[blk(3, 4)]); // 0, 1 and 2 missing, 3 arrived
        assert_eq!(sb.mark_lost_by_sack(3), 0);
        assert_eq!(sb.awaiting_repairs(), None, "the repair has not left yet");
        for seg in 0..4 {
            sb.protect(seg, group(0, 4, 1), 4, Some(at(10)));
        }
        sb.mark_lost_by_sack(3);
        assert_eq!(sb.awaiting_repairs(), Some(at(10)));
        let wait = Duration::from_millis(25);
        assert_eq!(
            sb.mark_lost_awaiting_repairs(at(34), wait, 3),
            0,
            "not yet due"
        );
        assert_eq!(sb.mark_lost_awaiting_repairs(at(35), wait, 3), 3);
        assert!((0..3).all(|s| sb.get(s).unwrap().lost));
        assert_eq!(sb.awaiting_repairs(), None);
        sb.check_counters();
    }

    /// The same block followed by a segment sent after its repair (a transfer's FIN):
    /// one segment cannot satisfy the SACK rule either, so the time rule still applies;
    /// three can, and then it is left to them.
    #[test]
    fn a_hole_followed_by_fewer_than_dupthresh_segments_still_gets_the_time_rule() {
        let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        let wait = Duration::from_millis(25);
        for after in [1u64, 2, 3] {
            let mut sb = board(4 + after);
            for seg in 0..4 {
                sb.protect(seg, group(0, 4, 1), 4, Some(at(10)));
            }
            // 0, 1 and 2 missing; 3 and the last segment sent after the repair arrived.
            sb.apply_sack(at(30), &[blk(3, 4), blk(3 + after, 4 + after)]);
            sb.mark_lost_by_sack(3);
            let marked = sb.mark_lost_awaiting_repairs(at(35), wait, 3);
            if after < 3 {
                assert_eq!(sb.awaiting_repairs(), None);
                assert_eq!(marked, 3, "{after} segment(s) after the repair");
            } else {
                assert_eq!(
                    marked, 0,
                    "three segments after the repair: the SACK rule's case"
                );
            }
            sb.check_counters();
        }
    }

    #[test]
    fn overlapping_blocks_merge() {
        let mut sb = board(20);
        sb.apply_sack(Instant::ZERO, &[blk(3, 6), blk(10, 12)]);
        assert_eq!(sb.apply_sack(Instant::ZERO, &[blk(4, 11)]), 4);
        assert_eq!(sb.sacked_runs, vec![(3, 12)]);
        sb.check_counters();
    }
}
