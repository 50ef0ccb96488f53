//! BBR version 1, after draft-cardwell-iccrg-bbr-congestion-control-00 (the model of
//! Linux's tcp_bbr before version 3, and of ns-3's TcpBbr; docs/design/bbr.md lists the
//! differences).
//!
//! The same path model as version 3 (bottleneck bandwidth, minimum RTT), but loss is no
//! signal at all: only the first round of a recovery conserves packets. That makes it the
//! reference for what a rate-based sender achieves on a path with random loss, and its
//! known weakness (it ignores loss even when it causes it) the reason version 3 exists.

use super::aggregation::AckAggregation;
use super::filter::MaxFilter;
use super::recovery::RecoveryState;
use super::{AckEvent, CongestionControl, Window};
use crate::rate::RateSample;
use crate::time::Instant;
use core::time::Duration;

const HIGH_GAIN: f64 = 2.885; // 2 / ln 2
const PROBE_BW_CWND_GAIN: f64 = 2.0;
/// The eight-phase pacing cycle of ProbeBW: probe, drain, then cruise.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BTL_BW_ROUNDS: u64 = 10;
const MIN_RTT_FILTER: Duration = Duration::from_secs(10);
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
const MIN_PIPE_CWND_PACKETS: f64 = 4.0;
const FULL_BW_GROWTH: f64 = 1.25;
const FULL_BW_ROUNDS: u32 = 3;
/// The allowance for ACK aggregation is at most this long at the estimated bandwidth.
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);

/// Where the version-1 state machine is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bbr1State {
    /// Doubling the rate each round.
    Startup,
    /// Emptying the queue Startup built.
    Drain,
    /// Cycling the pacing gain around the estimate.
    ProbeBw,
    /// Four packets in flight for 200 ms and a round, to measure the minimum RTT.
    ProbeRtt,
}

/// BBRv1 congestion control.
#[derive(Debug, Clone)]
pub struct Bbr1 {
    w: Window,
    mss: f64,
    initial_cwnd: f64,
    state: Bbr1State,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing_rate: f64,
    cwnd: f64,
    btl_bw_filter: MaxFilter<{ BTL_BW_ROUNDS as usize }>,
    btl_bw: f64,
    aggregation: AckAggregation,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    next_round_delivered: u64,
    round_count: u64,
    round_start: bool,
    full_bw: f64,
    full_bw_count: u32,
    filled_pipe: bool,
    cycle_index: usize,
    cycle_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Skip ProbeRTT while the application limits the sender
    /// (`CongestionControl::spare_app_limited_flows`).
    spare_app_limited: bool,
    prior_cwnd: f64,
    recovery: RecoveryState,
    rng: u64,
}

impl Bbr1 {
    /// A BBRv1 flow with `initial_window` segments of `mss` bytes; `seed` picks the phase
    /// the ProbeBW cycle starts in.
    pub fn new(initial_window: u32, mss: u16, seed: u64) -> Self {
        let mss = mss.max(1) as f64;
        let initial_cwnd = initial_window.max(1) as f64 * mss;
        let mut b = Bbr1 {
            w: Window::initial(initial_window),
            mss,
            initial_cwnd,
            state: Bbr1State::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: HIGH_GAIN * initial_cwnd / 1e-3,
            cwnd: initial_cwnd,
            btl_bw_filter: MaxFilter::new(),
            btl_bw: 0.0,
            aggregation: AckAggregation::new(),
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            next_round_delivered: 0,
            round_count: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_count: 0,
            filled_pipe: false,
            cycle_index: 0,
            cycle_stamp: Instant::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            spare_app_limited: false,
            prior_cwnd: 0.0,
            recovery: RecoveryState::default(),
            rng: seed ^ 0x2545_f491_4f6c_dd1d,
        };
        b.publish();
        b
    }

    /// The state machine's current state.
    pub fn state(&self) -> Bbr1State {
        self.state
    }

    /// The bottleneck bandwidth estimate, bytes per second.
    pub fn btl_bw(&self) -> f64 {
        self.btl_bw
    }

    fn publish(&mut self) {
        self.w.cwnd = (self.cwnd / self.mss).max(1.0);
        self.w.ssthresh = if self.filled_pipe {
            self.w.cwnd
        } else {
            f64::MAX
        };
    }

    fn bdp(&self, gain: f64) -> f64 {
        match self.min_rtt {
            None => self.initial_cwnd,
            Some(r) => gain * self.btl_bw * r.as_secs_f64(),
        }
    }

    fn inflight(&self, gain: f64) -> f64 {
        self.bdp(gain).max(MIN_PIPE_CWND_PACKETS * self.mss)
    }

