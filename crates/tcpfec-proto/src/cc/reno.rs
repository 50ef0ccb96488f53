//! Reno window growth: +1 segment per ACK in slow start, +1/cwnd per ACK in congestion
//! avoidance (as ns-2 and ns-3 count it), halving on congestion.

use super::{reduced, CongestionControl, Window};
use crate::time::Instant;
use core::time::Duration;

/// AIMD congestion window (RFC 5681).
#[derive(Debug, Clone)]
pub struct Reno {
    w: Window,
}

impl Reno {
    /// Starts in slow start with `initial_window` segments and an unbounded ssthresh.
    pub fn new(initial_window: u32) -> Self {
        Reno {
            w: Window::initial(initial_window),
        }
    }
}

impl CongestionControl for Reno {
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, _now: Instant, acked: u64, _srtt: Option<Duration>) {
        if acked == 0 {
            return;
        }
        if self.w.cwnd < self.w.ssthresh {
            self.w.cwnd += 1.0;
        } else {
            self.w.cwnd += 1.0 / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, _now: Instant, flight: u64) {
        self.w.ssthresh = reduced(flight, 0.5);
        self.w.cwnd = self.w.ssthresh;
    }
    fn on_timeout(&mut self, _now: Instant, flight: u64) {
        self.w.ssthresh = reduced(flight, 0.5);
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_linear_growth() {
        let mut r = Reno::new(2);
        let t = Instant::ZERO;
        r.on_ack(t, 1, None);
        assert_eq!(r.cwnd(), 3.0);
        r.on_congestion_event(t, 20);
        assert_eq!((r.cwnd(), r.ssthresh()), (10.0, 10.0));
        for _ in 0..10 {
            r.on_ack(t, 1, None);
        }
        assert!((r.cwnd() - 11.0).abs() < 0.05, "cwnd {}", r.cwnd());
        r.on_timeout(t, 3);
        assert_eq!((r.cwnd(), r.ssthresh()), (1.0, 2.0));
    }
}
