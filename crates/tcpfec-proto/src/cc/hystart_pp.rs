//! HyStart++ (RFC 9406): a window rule's first slow start ends when the round trip rises,
//! before the queue overflows, and a rise that was only jitter costs little.
//!
//! Each round (from the segment next to send at its start until it is acknowledged) keeps
//! the least RTT of its ACKs. Once a round has [`N_RTT_SAMPLE`] samples and its least RTT
//! is above the previous round's by `RttThresh` (an eighth of that RTT, 4–16 ms), slow
//! start gives way to Conservative Slow Start: the window grows by a quarter of what slow
//! start would add ([`CSS_GROWTH_DIVISOR`]). If a later round's least RTT falls below the
//! one that started CSS, the rise was jitter and slow start resumes; after [`CSS_ROUNDS`]
//! rounds of CSS the window becomes the slow-start threshold, and congestion avoidance
//! begins. A loss in either phase is the controller's to answer, as without HyStart++.
//!
//! Only the first slow start is watched (§4.3): later ones stop at the threshold the
//! first one found. The state machine is here; the sender feeds it and scales the
//! window's growth in CSS.

use core::time::Duration;

/// Samples a round needs before its least RTT is compared (N_RTT_SAMPLE).
pub const N_RTT_SAMPLE: u32 = 8;
/// RttThresh is the previous round's least RTT over this (MIN_RTT_DIVISOR)...
pub const RTT_THRESH_DIVISOR: u32 = 8;
/// ...clamped to these bounds (MIN_RTT_THRESH, MAX_RTT_THRESH).
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// See [`MIN_RTT_THRESH`].
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// In CSS the window grows by slow start's growth over this (CSS_GROWTH_DIVISOR).
pub const CSS_GROWTH_DIVISOR: f64 = 4.0;
/// Rounds of CSS before congestion avoidance (CSS_ROUNDS).
pub const CSS_ROUNDS: u32 = 5;

/// The least RTT rise over `last` that ends slow start (RttThresh).
pub fn rtt_threshold(last: Duration) -> Duration {
    (last / RTT_THRESH_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
}

/// Where the first slow start is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// Standard slow start, watched for a rise in RTT.
    SlowStart,
    /// Conservative Slow Start.
    Conservative {
        /// The least RTT of the round that started it (cssBaselineMinRtt).
        baseline: Duration,
        /// Rounds of it that ended.
        rounds: u32,
    },
    /// Nothing more to watch: slow start ended by HyStart++, by a loss, or by a timeout.
    Done,
}

/// What the sender does after an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing.
    None,
    /// The window becomes the slow-start threshold: congestion avoidance from here.
    EndSlowStart,
}

/// HyStart++ for one connection's first slow start.
#[derive(Debug, Clone)]
pub struct HyStartPlusPlus {
    phase: Phase,
    /// The round ends once the cumulative ACK passes this segment.
    round_end: Option<u64>,
    last_round_min: Option<Duration>,
    round_min: Option<Duration>,
    samples: u32,
}

impl Default for HyStartPlusPlus {
    fn default() -> Self {
        HyStartPlusPlus {
            phase: Phase::SlowStart,
            round_end: None,
            last_round_min: None,
            round_min: None,
            samples: 0,
        }
    }
}

impl HyStartPlusPlus {
    /// Where it is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// True in Conservative Slow Start: the window's growth is to be divided by
    /// [`CSS_GROWTH_DIVISOR`].
    pub fn conservative(&self) -> bool {
        matches!(self.phase, Phase::Conservative { .. })
    }

    /// Slow start ended some other way (a loss, a timeout, a threshold set by something
    /// else): HyStart++ has nothing more to do.
    pub fn stop(&mut self) {
        self.phase = Phase::Done;
    }

