//! Acknowledgements: the scoreboard update, loss detection (duplicate ACKs, SACK, RACK's
//! rule for retransmissions), loss recovery (Tahoe, Reno, NewReno, SACK) and the
//! congestion responses to losses and ECN marks, including those FEC repaired.

use super::prr::{Prr, PrrAck};
use super::{AckInfo, Sender};
use crate::cc::{AckEvent, CongestionReport};
use crate::config::Recovery;
use crate::fec::channel::ChannelEstimate;
use crate::time::Instant;
use core::time::Duration;

impl Sender {
    /// Processes an acknowledgement.
    pub fn on_ack(&mut self, now: Instant, a: &AckInfo<'_>) {
        if a.ack > self.sb.nxt() {
            return; // acknowledges data never sent: ignore
        }
        // The ACK clock is running: the flight has not stalled.
        self.flush_deadline = None;
        // Before the feedback: congestion losses the receiver reports count as this ACK's.
        let lost_before = self.sb.rate.lost();
        let delivered_before = self.sb.rate.delivered();
        let mut newly_sacked = 0;
        if let Some(fb) = a.fec_feedback {
            self.on_fec_feedback(now, fb);
        }
        self.peer_window = a.window;
        if self.sack {
            newly_sacked = self.sb.apply_sack(now, a.sack);
            self.sb.mark_lost_by_sack(self.dupthresh as usize);
            if self.rack_in_recovery && self.in_recovery {
                // RACK (RFC 8985 §6.2) before any reordering is seen, as Linux runs it:
                // in recovery its reordering window is zero, so a segment sent before one
                // that was delivered is lost. The holes at a flight's tail, with fewer
                // than `dupthresh` segments delivered above them (or only retransmissions
                // sent after them), need no timeout then.
                self.sb.mark_lost_by_send_order();
            }
            self.conclude_probe();
        }
        let una = self.sb.una();
        if a.ack > una {
            self.on_new_ack(now, a);
        } else if a.ack == una && a.pure && self.sb.outstanding() > 0 {
            self.on_dup_ack(now);
        }
        if a.ack <= una && newly_sacked > 0 && self.rack && self.sb.outstanding() > 0 {
            // Linux restarts the retransmission timer when an ACK SACKs new data (since
            // 4.13), not only when the cumulative point advances. Timed from the first
            // retransmission alone, the timer fired while that retransmission was still
            // queued behind a start-up's queue, and every segment in flight was resent.
            self.arm_rto(now);
        }
        if self.sack && !self.in_recovery && self.sb.una_is_lost() && self.may_enter_recovery() {
            self.enter_recovery(now);
        }
        if self.in_recovery {
            self.reduce_proportionally(a.ack > una, delivered_before, lost_before);
        }
        if a.ece {
            self.on_ece(now);
        }
        if self.rack {
            self.detect_lost_retransmissions(now);
        }
        self.repairs_leave(now);
        if self.sb.outstanding() > 0 {
            self.arm_probe(now);
        } else if let Some(t) = self.tlp.as_mut() {
            t.reset();
        }
        let sample = self.sb.rate.take_sample(now, self.rtt.min_rtt());
        if let Some(s) = sample {
            self.last_rate = sample;
            if !s.app_limited {
                self.max_rate = self.max_rate.max(s.rate);
            }
        }
        let rtt = self.rtt_this_ack.take();
        // The round trip of the newest packet delivered, not the timestamp echo's: after
        // a hole the echo carries the wait for the hole's repair, which is no queue.
        self.resume_on_ack(now, delivered_before, sample.and_then(|s| s.rtt));
        if !self.event_driven {
            return;
        }
        let ev = AckEvent {
            sample,
            delivered: self.sb.rate.delivered(),
            newly_acked: sample.map_or(0, |s| s.newly_acked),
            newly_lost: self.sb.rate.lost() - lost_before,
            inflight: self.in_flight_bytes(),
            rtt,
            cwnd_limited: self.cwnd_limited,
        };
        self.cc.on_ack_event(now, &ev);
        if self.cc.ignores_low_rate_samples() {
            let in_flight = self.in_flight_bytes();
            self.sb.rate.on_app_limited(in_flight);
        }
    }

