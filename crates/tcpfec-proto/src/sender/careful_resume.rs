//! Careful Resume for the sender: confirming a saved path, the jump and the retreat
//! (`crate::resume` holds the state machine).

use super::Sender;
use crate::cc::hystart_pp::CSS_GROWTH_DIVISOR;
use crate::resume::{ResumeAction, ResumeStatus, SavedPath};
use crate::time::Instant;
use core::time::Duration;

/// The share of the saved rate at which a path-modelling controller's start-up after a
/// validated jump ends (`Sender::end_startup_at_saved_rate`): BBR's filters read a
/// little below the bottleneck (headers, repair), so not all of it.
const SAVED_RATE_REACHED: f64 = 0.9;

/// Conservative Slow Start lasts from one saved BDP to this many (about RFC 9406's
/// CSS_ROUNDS, 5, at a quarter more per round).
const CSS_END: f64 = 3.0;

/// The rate a controller that models the path takes from a validated jump. The jump's
/// ACKs return at the pace it was sent, half the saved rate over the round trip (RFC
/// 9959's half of the saved BDP), so their rate measures that pace rather than the path.
/// The path carried the pace without a queue or loss beyond what the jump tolerates, so
/// the saved rate it delivered before stands, up to twice the pace seen (a path slower
/// than the pace delivers below it). Taken at the pace, BBR v3 ends its start-up at 0.7
/// of a 50 Mb/s path whenever a 2 % lossy channel's unrepaired jump losses meet its
/// high-loss rule, and cruises there until its next bandwidth probe, seconds later.
fn path_rate_after_jump(delivery_rate: f64, saved_rate: f64) -> f64 {
    delivery_rate.max(saved_rate.min(2.0 * delivery_rate))
}

impl Sender {
    /// Careful Resume's reconnaissance ends with the first RTT sample (the handshake's,
    /// or the first ACK's): the resume jumps if the sample confirms the saved path.
    pub(super) fn confirm_resume(&mut self, now: Instant) {
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
        if r.status() == ResumeStatus::Unvalidated {
            self.cc.on_jump();
        }
    }

    /// Feeds one ACK to Careful Resume: `delivered_before` is the delivery count before
    /// the ACK, `rtt` its sample.
    pub(super) fn resume_on_ack(
        &mut self,
        now: Instant,
        delivered_before: u64,
        rtt: Option<Duration>,
    ) {
        let Some(r) = self.resume.as_mut().filter(|r| r.wants_acks()) else {
            return;
        };
        let acked = self.sb.rate.delivered() - delivered_before;
        let flight = self.sb.bytes_outstanding() as f64;
        let (newest, lost) = (self.sb.newest_delivered(), self.sb.rate.lost());
        let next = self.sb.rate.next_order();
        let action = r.on_ack(now, acked, newest, rtt, lost, flight, next);
        self.apply_resume(action);
        self.end_startup_at_saved_rate();
    }

    /// After a validated jump, a controller that models the path leaves its start-up
    /// when a queue shows while its bandwidth estimate is at least
    /// [`SAVED_RATE_REACHED`] of the saved rate: the path is full at the rate it carried
    /// before, and another start-up round would only fill the queue by 1.77 times that.
    /// Neither alone: the queue appears a round before BBR's estimate reaches the
    /// path's rate (leaving on it held `auto` at 0.7 of the path until its next
    /// bandwidth probe, seconds later), and a saved rate far too low is reached at once
    /// on a path with room (leaving then took 6.4 s for 10 MB where a normal start
    /// takes 3). Without both, BBR's own rules end the start-up.
    fn end_startup_at_saved_rate(&mut self) {
        let Some(r) = self.resume.as_mut() else {
            return;
        };
        if !self.models_path || r.status() != ResumeStatus::Completed {
            return;
        }
        if self.cc.started_up() {
            r.stop_watching();
            return;
        }
        let (Some(bdp), Some(min_rtt)) = (self.cc.bdp_segments(), self.rtt.min_rtt()) else {
            return;
        };
        let rate = bdp * self.mss as f64 / min_rtt.as_secs_f64().max(1e-9);
        if r.queue_seen() && rate >= SAVED_RATE_REACHED * r.saved_rate() {
            r.stop_watching();
            self.cc.leave_startup();
        }
    }

    /// After a validated jump, a window rule's slow start above the saved BDP grows by a
    /// quarter of what it would: HyStart++'s Conservative Slow Start (RFC 9406 §4.3,
    /// CSS_GROWTH_DIVISOR), entered where the path's known capacity ends rather than on
    /// a delay increase. Doubling from the path's capacity overflowed a quarter-BDP
    /// queue in the round before the delay check could see it (CUBIC lost 1 330 packets
    /// and took 9.2 s for 10 MB, 3.4 s from a normal start); a quarter more per round
    /// lets the queue's delay end slow start first. Past [`CSS_END`] saved BDPs without a
    /// queue the saved rate was too low, and slow start doubles again, as HyStart++ does
    /// after CSS_ROUNDS rounds of CSS without a delay increase (five rounds of a quarter
    /// more are three times the window). `before` is the window before this ACK; the
    /// caller asks only while [`Sender::slow_start_watched`].
    pub(super) fn conserve_slow_start_past_saved_path(&mut self, before: f64) {
        let Some(r) = self.resume.as_ref() else {
            return;
        };
        let after = self.cc.cwnd();
        let mss = self.mss as f64;
        let past = before * mss / r.saved_bdp().max(1.0);
        if after <= before || before >= self.cc.ssthresh() || !(1.0..CSS_END).contains(&past) {
            return;
        }
        self.cc
            .set_cwnd(before + (after - before) / CSS_GROWTH_DIVISOR);
    }

    /// True while a window rule's slow start after a validated jump is watched: only
    /// then does an ACK's window growth go through
    /// [`Sender::conserve_slow_start_past_saved_path`].
    pub(super) fn slow_start_watched(&self) -> bool {
        !self.models_path && self.resume.as_ref().is_some_and(|r| r.watching())
    }

    /// Hands what Careful Resume decided to the congestion controller. Window and
    /// threshold arithmetic is for window rules only: a controller that models the path
    /// keeps its own (BBR ignores `set_cwnd`, and leaves Startup on a retreat a queue
    /// called).
    pub(super) fn apply_resume(&mut self, action: ResumeAction) {
        let mss = self.mss as f64;
        let window_rule = !self.models_path;
        match action {
            ResumeAction::None => {}
            ResumeAction::Settle { cwnd_bytes } | ResumeAction::Validated { cwnd_bytes, .. } => {
                let w = self.cc.cwnd().max(cwnd_bytes / mss);
                self.cc.set_cwnd(w);
                if let ResumeAction::Validated { delivery_rate, .. } = action {
                    let saved = self.resume.as_ref().map_or(0.0, |r| r.saved_rate());
                    self.cc
                        .on_jump_delivered(path_rate_after_jump(delivery_rate, saved));
                }
            }
            // After a retreat on loss alone BBR keeps its own rules, which answer loss in
            // Startup themselves; window rules have no start-up to leave.
            ResumeAction::Retreat { queue: true } => self.cc.leave_startup(),
            ResumeAction::Retreat { queue: false } => {}
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
}