    /// A new cumulative ACK: `rtt` its round-trip sample if it carried one, `una` the
    /// cumulative ACK and `nxt` the next segment to send.
    pub fn on_ack(&mut self, rtt: Option<Duration>, una: u64, nxt: u64) -> Step {
        if self.phase == Phase::Done {
            return Step::None;
        }
        let round_ended = self.round_end.is_none_or(|end| una > end);
        if round_ended {
            self.round_end = Some(nxt);
            self.last_round_min = self.round_min.take();
            self.samples = 0;
            if let Phase::Conservative { baseline, rounds } = self.phase {
                if rounds + 1 >= CSS_ROUNDS {
                    self.phase = Phase::Done;
                    return Step::EndSlowStart;
                }
                self.phase = Phase::Conservative {
                    baseline,
                    rounds: rounds + 1,
                };
            }
        }
        let Some(rtt) = rtt else {
            return Step::None;
        };
        self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
        self.samples += 1;
        let (Some(current), Some(last)) = (self.round_min, self.last_round_min) else {
            return Step::None;
        };
        match self.phase {
            Phase::SlowStart
                if self.samples >= N_RTT_SAMPLE && current >= last + rtt_threshold(last) =>
            {
                self.phase = Phase::Conservative {
                    baseline: current,
                    rounds: 0,
                };
            }
            Phase::Conservative { baseline, .. } if current < baseline => {
                // The rise was jitter: the round trip came back below it.
                self.phase = Phase::SlowStart;
            }
            _ => {}
        }
        Step::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Feeds one round of `acks` ACKs, all with round trip `rtt`, on a window that
    /// doubles: returns the steps taken and the next segment number.
    fn round(h: &mut HyStartPlusPlus, first: u64, acks: u64, rtt: Duration) -> (Vec<Step>, u64) {
        let end = first + acks;
        let steps = (first..end)
            .map(|una| h.on_ack(Some(rtt), una + 1, end + 2 * acks))
            .collect();
        (steps, end + 2 * acks)
    }

    #[test]
    fn a_steady_round_trip_keeps_slow_start() {
        let mut h = HyStartPlusPlus::default();
        let mut next = 0;
        for _ in 0..6 {
            let (steps, n) = round(&mut h, next, 20, 100 * MS);
            assert!(steps.iter().all(|s| *s == Step::None));
            next = n;
        }
        assert_eq!(h.phase(), Phase::SlowStart);
    }

    #[test]
    fn a_rise_enters_css_and_five_rounds_of_it_end_slow_start() {
        let mut h = HyStartPlusPlus::default();
        let (_, next) = round(&mut h, 0, 20, 100 * MS);
        // 100 ms / 8 = 12.5 ms: a rise of 12 ms is not enough; from 112 ms, 14 ms is.
        let (_, next) = round(&mut h, next, 20, 112 * MS);
        assert_eq!(h.phase(), Phase::SlowStart);
        let (_, mut next) = round(&mut h, next, 20, 126 * MS);
        assert!(h.conservative(), "{:?}", h.phase());
        let mut ended = 0;
        for r in 0..CSS_ROUNDS {
            let (steps, n) = round(&mut h, next, 20, 127 * MS);
            next = n;
            if steps.contains(&Step::EndSlowStart) {
                ended = r + 1;
                break;
            }
        }
        assert_eq!(
            ended, CSS_ROUNDS,
            "slow start ends as the fifth round of CSS ends"
        );
        assert_eq!(h.phase(), Phase::Done);
    }

    #[test]
    fn a_round_trip_back_below_the_baseline_resumes_slow_start() {
        let mut h = HyStartPlusPlus::default();
        let (_, next) = round(&mut h, 0, 20, 40 * MS);
        // 40 ms / 8 = 5 ms, above the 4 ms floor.
        let (_, next) = round(&mut h, next, 20, 46 * MS);
        assert!(h.conservative());
        round(&mut h, next, 20, 44 * MS);
        assert_eq!(h.phase(), Phase::SlowStart);
    }

    #[test]
    fn fewer_than_eight_samples_decide_nothing() {
        let mut h = HyStartPlusPlus::default();
        let (_, next) = round(&mut h, 0, 20, 100 * MS);
        round(&mut h, next, N_RTT_SAMPLE as u64 - 1, 200 * MS);
        assert_eq!(h.phase(), Phase::SlowStart);
    }

    #[test]
    fn the_threshold_is_an_eighth_of_the_rtt_within_4_to_16_ms() {
        assert_eq!(rtt_threshold(10 * MS), 4 * MS);
        assert_eq!(rtt_threshold(80 * MS), 10 * MS);
        assert_eq!(rtt_threshold(400 * MS), 16 * MS);
    }

    #[test]
    fn once_stopped_it_watches_nothing() {
        let mut h = HyStartPlusPlus::default();
        h.stop();
        let (_, next) = round(&mut h, 0, 20, 100 * MS);
        let (steps, _) = round(&mut h, next, 20, 300 * MS);
        assert!(steps.iter().all(|s| *s == Step::None));
        assert_eq!(h.phase(), Phase::Done);
    }
}
