//! The sending half: segmentation, the retransmission timer, and loss recovery
//! (Tahoe, Reno, NewReno, SACK) on top of a window-growth rule.

use crate::cc::CongestionControl;
use crate::config::{Config, Recovery};
use crate::fec::{Encoder, FecConfig, GroupPolicy, RatioControl, RepairOut};
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::time::Instant;
use crate::wire::{FecFeedback, FecGroup, SackBlock};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

/// A segment the sender wants on the wire.
#[derive(Debug, Clone)]
pub(crate) struct OutSegment {
    pub seg: u64,
    pub payload: Bytes,
    pub fin: bool,
    pub cwr: bool,
    /// The FEC group of a first transmission.
    pub fec: Option<FecGroup>,
}

/// What the sender wants on the wire next.
#[derive(Debug, Clone)]
pub(crate) enum Outgoing {
    /// A source segment.
    Segment(OutSegment),
    /// A repair packet.
    Repair(RepairOut),
}

/// What an arriving acknowledgement carries, as the sender sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckInfo<'a> {
    pub ack: u64,
    pub window: u32,
    pub ts_ecr: u32,
    pub sack: &'a [SackBlock],
    pub ece: bool,
    /// No payload, no FIN, no SYN: eligible to count as a duplicate ACK.
    pub pure: bool,
    /// The receiver's FEC decoder counters (TCP-dFEC).
    pub fec_feedback: Option<FecFeedback>,
}

#[derive(Debug)]
pub(crate) struct Sender {
    sb: Scoreboard,
    unsent: VecDeque<Bytes>,
    unsent_bytes: usize,
    fin_requested: bool,
    fin_sent: bool,
    mss: usize,
    send_buffer: usize,
    pub cc: Box<dyn CongestionControl>,
    pub rtt: RttEstimator,
    recovery: Recovery,
    sack: bool,
    dupthresh: u32,
    dupacks: u32,
    in_recovery: bool,
    /// Highest segment outstanding when the last loss episode began (RFC 6582 "recover").
    recover: Option<u64>,
    /// One retransmission may go out regardless of the window (fast retransmit).
    force_retransmit: bool,
    /// Send one segment despite a closed peer window (persist probe).
    force_probe: bool,
    ecn_recover: Option<u64>,
    cwr_pending: bool,
    peer_window: u32,
    rto_deadline: Option<Instant>,
    fec: Option<(Encoder, FecConfig)>,
    /// Last member of each group whose repair is in flight: a repair counts against the
    /// window until the cumulative ACK passes its group.
    repairs_in_flight: VecDeque<u64>,
    /// When to close the open FEC groups of a stalled flight (see `flush_at_flight_end`).
    flush_deadline: Option<Instant>,
    /// TCP-dFEC: the FEC ratio control and the last decoder counters the peer reported.
    ratio: Option<RatioControl>,
    peer_fec: FecFeedback,
    pub repairs_sent: u64,
    pub data_packets_sent: u64,
    pub retransmissions: u64,
    pub payload_bytes_sent: u64,
    pub bytes_acked: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    pub dup_acks_received: u64,
}

impl Sender {
    pub fn new(cfg: &Config) -> Self {
        Sender {
            sb: Scoreboard::default(),
            unsent: VecDeque::new(),
            unsent_bytes: 0,
            fin_requested: false,
            fin_sent: false,
            mss: cfg.mss.max(1) as usize,
            send_buffer: cfg.send_buffer,
            cc: cfg.scheme.cc.build(cfg.initial_window),
            rtt: RttEstimator::new(
                cfg.initial_rto,
                cfg.min_rto,
                cfg.max_rto,
                cfg.clock_granularity,
            ),
            recovery: cfg.scheme.recovery,
            sack: false,
            dupthresh: cfg.dupthresh.max(1),
            dupacks: 0,
            in_recovery: false,
            recover: None,
            force_retransmit: false,
            force_probe: false,
            ecn_recover: None,
            cwr_pending: false,
            peer_window: u32::MAX,
            rto_deadline: None,
            fec: cfg
                .scheme
                .fec
                .map(|f| (Encoder::new(f.policy, f.repairs), f)),
            repairs_in_flight: VecDeque::new(),
            flush_deadline: None,
            ratio: cfg
                .scheme
                .fec
                .and_then(|f| f.dynamic)
                .map(RatioControl::new),
            peer_fec: FecFeedback::default(),
            repairs_sent: 0,
            data_packets_sent: 0,
            retransmissions: 0,
            payload_bytes_sent: 0,
            bytes_acked: 0,
            fast_recoveries: 0,
            timeouts: 0,
            ecn_reductions: 0,
            dup_acks_received: 0,
        }
    }

