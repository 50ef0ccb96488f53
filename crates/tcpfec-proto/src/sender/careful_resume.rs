//! Careful Resume for the sender: confirming a saved path, the jump and the retreat
//! (`crate::resume` holds the state machine).

use super::Sender;
use crate::resume::{ResumeAction, ResumeStatus, SavedPath};
use crate::time::Instant;
use core::time::Duration;

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
    }

    /// Hands what Careful Resume decided to the congestion controller. Window and
    /// threshold arithmetic is for window rules only: a controller that models the path
    /// keeps its own (BBR ignores `set_cwnd` and leaves Startup on a retreat).
    pub(super) fn apply_resume(&mut self, action: ResumeAction) {
        let mss = self.mss as f64;
        let window_rule = !self.models_path;
        match action {
            ResumeAction::None => {}
            ResumeAction::Settle { cwnd_bytes } => {
                let w = self.cc.cwnd().max(cwnd_bytes / mss);
                self.cc.set_cwnd(w);
            }
            ResumeAction::Retreat => self.cc.leave_startup(),
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
