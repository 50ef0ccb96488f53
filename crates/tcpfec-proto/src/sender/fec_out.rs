//! FEC emission: when the repairs of block codes and of a stream's sliding window leave,
//! how long a packet waits for them, and the adaptive controllers' feedback.

use super::{RepairInFlight, Sender};
use crate::fec::window::WindowRepair;
use crate::fec::{FeedbackDelta, RepairOut, SenderTotals, StreamCode};
use crate::time::{duration_scaled, Instant};
use crate::wire::{FecFeedback, FecGroup};
use core::time::Duration;

impl Sender {
    /// How long after its repairs left a hole that still waits for them is lost: a
    /// smoothed RTT and RACK's reordering window of a quarter of the minimum RTT.
    pub(super) fn repair_wait(&self) -> Duration {
        let reordering = self.rtt.min_rtt().unwrap_or_default() / 4;
        let rtt = self
            .smoothed_rtt()
            .max(self.rtt.latest().unwrap_or_default());
        rtt + reordering
    }

    /// When the hole that waits for its block's repairs is lost if they have not rebuilt
    /// it (`Scoreboard::mark_lost_awaiting_repairs`).
    pub(super) fn repair_deadline(&self) -> Option<Instant> {
        self.sb.awaiting_repairs().map(|t| t + self.repair_wait())
    }

    /// The time a loss may wait for its repair beyond its own arrival: a quarter of the
    /// smoothed round trip, at least 10 ms.
    pub fn delay_budget(&self) -> Duration {
        (self.smoothed_rtt() / 4).max(Duration::from_millis(10))
    }

    /// How long a stream's packet may wait for its repair: `StreamRepair::wait_share` of
    /// the delay budget (zero without stream repair).
    pub(super) fn stream_wait(&self) -> Duration {
        let share = self
            .fec
            .as_ref()
            .and_then(|(_, f)| f.stream)
            .map_or(0.0, |s| s.wait_share);
        duration_scaled(self.delay_budget(), share)
    }

    /// A stream's new block closes when its first member, `seg`, sent at `now`, has
    /// waited [`Sender::stream_wait`] (`StreamCode::Blocks`); a closed block needs no
    /// deadline.
    pub(super) fn arm_block_deadline(&mut self, now: Instant, seg: u64) {
        let Some((enc, f)) = self.fec.as_ref() else {
            return;
        };
        if f.stream.is_none_or(|s| s.code != StreamCode::Blocks) {
            return;
        }
        match enc.open_block_base() {
            None => self.block_deadline = None,
            Some(base) if base == seg && self.app_limited => {
                // Computed only here: this runs for every packet a scheme with FEC sends.
                self.block_deadline = Some(now + self.stream_wait());
            }
            Some(_) => {}
        }
    }

    /// While the application limits the sender: the packets it sends within the time a
    /// stream's packet waits for its repair (from the latest delivery rate), which bounds
    /// a stream's block (`StreamCode::Blocks`).
    pub(super) fn stream_block(&self) -> Option<usize> {
        let s = self.fec.as_ref()?.1.stream?;
        if s.code != StreamCode::Blocks || !self.app_limited {
            return None;
        }
        let rate = self.last_rate?.rate;
        let wait = self.stream_wait().as_secs_f64();
        Some((rate * wait / self.mss as f64).ceil() as usize)
    }

    /// Ends the stream's open interval: its repairs are ready to send, as many as the
    /// channel estimate asks for its packets (`AutoControl::stream_repairs`). Its own
    /// segments wait for the repairs of the next interval too before SACKs of later
    /// segments can show them lost; those of the interval before have had both chances,
    /// and are lost once segments sent after these repairs show them missing.
    pub(super) fn close_stream_interval(&mut self, now: Instant) {
        let Some(s) = self.stream.as_mut() else {
            return;
        };
        let auto = self.control.as_ref().and_then(|c| c.as_auto());
        let ended = self.fin_requested;
        let Some(c) = s.close(now, ended, |n, sizing| {
            auto.map_or(1.0, |a| a.stream_repairs(n, sizing))
        }) else {
            return;
        };
        let group = FecGroup {
            first: c.from,
            count: (c.to - c.from + 1) as u16,
            stride: 1,
            repairs: c.repairs,
            retransmission_group: 0,
        };
        let nxt = self.sb.nxt();
        let una = self.sb.una();
        for seg in c.from.max(una)..c.interval.max(una) {
            self.sb.lower_bound(seg, nxt);
        }
        if c.repairs > 0 {
            for seg in c.interval.max(una)..=c.to {
                self.sb.protect_by_window(seg, group, u64::MAX, Some(now));
            }
        }
    }

    /// The next repair of the window code, if one is ready: it leaves at once, counts in
    /// flight like a block's repairs, and from now on the segments it covers are lost
    /// only once segments sent after it show them missing.
    pub(super) fn poll_window_repair(&mut self, now: Instant) -> Option<WindowRepair> {
        let una = self.sb.una();
        let s = self.stream.as_mut()?;
        let r = std::iter::from_fn(|| s.pop_ready()).find(|r| r.last() >= una)?;
        let in_flight = self.in_flight_bytes();
        let tx = self.sb.rate.on_send(now, in_flight, true);
        self.repairs_in_flight.push_back(RepairInFlight {
            last: r.last(),
            tx,
            bytes: r.payload.len() as u64,
            left: false,
        });
        self.repairs_sent += 1;
        Some(r)
    }

