//! CUBIC window growth (RFC 9438): W(t) = C (t − K)³ + W_max, β = 0.7, C = 0.4, with the
//! Reno-friendly region and fast convergence; optionally Linux's HyStart to leave slow
//! start before the queue overflows.

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
    /// HyStart, where enabled.
    hystart: Option<HyStart>,
}

/// Linux's HyStart (Ha and Rhee, "Taming the elephants", 2011; `tcp_cubic.c`, both
/// detectors on): in slow start, from a window of 16 segments, ends slow start (ssthresh
/// = cwnd) on either of two signs of a full path.
///
/// * The ACKs of one round come as a train (each within 2 ms of the last) spanning more
///   than the minimum RTT plus 1 ms, halved for a sender that does not pace.
/// * The least of a round's first eight RTT samples exceeds the minimum by an eighth of
///   it, clamped to 4–16 ms: a queue is building. A paced sender tests each next group
///   of nine samples of the round too.
#[derive(Debug, Clone, Default)]
struct HyStart {
    /// Slow start was ended; nothing more until a timeout.
    found: bool,
    /// The round: when it began, its last ACK of the train, and the segment whose
    /// acknowledgment ends it.
    round_start: Instant,
    last_ack: Instant,
    end_seq: Option<u64>,
    /// Least RTT among this round's samples, and how many were taken.
    round_rtt: Option<Duration>,
    samples: u32,
    /// Least RTT seen.
    delay_min: Option<Duration>,
    /// The sender paces its packets (`Config::paced_windows`).
    paced: bool,
}

/// Smallest window HyStart acts at, segments (`hystart_low_window`).
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// ACKs further apart than this break the train (`hystart_ack_delta_us`).
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// Added to the minimum RTT before halving it, for ACKs spread by the sender's bursts
/// (`hystart_ack_delay`: at most 1 ms).
const HYSTART_ACK_DELAY: Duration = Duration::from_millis(1);
/// RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;

impl HyStart {
    fn new_round(&mut self, now: Instant, nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = Some(nxt);
        self.round_rtt = None;
        self.samples = 0;
    }