    fn update_round(&mut self, rs: &RateSample, delivered: u64) {
        self.round_start = rs.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.next_round_delivered = delivered;
            self.round_count += 1;
        }
    }

    fn update_btl_bw(&mut self, rs: &RateSample) {
        if rs.rate >= self.btl_bw || !rs.app_limited {
            self.btl_bw = self.btl_bw_filter.update(self.round_count, rs.rate);
        }
    }

    fn check_full_pipe(&mut self, rs: &RateSample) {
        if self.filled_pipe || !self.round_start || rs.app_limited {
            return;
        }
        if self.btl_bw >= self.full_bw * FULL_BW_GROWTH {
            self.full_bw = self.btl_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    fn enter_probe_bw(&mut self, now: Instant) {
        self.state = Bbr1State::ProbeBw;
        self.cwnd_gain = PROBE_BW_CWND_GAIN;
        // Any phase but the draining one, at random, so that flows do not probe in step.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let r = (self.rng % 7) as usize;
        self.cycle_index = if r >= 1 { r + 1 } else { 0 };
        self.cycle_stamp = now;
        self.pacing_gain = CYCLE[self.cycle_index];
    }

    fn update_cycle_phase(&mut self, ev: &AckEvent, now: Instant) {
        if self.state != Bbr1State::ProbeBw {
            return;
        }
        let prior_inflight = (ev.inflight + ev.newly_acked) as f64;
        let full_length = self
            .min_rtt
            .is_some_and(|r| now.saturating_since(self.cycle_stamp) > r);
        let next = if self.pacing_gain > 1.0 {
            full_length && (ev.newly_lost > 0 || prior_inflight >= self.inflight(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_inflight <= self.inflight(1.0)
        } else {
            full_length
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_stamp = now;
            self.pacing_gain = CYCLE[self.cycle_index];
        }
    }

    fn check_drain(&mut self, ev: &AckEvent, now: Instant) {
        if self.state == Bbr1State::Startup && self.filled_pipe {
            self.state = Bbr1State::Drain;
            self.pacing_gain = 1.0 / HIGH_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.state == Bbr1State::Drain && ev.inflight as f64 <= self.inflight(1.0) {
            self.enter_probe_bw(now);
        }
    }

    fn save_cwnd(&self) -> f64 {
        if !self.recovery.in_recovery && self.state != Bbr1State::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        }
    }

    fn update_min_rtt(&mut self, rtt: Option<Duration>, ev: &AckEvent, now: Instant) {
        let expired = now > self.min_rtt_stamp + MIN_RTT_FILTER;
        if let Some(r) = rtt {
            // Strictly lower, as Linux: an unchanged RTT does not postpone ProbeRTT.
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = now;
            }
        }
        let spared = self.spare_app_limited && ev.sample.is_some_and(|s| s.app_limited);
        if expired && self.state != Bbr1State::ProbeRtt && !spared {
            self.prior_cwnd = self.save_cwnd();
            self.state = Bbr1State::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.probe_rtt_done_stamp = None;
        }
        if self.state == Bbr1State::ProbeRtt {
            self.handle_probe_rtt(ev, now);
        }
    }

    fn handle_probe_rtt(&mut self, ev: &AckEvent, now: Instant) {
        let floor = MIN_PIPE_CWND_PACKETS * self.mss;
        match self.probe_rtt_done_stamp {
            None if ev.inflight as f64 <= floor => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ev.delivered;
            }
            None => {}
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && now > done {
                    self.min_rtt_stamp = now;
                    self.cwnd = self.cwnd.max(self.prior_cwnd);
                    if self.filled_pipe {
                        self.enter_probe_bw(now);
                    } else {
                        self.state = Bbr1State::Startup;
                        self.pacing_gain = HIGH_GAIN;
                        self.cwnd_gain = HIGH_GAIN;
                    }
                }
            }
        }
    }

    fn set_cwnd(&mut self, ev: &AckEvent) {
        // Once the pipe is full, room for ACKs that come in bursts (`aggregation.rs`), at
        // most `EXTRA_ACKED_MAX` at the estimated rate, as Linux's BBR v1 since 5.0.
        let aggregation = if self.filled_pipe {
            self.aggregation
                .extra()
                .min(self.btl_bw * EXTRA_ACKED_MAX.as_secs_f64())
        } else {
            0.0
        };
        let target = self.inflight(self.cwnd_gain) + aggregation;
        if ev.newly_lost > 0 {
            self.cwnd = (self.cwnd - ev.newly_lost as f64).max(self.mss);
        }
        if self.recovery.conserving {
            self.cwnd = self.cwnd.max(ev.inflight as f64 + ev.newly_acked as f64);
        } else if self.filled_pipe {
            self.cwnd = (self.cwnd + ev.newly_acked as f64).min(target);
        } else if self.cwnd < target || (ev.delivered as f64) < self.initial_cwnd {
            self.cwnd += ev.newly_acked as f64;
        }
        self.cwnd = self.cwnd.max(MIN_PIPE_CWND_PACKETS * self.mss);
        if self.state == Bbr1State::ProbeRtt {
            self.cwnd = self.cwnd.min(MIN_PIPE_CWND_PACKETS * self.mss);
        }
    }

    fn set_pacing_rate(&mut self) {
        let rate = self.pacing_gain * self.btl_bw;
        if rate > 0.0 && (self.filled_pipe || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }
}

impl CongestionControl for Bbr1 {
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn set_cwnd(&mut self, cwnd: f64) {
        let _ = cwnd; // BBR keeps its own window
    }
    fn on_ack(&mut self, _now: Instant, _acked: u64, _srtt: Option<Duration>) {}
    fn on_congestion_event(&mut self, _now: Instant, _flight: u64) {
        if self.recovery.enter() {
            self.prior_cwnd = self.save_cwnd();
        }
    }
    fn on_timeout(&mut self, _now: Instant, _flight: u64) {
        self.prior_cwnd = self.save_cwnd();
        self.recovery.leave();
        self.cwnd = self.mss;
        self.publish();
    }
    fn on_repeated_timeout(&mut self, _now: Instant) {
        // The cwnd saved at the first timeout is what to restore once the path is back,
        // not the one segment the outage left.
        self.recovery.leave();
        self.cwnd = self.mss;
        self.publish();
    }
    fn on_recovery_end(&mut self, _flight: usize) {
        self.recovery.leave();
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.publish();
    }
    fn started_up(&self) -> bool {
        self.filled_pipe
    }
    fn on_jump_delivered(&mut self, rate: f64) {
        self.btl_bw = self.btl_bw_filter.update(self.round_count, rate);
    }
    fn leave_startup(&mut self) {
        // The next ACK moves Startup to Drain (`check_drain`).
        self.filled_pipe = true;
    }
    fn bdp_segments(&self) -> Option<f64> {
        self.min_rtt.map(|_| self.bdp(1.0) / self.mss)
    }
    fn state_name(&self) -> &'static str {
        match self.state {
            Bbr1State::Startup => "startup",
            Bbr1State::Drain => "drain",
            Bbr1State::ProbeBw => "probe_bw",
            Bbr1State::ProbeRtt => "probe_rtt",
        }
    }
    fn models_path(&self) -> bool {
        true
    }
    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }
    fn ignores_low_rate_samples(&self) -> bool {
        self.state == Bbr1State::ProbeRtt
    }
    fn spare_app_limited_flows(&mut self) {
        self.spare_app_limited = true;
    }
    fn on_ack_event(&mut self, now: Instant, ev: &AckEvent) {
        if let Some(w) = self.recovery.on_ack(ev, self.mss) {
            self.cwnd = w;
        }
        match ev.sample {
            Some(rs) => {
                self.update_round(&rs, ev.delivered);
                self.update_btl_bw(&rs);
                self.aggregation.on_ack(
                    now,
                    ev.newly_acked,
                    self.btl_bw,
                    self.cwnd,
                    self.round_count,
                );
                self.check_full_pipe(&rs);
                self.check_drain(ev, now);
                self.update_cycle_phase(ev, now);
                self.update_min_rtt(rs.rtt.or(ev.rtt), ev, now);
            }
            None => {
                self.round_start = false;
                self.update_min_rtt(ev.rtt, ev, now);
            }
        }
        self.set_pacing_rate();
        self.set_cwnd(ev);
        self.publish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: f64 = 1000.0;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    /// One ACK of `bytes` at `t` ms, the `k`th of a round that began at `prior` bytes
    /// delivered with `flight` bytes in flight, sampling `rate`, declaring `lost` lost.
    #[allow(clippy::too_many_arguments)]
    fn ack(
        b: &mut Bbr1,
        t: u64,
        delivered: &mut u64,
        prior: u64,
        flight: f64,
        rate: f64,
        lost: u64,
        k: u64,
    ) {
        let bytes = (10.0 * MSS) as u64;
        *delivered += bytes;
        let rs = RateSample {
            delivered: *delivered - prior,
            interval: Duration::from_millis(100),
            rate,
            app_limited: false,
            prior_delivered: prior,
            rtt: Some(Duration::from_millis(100)),
            newly_acked: bytes,
            tx_in_flight: flight as u64,
            lost,
        };
        let ev = AckEvent {
            sample: Some(rs),
            delivered: *delivered,
            newly_acked: bytes,
            newly_lost: lost,
            inflight: (flight as u64).saturating_sub((k + 1) * bytes),
            rtt: Some(Duration::from_millis(100)),
            cwnd_limited: true,
        };
        b.on_ack_event(ms(t), &ev);
    }

    /// Feeds `rounds` rounds of a path of `bw` bytes/s and 100 ms RTT, one ACK per 10
    /// packets, losing `loss` of each round's bytes.
    fn run(b: &mut Bbr1, rounds: usize, bw: f64, loss: f64, t: &mut u64, delivered: &mut u64) {
        for _ in 0..rounds {
            let flight = (b.cwnd).min(2.0 * bw * 0.1).max(MSS);
            let prior = *delivered;
            let rate = bw.min(flight / 0.1);
            let acks = (flight / (10.0 * MSS)).ceil().max(1.0) as u64;
            for k in 0..acks {
                *t += ((10.0 * MSS / rate) * 1e3).max(1.0) as u64;
                let lost = if k == 0 { (loss * flight) as u64 } else { 0 };
                ack(
                    b,
                    *t,
                    delivered,
                    prior,
                    flight,
                    rate * (1.0 - loss),
                    lost,
                    k,
                );
            }
        }
    }

    /// `rounds` rounds of the same path whose ACKs all arrive together, one round trip
    /// apart: a flight acknowledged at once, as when a receiver batches its ACKs.
    fn run_in_bursts(b: &mut Bbr1, rounds: usize, bw: f64, t: &mut u64, delivered: &mut u64) {
        for _ in 0..rounds {
            let flight = b.cwnd.max(MSS);
            let prior = *delivered;
            *t += 100;
            let acks = (flight / (10.0 * MSS)).ceil() as u64;
            for k in 0..acks {
                ack(b, *t, delivered, prior, flight, bw, 0, k);
            }
        }
    }

    #[test]
    fn acks_in_bursts_widen_the_window_by_what_they_bunch() {
        let mut b = Bbr1::new(10, MSS as u16, 7);
        let (mut t, mut d) = (0, 0);
        let bw = 1_000_000.0;
        let bdp = bw * 0.1;
        run(&mut b, 40, bw, 0.0, &mut t, &mut d);
        // ACKs of ten packets each, spread over the round: the window is two BDPs (the
        // gain) and what one ACK bunches.
        assert!(
            b.cwnd <= 2.0 * bdp + 10.0 * MSS,
            "{} of a BDP",
            b.cwnd / bdp
        );
        run_in_bursts(&mut b, 20, bw, &mut t, &mut d);
        // Each round's ACKs come at once: the window holds the excess too, at most
        // 100 ms at the estimated rate (one BDP on this path).
        assert!(b.cwnd > 2.5 * bdp, "{} of a BDP", b.cwnd / bdp);
        assert!(b.cwnd <= 3.0 * bdp + MSS, "{} of a BDP", b.cwnd / bdp);
    }

    #[test]
    fn fills_the_pipe_then_cycles_and_ignores_random_loss() {
        let mut b = Bbr1::new(10, MSS as u16, 7);
        let (mut t, mut d) = (0, 0);
        let bw = 1_000_000.0;
        run(&mut b, 40, bw, 0.0, &mut t, &mut d);
        assert_eq!(b.state(), Bbr1State::ProbeBw);
        assert!((b.btl_bw() - bw).abs() / bw < 0.01, "{}", b.btl_bw());
        // 5 % random loss for 40 rounds: the estimate follows the delivery rate (95 %),
        // nothing more.
        run(&mut b, 40, bw, 0.05, &mut t, &mut d);
        assert!(b.btl_bw() > 0.9 * bw, "{}", b.btl_bw());
        assert!(b.pacing_rate().unwrap() > 0.7 * bw);
    }

    #[test]
    fn probe_rtt_cuts_to_four_packets_once_the_filter_expires() {
        let mut b = Bbr1::new(10, MSS as u16, 1);
        let (mut t, mut d) = (0, 0);
        let mut seen = false;
        while t < 12_000 {
            run(&mut b, 1, 1_000_000.0, 0.0, &mut t, &mut d);
            if b.state() == Bbr1State::ProbeRtt {
                seen = true;
                assert!(b.cwnd() <= 4.0 + 1e-9, "{}", b.cwnd());
            }
        }
        assert!(seen);
    }
}
