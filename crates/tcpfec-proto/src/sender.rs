//! The sending half: segmentation, the retransmission timer, and loss recovery
//! (Tahoe, Reno, NewReno, SACK) on top of a window-growth rule.

use crate::cc::{AckEvent, CongestionCap, CongestionControl, CongestionReport};
use crate::config::{Config, Recovery};
use crate::fec::window::WindowRepair;
use crate::fec::{
    Adaptive, Controller, Encoder, FecConfig, FeedbackDelta, RepairOut, SenderTotals, StreamCode,
    StreamRepairs,
};
use crate::resume::{CarefulResume, ResumeAction, ResumeStatus, SavedPath};
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::time::Instant;
use crate::tlp::TailLossProbe;
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
    /// A repair packet of a block code.
    Repair(RepairOut),
    /// A repair packet of the sliding-window code (a stream's).
    WindowRepair(WindowRepair),
}

/// A repair packet sent and not yet passed by the cumulative ACK.
#[derive(Debug, Clone, Copy)]
struct RepairInFlight {
    /// Last member of its group.
    last: u64,
    /// Its delivery-rate state.
    tx: crate::rate::TxState,
    /// Its payload size.
    bytes: u64,
    /// It has left the network and been counted as delivered (`Sender::repairs_leave`).
    left: bool,
}

