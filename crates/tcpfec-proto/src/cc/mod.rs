//! Congestion window growth and reduction, behind one trait.
//!
//! Loss *recovery* (which segment to retransmit, when recovery ends) lives in the sender;
//! these types only decide how the window grows on ACKs and shrinks on congestion signals.
//! Windows are in segments, as in ns-2, because the transport is segment-numbered.

mod aggregation;
mod bbr;
mod bbr1;
mod coexist;
mod cubic;
mod filter;
pub mod hystart_pp;
mod recovery;
mod reno;

pub use bbr::{Bbr, BbrState};
pub use bbr1::{Bbr1, Bbr1State};
pub use coexist::{CongestionCap, CongestionReport, CongestionTally};
pub use cubic::Cubic;
pub use reno::Reno;

use crate::rate::RateSample;

use crate::time::Instant;
use core::time::Duration;

/// The two numbers every window rule keeps, in segments.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Congestion window.
    pub cwnd: f64,
    /// Slow-start threshold.
    pub ssthresh: f64,
}

impl Window {
    /// Slow start from `initial_window` segments with an unbounded threshold.
    pub fn initial(initial_window: u32) -> Self {
        Window {
            cwnd: initial_window.max(1) as f64,
            ssthresh: f64::MAX,
        }
    }
}

/// What one ACK told the sender, for controllers that model the path (BBR). Volumes are
/// payload bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct AckEvent {
    /// The delivery-rate sample of this ACK, if it gave one.
    pub sample: Option<RateSample>,
    /// Bytes delivered over the whole connection.
    pub delivered: u64,
    /// Bytes this ACK newly acknowledged (cumulatively or by SACK).
    pub newly_acked: u64,
    /// Bytes this ACK made the sender declare lost.
    pub newly_lost: u64,
    /// Bytes in flight after the ACK.
    pub inflight: u64,
    /// The latest RTT measurement, if this ACK carried one.
    pub rtt: Option<Duration>,
    /// The window, not the application, limited sending before this ACK.
    pub cwnd_limited: bool,
}

