//! The sender's clocks: the retransmission timeout, the tail loss probe and the persist
//! probe, and the one deadline (`Sender::timeout`) a driver waits for.

use super::{Outgoing, Sender};
use crate::time::Instant;

impl Sender {
    /// The earliest of the retransmission timer, the flight-end flush timer and the
    /// redundancy controller's timer.
    pub fn timeout(&self) -> Option<Instant> {
        // Asked after every event the simulator handles: folded by hand, as an array of
        // nine options flattened costs it measurably.
        let mut t = earliest(self.rto_deadline, self.flush_deadline);
        t = earliest(t, self.idle_flush_deadline);
        t = earliest(t, self.block_deadline);
        if self.pacing_wait {
            t = earliest(t, Some(self.next_send));
        }
        if let Some(p) = &self.tlp {
            t = earliest(t, p.deadline());
        }
        if let Some(s) = &self.stream {
            t = earliest(t, s.deadline());
        }
        if let Some(c) = &self.control {
            t = earliest(t, c.deadline());
        }
        earliest(t, self.repair_deadline())
    }

    /// Handles whichever timers are due at `now`.
    pub fn on_timer(&mut self, now: Instant) {
        if self.pacing_wait && self.next_send <= now {
            self.pacing_wait = false; // the caller polls next
        }
        if self.idle_flush_deadline.is_some_and(|d| d <= now) {
            self.idle_flush_deadline = None;
            if let Some((enc, _)) = self.fec.as_mut() {
                enc.flush();
            }
        }
        if self.block_deadline.is_some_and(|d| d <= now) {
            self.block_deadline = None;
            if let Some((enc, _)) = self.fec.as_mut() {
                enc.flush();
            }
        }
        if self
            .stream
            .as_ref()
            .and_then(|s| s.deadline())
            .is_some_and(|d| d <= now)
        {
            self.close_stream_interval(now);
        }
        if self.flush_deadline.is_some_and(|d| d <= now) {
            self.flush_deadline = None;
            if let Some((enc, _)) = self.fec.as_mut() {
                enc.flush();
            }
        }
        if self.repair_deadline().is_some_and(|d| d <= now)
            && self
                .sb
                .mark_lost_awaiting_repairs(now, self.repair_wait(), self.dupthresh as usize)
                > 0
        {
            self.force_retransmit = true;
        }
        if self.tlp.as_mut().is_some_and(|t| t.on_timer(now)) {
            // A probe armed at the RTO's time goes first; the timer restarts with it.
            self.arm_rto(now);
        } else if self.rto_deadline.is_some_and(|d| d <= now) {
            self.on_timeout(now);
        }
        let (cwnd, rtt) = (self.cc.cwnd(), self.smoothed_rtt());
        if let Some(c) = self.control.as_mut() {
            if c.deadline().is_some_and(|d| d <= now) {
                if let (Some(k), Some((enc, _))) = (c.on_timer(now, cwnd, rtt), self.fec.as_mut()) {
                    enc.set_repairs(k);
                }
            }
        }
    }

    pub(super) fn arm_rto(&mut self, now: Instant) {
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// Re-arms the tail loss probe after new data left or an ACK arrived.
    pub(super) fn arm_probe(&mut self, now: Instant) {
        if let Some(t) = self.tlp.as_mut() {
            let outstanding = self.sb.outstanding();
            let (srtt, delack, rto) = (self.rtt.srtt(), self.peer_delack, self.rto_deadline);
            t.arm(now, srtt, outstanding, delack, rto);
        }
    }

    /// The probe, once its timer has fired: new data if the peer's window takes it, else
    /// the newest outstanding segment again (RFC 8985 §7.3); `None` if nothing needs one.
    pub(super) fn poll_probe(&mut self, now: Instant) -> Option<Outgoing> {
        if !self.tlp.as_mut().is_some_and(|t| t.take_fired()) || self.sb.outstanding() == 0 {
            return None;
        }
        let next_len = self.unsent.front().map_or(0, |b| b.len().min(self.mss));
        let out = if self.has_new_data() && self.window_allows(next_len) {
            self.force_probe = true; // past cwnd, as a persist probe passes the peer's window
            self.poll_window(now)?
        } else {
            let newest = self.sb.newest_unsacked()?;
            Outgoing::Segment(self.retransmit(now, newest))
        };
        if let (Some(t), Some(order)) = (self.tlp.as_mut(), self.sb.rate.last_sent()) {
            t.on_probe_sent(order);
        }
        self.arm_rto(now);
        Some(out)
    }

    /// The probe's ACK arrived: every segment sent before the probe and neither
    /// acknowledged nor already known lost is lost (RACK's rule, RFC 8985 §6.2, applied
    /// to the probe). Repairs of those segments' groups left before the probe, so FEC has
    /// had its chance.
    pub(super) fn conclude_probe(&mut self) {
        let newest = self.sb.newest_delivered();
        if let Some(sent) = self.tlp.as_mut().and_then(|t| t.probe_delivered(newest)) {
            if self.sb.mark_lost_sent_before(sent) > 0 {
                self.force_retransmit = true;
            }
        }
    }

    /// The retransmission timer fired (the caller checked the deadline).
    pub(super) fn on_timeout(&mut self, now: Instant) {
        self.rto_deadline = None;
        self.flush_deadline = None;
        if self.sb.outstanding() == 0 {
            if self.has_new_data() {
                self.force_probe = true; // persist probe into a closed window
            }
            return;
        }
        self.timeouts += 1;
        if let Some(t) = self.tlp.as_mut() {
            t.reset();
        }
        if let Some(r) = self.resume.as_mut() {
            r.on_timeout();
        }
        self.on_unrepaired_loss(now);
        if self.hold_on_repeated_timeout && self.rtt.backoff() > 0 {
            self.cc.on_repeated_timeout(now);
        } else {
            let flight = self.flight_for_reduction();
            self.cc.on_timeout(now, flight);
        }
        self.rtt.back_off();
        self.sb.mark_all_lost();
        self.retransmitted_order.clear();
        self.repairs_in_flight.clear();
        self.repairs_left = 0;
        self.in_recovery = false;
        self.prr = None;
        self.dupacks = 0;
        self.recover = Some(self.sb.nxt() - 1);
        self.arm_rto(now);
    }
}

/// The earlier of two deadlines, either of which may be unset.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}
