//! The loss-recovery part both BBR versions share: a recovery episode starts with the
//! window the flight holds (packet conservation) for one round trip, and the window from
//! before the episode is given back when it ends.

use super::AckEvent;

/// Where a BBR flow is in a loss-recovery episode.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecoveryState {
    /// Between fast-recovery entry and its end (or an RTO).
    pub in_recovery: bool,
    /// Entered since the last ACK: the next ACK sets the conserving window.
    entered: bool,
    /// In the first round of the episode: the window only replaces what left.
    pub conserving: bool,
    /// Delivered bytes at which the first round ends.
    round_end: u64,
}

impl RecoveryState {
    /// Fast recovery began; true if this is a new episode (the caller saves its window).
    pub fn enter(&mut self) -> bool {
        if self.in_recovery {
            return false;
        }
        self.in_recovery = true;
        self.entered = true;
        true
    }

    /// The episode ended (recovered, or an RTO took over).
    pub fn leave(&mut self) {
        self.in_recovery = false;
        self.entered = false;
        self.conserving = false;
    }

    /// Per ACK: on the first ACK of an episode, the window to conserve from (what is in
    /// flight plus what this ACK delivered, at least one `mss`); ends conservation after
    /// one round.
    pub fn on_ack(&mut self, ev: &AckEvent, mss: f64) -> Option<f64> {
        let mut start = None;
        if self.entered {
            self.entered = false;
            self.conserving = true;
            self.round_end = ev.delivered + ev.inflight;
            start = Some(ev.inflight as f64 + (ev.newly_acked as f64).max(mss));
        }
        if self.conserving && ev.delivered >= self.round_end {
            self.conserving = false;
        }
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conserves_for_one_round_then_stops() {
        let mut r = RecoveryState::default();
        assert!(r.enter());
        assert!(!r.enter(), "same episode");
        let ev = |delivered, inflight, newly_acked| AckEvent {
            delivered,
            inflight,
            newly_acked,
            ..AckEvent::default()
        };
        assert_eq!(r.on_ack(&ev(10_000, 50_000, 1000), 1000.0), Some(51_000.0));
        assert!(r.conserving);
        assert_eq!(r.on_ack(&ev(59_000, 40_000, 1000), 1000.0), None);
        assert!(r.conserving, "one round is 50 000 bytes");
        r.on_ack(&ev(60_000, 40_000, 1000), 1000.0);
        assert!(!r.conserving && r.in_recovery);
        r.leave();
        assert!(!r.in_recovery && r.enter());
    }
}