    /// Called once the handshake has settled the peer's MSS, window and SACK support.
    pub fn configure(&mut self, peer_mss: Option<u16>, peer_window: u32, sack: bool) {
        if let Some(m) = peer_mss {
            self.mss = self.mss.min(m.max(1) as usize);
        }
        self.peer_window = peer_window;
        self.sack = sack && self.recovery == Recovery::Sack;
    }

    /// Bytes `write` would accept now.
    pub fn write_capacity(&self) -> usize {
        if self.fin_requested {
            return 0;
        }
        self.send_buffer
            .saturating_sub(self.unsent_bytes + self.sb.bytes_outstanding())
    }

    /// Queues application bytes; returns how many were accepted.
    pub fn write(&mut self, mut data: Bytes) -> usize {
        let n = data.len().min(self.write_capacity());
        data.truncate(n);
        if n > 0 {
            self.unsent_bytes += n;
            self.unsent.push_back(data);
        }
        n
    }

    /// Ends the byte stream after the queued data.
    pub fn finish(&mut self) {
        self.fin_requested = true;
    }

    /// True once everything written, and the FIN if requested, has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.unsent_bytes == 0
            && self.sb.outstanding() == 0
            && (!self.fin_requested || self.fin_sent)
    }

    /// True if a FIN was sent and acknowledged.
    pub fn fin_acked(&self) -> bool {
        self.fin_sent && self.sb.outstanding() == 0
    }

    /// Next segment number to be assigned.
    pub fn nxt(&self) -> u64 {
        self.sb.nxt()
    }

    /// Packets in flight: RFC 6675 pipe plus repair packets not yet passed by an ACK.
    pub fn pipe(&self) -> usize {
        self.sb.pipe() + self.repairs_in_flight.len()
    }

    /// Size of the FEC groups being formed now (0 without FEC).
    pub fn fec_group_size(&self) -> u16 {
        self.fec.as_ref().map_or(0, |(e, _)| e.group_size())
    }

    /// The earliest of the retransmission timer and the flight-end flush timer.
    pub fn timeout(&self) -> Option<Instant> {
        match (self.rto_deadline, self.flush_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles whichever timers are due at `now`.
    pub fn on_timer(&mut self, now: Instant) {
        if self.flush_deadline.is_some_and(|d| d <= now) {
            self.flush_deadline = None;
            if let Some((enc, _)) = self.fec.as_mut() {
                enc.flush();
            }
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.on_timeout(now);
        }
    }

    fn arm_rto(&mut self, now: Instant) {
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    fn has_new_data(&self) -> bool {
        self.unsent_bytes > 0 || (self.fin_requested && !self.fin_sent)
    }

    fn window_allows(&self, len: usize) -> bool {
        self.force_probe || self.sb.bytes_outstanding() + len <= self.peer_window as usize
    }

    /// The next packet to transmit, if the window and the data allow one.
    pub fn poll(&mut self, now: Instant) -> Option<Outgoing> {
        let cwnd = self.cc.cwnd().floor().max(1.0) as usize;
        let window_open = self.pipe() < cwnd;
        if window_open || self.force_retransmit {
            if let Some(seg) = self.sb.next_retransmission() {
                self.force_retransmit = false;
                return Some(Outgoing::Segment(self.retransmit(now, seg)));
            }
            self.force_retransmit = false;
        }
        // A group's repairs follow its last member at once, even when that member used the
        // last of the window: they count in pipe (throttling later data) but never wait
        // for an ACK — the receiver may be withholding duplicate ACKs until they arrive.
        if let Some(r) = self.poll_repair() {
            return Some(Outgoing::Repair(r));
        }
        if !self.has_new_data() {
            // Out of data: close the open groups so the tail is protected too.
            if let Some((enc, _)) = self.fec.as_mut() {
                if enc.has_open_group() {
                    enc.flush();
                    return self.poll_repair().map(Outgoing::Repair);
                }
            }
            return None;
        }
        if !(window_open || self.force_probe) {
            self.arm_flush(now);
            return None;
        }
        let next_len = self.unsent.front().map_or(0, |b| b.len().min(self.mss));
        if !self.window_allows(next_len) {
            if self.sb.outstanding() == 0 && self.rto_deadline.is_none() {
                self.arm_rto(now); // persist: probe the closed window when it fires
            }
            self.arm_flush(now);
            return None;
        }
        self.force_probe = false;
        let (payload, fin) = self.take_new_payload();
        let seg = self.sb.push(payload.clone(), fin);
        if fin {
            self.fin_sent = true;
        }
        self.count_sent(payload.len());
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        let cwr = std::mem::take(&mut self.cwr_pending);
        let cwnd = self.cc.cwnd();
        let fec = match self.fec.as_mut() {
            Some((enc, _)) if !payload.is_empty() => Some(enc.add(seg, &payload, cwnd)),
            _ => None,
        };
        Some(Outgoing::Segment(OutSegment {
            seg,
            payload,
            fin,
            cwr,
            fec,
        }))
    }

    /// The sender is blocked by a window: if no ACK comes for half a round trip, the open
    /// groups will be closed early (see `FecConfig::flush_at_flight_end`).
    fn arm_flush(&mut self, now: Instant) {
        if let Some((enc, f)) = self.fec.as_ref() {
            if f.flush_at_flight_end && enc.has_open_group() && self.flush_deadline.is_none() {
                let wait = self.rtt.srtt().unwrap_or(self.rtt.rto()) / 2;
                self.flush_deadline = Some(now + wait);
            }
        }
    }

    fn poll_repair(&mut self) -> Option<RepairOut> {
        let una = self.sb.una();
        let (enc, _) = self.fec.as_mut()?;
        // A repair whose whole group is already acknowledged would protect nothing.
        let r = std::iter::from_fn(|| enc.pop_ready()).find(|r| r.group.last() >= una)?;
        self.repairs_in_flight.push_back(r.group.last());
        self.repairs_sent += 1;
        Some(r)
    }

    fn take_new_payload(&mut self) -> (Bytes, bool) {
        let mut out: Option<Bytes> = None;
        // Coalesce small writes up to one MSS; a chunk larger than that is split.
        while let Some(front) = self.unsent.front_mut() {
            let have = out.as_ref().map_or(0, |b| b.len());
            let room = self.mss - have;
            if room == 0 {
                break;
            }
            let piece = if front.len() <= room {
                self.unsent.pop_front().expect("front exists")
            } else {
                front.split_to(room)
            };
            self.unsent_bytes -= piece.len();
            out = Some(match out {
                None => piece,
                Some(prev) => {
                    let mut v = Vec::with_capacity(prev.len() + piece.len());
                    v.extend_from_slice(&prev);
                    v.extend_from_slice(&piece);
                    Bytes::from(v)
                }
            });
        }
        let payload = out.unwrap_or_default();
        let fin = self.fin_requested && self.unsent_bytes == 0 && !self.fin_sent;
        (payload, fin)
    }

    fn retransmit(&mut self, now: Instant, seg: u64) -> OutSegment {
        self.sb.on_retransmitted(seg);
        let s = self.sb.get(seg).expect("retransmission is outstanding");
        let out = OutSegment {
            seg,
            payload: s.payload.clone(),
            fin: s.fin,
            cwr: false,
            fec: None,
        };
        self.retransmissions += 1;
        self.count_sent(out.payload.len());
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        out
    }

    fn count_sent(&mut self, len: usize) {
        self.data_packets_sent += 1;
        self.payload_bytes_sent += len as u64;
    }

    /// Processes an acknowledgement.
    pub fn on_ack(&mut self, now: Instant, a: &AckInfo<'_>) {
        if a.ack > self.sb.nxt() {
            return; // acknowledges data never sent: ignore
        }
        // The ACK clock is running: the flight has not stalled.
        self.flush_deadline = None;
        if let Some(fb) = a.fec_feedback {
            self.on_fec_feedback(now, fb);
        }
        self.peer_window = a.window;
        if self.sack {
            self.sb.apply_sack(a.sack);
            self.sb.mark_lost_by_sack(self.dupthresh as usize);
        }
        let una = self.sb.una();
        if a.ack > una {
            self.on_new_ack(now, a);
        } else if a.ack == una && a.pure && self.sb.outstanding() > 0 {
            self.on_dup_ack(now);
        }
        if self.sack && !self.in_recovery && self.sb.una_is_lost() && self.may_enter_recovery() {
            self.enter_recovery(now);
        }
        if a.ece {
            self.on_ece(now);
        }
    }

    fn on_new_ack(&mut self, now: Instant, a: &AckInfo<'_>) {
        if a.ts_ecr != 0 {
            let rtt_us = now.timestamp_micros().wrapping_sub(a.ts_ecr);
            // A wrapped or absurd echo (> 10 min) is not a sample.
            if rtt_us < 600_000_000 {
                self.rtt.on_sample(Duration::from_micros(rtt_us as u64));
            }
        }
        let (acked, bytes) = self.sb.ack_to(a.ack);
        // Interleaved groups finish out of order, so look at every entry, not the front.
        self.repairs_in_flight.retain(|&last| last >= a.ack);
        self.bytes_acked += bytes as u64;
        self.dupacks = 0;
        self.rtt.reset_backoff();
        if self.in_recovery {
            if self.recover.is_some_and(|r| a.ack > r) {
                self.in_recovery = false;
                // RFC 6582 §3.2 step 3, option (1): min(ssthresh, max(FlightSize, 1) + 1),
                // so that the deflated window does not release a line-rate burst.
                let flight = self.sb.outstanding().max(1) as f64;
                let w = self.cc.ssthresh().min(flight + 1.0);
                self.cc.set_cwnd(w);
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
            self.cc.on_ack(now, acked, self.rtt.srtt());
        }
        if self.sb.outstanding() > 0 {
            self.arm_rto(now);
        } else {
            self.rto_deadline = None;
        }
    }

    fn on_dup_ack(&mut self, now: Instant) {
        self.dupacks += 1;
        self.dup_acks_received += 1;
        if self.in_recovery {
            if matches!(self.recovery, Recovery::Reno | Recovery::NewReno) {
                let w = self.cc.cwnd() + 1.0; // window inflation
                self.cc.set_cwnd(w);
            }
        } else if self.dupacks == self.dupthresh && self.may_enter_recovery() {
            self.enter_recovery(now);
        }
    }

    fn may_enter_recovery(&self) -> bool {
        // After a loss episode or RTO, only data sent after it may trigger a new one.
        self.recover.is_none_or(|r| self.sb.una() > r)
    }

    fn enter_recovery(&mut self, now: Instant) {
        self.fast_recoveries += 1;
        let flight = self.flight_for_reduction();
        self.recover = Some(self.sb.nxt() - 1);
        self.cc.on_congestion_event(now, flight);
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
            }
        }
    }

    /// The window a multiplicative decrease halves: the data outstanding (RFC 5681
    /// FlightSize), but never more than cwnd. NewReno's outstanding count includes segments
    /// that already left the network during a long recovery, and halving that would set
    /// ssthresh far above the window the path actually carried.
    fn flight_for_reduction(&self) -> u64 {
        (self.sb.outstanding() as u64).min(self.cc.cwnd().floor().max(1.0) as u64)
    }

    fn on_ece(&mut self, now: Instant) {
        let factor = self.fec.as_ref().and_then(|(_, f)| f.ecn_factor);
        self.reduce_once_per_window(now, factor);
    }

    /// TCP-dFEC (F2, F3): cwnd + 1 per segment FEC rebuilt, cwnd / 2 (once per window) when
    /// a group failed or a repair was lost, and the FEC ratio steered every period.
    fn on_fec_feedback(&mut self, now: Instant, fb: FecFeedback) {
        let prev = self.peer_fec;
        let (recovered, failed, lost) = (
            fb.recovered.wrapping_sub(prev.recovered),
            fb.failed.wrapping_sub(prev.failed),
            fb.repairs_lost.wrapping_sub(prev.repairs_lost),
        );
        // Counters only grow: a "decrease" is an ACK overtaken by a newer one.
        if [recovered, failed, lost].iter().any(|&d| d > u32::MAX / 2) {
            return;
        }
        self.peer_fec = fb;
        if recovered > 0 && !self.in_recovery {
            self.cc.set_cwnd(self.cc.cwnd() + recovered as f64);
        }
        if failed + lost > 0 {
            self.reduce_once_per_window(now, Some(0.5));
        }
        let (sent, rexmit) = (self.data_packets_sent, self.retransmissions);
        if let (Some(rc), Some((enc, _))) = (self.ratio.as_mut(), self.fec.as_mut()) {
            if let Some(n) = rc.on_progress(sent, rexmit) {
                enc.set_policy(GroupPolicy::Static(n));
            }
        }
    }

    /// Multiplies cwnd by `factor` (or halves the flight, RFC 5681, when `None`), at most
    /// once per window of data and not during loss recovery (RFC 3168 §6.1.2).
    fn reduce_once_per_window(&mut self, now: Instant, factor: Option<f64>) {
        if self.in_recovery || self.ecn_recover.is_some_and(|r| self.sb.una() <= r) {
            return;
        }
        self.ecn_reductions += 1;
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

    /// The retransmission timer fired (the caller checked the deadline).
    fn on_timeout(&mut self, now: Instant) {
        self.rto_deadline = None;
        self.flush_deadline = None;
        if self.sb.outstanding() == 0 {
            if self.has_new_data() {
                self.force_probe = true; // persist probe into a closed window
            }
            return;
        }
        self.timeouts += 1;
        let flight = self.flight_for_reduction();
        self.cc.on_timeout(now, flight);
        self.rtt.back_off();
        self.sb.mark_all_lost();
        self.repairs_in_flight.clear();
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = Some(self.sb.nxt() - 1);
        self.arm_rto(now);
    }
}