    pub(super) fn on_new_ack(&mut self, now: Instant, a: &AckInfo<'_>) {
        if a.ts_ecr != 0 {
            let rtt_us = now.timestamp_micros().wrapping_sub(a.ts_ecr);
            // A wrapped or absurd echo (> 10 min) is not a sample.
            if rtt_us < 600_000_000 {
                let rtt = Duration::from_micros(rtt_us as u64);
                self.rtt.on_sample(rtt);
                self.rtt_this_ack = Some(rtt);
            }
        }
        let (acked, bytes) = self.sb.ack_to(now, a.ack);
        self.watch_first_slow_start();
        if self.hystart {
            let (una, nxt) = (self.sb.una(), self.sb.nxt());
            self.cc.on_ack_sample(now, self.rtt_this_ack, una, nxt);
        }
        if let Some(s) = self.stream.as_mut() {
            s.forget_below(a.ack);
        }
        // Interleaved groups finish out of order, so look at every entry, not the front.
        let (rate, left) = (&mut self.sb.rate, &mut self.repairs_left);
        self.repairs_in_flight.retain(|r| {
            if r.last >= a.ack {
                return true;
            }
            if r.left {
                *left -= 1;
            } else {
                rate.on_repair_delivered(now, &r.tx, r.last, r.bytes);
            }
            false
        });
        self.bytes_acked += bytes as u64;
        self.dupacks = 0;
        self.rtt.reset_backoff();
        if self.in_recovery {
            if self.recover.is_some_and(|r| a.ack > r) {
                self.in_recovery = false;
                if self.prr.take().is_some() {
                    // Linux ends a reduction at ssthresh (`tcp_end_cwnd_reduction`).
                    let ss = self.cc.ssthresh();
                    self.cc.set_cwnd(ss);
                } else {
                    self.cc.on_recovery_end(self.sb.outstanding());
                }
            } else {
                match self.recovery {
                    Recovery::NewReno => {
                        // Partial ACK (RFC 6582 §3.2 step 5): retransmit the next hole and
                        // deflate by the amount acknowledged, adding back one segment.
                        self.sb.mark_lost(a.ack);
                        self.force_retransmit = true;
                        let w = self.cc.cwnd() - acked as f64 + 1.0;
                        self.cc.set_cwnd(w);
                    }
                    Recovery::Reno | Recovery::Tahoe => {
                        self.in_recovery = false;
                        let ss = self.cc.ssthresh();
                        self.cc.set_cwnd(ss);
                    }
                    Recovery::Sack => {}
                }
            }
        } else {
            let watched = self.slow_start_watched() || self.in_conservative_slow_start();
            let before = watched.then(|| self.cc.cwnd());
            if self.byte_counting {
                for _ in 0..acked {
                    self.cc.on_ack(now, 1, self.rtt.srtt());
                }
            } else {
                self.cc.on_ack(now, acked, self.rtt.srtt());
            }
            if let Some(before) = before {
                self.conserve_slow_start_past_saved_path(before);
                self.conserve_growth(before);
            }
        }
        if let Some(c) = self.congestion_cap.as_mut() {
            let rtt = self.rtt.latest().zip(self.rtt.min_rtt());
            let (una, nxt) = (self.sb.una(), self.sb.nxt());
            c.on_ack(now, (una, nxt), rtt, acked, self.rtt.srtt());
        }
        if self.sb.outstanding() > 0 {
            self.arm_rto(now);
        } else {
            self.rto_deadline = None;
        }
    }

    pub(super) fn on_dup_ack(&mut self, now: Instant) {
        self.dupacks += 1;
        self.dup_acks_received += 1;
        if self.in_recovery {
            if matches!(self.recovery, Recovery::Reno | Recovery::NewReno) {
                let w = self.cc.cwnd() + 1.0; // window inflation
                self.cc.set_cwnd(w);
            }
        } else if self.dupacks == self.dupthresh
            && self.may_enter_recovery()
            && !self
                .sb
                .una_awaits_repairs(self.dupthresh as usize, self.awaits_block_repairs())
        {
            self.enter_recovery(now);
        }
    }

    /// Whether duplicate ACKs wait, like SACKs, for the repairs of a hole's block: under
    /// `auto`, whose receiver sends them for holes FEC may still rebuild unless the queue
    /// is full (`AutoParams::hold_only_at_full_queue`).
    fn awaits_block_repairs(&self) -> bool {
        self.fec
            .as_ref()
            .is_some_and(|(_, c)| c.holds_only_at_full_queue())
    }

    pub(super) fn may_enter_recovery(&self) -> bool {
        // After a loss episode or RTO, only data sent after it may trigger a new one.
        self.recover.is_none_or(|r| self.sb.una() > r)
    }

