//! The sending half of a connection, one struct whose methods are split by concern:
//!
//! | module | concern |
//! |---|---|
//! | this one | the state, construction, the application's side (write, finish) and `poll` |
//! | [`transmit`] | transmission scheduling: window and pacing, new data, retransmissions |
//! | [`recovery`] | ACK processing, loss detection and recovery, congestion responses |
//! | [`fec_out`] | FEC emission: repair timing, stream repairs, adaptive feedback |
//! | [`timers`] | retransmission timeout, tail loss and persist probes, the next deadline |
//! | [`careful_resume`] | confirming a saved path, the jump and the retreat |
//!
//! Loss recovery follows Tahoe, Reno, NewReno and SACK on top of a window-growth rule
//! (`crate::cc`); the state the modules share is `Sender`'s fields.

use crate::cc::hystart_pp::HyStartPlusPlus;
use crate::cc::{CongestionCap, CongestionControl};
use crate::config::{Config, Recovery};
use crate::fec::window::WindowRepair;
use crate::fec::{Adaptive, Controller, Encoder, FecConfig, RepairOut, StreamCode, StreamRepairs};
use crate::resume::CarefulResume;
use crate::rtt::RttEstimator;
use crate::scoreboard::Scoreboard;
use crate::time::{duration_from_secs, Instant};
use crate::tlp::TailLossProbe;
use crate::wire::{FecFeedback, FecGroup, SackBlock};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

mod careful_resume;
mod fec_out;
mod first_slow_start;
mod prr;
mod recovery;
mod timers;
mod transmit;

#[cfg(test)]
mod tests;

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
    /// `Config::send_buffer_max`: the most the send buffer grows to with the window.
    send_buffer_max: usize,
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
    /// HyStart++ on a window rule's first slow start (`Config::hystart_pp`).
    hystart_pp: Option<HyStartPlusPlus>,
    /// `Config::prr`: SACK recovery sends by Proportional Rate Reduction.
    prr_enabled: bool,
    /// The reduction in progress, while in SACK recovery with PRR.
    prr: Option<prr::Prr>,
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
        let mut cc = match &cfg.congestion {
            Some(own) => own.build(cfg),
            None => cfg
                .scheme
                .cc
                .build(cfg.initial_window, cfg.mss, cfg.cc_seed),
        };
        if cfg.scheme.fec.is_some_and(|f| f.stream.is_some()) {
            cc.spare_app_limited_flows();
        }
        if cfg.hystart {
            cc.enable_hystart(cfg.paced_windows);
        }
        let rto_floor = rto_variance_floor(cfg, cc.as_ref());
        let event_driven = cc.wants_ack_events();
        // A window controller already reduces for the congestion losses reported.
        let models_path = cc.models_path();
        let auto = match cfg.scheme.fec.and_then(|f| f.adaptive) {
            Some(Adaptive::Auto(p)) => Some(p),
            _ => None,
        };
        if auto.is_some() {
            cc.confirm_min_rtt_near_it();
        }
        let congestion_cap = auto
            .is_some_and(|p| p.yield_to_congestion)
            .then(CongestionCap::default)
            .filter(|_| models_path);
        if congestion_cap.is_some() {
            cc.leave_headroom_to_cap();
        }
        Sender {
            sb: Scoreboard::default(),
            unsent: VecDeque::new(),
            unsent_bytes: 0,
            fin_requested: false,
            fin_sent: false,
            mss: cfg.mss.max(1) as usize,
            send_buffer: cfg.send_buffer,
            send_buffer_max: cfg.send_buffer_max,
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
            hystart_pp: (cfg.hystart_pp && !models_path && cfg.resume.is_none())
                .then(HyStartPlusPlus::default),
            prr_enabled: cfg.prr,
            prr: None,
            hold_on_repeated_timeout: cfg.hold_on_repeated_timeout,
            trace: crate::trace::TraceLog::new(cfg.trace),
            rtt_this_ack: None,
            retransmitted_order: VecDeque::new(),
            tlp: cfg.scheme.tail_loss_probe.then(TailLossProbe::default),
            congestion_cap,
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
        let window = (2.0 * self.cc.cwnd() * self.mss as f64) as usize;
        let buffer = self.send_buffer.max(window.min(self.send_buffer_max));
        buffer.saturating_sub(self.unsent_bytes + self.sb.bytes_outstanding())
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

    /// Smoothed RTT, or the initial RTO before the first sample.
    fn smoothed_rtt(&self) -> Duration {
        self.rtt.srtt().unwrap_or_else(|| self.rtt.rto())
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
        let gap = duration_from_secs(len as f64 / rate.max(1.0));
        let earliest = Instant::from_nanos(now.as_nanos().saturating_sub(SEND_QUANTUM_NS));
        self.next_send = self.next_send.max(earliest) + gap;
        Some(out)
    }
}
