//! Tail loss probe (RFC 8985 §7): when a flight's last packets are lost, no later
//! packet arrives to SACK them and the sender would wait for its retransmission timer
//! (200 ms at least, far more than a round trip on a short path). Instead, two smoothed
//! RTTs after the last send or ACK, one probe goes out: a new segment if there is one, or
//! the newest segment again. The probe's acknowledgement then shows which of the
//! segments sent before it are missing, and those are retransmitted at once.
//!
//! This type keeps the timer and the one probe of an episode; the sender decides what to
//! send and marks the losses.

use crate::time::Instant;
use core::time::Duration;

/// The probe timer and the probe in flight.
#[derive(Debug, Default)]
pub(crate) struct TailLossProbe {
    /// When the probe timeout (PTO) fires, if armed.
    deadline: Option<Instant>,
    /// The timer has fired: the sender's next poll sends the probe.
    fired: bool,
    /// The send order (`TxState::order`) of this episode's probe, until its fate is known.
    probe_sent: Option<u64>,
    /// Probes sent in total.
    pub probes: u64,
}

impl TailLossProbe {
    /// Arms (or re-arms) the probe timer after a send of new data or an ACK, with
    /// `outstanding` segments in flight: PTO = 2·SRTT, plus the receiver's delayed-ACK
    /// timeout when a single segment is out (its ACK may be held that long). Where the
    /// retransmission timer would fire first, the probe goes at its time instead (RFC
    /// 8985 §7.2, as Linux schedules it): on a path whose RTT exceeds the RTO's 200 ms
    /// floor that is always so, and a lost tail would otherwise be found by the timeout,
    /// which restarts the window from one segment. No probe is armed while one is in
    /// flight.
    ///
    /// Unlike RFC 8985, a probe may also go out during loss recovery: the engine has no
    /// RACK reordering timer for first transmissions, so a hole with fewer than
    /// `dupthresh` SACKed segments above it (at a transfer's tail) would otherwise wait
    /// for the retransmission timer. The probe's ACK stands in for that timer.
    pub fn arm(
        &mut self,
        now: Instant,
        srtt: Option<Duration>,
        outstanding: usize,
        delack: Option<Duration>,
        rto_deadline: Option<Instant>,
    ) {
        self.deadline = None;
        let Some(srtt) = srtt else {
            return; // no RTT measured yet: the RTO's initial value applies
        };
        if outstanding == 0 || self.probe_sent.is_some() {
            return;
        }
        let mut pto = srtt * 2;
        if outstanding == 1 {
            pto += delack.unwrap_or_default();
        }
        let at = now + pto;
        self.deadline = Some(rto_deadline.map_or(at, |rto| at.min(rto)));
    }

    /// The probe timer's deadline, if armed.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Runs the probe timer: if it is due by `now`, a probe is owed. Returns whether it
    /// fired now.
    pub fn on_timer(&mut self, now: Instant) -> bool {
        let due = self.deadline.is_some_and(|d| d <= now);
        if due {
            self.deadline = None;
            self.fired = true;
        }
        due
    }

    /// True (once) if a probe is owed.
    pub fn take_fired(&mut self) -> bool {
        std::mem::take(&mut self.fired)
    }

    /// A probe left, `order`-th in the connection's send order.
    pub fn on_probe_sent(&mut self, order: u64) {
        self.deadline = None;
        self.probe_sent = Some(order);
        self.probes += 1;
    }

    /// The newest delivered packet was sent `newest`-th: if that is the probe or later,
    /// the episode ends and the probe's send order is returned (every segment sent before
    /// it and not yet acknowledged is missing).
    pub fn probe_delivered(&mut self, newest: Option<u64>) -> Option<u64> {
        let sent = self.probe_sent?;
        if newest? < sent {
            return None;
        }
        self.probe_sent = None;
        Some(sent)
    }

    /// The episode is over without the probe's verdict (everything acknowledged, or the
    /// retransmission timer fired): the next tail may be probed again.
    pub fn reset(&mut self) {
        self.deadline = None;
        self.probe_sent = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::ZERO + MS * ms as u32
    }

    #[test]
    fn the_probe_fires_two_rtts_after_the_last_send_or_at_the_rto_if_that_is_sooner() {
        let mut t = TailLossProbe::default();
        t.arm(at(0), Some(MS * 20), 5, None, Some(at(220)));
        assert_eq!(t.deadline(), Some(at(40)));
        assert!(!t.on_timer(at(39)));
        assert!(!t.take_fired());
        assert!(t.on_timer(at(40)));
        assert!(t.take_fired());
        t.on_timer(at(41));
        assert!(!t.take_fired(), "fires once");
        t.arm(at(0), Some(MS * 200), 5, None, Some(at(300)));
        assert_eq!(
            t.deadline(),
            Some(at(300)),
            "at the RTO's time, which comes first"
        );
    }

    #[test]
    fn a_single_segment_waits_for_a_delayed_ack_too() {
        let mut t = TailLossProbe::default();
        t.arm(at(0), Some(MS * 20), 1, Some(MS * 40), None);
        assert_eq!(t.deadline(), Some(at(80)));
    }

    #[test]
    fn one_probe_per_episode_and_none_without_an_rtt() {
        let mut t = TailLossProbe::default();
        t.arm(at(0), None, 5, None, None);
        assert_eq!(t.deadline(), None);
        t.on_probe_sent(7);
        t.arm(at(50), Some(MS * 20), 5, None, None);
        assert_eq!(t.deadline(), None, "a probe is in flight");
        assert_eq!(t.probe_delivered(Some(6)), None, "an older packet's ACK");
        assert_eq!(t.probe_delivered(Some(7)), Some(7));
        assert_eq!(t.probe_delivered(Some(9)), None, "the episode is over");
        t.arm(at(90), Some(MS * 20), 5, None, None);
        assert_eq!(t.deadline(), Some(at(130)));
        assert_eq!(t.probes, 1);
    }
}