/// A retransmission in flight, for finding it lost (`Sender::detect_lost_retransmissions`).
#[derive(Debug, Clone, Copy)]
struct RetransmissionSent {
    seg: u64,
    /// The number of the group of retransmissions it belongs to; 0 if it has none.
    group: u32,
    /// Send order of its group's last repair, once sent: until a packet sent after that
    /// is delivered, the repairs may still rebuild it.
    repairs_order: Option<u64>,
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
    /// `cc.models_path()`, fixed for a controller's life: read on every packet and ACK,
    /// where a virtual call each time costs the simulator measurably.
    models_path: bool,
    pub rtt: RttEstimator,
    recovery: Recovery,
    sack: bool,
    dupthresh: u32,
    dupacks: u32,
    pub(crate) in_recovery: bool,
    /// Highest segment outstanding when the last loss episode began (RFC 6582 "recover").
    recover: Option<u64>,
    /// One retransmission may go out regardless of the window (fast retransmit).
    force_retransmit: bool,
    /// Send one segment despite a closed peer window (persist probe).
    force_probe: bool,
    ecn_recover: Option<u64>,
    /// cwnd just before the last ECN reduction; a loss in the same window reduces from it
    /// (RFC 3168 §6.1.2: one reduction per window for ECN and loss together).
    cwnd_before_ecn: f64,
    cwr_pending: bool,
    peer_window: u32,
    rto_deadline: Option<Instant>,
    fec: Option<(Encoder, FecConfig)>,
    /// Repairs sent whose group the cumulative ACK has not passed, in send order.
    repairs_in_flight: VecDeque<RepairInFlight>,
    /// How many of `repairs_in_flight` have left the network (`RepairInFlight::left`).
    repairs_left: usize,
    /// When to close the open FEC groups of a stalled flight (see `flush_at_flight_end`).
    flush_deadline: Option<Instant>,
    /// When to close the open FEC groups because the application has given no new data.
    idle_flush_deadline: Option<Instant>,
    /// When to close the open block of a stream (`StreamCode::Blocks`).
    block_deadline: Option<Instant>,
    /// A stream's repairs of the window code (`StreamCode::Window`).
    stream: Option<StreamRepairs>,
    /// The application limits the sender: it last ran out of data with the window open,
    /// and the window has not stopped it since. Not the delivery-rate module's mark, which
    /// ProbeRTT sets too.
    app_limited: bool,
    /// The adaptive redundancy controller (dFEC, AFEC, TFEC), the last counters the peer
    /// reported, and the total of packets it reported received.
    control: Option<Controller>,
    peer_fec: FecFeedback,
    peer_received: u64,
    /// The transmission number of the next data or repair packet, for schemes whose
    /// receiver measures loss runs (`auto`).
    next_number: Option<u32>,
    /// The application's rate, if it has one (bits per second).
    target_rate_bps: Option<u64>,
    /// The latest delivery-rate sample (`crate::rate`).
    last_rate: Option<crate::rate::RateSample>,
    /// Paced controllers: the earliest time the next packet may leave.
    next_send: Instant,
    /// A packet was held back by pacing: wake at `next_send`.
    pacing_wait: bool,
    /// The window (not the application) stopped the last send attempt.
    cwnd_limited: bool,
    /// The controller reads ACK events and may pace (asked once, at build).
    event_driven: bool,
    /// `Config::byte_counting`.
    byte_counting: bool,
    /// Lost retransmissions are found by RACK's rule: `Config::rack`, or a controller
    /// that models the path.
    rack: bool,
    /// `Config::rack` without FEC: in recovery a hole below any delivered segment is lost
    /// (RACK with no reordering seen), not only one below `dupthresh` of them.
    rack_in_recovery: bool,
    /// `Config::hystart`: the controller hears every ACK's RTT sample.
    hystart: bool,
    /// `Config::hold_on_repeated_timeout`.
    hold_on_repeated_timeout: bool,
    /// Retransmissions, for a trace (`Config::trace`).
    pub(crate) trace: crate::trace::TraceLog,
    /// The RTT measured from the current ACK's timestamp echo.
    rtt_this_ack: Option<Duration>,
    /// Model-based controllers: retransmissions in send order, to find the lost ones.
    retransmitted_order: VecDeque<RetransmissionSent>,
    /// The tail loss probe, for schemes that use one (`Scheme::tail_loss_probe`).
    tlp: Option<TailLossProbe>,
    /// `auto`'s CUBIC-like answer to congestion losses, capping the flight.
    congestion_cap: Option<CongestionCap>,
    /// The receiver's delayed-ACK timeout, if it delays ACKs (the probe waits it out).
    peer_delack: Option<Duration>,
    /// Careful Resume, for a connection started with a saved path.
    resume: Option<CarefulResume>,
    /// The highest delivery rate of a sample the application did not limit, bytes per
    /// second: what the next connection to this peer may resume from.
    max_rate: f64,
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

/// How far behind its schedule a paced sender may fall and still catch up, in
/// nanoseconds: BBR's send quantum of about 1 ms of data (draft-ietf-ccwg-bbr, "Send
/// Quantum"), widened to 2 ms because a real driver's timers wake on a 1 ms grid, later
/// under load; releasing one packet per wake-up would cap the rate at one packet per ms.
const SEND_QUANTUM_NS: u64 = 2_000_000;

/// The floor of the RTO's variance term, G in RFC 6298's SRTT + max(G, 4·RTTVAR). A
/// controller that models the path and paces (BBR) runs with Linux's effective rule, a
/// 200 ms floor on that term, as Linux BBR does: on a path as steady as a simulated one
/// RTTVAR decays to nothing, and an RTO of SRTT + 1 ms would fire before a lost
/// retransmission can be detected and sent again. Window-only schemes keep the
/// configured granularity (ns-2's behaviour).
fn rto_variance_floor(cfg: &Config, cc: &dyn CongestionControl) -> Duration {
    const LINUX_VARIANCE_FLOOR: Duration = Duration::from_millis(200);
    if cc.models_path() {
        cfg.clock_granularity.max(LINUX_VARIANCE_FLOOR)
    } else {
        cfg.clock_granularity
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

impl Sender {
    pub fn new(cfg: &Config) -> Self {
        let mut s = Self::build(cfg);
        let k = s.control.as_ref().and_then(|c| c.initial_repairs());
        if let (Some(k), Some((enc, _))) = (k, s.fec.as_mut()) {
            enc.set_repairs(k);
        }
        s
    }

    fn build(cfg: &Config) -> Self {
        let mut cc = cfg
            .scheme
            .cc
            .build(cfg.initial_window, cfg.mss, cfg.cc_seed);
        if cfg.scheme.fec.is_some_and(|f| f.stream.is_some()) {
            cc.spare_app_limited_flows();
        }
        if cfg.hystart {
            cc.enable_hystart();
        }
        let rto_floor = rto_variance_floor(cfg, cc.as_ref());
        let event_driven = cc.wants_ack_events();
        // A window controller already reduces for the congestion losses reported.
        let models_path = cc.models_path();
        Sender {
            sb: Scoreboard::default(),
            unsent: VecDeque::new(),
            unsent_bytes: 0,
            fin_requested: false,
            fin_sent: false,
            mss: cfg.mss.max(1) as usize,
            send_buffer: cfg.send_buffer,
            cc,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto, rto_floor),
            recovery: cfg.scheme.recovery,
            sack: false,
            dupthresh: cfg.dupthresh.max(1),
            dupacks: 0,
            in_recovery: false,
            recover: None,
            force_retransmit: false,
            force_probe: false,
            ecn_recover: None,
            cwnd_before_ecn: 0.0,
            cwr_pending: false,
            peer_window: u32::MAX,
            rto_deadline: None,
            fec: cfg
                .scheme
                .fec
                .map(|f| (Encoder::new(f.policy, f.repairs), f)),
            repairs_in_flight: VecDeque::new(),
            repairs_left: 0,
            flush_deadline: None,
            idle_flush_deadline: None,
            block_deadline: None,
            stream: cfg
                .scheme
                .fec
                .and_then(|f| f.stream)
                .filter(|s| s.code == StreamCode::Window)
                .map(|_| StreamRepairs::default()),
            app_limited: false,
            control: cfg.scheme.fec.and_then(|f| f.adaptive).map(Controller::new),
            peer_fec: FecFeedback::default(),
            peer_received: 0,
            next_number: cfg
                .scheme
                .fec
                .is_some_and(|f| f.measures_loss_runs())
                .then_some(0),
            target_rate_bps: cfg.target_rate_bps,
            last_rate: None,
            next_send: Instant::ZERO,
            pacing_wait: false,
            cwnd_limited: false,
            event_driven,
            byte_counting: cfg.byte_counting,
            rack: cfg.rack || models_path,
            rack_in_recovery: cfg.rack && cfg.scheme.fec.is_none(),
            hystart: cfg.hystart,
            hold_on_repeated_timeout: cfg.hold_on_repeated_timeout,
            trace: crate::trace::TraceLog::new(cfg.trace),
            rtt_this_ack: None,
            retransmitted_order: VecDeque::new(),
            tlp: cfg.scheme.tail_loss_probe.then(TailLossProbe::default),
            congestion_cap: cfg
                .scheme
                .fec
                .and_then(|f| f.adaptive)
                .is_some_and(|a| matches!(a, Adaptive::Auto(p) if p.yield_to_congestion))
                .then(CongestionCap::default)
                .filter(|_| models_path),
            peer_delack: cfg.delayed_ack.then_some(cfg.delayed_ack_timeout),
            resume: cfg.resume.map(|saved| {
                let mss = cfg.mss.max(1) as f64;
                let initial = cfg.initial_window.max(1) as f64 * mss;
                CarefulResume::new(saved, initial, mss, models_path)
            }),
            max_rate: 0.0,
            models_path,
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

    /// Packets in flight: RFC 6675 pipe plus repair packets. A window-only controller
    /// counts a repair until the cumulative ACK passes its group; a controller that
    /// models the path counts it until it has left the network, as it counts data.
    pub fn pipe(&self) -> usize {
        let repairs = if self.models_path {
            self.repairs_in_flight.len() - self.repairs_left
        } else {
            self.repairs_in_flight.len()
        };
        self.sb.pipe() + repairs
    }

    /// Latest delivery-rate sample, payload bytes per second.
    pub fn delivery_rate(&self) -> Option<f64> {
        self.last_rate.map(|r| r.rate)
    }

    /// Bytes believed in flight (pipe, in full segments).
    fn in_flight_bytes(&self) -> u64 {
        (self.pipe() * self.mss) as u64
    }

    /// Redundancy of the next FEC group, (K + k)/K (1 without FEC).
    pub fn fec_redundancy(&self) -> f64 {
        self.fec.as_ref().map_or(1.0, |(e, _)| e.redundancy())
    }

    /// Size of the FEC groups being formed now (0 without FEC).
    pub fn fec_group_size(&self) -> u16 {
        self.fec.as_ref().map_or(0, |(e, _)| e.group_size())
    }

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
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.on_timeout(now);
        } else if let Some(t) = self.tlp.as_mut() {
            t.on_timer(now);
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

    /// The transmission number for the data or repair packet about to leave, if this
    /// scheme numbers them.
    pub fn take_number(&mut self) -> Option<u32> {
        let n = self.next_number?;
        self.next_number = Some(n.wrapping_add(1));
        Some(n)
    }

    /// Tail loss probes sent.
    pub fn tail_loss_probes(&self) -> u64 {
        self.tlp.as_ref().map_or(0, |t| t.probes)
    }

    /// The `auto` controller, if this scheme has one.
    pub fn auto_control(&self) -> Option<&crate::fec::auto::AutoControl> {
        self.control.as_ref().and_then(|c| c.as_auto())
    }

    /// How long after its repairs left a hole that still waits for them is lost: a
    /// smoothed RTT and RACK's reordering window of a quarter of the minimum RTT.
    fn repair_wait(&self) -> Duration {
        let reordering = self.rtt.min_rtt().unwrap_or_default() / 4;
        let rtt = self
            .smoothed_rtt()
            .max(self.rtt.latest().unwrap_or_default());
        rtt + reordering
    }

    /// When the hole that waits for its block's repairs is lost if they have not rebuilt
    /// it (`Scoreboard::mark_lost_awaiting_repairs`).
    fn repair_deadline(&self) -> Option<Instant> {
        self.sb.awaiting_repairs().map(|t| t + self.repair_wait())
    }

    /// Smoothed RTT, or the initial RTO before the first sample.
    fn smoothed_rtt(&self) -> Duration {
        self.rtt.srtt().unwrap_or_else(|| self.rtt.rto())
    }

    fn arm_rto(&mut self, now: Instant) {
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// Re-arms the tail loss probe after new data left or an ACK arrived.
    fn arm_probe(&mut self, now: Instant) {
        if let Some(t) = self.tlp.as_mut() {
            let outstanding = self.sb.outstanding();
            let (srtt, delack, rto) = (self.rtt.srtt(), self.peer_delack, self.rto_deadline);
            t.arm(now, srtt, outstanding, delack, rto);
        }
    }

    /// The probe, once its timer has fired: new data if the peer's window takes it, else
    /// the newest outstanding segment again (RFC 8985 §7.3); `None` if nothing needs one.
    fn poll_probe(&mut self, now: Instant) -> Option<Outgoing> {
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
    fn conclude_probe(&mut self) {
        let newest = self.sb.newest_delivered();
        if let Some(sent) = self.tlp.as_mut().and_then(|t| t.probe_delivered(newest)) {
            if self.sb.mark_lost_sent_before(sent) > 0 {
                self.force_retransmit = true;
            }
        }
    }

    fn has_new_data(&self) -> bool {
        self.unsent_bytes > 0 || (self.fin_requested && !self.fin_sent)
    }

    fn window_allows(&self, len: usize) -> bool {
        self.force_probe || self.sb.bytes_outstanding() + len <= self.peer_window as usize
    }

    /// The next packet to transmit, if the window, the data and (for a paced controller)
    /// the pacing rate allow one.
    pub fn poll(&mut self, now: Instant) -> Option<Outgoing> {
        if let Some(probe) = self.poll_probe(now) {
            return Some(probe);
        }
        self.confirm_resume(now);
        // The jump of a resumed connection is paced at its own rate.
        let jump_rate = self.resume.as_ref().and_then(|r| r.pacing_rate());
        let rate = jump_rate.or_else(|| self.event_driven.then(|| self.cc.pacing_rate())?);
        let Some(rate) = rate else {
            return self.poll_window(now);
        };
        if now < self.next_send {
            self.pacing_wait = true;
            return None;
        }
        let out = self.poll_window(now)?;
        let len = match &out {
            Outgoing::Segment(s) => s.payload.len(),
            Outgoing::Repair(r) => r.payload.len(),
            Outgoing::WindowRepair(r) => r.payload.len(),
        }
        .max(1);
        // One packet's time at the pacing rate. A driver whose timer wakes late may catch
        // up by at most one send quantum; a sender idle for longer does not burst.
        let gap = Duration::from_secs_f64(len as f64 / rate.max(1.0));
        let earliest = Instant::from_nanos(now.as_nanos().saturating_sub(SEND_QUANTUM_NS));
        self.next_send = self.next_send.max(earliest) + gap;
        Some(out)
    }

    /// The next packet the window and the data allow.
    #[inline]
    fn poll_window(&mut self, now: Instant) -> Option<Outgoing> {
        if self.idle() {
            // What the full path below does with nothing to send and nothing in flight,
            // in short: a receiver's sender comes here after every segment it takes in.
            self.cwnd_limited = false;
            self.sb.rate.on_app_limited(0);
            self.app_limited = true;
            return None;
        }
        let mut cwnd = self.cc.cwnd();
        if let Some(cap) = self.congestion_cap.as_ref().and_then(|c| c.limit()) {
            cwnd = cwnd.min(cap);
        }
        if let Some(r) = self.resume.as_ref() {
            let mss = self.mss as f64;
            if let Some(floor) = r.cwnd_floor() {
                cwnd = cwnd.max(floor / mss);
            }
            if let Some(cap) = r.cwnd_cap() {
                cwnd = cwnd.min(cap / mss);
            }
        }
        // TCP-TFEC and TCP-AFEC with a target rate send no faster than the target needs.
        if let (Some(c), Some(r)) = (self.control.as_ref(), self.target_rate_bps) {
            if let Some(cap) = c.window_cap(r, self.smoothed_rtt(), self.mss) {
                cwnd = cwnd.min(cap);
            }
        }
        // Truncation is the floor of a positive window (and a saturating one).
        let cwnd = (cwnd as usize).max(1);
        let window_open = self.pipe() < cwnd;
        if window_open || self.force_retransmit {
            if let Some(seg) = self.sb.next_retransmission() {
                self.force_retransmit = false;
                return Some(Outgoing::Segment(self.retransmit(now, seg)));
            }
            self.force_retransmit = false;
            if let Some((enc, _)) = self.fec.as_mut() {
                // No retransmission is due with the window open: the run has ended, and
                // its group's repairs follow now rather than wait for a later one.
                enc.flush_retransmissions();
            }
        }
        // A group's repairs follow its last member at once, even when that member used the
        // last of the window: they count in pipe (throttling later data) but never wait
        // for an ACK — the receiver may be withholding duplicate ACKs until they arrive.
        // (Checked here first: most schemes have no encoder, and this runs for every
        // packet.)
        if self.fec.is_some() {
            if let Some(r) = self.poll_repair(now) {
                return Some(Outgoing::Repair(r));
            }
        }
        if self.stream.is_some() {
            if let Some(r) = self.poll_window_repair(now) {
                return Some(Outgoing::WindowRepair(r));
            }
        }
        if !self.has_new_data() {
            self.cwnd_limited = false;
            if window_open {
                // Nothing to send with room in the window: rate samples until this
                // flight is delivered show the application's rate, not the path's.
                let in_flight = self.in_flight_bytes();
                self.sb.rate.on_app_limited(in_flight);
                self.app_limited = true;
            }
            // Out of data: if none comes for half a round trip, the open groups are closed
            // so the tail of a transfer, or a pause in a stream, is protected too. Closing
            // at once would cut a paced stream into one-packet groups.
            let ended = self.fin_requested;
            // A stream's interval ends at once when the stream has ended; a pause leaves
            // it open until its deadline, so that its repairs leave apart from its last
            // packet rather than in the same loss burst (docs/design/on-time.md).
            if ended && self.stream.as_ref().is_some_and(|s| s.is_open()) {
                self.close_stream_interval(now);
                return self.poll_window_repair(now).map(Outgoing::WindowRepair);
            }
            if let Some((enc, f)) = self.fec.as_mut() {
                if enc.has_open_group() && ended && f.close_at_stream_end {
                    enc.flush();
                    return self.poll_repair(now).map(Outgoing::Repair);
                }
                if enc.has_open_group() && self.idle_flush_deadline.is_none() {
                    self.idle_flush_deadline = Some(now + self.smoothed_rtt() / 2);
                }
            }
            return None;
        }
        if !(window_open || self.force_probe) {
            self.cwnd_limited = true;
            self.app_limited = false;
            if let Some(r) = self.resume.as_mut() {
                let flight = self.sb.bytes_outstanding() as f64;
                let next = self.sb.rate.next_order();
                let action = r.on_window_full(flight, next);
                self.apply_resume(action);
            }
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
        self.idle_flush_deadline = None;
        let rtt = self.smoothed_rtt();
        if let Some(c) = self.control.as_mut() {
            c.on_send(now, rtt);
        }
        let in_flight = self.in_flight_bytes();
        let seg = self.sb.push(now, payload.clone(), fin, in_flight);
        if fin {
            self.fin_sent = true;
        }
        self.count_sent(payload.len());
        if self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        self.arm_probe(now);
        let cwr = std::mem::take(&mut self.cwr_pending);
        let cwnd = self.cc.cwnd();
        let streaming = self.stream.is_some() && self.app_limited;
        if self.stream.is_some() && !streaming {
            // Bulk data again: the stream's interval ends before the blocks resume.
            self.close_stream_interval(now);
            if let Some(s) = self.stream.as_mut() {
                s.restart();
            }
        }
        let fec = match self.fec.as_mut() {
            Some((enc, _)) if streaming => {
                // A stream's packets are covered by the window code, not by blocks.
                enc.flush();
                None
            }
            Some((enc, _)) if !payload.is_empty() => Some(enc.add(seg, &payload, cwnd)),
            _ => None,
        };
        if streaming {
            let wait = self.stream_wait();
            let longest = self.auto_control().map_or(u32::MAX, |a| a.code().k as u32);
            let s = self.stream.as_mut().expect("streaming");
            if s.on_sent(now, seg, &payload, wait, longest) {
                self.close_stream_interval(now);
            }
        }
        self.arm_block_deadline(now, seg);
        // FEC-aware loss detection (`Scoreboard::mark_lost_by_sack`) for the controllers
        // that model the path; window-only schemes keep RFC 6675's rule (their behaviour
        // is pinned by the regression matrix).
        if let Some(g) = fec.filter(|_| self.models_path) {
            // Until its group closes, its repairs leave at the latest after its last member.
            self.sb.protect(seg, g, g.last() + 1, None);
        }
        Some(Outgoing::Segment(OutSegment {
            seg,
            payload,
            fin,
            cwr,
            fec,
        }))
    }

    /// The time a loss may wait for its repair beyond its own arrival: a quarter of the
    /// smoothed round trip, at least 10 ms.
    pub fn delay_budget(&self) -> Duration {
        (self.smoothed_rtt() / 4).max(Duration::from_millis(10))
    }

    /// How long a stream's packet may wait for its repair: `StreamRepair::wait_share` of
    /// the delay budget (zero without stream repair).
    fn stream_wait(&self) -> Duration {
        let share = self
            .fec
            .as_ref()
            .and_then(|(_, f)| f.stream)
            .map_or(0.0, |s| s.wait_share);
        self.delay_budget().mul_f64(share)
    }

    /// A stream's new block closes when its first member, `seg`, sent at `now`, has
    /// waited [`Sender::stream_wait`] (`StreamCode::Blocks`); a closed block needs no
    /// deadline.
    fn arm_block_deadline(&mut self, now: Instant, seg: u64) {
        let wait = self.stream_wait();
        let Some((enc, f)) = self.fec.as_ref() else {
            return;
        };
        if f.stream.is_none_or(|s| s.code != StreamCode::Blocks) {
            return;
        }
        match enc.open_block_base() {
            None => self.block_deadline = None,
            Some(base) if base == seg && self.app_limited => {
                self.block_deadline = Some(now + wait);
            }
            Some(_) => {}
        }
    }

    /// While the application limits the sender: the packets it sends within the time a
    /// stream's packet waits for its repair (from the latest delivery rate), which bounds
    /// a stream's block (`StreamCode::Blocks`).
    fn stream_block(&self) -> Option<usize> {
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
    fn close_stream_interval(&mut self, now: Instant) {
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
    fn poll_window_repair(&mut self, now: Instant) -> Option<WindowRepair> {
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

    /// Nothing to send, nothing in flight, nothing owed: no data or FIN waiting, no
    /// segment outstanding (so none to retransmit and a pipe of 0), no encoder that
    /// could hold repairs.
    fn idle(&self) -> bool {
        self.unsent_bytes == 0
            && !self.fin_requested
            && !self.force_retransmit
            && !self.force_probe
            && self.sb.outstanding() == 0
            && self.repairs_in_flight.is_empty()
            && self.fec.is_none()
            && self.stream.is_none()
    }

    /// The sender is blocked by a window: if no ACK comes for a while, the open groups will
    /// be closed early (see `FecConfig::flush_at_flight_end`).
    fn arm_flush(&mut self, now: Instant) {
        if let Some((enc, f)) = self.fec.as_ref() {
            if let Some(share) = f.flush_at_flight_end {
                if enc.has_open_group() && self.flush_deadline.is_none() {
                    let rtt = self.rtt.srtt().unwrap_or_else(|| self.rtt.rto());
                    self.flush_deadline = Some(now + rtt.mul_f64(share));
                }
            }
        }
    }

    fn poll_repair(&mut self, now: Instant) -> Option<RepairOut> {
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
        // With FEC the FIN travels alone, on an empty segment that no group protects: a
        // data segment can be rebuilt from a repair, which restores its bytes but not its
        // flags, and the receiver's cumulative ACK would then cover a FIN it never saw —
        // the sender stops resending it and the stream never ends.
        let fin = self.fin_requested
            && self.unsent_bytes == 0
            && !self.fin_sent
            && (payload.is_empty() || self.fec.is_none());
        (payload, fin)
    }

    fn retransmit(&mut self, now: Instant, seg: u64) -> OutSegment {
        let in_flight = self.in_flight_bytes();
        // Measured before this one is marked sent: the retransmissions due from here on,
        // as many as one group holds (only when retransmissions are protected).
        let cwnd = self.cc.cwnd();
        let run = match self.fec.as_ref() {
            Some((enc, f)) if f.protect_retransmissions => {
                self.sb.due_run_from(seg, enc.group_size_at(cwnd) as u64)
            }
            _ => 0,
        };
        // Only a lost segment sent again can be lost again; a tail probe's copy of a
        // segment still in flight is no loss if it goes missing.
        let track = self.sb.on_retransmitted(now, seg, in_flight) && self.rack;
        let s = self.sb.get(seg).expect("retransmission is outstanding");
        let (payload, fin) = (s.payload.clone(), s.fin);
        // `auto` sizes each group of retransmissions to its failure target (none where a
        // loss among them is rarer than that); Sato's schemes give every group the
        // repairs of a block.
        let auto = self.control.as_ref().and_then(|c| c.as_auto());
        let fec = match self.fec.as_mut() {
            Some((enc, f)) if f.protect_retransmissions && !payload.is_empty() => {
                let block_repairs = enc.repairs();
                enc.add_retransmission(seg, &payload, run, cwnd, |n| {
                    auto.map_or(block_repairs, |a| a.retransmission_repairs(n as usize))
                })
            }
            _ => None,
        };
        if track {
            self.retransmitted_order.push_back(RetransmissionSent {
                seg,
                group: fec.map_or(0, |g| g.retransmission_group),
                repairs_order: None,
            });
        }
        let out = OutSegment {
            seg,
            payload,
            fin,
            cwr: false,
            fec,
        };
        self.retransmissions += 1;
        self.trace.push(crate::TraceEvent::Retransmitted {
            seg,
            len: out.payload.len() as u32,
        });
        self.count_sent(out.payload.len());
        // Under a controller that models the path (the BBR schemes, as on Linux) the timer
        // restarts with a retransmission of the first unacknowledged segment: its ACK
        // needs a round trip from now, and a timer left running from the last cumulative
        // ACK fired just before that ACK arrived (`auto`'s start-up with 5 % loss on a
        // 400 ms path: the loss was found 0.2 s after the last cumulative ACK, and the
        // 0.6 s timer went off 2 ms before the retransmission's ACK and resent the whole
        // flight). Window-only schemes keep the timer their reproductions were made with.
        let restart = self.models_path && seg == self.sb.una();
        if self.rto_deadline.is_none() || restart {
            self.arm_rto(now);
        }
        out
    }

    fn count_sent(&mut self, len: usize) {
        self.data_packets_sent += 1;
        self.payload_bytes_sent += len as u64;
    }

    /// Careful Resume's reconnaissance ends with the first RTT sample (the handshake's,
    /// or the first ACK's): the resume jumps if the sample confirms the saved path.
    fn confirm_resume(&mut self, now: Instant) {
        let Some(r) = self.resume.as_mut().filter(|r| r.awaits_rtt()) else {
            return;
        };
        let Some(rtt) = self.rtt.latest() else {
            return;
        };
        let flight = self.sb.bytes_outstanding() as f64;
        let cwnd = self.cc.cwnd() * self.mss as f64;
        let next = self.sb.rate.next_order();
        r.confirm(now, rtt, flight, next, self.sb.rate.lost(), cwnd);
    }

    /// Feeds one ACK to Careful Resume: `delivered_before` is the delivery count before
    /// the ACK, `rtt` its sample.
    fn resume_on_ack(&mut self, now: Instant, delivered_before: u64, rtt: Option<Duration>) {
        let Some(r) = self.resume.as_mut().filter(|r| r.wants_acks()) else {
            return;
        };
        let acked = self.sb.rate.delivered() - delivered_before;
        let flight = self.sb.bytes_outstanding() as f64;
        let (newest, lost) = (self.sb.newest_delivered(), self.sb.rate.lost());
        let next = self.sb.rate.next_order();
        let action = r.on_ack(now, acked, newest, rtt, lost, flight, next);
        self.apply_resume(action);
    }

    /// Hands what Careful Resume decided to the congestion controller. Window and
    /// threshold arithmetic is for window rules only: a controller that models the path
    /// keeps its own (BBR ignores `set_cwnd` and leaves Startup on a retreat).
    fn apply_resume(&mut self, action: ResumeAction) {
        let mss = self.mss as f64;
        let window_rule = !self.models_path;
        match action {
            ResumeAction::None => {}
            ResumeAction::Settle { cwnd_bytes } => {
                let w = self.cc.cwnd().max(cwnd_bytes / mss);
                self.cc.set_cwnd(w);
            }
            ResumeAction::Retreat => self.cc.leave_startup(),
            ResumeAction::EndSlowStart => {
                let cwnd = self.cc.cwnd();
                if window_rule && cwnd < self.cc.ssthresh() {
                    self.cc.window_mut().ssthresh = cwnd.max(2.0);
                }
            }
            ResumeAction::EndRetreat { window_bytes } if window_rule => {
                self.cc.set_window_and_threshold(window_bytes / mss);
            }
            ResumeAction::EndRetreat { .. } => {}
        }
    }

    /// Where Careful Resume is (`Off` without a saved path).
    pub fn resume_status(&self) -> ResumeStatus {
        self.resume
            .as_ref()
            .map_or(ResumeStatus::Off, |r| r.status())
    }

    /// The path as this connection saw it, for the next connection to the same peer to
    /// resume from: the highest delivery rate the application did not limit, and the
    /// minimum RTT. `None` before both are known, or when half the capacity would not
    /// exceed two initial windows (RFC 9959 §4.1 lets a sender skip saving below four).
    pub fn path_observation(&self, initial_window: u32) -> Option<SavedPath> {
        let min_rtt = self.rtt.min_rtt()?;
        let saved = SavedPath {
            rate: self.max_rate,
            min_rtt,
        };
        let least = 4.0 * initial_window.max(1) as f64 * self.mss as f64;
        (saved.bdp_bytes() >= least).then_some(saved)
    }

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
        if let Some(fb) = a.fec_feedback {
            self.on_fec_feedback(now, fb);
        }
        self.peer_window = a.window;
        if self.sack {
            self.sb.apply_sack(now, a.sack);
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
        if self.sack && !self.in_recovery && self.sb.una_is_lost() && self.may_enter_recovery() {
            self.enter_recovery(now);
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

    fn on_new_ack(&mut self, now: Instant, a: &AckInfo<'_>) {
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
                self.cc.on_recovery_end(self.sb.outstanding());
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
        } else if self.byte_counting {
            for _ in 0..acked {
                self.cc.on_ack(now, 1, self.rtt.srtt());
            }
        } else {
            self.cc.on_ack(now, acked, self.rtt.srtt());
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

    fn on_dup_ack(&mut self, now: Instant) {
        self.dupacks += 1;
        self.dup_acks_received += 1;
        if self.in_recovery {
            if matches!(self.recovery, Recovery::Reno | Recovery::NewReno) {
                let w = self.cc.cwnd() + 1.0; // window inflation
                self.cc.set_cwnd(w);
            }
        } else if self.dupacks == self.dupthresh
            && self.may_enter_recovery()
            && !self.sb.una_awaits_window_repairs(self.dupthresh as usize)
        {
            self.enter_recovery(now);
        }
    }

    fn may_enter_recovery(&self) -> bool {
        // After a loss episode or RTO, only data sent after it may trigger a new one.
        self.recover.is_none_or(|r| self.sb.una() > r)
    }

    fn enter_recovery(&mut self, now: Instant) {
        self.fast_recoveries += 1;
        self.on_unrepaired_loss(now);
        self.recover = Some(self.sb.nxt() - 1);
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
            }
        }
    }

    /// The multiplicative decrease of a loss episode. If an ECN reduction already cut the
    /// window within this window of data, the two together reduce no further than the
    /// loss alone would have from the window before it (RFC 3168 §6.1.2): a Sato ECN
    /// reduction by r = 0.7 followed by a loss ends at 0.5 of the earlier window, not at
    /// 0.35.
    fn reduce_for_loss(&mut self, now: Instant) {
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
    fn flight_for_reduction(&self) -> u64 {
        self.flight_within(self.cc.cwnd())
    }

    /// The data outstanding, at most `window` segments (at least one).
    fn flight_within(&self, window: f64) -> u64 {
        (self.sb.outstanding() as u64).min(window.floor().max(1.0) as u64)
    }

    fn on_ece(&mut self, now: Instant) {
        if self.models_path {
            return; // BBR's ECN response is not modelled (docs/design/bbr.md)
        }
        let factor = self.fec.as_ref().and_then(|(_, f)| f.ecn_factor);
        self.reduce_once_per_window(now, factor);
    }

    /// The receiver's FEC counters arrived: the adaptive controller reacts (TCP-dFEC's
    /// cwnd rules and ratio, TCP-TFEC's loss estimate).
    fn on_fec_feedback(&mut self, now: Instant, fb: FecFeedback) {
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
        let Some(c) = self.control.as_mut() else {
            return;
        };
        let r = c.on_feedback(now, fb, d, totals, in_recovery);
        let congestion_lost = c.as_auto().map(|a| a.congestion_lost);
        self.feed_congestion_cap(now);
        if let Some(packets) = congestion_lost {
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

    /// Passes the receiver's latest congestion report to `auto`'s cap, if it has one.
    fn feed_congestion_cap(&mut self, now: Instant) {
        if self.congestion_cap.is_none() {
            return;
        }
        let auto = self.control.as_ref().and_then(|c| c.as_auto());
        let Some(((lost, packets), est)) = auto.map(|a| (a.last_congestion, a.estimate())) else {
            return;
        };
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
    fn on_congestion_losses_reported(&mut self, now: Instant, packets: u64) {
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
    fn on_unrepaired_loss(&mut self, now: Instant) {
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
    fn target_window(&self) -> Option<f64> {
        let r = self.target_rate_bps?;
        let rtt = self.rtt.mean().or(self.rtt.srtt())?;
        Some(r as f64 * rtt.as_secs_f64() / (8.0 * self.mss as f64))
    }

    /// A repair has left the network once a segment sent after it has been delivered
    /// (the path does not reorder; RACK's rule): it is counted as delivered then, not when
    /// the cumulative ACK passes its group. That ACK waits for the oldest hole, which may
    /// wait for a retransmission, and would credit a round trip's worth of repairs at once,
    /// a rate sample far above the path's. Whether the repair arrived or was lost, the
    /// sender cannot tell (the receiver does not acknowledge repairs); counting it
    /// delivered is the same view as counting a segment FEC rebuilt.
    fn repairs_leave(&mut self, now: Instant) {
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

    /// A retransmission is lost when a segment sent after it has been delivered (the
    /// time-based rule of RACK, RFC 8985, for retransmissions). Without it, a lost retransmission waits for the RTO, and a paced
    /// controller with a large window on a lossy path would meet one every few rounds.
    fn detect_lost_retransmissions(&mut self, now: Instant) {
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
    fn reduce_once_per_window(&mut self, now: Instant, factor: Option<f64>) {
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
        self.dupacks = 0;
        self.recover = Some(self.sb.nxt() - 1);
        self.arm_rto(now);
    }
}

#[cfg(test)]
mod congestion_report_tests {
    use super::*;
    use crate::wire::LossCounters;
    use crate::Scheme;

    /// A sender of `scheme` with a first flight out.
    fn sender(scheme: &str) -> Sender {
        let cfg = Config {
            scheme: Scheme::parse(scheme).unwrap(),
            initial_window: 10,
            ..Config::default()
        };
        let mut s = Sender::new(&cfg);
        s.write(Bytes::from(vec![0u8; 200_000]));
        // A paced sender needs time between packets.
        for ms in 0..100 {
            while s.poll(Instant::from_nanos(ms * 1_000_000)).is_some() {}
        }
        assert!(s.nxt() >= 4, "the first flight went out");
        s
    }

    /// A pure cumulative ACK of `ack` at `at`, with ECN-Echo and receiver counters as given.
    fn ack_with(
        s: &mut Sender,
        at: Instant,
        ack: u64,
        ece: bool,
        fec_feedback: Option<FecFeedback>,
    ) {
        s.on_ack(
            at,
            &AckInfo {
                ack,
                window: u32::MAX,
                ts_ecr: 0,
                sack: &[],
                ece,
                pure: true,
                fec_feedback,
            },
        );
    }

    /// An ACK of segment `ack` carrying receiver counters with `congestion_lost`.
    fn ack(s: &mut Sender, ack: u64, received: u32, congestion_lost: u32) {
        let at = Instant::from_nanos(100_000_000 + ack * 1_000_000);
        let counters = FecFeedback {
            received,
            loss: Some(LossCounters {
                congestion_lost,
                ..LossCounters::default()
            }),
            ..FecFeedback::default()
        };
        ack_with(s, at, ack, false, Some(counters));
    }

    /// Full segments the rate samples count as lost.
    fn declared_lost(s: &Sender) -> u64 {
        s.sb.rate.lost() / s.mss as u64
    }

    /// A plain cumulative ACK of `ack` at `at`, with or without ECN-Echo; nothing polled.
    fn ack_only(s: &mut Sender, at: Instant, ack: u64, ece: bool) {
        ack_with(s, at, ack, ece, None);
    }

    /// [`ack_only`], then everything the sender will send at `at`.
    fn plain_ack(s: &mut Sender, at: Instant, ack: u64, ece: bool) {
        ack_only(s, at, ack, ece);
        while s.poll(at).is_some() {}
    }

    #[test]
    fn an_ecn_reduction_and_a_loss_in_one_window_reduce_once() {
        // Sato's interleaved FEC with r = 0.7 on NewReno: a recovered loss (ECN-Echo) cuts
        // cwnd to 0.7 W; a loss in the same window then asks for 0.5 W. Together they
        // must end at 0.5 W (RFC 3168 §6.1.2), not at 0.7 · 0.5 W = 0.35 W.
        let mut s = sender("fec-il-g1-l30-r0.7");
        let at = Instant::from_nanos(200_000_000);
        for a in 1..=6 {
            plain_ack(&mut s, at, a, false);
        }
        let w = s.cc.cwnd();
        plain_ack(&mut s, at, 7, true);
        let after_ecn = s.cc.cwnd();
        assert!(
            (after_ecn - 0.7 * (w + 1.0)).abs() < 1.0,
            "{w} -> {after_ecn}"
        );
        for _ in 0..3 {
            plain_ack(&mut s, at, 7, false);
        }
        assert_eq!(s.fast_recoveries, 1);
        let ss = s.cc.ssthresh();
        assert!(
            ss >= 0.5 * w - 1.0 && ss <= after_ecn,
            "W {w}, after ECN {after_ecn}, after the loss ssthresh {ss}"
        );
    }

    #[test]
    fn a_sato_retransmission_is_protected_by_a_repair_of_its_own() {
        // Sato §3.2: retransmissions are handled like originals, recoverable by a repair.
        let mut s = sender("fec-il-g1-l30-r0.7");
        let at = Instant::from_nanos(200_000_000);
        for _ in 0..4 {
            ack_only(&mut s, at, 3, false);
        }
        assert_eq!(s.fast_recoveries, 1);
        let Some(Outgoing::Segment(rtx)) = s.poll(at) else {
            panic!("the fast retransmission goes first")
        };
        assert_eq!(rtx.seg, 3);
        let g = rtx.fec.expect("the retransmission joins a group");
        assert_eq!((g.first, g.count, g.retransmission_group), (3, 1, 1));
        // NewReno marks one segment at a time: the group is complete, its repair next.
        let Some(Outgoing::Repair(r)) = s.poll(at) else {
            panic!("the retransmission's repair follows it")
        };
        assert_eq!(r.group, g);
        // Without the protection (TCP-dFEC here) a retransmission joins no group.
        let mut s = sender("dfec");
        for _ in 0..4 {
            ack_only(&mut s, at, 3, false);
        }
        let rtx = std::iter::from_fn(|| s.poll(at)).find_map(|o| match o {
            Outgoing::Segment(x) if x.seg == 3 => Some(x),
            _ => None,
        });
        assert!(rtx.is_some_and(|x| x.fec.is_none()));
    }

    #[test]
    fn repaired_congestion_losses_reach_the_rate_samples() {
        let mut s = sender("auto");
        ack(&mut s, 1, 1, 0); // the baseline report
        assert_eq!(s.sb.rate.lost(), 0);
        ack(&mut s, 2, 2, 3);
        assert_eq!(declared_lost(&s), 3);
        // The same total again declares nothing more.
        ack(&mut s, 3, 3, 3);
        assert_eq!(declared_lost(&s), 3);
    }

    #[test]
    fn losses_the_sender_declared_itself_are_not_counted_twice() {
        let mut s = sender("auto");
        ack(&mut s, 1, 1, 0);
        s.sb.rate.on_lost(5 * s.mss as u64); // SACK had declared five
        ack(&mut s, 2, 2, 4);
        assert_eq!(declared_lost(&s), 5);
        ack(&mut s, 3, 3, 7);
        assert_eq!(declared_lost(&s), 7);
    }

    #[test]
    fn a_window_controller_backs_off_once_for_repaired_congestion_losses() {
        let mut s = sender("auto-cubic");
        ack(&mut s, 1, 1, 0);
        let before = s.cc.cwnd();
        ack(&mut s, 2, 2, 2);
        let after = s.cc.cwnd();
        assert!(after < before, "{before} -> {after}");
        // More in the same window: no second reduction.
        ack(&mut s, 3, 3, 4);
        assert!(s.cc.cwnd() >= after, "{after} -> {}", s.cc.cwnd());
    }
}