    /// Whether slow start should end at this ACK of the current round.
    fn exit(&mut self, now: Instant, rtt: Option<Duration>) -> bool {
        let Some(delay_min) = self.delay_min else {
            return false;
        };
        if now.saturating_since(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            // Unpaced, a round's packets leave in bursts that the bottleneck spreads: its
            // ACK train spans half the minimum RTT when about a BDP is in flight. Paced at
            // twice the window per round trip they leave over half of it anyway, so the
            // train says so only once it spans the whole (Linux halves only where
            // `sk_pacing_status` is none). Halved, a paced sender would end slow start at
            // two thirds of the path: 10 MB over a clean 50 Mb/s link at RTT 100 ms in
            // 2.95 s, where the whole path gives 2.3.
            let train = delay_min + HYSTART_ACK_DELAY;
            let train = if self.paced { train } else { train / 2 };
            if now.saturating_since(self.round_start) > train {
                return true;
            }
        }
        if let Some(r) = rtt {
            self.round_rtt = Some(self.round_rtt.map_or(r, |c| c.min(r)));
            if self.samples < HYSTART_MIN_SAMPLES {
                self.samples += 1;
            } else {
                let eighth =
                    (delay_min / 8).clamp(Duration::from_millis(4), Duration::from_millis(16));
                if self.round_rtt.is_some_and(|c| c > delay_min + eighth) {
                    return true;
                }
                if self.paced {
                    // Unpaced, a round's later packets queue behind its own burst, so
                    // only its first samples are clean. Paced, nothing queues until the
                    // rate passes the path's, and then the queue grows through the
                    // round: the test takes each next group of samples, not only the
                    // first, and sees it within a round trip instead of the next round.
                    self.round_rtt = None;
                    self.samples = 0;
                }
            }
        }
        false
    }
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
            hystart: None,
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
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * acked as f64 / self.w.cwnd;
        if self.w_cubic(t) < self.w_est {
            // Reno-friendly region: grow at least as fast as AIMD(α, β) would.
            self.w.cwnd = self.w_est;
        } else {
            // The curve a round trip ahead, read only here: an ACK costs `auto`'s cap
            // (a CUBIC window) a division less where it follows the Reno line.
            let rtt = srtt.map_or(0.1, |d| d.as_secs_f64());
            let target = self.w_cubic(t + rtt).clamp(self.w.cwnd, 1.5 * self.w.cwnd);
            self.w.cwnd += (target - self.w.cwnd) / self.w.cwnd;
        }
    }
    fn on_congestion_event(&mut self, _now: Instant, _flight: u64) {
        self.reduce();
        self.w.ssthresh = reduced(self.w.cwnd.round() as u64, BETA);
        self.w.cwnd = self.w.ssthresh;
    }
    fn enable_hystart(&mut self, paced: bool) {
        self.hystart = Some(HyStart {
            paced,
            ..HyStart::default()
        });
    }
    fn on_ack_sample(&mut self, now: Instant, rtt: Option<Duration>, una: u64, nxt: u64) {
        let (cwnd, in_slow_start) = (self.w.cwnd, self.w.cwnd < self.w.ssthresh);
        let Some(h) = self.hystart.as_mut() else {
            return;
        };
        if let Some(r) = rtt {
            h.delay_min = Some(h.delay_min.map_or(r, |d| d.min(r)));
        }
        if h.found || !in_slow_start {
            return;
        }
        if h.end_seq.is_none_or(|e| una > e) {
            h.new_round(now, nxt);
        }
        if cwnd >= HYSTART_LOW_WINDOW && h.exit(now, rtt) {
            h.found = true;
            self.w.ssthresh = cwnd;
        }
    }
    fn on_timeout(&mut self, _now: Instant, _flight: u64) {
        // After a timeout slow start begins again, and HyStart with it.
        if let Some(h) = self.hystart.as_mut() {
            h.found = false;
            h.end_seq = None;
        }
        self.reduce();
        self.w.ssthresh = reduced(self.w.cwnd.round() as u64, BETA);
        self.w.cwnd = 1.0;
    }
    fn on_repeated_timeout(&mut self, _now: Instant) {
        // Slow start begins again (and HyStart with it) towards the ssthresh and W_max
        // the first timeout set.
        if let Some(h) = self.hystart.as_mut() {
            h.found = false;
            h.end_seq = None;
        }
        self.epoch_start = None;
        self.w.cwnd = 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000)
    }

    /// A CUBIC in slow start at `cwnd` segments, after one earlier round that measured a
    /// 100 ms RTT; with HyStart for a sender that paces (`Some(true)`) or does not
    /// (`Some(false)`), or without it (`None`).
    fn slow_starting(cwnd: f64, hystart: Option<bool>) -> Cubic {
        let mut c = Cubic::new(10);
        if let Some(paced) = hystart {
            c.enable_hystart(paced);
        }
        c.w.cwnd = cwnd;
        c.on_ack_sample(us(0), Some(Duration::from_millis(100)), 1, 10);
        c
    }

    #[test]
    fn hystart_ends_slow_start_when_a_rounds_ack_train_spans_half_the_rtt() {
        for hystart in [true, false] {
            let mut c = slow_starting(100.0, hystart.then_some(false));
            // A new round: ACKs 0.5 ms apart, RTT steady at 100 ms (no queue), for 60 ms.
            let mut ended_at = None;
            for i in 0..120u64 {
                let t = 200_000 + i * 500;
                c.on_ack_sample(us(t), Some(Duration::from_millis(100)), 11 + i, 400);
                if c.w.ssthresh < f64::MAX && ended_at.is_none() {
                    ended_at = Some(i);
                }
            }
            if hystart {
                // (100 ms + 1 ms) / 2 = 50.5 ms of train: the 102nd ACK.
                assert_eq!(ended_at, Some(102), "ssthresh {}", c.w.ssthresh);
                assert_eq!(c.w.ssthresh, 100.0, "slow start ends at the window it had");
            } else {
                assert_eq!(ended_at, None, "plain slow start goes on");
            }
        }
    }

    #[test]
    fn a_paced_senders_ack_train_must_span_the_whole_rtt() {
        // Paced at twice the window per round trip, a round's ACKs come as a train over
        // half the round trip whatever the window; only a train past the whole of it
        // (100 ms + 1 ms: the 203rd ACK 0.5 ms apart) shows a full path.
        let mut c = slow_starting(100.0, Some(true));
        let mut ended_at = None;
        for i in 0..250u64 {
            c.on_ack_sample(
                us(200_000 + i * 500),
                Some(Duration::from_millis(100)),
                11 + i,
                400,
            );
            if c.w.ssthresh < f64::MAX && ended_at.is_none() {
                ended_at = Some(i);
            }
        }
        assert_eq!(ended_at, Some(203));
    }

    /// Twelve ACKs 3 ms apart (too far apart for a train) from `start_us`, each with an
    /// RTT sample of `rtt_ms`, acknowledging up from `una` while `nxt` is next to send.
    fn spaced_round(c: &mut Cubic, start_us: u64, rtt_ms: u64, una: u64, nxt: u64) {
        for i in 0..12u64 {
            let rtt = Some(Duration::from_millis(rtt_ms));
            c.on_ack_sample(us(start_us + i * 3_000), rtt, una + i, nxt);
        }
    }

    #[test]
    fn hystart_ends_slow_start_when_a_round_sees_the_rtt_rise() {
        let mut c = slow_starting(100.0, Some(false));
        // A round whose samples read 110 ms: below 100 + 12.5 ms, slow start goes on.
        spaced_round(&mut c, 200_000, 110, 11, 400);
        assert_eq!(c.w.ssthresh, f64::MAX, "an RTT 10 ms up is no queue yet");
        // Next round (una passes 400): 113 ms, more than 100 + 12.5.
        spaced_round(&mut c, 400_000, 113, 401, 900);
        assert_eq!(
            c.w.ssthresh, 100.0,
            "the ninth sample of the round ends slow start"
        );
        // Below 16 segments HyStart does not act at all.
        let mut small = slow_starting(12.0, Some(false));
        spaced_round(&mut small, 400_000, 150, 401, 900);
        assert_eq!(small.w.ssthresh, f64::MAX);
    }

    #[test]
    fn a_paced_sender_sees_a_queue_that_builds_within_the_round() {
        // One round: twelve clean samples at 100 ms, then the queue grows (113 ms). The
        // unpaced test reads only the round's first samples and goes on; the paced one
        // reads each next group of nine and ends slow start in this round, at the end
        // of the first group whose samples are all raised (the fifteenth).
        for paced in [false, true] {
            let mut c = slow_starting(100.0, Some(paced));
            spaced_round(&mut c, 200_000, 100, 11, 400);
            assert_eq!(c.w.ssthresh, f64::MAX, "no queue yet (paced {paced})");
            let mut ended_at = None;
            for i in 0..30u64 {
                let rtt = Some(Duration::from_millis(113));
                c.on_ack_sample(us(236_000 + i * 3_000), rtt, 23 + i, 400);
                if c.w.ssthresh < f64::MAX && ended_at.is_none() {
                    ended_at = Some(i);
                }
            }
            if paced {
                assert_eq!(
                    ended_at,
                    Some(14),
                    "the first group with every sample raised"
                );
            } else {
                assert_eq!(ended_at, None, "seen only in the next round");
            }
        }
    }

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
