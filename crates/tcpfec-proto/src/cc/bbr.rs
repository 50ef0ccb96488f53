//! BBR version 3, after draft-ietf-ccwg-bbr-02 (docs/design/bbr.md lists every deviation).
//!
//! BBR models the path with two numbers, the bottleneck bandwidth (the maximum recent
//! delivery rate) and the minimum round-trip time, and sends at a pacing rate of
//! `pacing_gain · bw` with at most `cwnd_gain · bw · min_rtt` in flight. It probes for
//! more bandwidth in a cycle (ProbeBW: Down, Cruise, Refill, Up) and for a lower RTT every
//! 5 s (ProbeRTT). Loss is not read as congestion by itself: only a loss rate above 2 %
//! while probing caps the in-flight volume (`inflight_hi`), and losses in a round lower
//! short-term bounds (`bw_lo`, `inflight_lo`) that the next probe lifts again.
//!
//! Volumes are payload bytes, rates bytes per second; the window is reported to the
//! sender in segments.

use super::aggregation::AckAggregation;
use super::filter::MaxFilter;
use super::recovery::RecoveryState;
use super::{AckEvent, CongestionControl, Window};
use crate::rate::RateSample;
use crate::time::Instant;
use core::time::Duration;

const STARTUP_PACING_GAIN: f64 = 2.77; // 4 ln 2
const STARTUP_CWND_GAIN: f64 = 2.0;
const DRAIN_PACING_GAIN: f64 = 0.35;
const PROBE_BW_CWND_GAIN: f64 = 2.0;
const PROBE_UP_CWND_GAIN: f64 = 2.25;
const DOWN_PACING_GAIN: f64 = 0.90;
const UP_PACING_GAIN: f64 = 1.25;
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Loss rate of a probe above which its in-flight volume is too high.
const LOSS_THRESH: f64 = 0.02;
/// Multiplicative decrease of the bounds on congestion.
const BETA: f64 = 0.7;
/// Share of `inflight_hi` left free for other flows while cruising.
const HEADROOM: f64 = 0.15;
/// Fewest packets in flight (so delayed ACKs keep flowing).
const MIN_PIPE_CWND_PACKETS: f64 = 4.0;
/// A probe ends Startup when bandwidth grew less than this in 3 rounds.
const FULL_BW_GROWTH: f64 = 1.25;
const FULL_BW_ROUNDS: u32 = 3;
/// Startup also ends after this many loss events in a round with a high loss rate.
const STARTUP_FULL_LOSS_CNT: u32 = 6;
/// When a start-up followed a validated Careful Resume jump, loss lowers neither `bw_lo`
/// nor `inflight_lo` in Drain and in this many loss rounds after it: the last packets
/// sent in Startup leave the queue as Drain ends, and their losses are found in the next
/// round or, when a repair was awaited, in the one after.
const JUMP_STARTUP_LOSS_ROUNDS: u32 = 2;
const MIN_RTT_FILTER: Duration = Duration::from_secs(10);
const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// A sample within 1/32 of the minimum round trip confirms it
/// (`CongestionControl::confirm_min_rtt_near_it`).
const MIN_RTT_CONFIRM_DIVISOR: u32 = 32;
/// Pacing runs this much below the estimated bandwidth, to drain queues it built.
const PACING_MARGIN: f64 = 0.01;
/// Startup's flights leave as a slow start's do, at the initial guess's pace (in effect
/// unpaced), until the window exceeds this many initial windows: a short transfer's
/// whole life, and bursts any queue sized for TCP holds.
const UNSPREAD_INITIAL_WINDOWS: f64 = 4.0;
/// Past them a Startup flight leaves over at most `1 / STARTUP_SPREAD_GAIN` of the
/// minimum round trip (and never slower than `STARTUP_PACING_GAIN` times the estimated
/// bandwidth): a sender whose own link outruns the bottleneck otherwise sends each
/// flight as one burst, which overflows a queue far below the BDP long before the
/// start-up fills the path.
const STARTUP_SPREAD_GAIN: f64 = 2.0;
/// Longest wait, in rounds, between bandwidth probes (Reno coexistence bound).
const MAX_PROBE_ROUNDS: u64 = 63;