/// Window growth and multiplicative decrease.
pub trait CongestionControl: Send + core::fmt::Debug {
    /// The window state.
    fn window(&self) -> &Window;
    /// The window state, mutably.
    fn window_mut(&mut self) -> &mut Window;
    /// Congestion window in segments.
    fn cwnd(&self) -> f64 {
        self.window().cwnd
    }
    /// Slow-start threshold in segments.
    fn ssthresh(&self) -> f64 {
        self.window().ssthresh
    }
    /// Overrides the window (used by loss recovery for inflation and deflation).
    fn set_cwnd(&mut self, cwnd: f64) {
        self.window_mut().cwnd = cwnd.max(1.0);
    }
    /// An ACK acknowledged `acked` new segments outside loss recovery.
    fn on_ack(&mut self, now: Instant, acked: u64, srtt: Option<Duration>);
    /// A congestion event (loss detected by duplicate ACKs, or ECN): multiplicative
    /// decrease of ssthresh, and cwnd set to the new ssthresh. `flight` is in segments.
    fn on_congestion_event(&mut self, now: Instant, flight: u64);
    /// A retransmission timeout: ssthresh reduced, cwnd back to one segment.
    fn on_timeout(&mut self, now: Instant, flight: u64);
    /// A timeout whose retransmission, sent at the previous timeout, was lost as well
    /// (an outage): cwnd back to one segment, but what the first timeout left (ssthresh,
    /// what a path model saved to restore) stays, as RFC 5681 §3.1 holds ssthresh across
    /// a backed-off timer. `Config::hold_on_repeated_timeout` chooses this over
    /// [`CongestionControl::on_timeout`].
    fn on_repeated_timeout(&mut self, _now: Instant) {
        self.window_mut().cwnd = 1.0;
    }
    /// Sets cwnd to `w` and ssthresh to max(w, 2) (Sato's ECN-on-recovery reaction, S5).
    fn set_window_and_threshold(&mut self, w: f64) {
        let win = self.window_mut();
        win.cwnd = w.max(1.0);
        win.ssthresh = w.max(2.0);
    }
    /// Fast recovery ended with `flight` segments outstanding. Window rules deflate to
    /// min(ssthresh, flight + 1) (RFC 6582 §3.2 step 3, option 1), so that the deflated
    /// window does not release a line-rate burst.
    fn on_recovery_end(&mut self, flight: usize) {
        let w = self.ssthresh().min(flight.max(1) as f64 + 1.0);
        self.set_cwnd(w);
    }
    /// True for controllers that model the path and pace (BBR, both versions): the sender then leaves
    /// ECN-Echo to them and does not apply window arithmetic of its own.
    fn models_path(&self) -> bool {
        false
    }
    /// The controller's state for traces: `slow_start` or `congestion_avoidance` for the
    /// window rules (the sender reports its loss recovery itself), BBR's state names for
    /// BBR.
    fn state_name(&self) -> &'static str {
        if self.cwnd() < self.ssthresh() {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }
    /// False while a path-modelling controller is still in its start-up (BBR's Startup):
    /// its queue grows every round then, and losses read at the queue's peak are no sign
    /// of another flow.
    fn started_up(&self) -> bool {
        true
    }
    /// A path-modelling controller's estimate of the path's BDP in segments (its
    /// bandwidth estimate times its minimum RTT), once it has one.
    fn bdp_segments(&self) -> Option<f64> {
        None
    }
    /// A resumed connection's jump met congestion (Careful Resume's Safe Retreat): a
    /// controller with a start-up of its own leaves it (BBR enters Drain, RFC 9959's
    /// appendix). Window rules are given a window when the retreat ends.
    fn leave_startup(&mut self) {}
    /// A resumed connection jumps (Careful Resume's Unvalidated phase begins): its
    /// start-up continues from the saved path, not from the initial window. BBR keeps
    /// that start-up's flights unspread (`Bbr::set_pacing_rate`).
    fn on_jump(&mut self) {}
    /// A resumed connection's jump was validated, its ACKs having come back at `rate`
    /// payload bytes per second: a controller that models the path takes it as a
    /// delivery-rate sample. The samples of the jump's own packets, sent into an empty
    /// pipe, each span the round trip before the first ACK and read a fraction of it,
    /// so BBR left its start-up on a queue with a third of the path's rate as its
    /// estimate. BBR v3 also spares the lower bounds the losses of the start-up that
    /// follows (`Bbr::adapt_lower_bounds_from_congestion`).
    fn on_jump_delivered(&mut self, _rate: f64) {}
    /// The rate to pace at, payload bytes per second; `None` sends as the window opens.
    fn pacing_rate(&self) -> Option<f64> {
        None
    }
    /// True for controllers that read [`AckEvent`]s (and pace, if they return a rate).
    /// Asked once when the sender is built: for the others the sender neither builds the
    /// event nor asks for a pacing rate, which keeps window-only schemes as cheap per ACK
    /// as before rate sampling existed.
    fn wants_ack_events(&self) -> bool {
        self.models_path()
    }
    /// Everything one ACK told the sender, after it was processed (only called when
    /// [`CongestionControl::wants_ack_events`]).
    fn on_ack_event(&mut self, _now: Instant, _ev: &AckEvent) {}
    /// True while the controller holds its flight down on purpose (BBR's ProbeRTT): the
    /// delivery-rate samples of that time show the cap, not the path, and are marked
    /// application-limited so they cannot lower the bandwidth estimate (Linux's
    /// `bbr_update_min_rtt`; draft-ietf-ccwg-bbr's `BBRHandleProbeRTT`).
    fn ignores_low_rate_samples(&self) -> bool {
        false
    }
    /// From now on, do not hold the flight down to re-measure the path's round trip
    /// (BBR's ProbeRTT) while the application limits the sender. ProbeRTT drains the
    /// queue a flow built itself; a flow sending less than its path carries builds none,
    /// so its round-trip samples already measure the path, and the cap only delays its
    /// data (a stream's packets waited up to a round trip every 5 s). For `auto`, whose
    /// streams are meant to arrive on time; the `bbr` and `bbr1` schemes keep Linux's
    /// behaviour.
    fn spare_app_limited_flows(&mut self) {}
    /// A congestion cap (`CongestionCap`) answers losses at a full queue for this flow, so
    /// BBR v3 need not also leave 15 % of `inflight_hi` free while cruising. That
    /// headroom is there for other flows to enter; the cap makes room for them when
    /// their arrival overflows the queue. In a buffer far below the BDP the headroom
    /// alone held `auto` at 85 % of the link. Only BBR v3 has one.
    fn leave_headroom_to_cap(&mut self) {}
    /// From now on, a round-trip sample within 1/32 of the minimum confirms the minimum,
    /// so ProbeRTT (half the flight for at least a round trip) comes only after 5 s in
    /// which the queue never drained that far. ProbeRTT re-measures the path's round
    /// trip under a queue the flows keep standing; where the queue drains between
    /// probes, as a lone flow's does at every ProbeBW Down, or is shallow, the samples
    /// already measure it within 3 %, and the probe only costs the link a twentieth of
    /// its time at a long round trip (`auto` moved 85.5 Mb/s on the demo's 400 ms path,
    /// 95.5 without it). A standing queue of other flows still brings ProbeRTT. For
    /// `auto`; the `bbr` scheme keeps Linux's rule (only a strictly lower sample
    /// counts). Only BBR v3 has a ProbeRTT timer of this kind.
    fn confirm_min_rtt_near_it(&mut self) {}
    /// Leave slow start by HyStart, as Linux's CUBIC does (`Config::hystart`), for a
    /// sender that paces its packets or not (`Config::paced_windows`); only controllers
    /// that have it (CUBIC) act on this.
    fn enable_hystart(&mut self, _paced: bool) {}
    /// The loss rate of the path's channel, outside full queues, as `auto`'s FEC measures
    /// it, told after a Careful Resume jump. FEC answers that loss, so in its start-up
    /// BBR v3 reads only loss beyond it as too much in flight (`Bbr::is_inflight_too_high`);
    /// other controllers ignore it.
    fn set_channel_loss(&mut self, _rate: f64) {}
    /// Every ACK of new data, before `on_ack`: its RTT sample, the first unacknowledged
    /// segment after it and the next segment to send. HyStart reads its rounds and
    /// delays from these.
    fn on_ack_sample(&mut self, _now: Instant, _rtt: Option<Duration>, _una: u64, _nxt: u64) {}
}

