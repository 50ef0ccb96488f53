//! HyStart++ (RFC 9406) on a window rule's first slow start: the sender hands it each new
//! cumulative ACK and divides the window's growth in Conservative Slow Start.

use super::Sender;
use crate::cc::hystart_pp::{Step, CSS_GROWTH_DIVISOR};

impl Sender {
    /// HyStart++ hears a new cumulative ACK, before the window grows on it. The first slow
    /// start is the one with no threshold yet: a loss or a timeout sets one, and then
    /// HyStart++ stops (later slow starts end at that threshold).
    pub(super) fn watch_first_slow_start(&mut self) {
        let Some(h) = self.hystart_pp.as_mut() else {
            return;
        };
        if self.in_recovery || self.cc.ssthresh() < f64::MAX {
            h.stop();
            return;
        }
        if h.on_ack(self.rtt_this_ack, self.sb.una(), self.sb.nxt()) == Step::EndSlowStart {
            let cwnd = self.cc.cwnd();
            self.cc.window_mut().ssthresh = cwnd.max(2.0);
        }
    }

    /// True in Conservative Slow Start: an ACK's growth goes through
    /// [`Sender::conserve_growth`].
    pub(super) fn in_conservative_slow_start(&self) -> bool {
        self.hystart_pp.as_ref().is_some_and(|h| h.conservative())
    }

    /// In Conservative Slow Start the window keeps a quarter of what this ACK's slow start
    /// added to `before`.
    pub(super) fn conserve_growth(&mut self, before: f64) {
        let after = self.cc.cwnd();
        if self.in_conservative_slow_start() && after > before {
            self.cc
                .set_cwnd(before + (after - before) / CSS_GROWTH_DIVISOR);
        }
    }
}