/// Where the state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrState {
    /// Doubling the sending rate every round until bandwidth stops growing.
    Startup,
    /// Emptying the queue Startup built.
    Drain,
    /// Sending below the estimate to drain any queue, after a probe.
    ProbeBwDown,
    /// Sending at the estimate, with headroom for other flows.
    ProbeBwCruise,
    /// Filling the pipe at the estimate before probing.
    ProbeBwRefill,
    /// Sending above the estimate to find more bandwidth.
    ProbeBwUp,
    /// Cutting the flight to half a BDP to measure the path's minimum RTT.
    ProbeRtt,
}

/// Which feedback the ACKs of the current probe carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStopping,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
}

/// How Startup paces its flights ([`UNSPREAD_INITIAL_WINDOWS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartupPacing {
    /// At the initial guess, until the window outgrows four initial windows.
    Guess,
    /// Each flight spread over at most half the minimum round trip.
    Spread,
    /// At the initial guess to the end: the start-up follows a Careful Resume jump.
    GuessAfterJump,
}

/// BBRv3 congestion control.
#[derive(Debug, Clone)]
pub struct Bbr {
    w: Window,
    mss: f64,
    initial_cwnd: f64,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: f64,
    startup_pacing: StartupPacing,
    cwnd: f64,
    // Model.
    max_bw_filter: MaxFilter<2>,
    cycle_count: u64,
    max_bw: f64,
    bw_lo: f64,
    bw: f64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Instant,
    probe_rtt_expired: bool,
    inflight_hi: f64,
    /// The channel's loss rate, not counted as too much in flight in Startup (0 unless
    /// told).
    channel_loss: f64,
    /// Loss rounds after Drain in which loss does not lower the lower bounds: set to
    /// [`JUMP_STARTUP_LOSS_ROUNDS`] when a jump is validated during Startup, counted
    /// down only once Startup and Drain are over.
    startup_loss_rounds: u32,
    inflight_lo: f64,
    bw_latest: f64,
    inflight_latest: f64,
    aggregation: AckAggregation,
    // Rounds.
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    // Startup.
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    // ProbeBW.
    ack_phase: AckPhase,
    cycle_stamp: Instant,
    rounds_since_bw_probe: u64,
    bw_probe_wait: Duration,
    bw_probe_samples: bool,
    probe_up_cnt: f64,
    bw_probe_up_acks: f64,
    bw_probe_up_rounds: u32,
    // Congestion signals of the current loss round.
    loss_in_round: bool,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_events_in_round: u32,
    // ProbeRTT.
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Skip ProbeRTT while the application limits the sender
    /// (`CongestionControl::spare_app_limited_flows`).
    spare_app_limited: bool,
    /// A sample near the minimum round trip postpones ProbeRTT
    /// (`CongestionControl::confirm_min_rtt_near_it`).
    confirm_min_rtt_near_it: bool,
    /// Share of `inflight_hi` left free while cruising ([`HEADROOM`], or none under a
    /// congestion cap: `CongestionControl::leave_headroom_to_cap`).
    headroom: f64,
    prior_cwnd: f64,
    recovery: RecoveryState,
    rng: u64,
}

impl Bbr {
    /// A BBR flow with `initial_window` segments of `mss` payload bytes; `seed` spreads the
    /// random probe timing of flows sharing a bottleneck.
    pub fn new(initial_window: u32, mss: u16, seed: u64) -> Self {
        let mss = mss.max(1) as f64;
        let initial_cwnd = initial_window.max(1) as f64 * mss;
        let mut b = Bbr {
            w: Window::initial(initial_window),
            mss,
            initial_cwnd,
            state: BbrState::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            pacing_rate: 0.0,
            startup_pacing: StartupPacing::Guess,
            cwnd: initial_cwnd,
            max_bw_filter: MaxFilter::new(),
            cycle_count: 0,
            max_bw: 0.0,
            bw_lo: f64::INFINITY,
            bw: 0.0,
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: Instant::ZERO,
            probe_rtt_expired: false,
            inflight_hi: f64::INFINITY,
            channel_loss: 0.0,
            startup_loss_rounds: 0,
            inflight_lo: f64::INFINITY,
            bw_latest: 0.0,
            inflight_latest: 0.0,
            aggregation: AckAggregation::new(),
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            ack_phase: AckPhase::Init,
            cycle_stamp: Instant::ZERO,
            rounds_since_bw_probe: 0,
            bw_probe_wait: Duration::ZERO,
            bw_probe_samples: false,
            probe_up_cnt: f64::INFINITY,
            bw_probe_up_acks: 0.0,
            bw_probe_up_rounds: 0,
            loss_in_round: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            loss_events_in_round: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            spare_app_limited: false,
            confirm_min_rtt_near_it: false,
            headroom: HEADROOM,
            prior_cwnd: 0.0,
            recovery: RecoveryState::default(),
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
        };
        // Before any RTT sample: the initial window per millisecond, times the gain.
        b.pacing_rate = STARTUP_PACING_GAIN * initial_cwnd / 1e-3;
        b.publish();
        b
    }