    /// The sender is blocked by a window: if no ACK comes for a while, the open groups will
    /// be closed early (see `FecConfig::flush_at_flight_end`).
    pub(super) fn arm_flush(&mut self, now: Instant) {
        if let Some((enc, f)) = self.fec.as_ref() {
            if let Some(share) = f.flush_at_flight_end {
                if enc.has_open_group() && self.flush_deadline.is_none() {
                    let rtt = self.rtt.srtt().unwrap_or_else(|| self.rtt.rto());
                    self.flush_deadline = Some(now + duration_scaled(rtt, share));
                }
            }
        }
    }

    pub(super) fn poll_repair(&mut self, now: Instant) -> Option<RepairOut> {
        let una = self.sb.una();
        let (enc, _) = self.fec.as_mut()?;
        // A repair whose whole group is already acknowledged would protect nothing.
        let r = std::iter::from_fn(|| enc.pop_ready()).find(|r| r.group.last() >= una)?;
        let in_flight = self.in_flight_bytes();
        // Its ACK is the one for its group's data, which may precede it: no RTT sample.
        let tx = self.sb.rate.on_send(now, in_flight, true);
        let number = r.group.retransmission_group;
        if number != 0 {
            // The group's members are the retransmissions with its number, the latest
            // ones of that number or later (numbers only grow).
            for sent in self.retransmitted_order.iter_mut().rev() {
                if sent.group == number {
                    sent.repairs_order = Some(tx.order);
                } else if sent.group != 0 && sent.group < number {
                    break;
                }
            }
        }
        self.repairs_in_flight.push_back(RepairInFlight {
            last: r.group.last(),
            tx,
            bytes: r.payload.len() as u64,
            left: false,
        });
        if self.models_path && number == 0 {
            // Every segment numbered from `nxt` on leaves after this repair: SACKs of those
            // may show the group's holes lost (a group closed early is bounded here).
            // Retransmissions are found lost by their own rule (`RetransmissionSent`).
            let (g, nxt) = (r.group, self.sb.nxt());
            for i in 0..g.count as u64 {
                self.sb
                    .protect(g.first + i * g.stride as u64, g, nxt, Some(now));
            }
        }
        self.repairs_sent += 1;
        Some(r)
    }

    /// The receiver's FEC counters arrived: the adaptive controller reacts (TCP-dFEC's
    /// cwnd rules and ratio, TCP-TFEC's loss estimate).
    pub(super) fn on_fec_feedback(&mut self, now: Instant, fb: FecFeedback) {
        let prev = self.peer_fec;
        let d = FeedbackDelta {
            recovered: fb.recovered.wrapping_sub(prev.recovered),
            failed: fb.failed.wrapping_sub(prev.failed),
            repairs_lost: fb.repairs_lost.wrapping_sub(prev.repairs_lost),
        };
        let received = fb.received.wrapping_sub(prev.received);
        // Counters only grow: a "decrease" is an ACK overtaken by a newer one.
        if [d.recovered, d.failed, d.repairs_lost, received]
            .iter()
            .any(|&x| x > u32::MAX / 2)
        {
            return;
        }
        self.peer_fec = fb;
        self.peer_received += received as u64;
        self.sb.on_groups_failed(d.failed as u64);
        let totals = SenderTotals {
            data_sent: self.data_packets_sent,
            retransmitted: self.retransmissions,
            packets_sent: self.data_packets_sent + self.repairs_sent,
            peer_received: self.peer_received,
            cwnd: self.cc.cwnd(),
            stream_block: self.stream_block(),
        };
        let in_recovery = self.in_recovery;
        // A jump sends half a BDP under the probe code, sized before the channel was
        // measured: BBR's start-up hears the channel's loss rate. A fresh start-up grows
        // from the initial window while the code adapts to the channel, and keeps the
        // draft's threshold.
        let jumped = self.resume.as_ref().is_some_and(|r| r.jumped());
        let Some(c) = self.control.as_mut() else {
            return;
        };
        let r = c.on_feedback(now, fb, d, totals, in_recovery);
        let auto = c
            .as_auto()
            .map(|a| (a.congestion_lost, a.last_congestion, a.estimate()));
        if let Some((packets, latest, est)) = auto {
            self.feed_congestion_cap(now, latest, &est);
            if jumped {
                self.cc.set_channel_loss(est.loss_rate);
            }
            self.on_congestion_losses_reported(now, packets);
        }
        if r.grow > 0.0 {
            self.cc.set_cwnd(self.cc.cwnd() + r.grow);
        }
        if r.halve {
            self.reduce_once_per_window(now, Some(0.5));
        }
        if let Some((enc, _)) = self.fec.as_mut() {
            if let Some(p) = r.policy {
                enc.set_policy(p);
            }
            if let Some(k) = r.repairs {
                enc.set_repairs(k);
            }
        }
    }

    /// A repair has left the network once a segment sent after it has been delivered
    /// (the path does not reorder; RACK's rule): it is counted as delivered then, not when
    /// the cumulative ACK passes its group. That ACK waits for the oldest hole, which may
    /// wait for a retransmission, and would credit a round trip's worth of repairs at once,
    /// a rate sample far above the path's. Whether the repair arrived or was lost, the
    /// sender cannot tell (the receiver does not acknowledge repairs); counting it
    /// delivered is the same view as counting a segment FEC rebuilt.
    pub(super) fn repairs_leave(&mut self, now: Instant) {
        let Some(newest) = self.sb.newest_delivered() else {
            return;
        };
        // In send order, and the send-time clock only advances: the repairs that left are
        // the first `repairs_left`, and the first one sent after the newest delivered
        // segment ends the scan.
        for r in self.repairs_in_flight.iter_mut().skip(self.repairs_left) {
            if r.tx.order >= newest {
                break;
            }
            debug_assert!(!r.left);
            r.left = true;
            self.repairs_left += 1;
            self.sb
                .rate
                .on_repair_delivered(now, &r.tx, r.last, r.bytes);
        }
    }
}
