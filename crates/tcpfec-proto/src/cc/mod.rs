//! Congestion window growth and reduction, behind one trait.
//!
//! Loss *recovery* (which segment to retransmit, when recovery ends) lives in the sender;
//! these types only decide how the window grows on ACKs and shrinks on congestion signals.
//! Windows are in segments, as in ns-2, because the transport is segment-numbered.

mod cubic;
mod reno;

pub use cubic::Cubic;
pub use reno::Reno;

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
    /// Sets cwnd to `w` and ssthresh to max(w, 2) (Sato's ECN-on-recovery reaction, S5).
    fn set_window_and_threshold(&mut self, w: f64) {
        let win = self.window_mut();
        win.cwnd = w.max(1.0);
        win.ssthresh = w.max(2.0);
    }
}

/// Which window-growth rule a scheme uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcKind {
    /// AIMD with β = 0.5 (RFC 5681).
    Reno,
    /// CUBIC (RFC 9438), β = 0.7, C = 0.4.
    Cubic,
}

impl CcKind {
    /// Builds the controller with `initial_window` segments.
    pub fn build(self, initial_window: u32) -> Box<dyn CongestionControl> {
        match self {
            CcKind::Reno => Box::new(Reno::new(initial_window)),
            CcKind::Cubic => Box::new(Cubic::new(initial_window)),
        }
    }
}

/// ssthresh after a loss per RFC 5681 eq. (4): max(β · flight, 2).
pub(crate) fn reduced(flight: u64, beta: f64) -> f64 {
    (flight as f64 * beta).max(2.0)
}