    /// The state machine's current state.
    pub fn state(&self) -> BbrState {
        self.state
    }

    /// The bandwidth estimate used for pacing, bytes per second.
    pub fn bw(&self) -> f64 {
        self.bw
    }

    /// The minimum RTT estimate.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The upper bound on in-flight bytes learned from loss (infinite until one).
    pub fn inflight_hi(&self) -> f64 {
        self.inflight_hi
    }

    fn random_unit(&mut self) -> f64 {
        // xorshift64*: deterministic per seed, as the simulator requires.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Copies the byte-based cwnd into the segment window the sender reads.
    fn publish(&mut self) {
        self.w.cwnd = (self.cwnd / self.mss).max(1.0);
        self.w.ssthresh = if self.state == BbrState::Startup {
            f64::MAX
        } else {
            self.w.cwnd
        };
    }

    fn min_pipe_cwnd(&self) -> f64 {
        MIN_PIPE_CWND_PACKETS * self.mss
    }

    fn is_in_probe_bw(&self) -> bool {
        matches!(
            self.state,
            BbrState::ProbeBwDown
                | BbrState::ProbeBwCruise
                | BbrState::ProbeBwRefill
                | BbrState::ProbeBwUp
        )
    }

    fn is_probing_bw(&self) -> bool {
        matches!(
            self.state,
            BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp
        )
    }

    fn set_state(&mut self, s: BbrState) {
        self.state = s;
        let (p, c) = match s {
            BbrState::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            BbrState::Drain => (DRAIN_PACING_GAIN, STARTUP_CWND_GAIN),
            BbrState::ProbeBwDown => (DOWN_PACING_GAIN, PROBE_BW_CWND_GAIN),
            BbrState::ProbeBwCruise | BbrState::ProbeBwRefill => (1.0, PROBE_BW_CWND_GAIN),
            BbrState::ProbeBwUp => (UP_PACING_GAIN, PROBE_UP_CWND_GAIN),
            BbrState::ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    // ----- rounds and the bandwidth model -----

    fn start_round(&mut self, delivered: u64) {
        self.next_round_delivered = delivered;
    }

    fn update_round(&mut self, rs: &RateSample, delivered: u64) {
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round(delivered);
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.round_start = true;
        } else {
            self.round_start = false;
        }
    }

    fn update_max_bw(&mut self, rs: &RateSample, delivered: u64) {
        self.update_round(rs, delivered);
        if rs.rate >= self.max_bw || !rs.app_limited {
            self.max_bw = self.max_bw_filter.update(self.cycle_count, rs.rate);
        }
    }

    fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        self.max_bw = self.max_bw_filter.get(self.cycle_count);
    }

    fn bdp_multiple(&self, gain: f64) -> f64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(r) => gain * self.bw * r.as_secs_f64(),
        }
    }

    fn quantization_budget(&self, inflight: f64) -> f64 {
        let mut v = inflight.max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            v += 2.0 * self.mss;
        }
        v
    }

    fn inflight(&self, gain: f64) -> f64 {
        self.quantization_budget(self.bdp_multiple(gain))
    }

    fn target_inflight(&self) -> f64 {
        self.bdp_multiple(1.0).min(self.cwnd)
    }

    fn inflight_with_headroom(&self) -> f64 {
        if self.inflight_hi.is_infinite() {
            return f64::INFINITY;
        }
        let headroom = self.mss.max(self.headroom * self.inflight_hi);
        (self.inflight_hi - headroom).max(self.min_pipe_cwnd())
    }

    // ----- congestion signals (lower bounds) -----

    fn update_latest_delivery_signals(&mut self, rs: &RateSample, delivered: u64) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered as f64);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = delivered;
            self.loss_round_start = true;
        }
    }

    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.rate;
            self.inflight_latest = rs.delivered as f64;
        }
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_events_in_round = 0;
        self.bw_latest = 0.0;
        self.inflight_latest = 0.0;
    }

    fn update_congestion_signals(&mut self, rs: &RateSample, ev: &AckEvent) {
        self.update_max_bw(rs, ev.delivered);
        if ev.newly_lost > 0 {
            self.loss_in_round = true;
            self.loss_events_in_round += 1;
        }
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds_from_congestion();
        self.loss_in_round = false;
        self.loss_events_in_round = 0;
    }

    /// At the start of a loss round: a round with loss lowers `bw_lo` and `inflight_lo`,
    /// except during ProbeBW's probes and in the rounds that carry a start-up's losses
    /// after a validated jump (Drain and the [`JUMP_STARTUP_LOSS_ROUNDS`] after it). That
    /// start-up ran from a rate the jump had just shown the path to carry, and Startup's
    /// end and Drain answer its overshoot. Cut again, the bounds held a resumed 10 MB
    /// transfer at 0.7 of a 50 Mb/s, RTT 200 ms path with 1 % loss until the next
    /// Refill, the rest of the transfer (docs/design/fast-start.md).
    fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.startup_loss_rounds > 0 {
            if !matches!(self.state, BbrState::Startup | BbrState::Drain) {
                self.startup_loss_rounds -= 1;
            }
            return;
        }
        if self.is_probing_bw() || !self.loss_in_round {
            return;
        }
        if self.bw_lo.is_infinite() {
            self.bw_lo = self.max_bw;
        }
        if self.inflight_lo.is_infinite() {
            self.inflight_lo = self.cwnd;
        }
        self.bw_lo = self.bw_latest.max(BETA * self.bw_lo);
        self.inflight_lo = self.inflight_latest.max(BETA * self.inflight_lo);
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = f64::INFINITY;
    }

    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_lo);
    }

    // ----- upper bound (inflight_hi) -----

    /// A sample lost more than [`LOSS_THRESH`] of its flight. In Startup, loss the
    /// channel alone explains does not count (`CongestionControl::set_channel_loss`,
    /// told only after a Careful Resume jump): the jump goes out under `auto`'s probe
    /// code, sized before the channel was measured, so part of a lossy channel's losses
    /// reach BBR unrepaired. Read as a full queue, they ended the start-up on a path
    /// losing 10 % with an `inflight_hi` a fifth of the BDP until the next probe, seconds
    /// later. In ProbeBW the code fits the channel, and a probe's loss above 2 % is
    /// mostly the queue's.
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        let channel = if self.state == BbrState::Startup {
            self.channel_loss
        } else {
            0.0
        };
        rs.lost as f64 > rs.tx_in_flight as f64 * (LOSS_THRESH + channel)
    }

    fn handle_inflight_too_high(&mut self, rs: &RateSample, now: Instant, delivered: u64) {
        self.bw_probe_samples = false;
        if !rs.app_limited {
            self.inflight_hi = (rs.tx_in_flight as f64).max(self.target_inflight() * BETA);
        }
        if self.state == BbrState::ProbeBwUp {
            self.start_probe_bw_down(now, delivered);
        }
    }

    fn check_inflight_too_high(&mut self, rs: &RateSample, now: Instant, delivered: u64) -> bool {
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(rs, now, delivered);
            }
            return true;
        }
        false
    }

    fn raise_inflight_hi_slope(&mut self) {
        let growth = self.mss * (1u64 << self.bw_probe_up_rounds) as f64;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_cnt = (self.cwnd / growth).max(1.0);
    }

    fn probe_inflight_hi_upward(&mut self, rs: &RateSample, cwnd_limited: bool) {
        if !cwnd_limited || self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.newly_acked as f64 / self.mss;
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = (self.bw_probe_up_acks / self.probe_up_cnt).floor();
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_hi += delta * self.mss;
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    fn adapt_upper_bounds(&mut self, rs: &RateSample, ev: &AckEvent, now: Instant) {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            // The ACKs of the probe's own packets start now.
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's samples are all in: forget the cycle before last, once per
            // cycle.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.is_in_probe_bw() && !rs.app_limited {
                self.advance_max_bw_filter();
            }
        }
        if !self.check_inflight_too_high(rs, now, ev.delivered) {
            if self.inflight_hi.is_infinite() {
                return;
            }
            if rs.tx_in_flight as f64 > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight as f64;
            }
            if self.state == BbrState::ProbeBwUp {
                self.probe_inflight_hi_upward(rs, ev.cwnd_limited);
            }
        }
    }

    // ----- Startup and Drain -----

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || rs.app_limited {
            return;
        }
        if rs.rate >= self.full_bw * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = rs.rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_ROUNDS;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if self.full_bw_reached || self.state != BbrState::Startup {
            return;
        }
        if self.recovery.in_recovery
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_CNT
            && self.is_inflight_too_high(rs)
        {
            self.full_bw_reached = true;
            self.inflight_hi = self.bdp_multiple(1.0).max(self.inflight_latest);
        }
    }

    fn check_startup_done(&mut self, rs: &RateSample) {
        self.check_startup_high_loss(rs);
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.set_state(BbrState::Drain);
        }
    }

    fn check_drain_done(&mut self, ev: &AckEvent, now: Instant) {
        if self.state == BbrState::Drain && ev.inflight as f64 <= self.inflight(1.0) {
            self.start_probe_bw_down(now, ev.delivered);
        }
    }

    // ----- ProbeBW -----

    fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = (self.random_unit() * 2.0) as u64; // 0 or 1
        self.bw_probe_wait = Duration::from_secs_f64(2.0 + self.random_unit());
    }

    fn start_probe_bw_down(&mut self, now: Instant, delivered: u64) {
        self.reset_congestion_signals();
        self.probe_up_cnt = f64::INFINITY;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(delivered);
        self.set_state(BbrState::ProbeBwDown);
    }

    fn start_probe_bw_cruise(&mut self) {
        self.set_state(BbrState::ProbeBwCruise);
    }

    fn start_probe_bw_refill(&mut self, delivered: u64) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0.0;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(delivered);
        self.set_state(BbrState::ProbeBwRefill);
    }

    fn start_probe_bw_up(&mut self, rs: &RateSample, now: Instant, delivered: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(delivered);
        self.reset_full_bw();
        self.full_bw = rs.rate;
        self.cycle_stamp = now;
        self.set_state(BbrState::ProbeBwUp);
        self.raise_inflight_hi_slope();
    }

    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() / self.mss) as u64;
        self.rounds_since_bw_probe >= reno_rounds.min(MAX_PROBE_ROUNDS)
    }

    fn check_time_to_probe_bw(&mut self, now: Instant, delivered: u64) -> bool {
        if now.saturating_since(self.cycle_stamp) > self.bw_probe_wait
            || self.is_reno_coexistence_probe_time()
        {
            self.start_probe_bw_refill(delivered);
            return true;
        }
        false
    }

    fn check_time_to_cruise(&self, inflight: f64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(1.0)
    }

    fn check_time_to_go_down(&mut self, rs: &RateSample, cwnd_limited: bool) -> bool {
        if cwnd_limited && self.cwnd >= self.inflight_hi {
            self.reset_full_bw();
            self.full_bw = rs.rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    fn update_probe_bw_cycle_phase(&mut self, rs: &RateSample, ev: &AckEvent, now: Instant) {
        if !self.full_bw_reached {
            return;
        }
        self.adapt_upper_bounds(rs, ev, now);
        if !self.is_in_probe_bw() {
            return;
        }
        let state = self.state;
        match state {
            BbrState::ProbeBwDown => {
                if self.check_time_to_probe_bw(now, ev.delivered) {
                    return;
                }
                if self.check_time_to_cruise(ev.inflight as f64) {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.check_time_to_probe_bw(now, ev.delivered);
            }
            BbrState::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_bw_up(rs, now, ev.delivered);
            }
            BbrState::ProbeBwUp if self.check_time_to_go_down(rs, ev.cwnd_limited) => {
                self.start_probe_bw_down(now, ev.delivered);
            }
            _ => {}
        }
    }

    // ----- min RTT and ProbeRTT -----

    fn update_min_rtt(&mut self, rtt: Option<Duration>, now: Instant) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_INTERVAL;
        if let Some(r) = rtt {
            if self.probe_rtt_min_delay.is_none_or(|m| r < m) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(r);
                self.probe_rtt_min_stamp = now;
            } else if self.confirm_min_rtt_near_it
                && self
                    .probe_rtt_min_delay
                    .is_some_and(|m| r <= m + m / MIN_RTT_CONFIRM_DIVISOR)
            {
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_FILTER;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    fn save_cwnd(&self) -> f64 {
        if !self.recovery.in_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn probe_rtt_cwnd(&self) -> f64 {
        self.bdp_multiple(PROBE_RTT_CWND_GAIN)
            .max(self.min_pipe_cwnd())
    }

    fn check_probe_rtt(&mut self, ev: &AckEvent, now: Instant, app_limited: bool) {
        let spared = self.spare_app_limited && app_limited;
        if self.state != BbrState::ProbeRtt && self.probe_rtt_expired && !spared {
            self.prior_cwnd = self.save_cwnd();
            self.set_state(BbrState::ProbeRtt);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(ev.delivered);
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(ev, now);
        }
    }

    fn handle_probe_rtt(&mut self, ev: &AckEvent, now: Instant) {
        match self.probe_rtt_done_stamp {
            None if ev.inflight as f64 <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round(ev.delivered);
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.probe_rtt_min_stamp = now;
                    self.restore_cwnd();
                    self.exit_probe_rtt(now, ev.delivered);
                }
            }
        }
    }

    fn exit_probe_rtt(&mut self, now: Instant, delivered: u64) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.start_probe_bw_down(now, delivered);
            self.start_probe_bw_cruise();
        } else {
            self.set_state(BbrState::Startup);
        }
    }

    // ----- control parameters -----

    fn set_pacing_rate(&mut self) {
        let mut rate = self.pacing_gain * self.bw * (1.0 - PACING_MARGIN);
        let mut leaves_guess = false;
        if let (BbrState::Startup, Some(min_rtt)) = (self.state, self.min_rtt) {
            if self.startup_pacing == StartupPacing::Guess
                && self.cwnd > UNSPREAD_INITIAL_WINDOWS * self.initial_cwnd
            {
                self.startup_pacing = StartupPacing::Spread;
                leaves_guess = true;
            }
            if self.startup_pacing == StartupPacing::Spread {
                rate = rate.max(STARTUP_SPREAD_GAIN * self.cwnd / min_rtt.as_secs_f64());
            }
        }
        // The start-up only ever raises the rate, except once, when its flights start
        // to be spread and the initial guess gives way.
        if rate > 0.0 && (self.full_bw_reached || leaves_guess || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ev: &AckEvent) {
        let max_inflight =
            self.quantization_budget(self.bdp_multiple(self.cwnd_gain) + self.aggregation.extra());
        // Loss recovery: give back what was lost, and during the first round keep the
        // flight (packet conservation).
        if ev.newly_lost > 0 {
            self.cwnd = (self.cwnd - ev.newly_lost as f64).max(self.mss);
        }
        if self.recovery.conserving {
            self.cwnd = self.cwnd.max(ev.inflight as f64 + ev.newly_acked as f64);
        } else if self.full_bw_reached {
            self.cwnd = (self.cwnd + ev.newly_acked as f64).min(max_inflight);
        } else if self.cwnd < max_inflight || (ev.delivered as f64) < self.initial_cwnd {
            self.cwnd += ev.newly_acked as f64;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // Bound by the model.
        let mut cap = f64::INFINITY;
        if self.is_in_probe_bw() && self.state != BbrState::ProbeBwCruise {
            cap = self.inflight_hi;
        } else if matches!(self.state, BbrState::ProbeRtt | BbrState::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }
}

impl CongestionControl for Bbr {
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn set_cwnd(&mut self, cwnd: f64) {
        // Loss recovery's window arithmetic is Reno's; BBR keeps its own.
        let _ = cwnd;
    }
    fn on_ack(&mut self, _now: Instant, _acked: u64, _srtt: Option<Duration>) {
        // Everything happens in on_ack_event, with the rate sample.
    }
    fn on_congestion_event(&mut self, _now: Instant, _flight: u64) {
        // Entering fast recovery: remember the window, conserve packets for a round.
        if self.recovery.enter() {
            self.prior_cwnd = self.save_cwnd();
        }
    }
    fn on_timeout(&mut self, _now: Instant, _flight: u64) {
        self.prior_cwnd = self.save_cwnd();
        self.recovery.leave();
        self.cwnd = self.mss;
        self.reset_lower_bounds();
        self.publish();
    }
    fn on_repeated_timeout(&mut self, _now: Instant) {
        // The cwnd saved at the first timeout is what to restore once the path is back,
        // not the one segment the outage left.
        self.recovery.leave();
        self.cwnd = self.mss;
        self.reset_lower_bounds();
        self.publish();
    }
    fn on_recovery_end(&mut self, _flight: usize) {
        self.recovery.leave();
        self.restore_cwnd();
        self.publish();
    }
    fn started_up(&self) -> bool {
        self.full_bw_reached
    }
    fn set_channel_loss(&mut self, rate: f64) {
        self.channel_loss = rate.clamp(0.0, 1.0);
    }
    fn on_jump(&mut self) {
        self.startup_pacing = StartupPacing::GuessAfterJump;
    }
    fn on_jump_delivered(&mut self, rate: f64) {
        if self.state == BbrState::Startup {
            self.startup_loss_rounds = JUMP_STARTUP_LOSS_ROUNDS;
        }
        self.max_bw = self.max_bw_filter.update(self.cycle_count, rate);
    }
    fn leave_startup(&mut self) {
        // The next rate sample moves Startup to Drain (`check_startup_done`).
        self.full_bw_reached = true;
    }
    fn bdp_segments(&self) -> Option<f64> {
        // The filtered maximum, not the loss-bounded `bw`: a lossy path's rounds keep
        // `bw_lo` below the path's rate.
        self.min_rtt
            .map(|r| self.max_bw * r.as_secs_f64() / self.mss)
    }
    fn state_name(&self) -> &'static str {
        match self.state {
            BbrState::Startup => "startup",
            BbrState::Drain => "drain",
            BbrState::ProbeBwDown => "probe_bw_down",
            BbrState::ProbeBwCruise => "probe_bw_cruise",
            BbrState::ProbeBwRefill => "probe_bw_refill",
            BbrState::ProbeBwUp => "probe_bw_up",
            BbrState::ProbeRtt => "probe_rtt",
        }
    }
    fn models_path(&self) -> bool {
        true
    }
    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }
    fn ignores_low_rate_samples(&self) -> bool {
        self.state == BbrState::ProbeRtt
    }
    fn spare_app_limited_flows(&mut self) {
        self.spare_app_limited = true;
    }
    fn leave_headroom_to_cap(&mut self) {
        self.headroom = 0.0;
    }
    fn confirm_min_rtt_near_it(&mut self) {
        self.confirm_min_rtt_near_it = true;
    }
    fn on_ack_event(&mut self, now: Instant, ev: &AckEvent) {
        if let Some(w) = self.recovery.on_ack(ev, self.mss) {
            self.cwnd = w;
        }
        if let Some(rs) = ev.sample {
            self.update_latest_delivery_signals(&rs, ev.delivered);
            self.update_congestion_signals(&rs, ev);
            self.aggregation
                .on_ack(now, ev.newly_acked, self.bw, self.cwnd, self.round_count);
            self.check_full_bw_reached(&rs);
            self.check_startup_done(&rs);
            self.check_drain_done(ev, now);
            self.update_probe_bw_cycle_phase(&rs, ev, now);
            self.update_min_rtt(rs.rtt.or(ev.rtt), now);
            self.check_probe_rtt(ev, now, rs.app_limited);
            self.advance_latest_delivery_signals(&rs);
            self.bound_bw_for_model();
        } else {
            self.round_start = false;
            self.update_min_rtt(ev.rtt, now);
        }
        self.set_pacing_rate();
        self.set_cwnd(ev);
        self.publish();
    }
}

#[cfg(test)]
mod tests;
