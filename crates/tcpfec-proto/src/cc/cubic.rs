//! CUBIC window growth (RFC 9438): W(t) = C (t − K)³ + W_max, β = 0.7, C = 0.4, with the
//! Reno-friendly region and fast convergence.

use super::{reduced, CongestionControl, Window};
use crate::time::Instant;
use core::time::Duration;

const C: f64 = 0.4;
const BETA: f64 = 0.7;

/// CUBIC congestion window.
#[derive(Debug, Clone)]
pub struct Cubic {
    w: Window,
    w_max: f64,
    k: f64,
    w_est: f64,
    epoch_start: Option<Instant>,
}

impl Cubic {
    /// Starts in slow start with `initial_window` segments.
    pub fn new(initial_window: u32) -> Self {
        Cubic {
            w: Window::initial(initial_window),
            w_max: 0.0,
            k: 0.0,
            w_est: 0.0,
            epoch_start: None,
        }
    }

    fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    fn reduce(&mut self) {
        // Fast convergence (RFC 9438 §4.7): release bandwidth to newer flows.
        self.w_max = if self.w.cwnd < self.w_max {
            self.w.cwnd * (1.0 + BETA) / 2.0
        } else {
            self.w.cwnd
        };
        self.epoch_start = None;
    }
}

impl CongestionControl for Cubic {
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, now: Instant, acked: u64, srtt: Option<Duration>) {
        if acked == 0 {
            return;
        }
        if self.w.cwnd < self.w.ssthresh {
            self.w.cwnd += 1.0;
            return;
        }
        let rtt = srtt.map_or(0.1, |d| d.as_secs_f64());
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                // First ACK of a new congestion-avoidance epoch (RFC 9438 §4.2).
                self.epoch_start = Some(now);
                if self.w_max > self.w.cwnd {
                    self.k = ((self.w_max - self.w.cwnd) / C).cbrt();
                } else {
                    self.w_max = self.w.cwnd;
                    self.k = 0.0;
                }
                self.w_est = self.w.cwnd;
                now
            }
        };
        let t = now.saturating_since(epoch).as_secs_f64();
        let target = self.w_cubic(t + rtt).clamp(self.w.cwnd, 1.5 * self.w.cwnd);
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * acked as f64 / self.w.cwnd;
        if self.w_cubic(t) < self.w_est {
            // Reno-friendly region: grow at least as fast as AIMD(α, β) would.
            self.w.cwnd = self.w_est;
        } else {
            self.w.cwnd += (target - self.w.cwnd) / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, _now: Instant, _flight: u64) {
        self.reduce();
        self.w.ssthresh = reduced(self.w.cwnd.round() as u64, BETA);
        self.w.cwnd = self.w.ssthresh;
    }
    fn on_timeout(&mut self, _now: Instant, _flight: u64) {
        self.reduce();
        self.w.ssthresh = reduced(self.w.cwnd.round() as u64, BETA);
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_by_beta_and_regrows_to_w_max_in_k_seconds() {
        let mut c = Cubic::new(2);
        c.w.ssthresh = 0.0; // force congestion avoidance
        c.w.cwnd = 100.0;
        let t0 = Instant::ZERO;
        c.on_congestion_event(t0, 100);
        assert!((c.cwnd() - 70.0).abs() < 1e-9);
        // K = cbrt(30 / 0.4) ≈ 4.22 s: grows back to about 100 around then.
        let rtt = Duration::from_millis(100);
        let mut reached = None;
        for step in 0..100_000u64 {
            let now = Instant(step * 1_000_000); // 1 ms steps, one ACK each
            c.on_ack(now, 1, Some(rtt));
            if c.cwnd() >= 99.0 && reached.is_none() {
                reached = Some(now.as_secs_f64());
            }
        }
        let k = (30.0f64 / 0.4).cbrt();
        let r = reached.expect("never regrew");
        assert!(r < k + 0.5, "regrew at {r}, K = {k}");
        assert!(c.cwnd() > 100.0, "cubic keeps probing beyond W_max");
    }
}