/// Which window-growth rule a scheme uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcKind {
    /// AIMD with β = 0.5 (RFC 5681).
    Reno,
    /// CUBIC (RFC 9438), β = 0.7, C = 0.4.
    Cubic,
    /// BBR version 3 (draft-ietf-ccwg-bbr-02): a paced, model-based controller.
    Bbr,
    /// BBR version 1 (draft-cardwell-iccrg-bbr-congestion-control-00, as ns-3's TcpBbr
    /// and Linux's tcp_bbr): loss is not a signal at all.
    Bbr1,
}

impl CcKind {
    /// Builds the controller with `initial_window` segments of `mss` bytes; `seed` feeds
    /// the controllers that randomise (BBR's probe timing).
    pub fn build(self, initial_window: u32, mss: u16, seed: u64) -> Box<dyn CongestionControl> {
        match self {
            CcKind::Reno => Box::new(Reno::new(initial_window)),
            CcKind::Cubic => Box::new(Cubic::new(initial_window)),
            CcKind::Bbr => Box::new(Bbr::new(initial_window, mss, seed)),
            CcKind::Bbr1 => Box::new(Bbr1::new(initial_window, mss, seed)),
        }
    }
}

/// ssthresh after a loss per RFC 5681 eq. (4): max(β · flight, 2).
pub(crate) fn reduced(flight: u64, beta: f64) -> f64 {
    (flight as f64 * beta).max(2.0)
}