    pub(super) fn enter_recovery(&mut self, now: Instant) {
        self.fast_recoveries += 1;
        self.on_unrepaired_loss(now);
        self.recover = Some(self.sb.nxt() - 1);
        let prior_cwnd = self.cc.cwnd();
        self.reduce_for_loss(now);
        // Restart the retransmission timer with the fast retransmission (as ns-2 and Linux
        // do): when the RTO hugs a very stable RTT, the timer armed by the last new ACK
        // would otherwise expire just before the retransmission can be acknowledged.
        self.arm_rto(now);
        let una = self.sb.una();
        match self.recovery {
            Recovery::Tahoe => {
                self.cc.set_cwnd(1.0);
                self.sb.mark_all_lost();
            }
            Recovery::Reno | Recovery::NewReno => {
                let w = self.cc.ssthresh() + self.dupthresh as f64;
                self.cc.set_cwnd(w);
                self.sb.mark_lost(una);
                self.force_retransmit = true;
                self.in_recovery = true;
            }
            Recovery::Sack => {
                self.sb.mark_lost(una);
                self.force_retransmit = true;
                self.in_recovery = true;
                if self.prr_enabled && !self.models_path {
                    self.prr = Some(Prr::start(prior_cwnd, self.data_packets_sent));
                }
            }
        }
    }

    /// With PRR, sets the window for what this ACK in recovery may release
    /// (`sender/prr.rs`). `advanced`: it moved the cumulative ACK.
    fn reduce_proportionally(&mut self, advanced: bool, delivered_before: u64, lost_before: u64) {
        if self.prr.is_none() {
            return;
        }
        let mss = self.mss as u64;
        let delivered = self.sb.rate.delivered() - delivered_before;
        let newly_lost = self.sb.rate.lost() > lost_before;
        let ack = PrrAck {
            newly_delivered: delivered.div_ceil(mss),
            pipe: self.pipe() as u64,
            ssthresh: self.cc.ssthresh(),
            sent: self.data_packets_sent,
            clean_advance: advanced && !newly_lost,
        };
        let w = self.prr.as_mut().expect("checked above").window(ack);
        self.cc.set_cwnd(w);
    }

    /// The multiplicative decrease of a loss episode. If an ECN reduction already cut the
    /// window within this window of data, the two together reduce no further than the
    /// loss alone would have from the window before it (RFC 3168 §6.1.2): a Sato ECN
    /// reduction by r = 0.7 followed by a loss ends at 0.5 of the earlier window, not at
    /// 0.35.
    pub(super) fn reduce_for_loss(&mut self, now: Instant) {
        let ecn_this_window = self.ecn_recover.is_some_and(|r| self.sb.una() <= r);
        let cwnd = self.cc.cwnd();
        let window = if ecn_this_window {
            self.cwnd_before_ecn
        } else {
            cwnd
        };
        self.cc.on_congestion_event(now, self.flight_within(window));
        if ecn_this_window && self.cc.ssthresh() > cwnd {
            // The ECN reduction already went as far as this loss asks: no further cut.
            self.cc.set_window_and_threshold(cwnd);
        }
    }

    /// The window a multiplicative decrease halves: the data outstanding (RFC 5681
    /// FlightSize), but never more than cwnd. NewReno's outstanding count includes segments
    /// that already left the network during a long recovery, and halving that would set
    /// ssthresh far above the window the path actually carried.
    pub(super) fn flight_for_reduction(&self) -> u64 {
        self.flight_within(self.cc.cwnd())
    }

    /// The data outstanding, at most `window` segments (at least one).
    pub(super) fn flight_within(&self, window: f64) -> u64 {
        (self.sb.outstanding() as u64).min(window.floor().max(1.0) as u64)
    }

    pub(super) fn on_ece(&mut self, now: Instant) {
        if self.models_path {
            return; // BBR's ECN response is not modelled (docs/design/bbr.md)
        }
        let factor = self.fec.as_ref().and_then(|(_, f)| f.ecn_factor);
        self.reduce_once_per_window(now, factor);
    }

    /// Passes the receiver's latest congestion report to `auto`'s cap, if it has one:
    /// `(lost, packets)` at a full queue since the last report, and the channel estimate.
    pub(super) fn feed_congestion_cap(
        &mut self,
        now: Instant,
        (lost, packets): (u64, u64),
        est: &ChannelEstimate,
    ) {
        if self.congestion_cap.is_none() {
            return;
        }
        let Some(rtt) = self.rtt.latest().zip(self.rtt.min_rtt()) else {
            return;
        };
        let report = CongestionReport {
            span: (self.sb.una(), self.sb.nxt()),
            flight: self.pipe() as f64,
            rtt,
            started_up: self.cc.started_up(),
            bdp: self.cc.bdp_segments(),
            lost,
            packets,
            channel: (est.loss_rate, est.mean_burst),
        };
        if let Some(cap) = self.congestion_cap.as_mut() {
            cap.on_report(now, &report);
        }
    }

    /// The receiver has counted `packets` congestion losses since the start, repaired or
    /// not (`auto`). FEC hides a repaired loss from the sender, and a flow that repairs its
    /// own congestion drops never yields to others (it took 12.6 times a CUBIC flow's
    /// goodput in a half-BDP buffer). So the congestion controller sees at least as many
    /// losses as the receiver counted as congestion: what the sender's own detection has
    /// not declared yet is declared now. A loss that is both reported and detected counts
    /// once, as the total is the larger of the two counts.
    pub(super) fn on_congestion_losses_reported(&mut self, now: Instant, packets: u64) {
        let reported = packets.saturating_mul(self.mss as u64);
        let counted = self.sb.rate.lost();
        if reported <= counted {
            return;
        }
        // BBR reads the loss from its rate samples and the ACK's newly lost bytes;
        // window-only controllers reduce as for an ECN mark, once per window.
        self.sb.rate.on_lost(reported - counted);
        if !self.models_path {
            self.reduce_once_per_window(now, None);
        }
    }

    /// A loss FEC did not repair reached the sender (TCP-AFEC climbs a level).
    pub(super) fn on_unrepaired_loss(&mut self, now: Instant) {
        let cwnd = self.cc.cwnd();
        let w_app = self.target_window();
        if let Some(k) = self
            .control
            .as_mut()
            .and_then(|c| c.on_loss(now, cwnd, w_app))
        {
            if let Some((enc, _)) = self.fec.as_mut() {
                enc.set_repairs(k);
            }
        }
    }

    /// The target rate as a window in packets, W_app = R · RTT (Teshima eq. 2).
    pub(super) fn target_window(&self) -> Option<f64> {
        let r = self.target_rate_bps?;
        let rtt = self.rtt.mean().or(self.rtt.srtt())?;
        Some(r as f64 * rtt.as_secs_f64() / (8.0 * self.mss as f64))
    }

    /// A retransmission is lost when a segment sent after it has been delivered (the
    /// time-based rule of RACK, RFC 8985, for retransmissions). Without it, a lost retransmission waits for the RTO, and a paced
    /// controller with a large window on a lossy path would meet one every few rounds.
    pub(super) fn detect_lost_retransmissions(&mut self, now: Instant) {
        let Some(newest) = self.sb.newest_delivered() else {
            return;
        };
        while let Some(&r) = self.retransmitted_order.front() {
            let seg = r.seg;
            match self.sb.retransmission_in_flight(seg) {
                None => {
                    self.retransmitted_order.pop_front(); // delivered or acknowledged
                }
                // No reordering window: the engine does not detect reordering (no
                // DSACK), and RFC 8985 uses none until reordering has been seen. A
                // protected retransmission waits for its group's repairs as well: it is
                // lost once a packet sent after them has been delivered.
                Some(sent) if r.repairs_order.unwrap_or(sent).max(sent) < newest => {
                    self.retransmitted_order.pop_front();
                    self.sb.mark_retransmission_lost(seg);
                    self.force_retransmit = true;
                    // The timer armed for the lost retransmission would fire about when
                    // the new one leaves: give the new one a full RTO.
                    self.arm_rto(now);
                }
                Some(_) => break,
            }
        }
    }

    /// Multiplies cwnd by `factor` (or halves the flight, RFC 5681, when `None`), at most
    /// once per window of data and not during loss recovery (RFC 3168 §6.1.2).
    pub(super) fn reduce_once_per_window(&mut self, now: Instant, factor: Option<f64>) {
        if self.in_recovery || self.ecn_recover.is_some_and(|r| self.sb.una() <= r) {
            return;
        }
        self.ecn_reductions += 1;
        self.cwnd_before_ecn = self.cc.cwnd();
        match factor {
            // S5: the receiver signals a recovered loss; reduce by the scheme's factor r.
            Some(r) => {
                let w = (self.cc.cwnd() * r).max(1.0);
                self.cc.set_window_and_threshold(w);
            }
            None => {
                let flight = self.flight_for_reduction();
                self.cc.on_congestion_event(now, flight);
            }
        }
        self.ecn_recover = Some(self.sb.nxt().saturating_sub(1));
        self.cwr_pending = true;
    }
}
