//! Proportional Rate Reduction (RFC 6937) for SACK loss recovery, as Linux runs it
//! (`tcp_cwnd_reduction`), with `Config::prr`.
//!
//! RFC 6675 sends whenever the flight (pipe) is below the window. Entering recovery cuts
//! the window to half of a flight that, after a slow-start overshoot, is twice the path:
//! nothing leaves until the flight has fallen by half, the queue drains, and then each ACK
//! (delivering one segment and marking another lost) releases two segments, twice the
//! link's rate, into a queue that overflows again. PRR instead lets each ACK release a
//! share of what it delivered, ssthresh / (window before the cut), while the flight is
//! above ssthresh, and at most what was delivered (plus one while the cumulative ACK
//! advances cleanly) once it is below, so the flight reaches ssthresh smoothly.

/// The reduction in progress: counted from the start of the recovery episode.
#[derive(Debug, Clone, Copy)]
pub(super) struct Prr {
    /// The window before the cut (Linux's `prior_cwnd`, RFC 6937's RecoverFS).
    prior_cwnd: f64,
    /// Segments delivered since recovery began (`prr_delivered`).
    delivered: u64,
    /// The sender's count of segments sent when recovery began; `prr_out` is the
    /// difference to the count now.
    sent_at_start: u64,
}

/// What one ACK in recovery told PRR.
#[derive(Debug, Clone, Copy)]
pub(super) struct PrrAck {
    /// Segments this ACK delivered (cumulatively or by SACK).
    pub newly_delivered: u64,
    /// Segments in flight after it (pipe).
    pub pipe: u64,
    /// The slow-start threshold the reduction heads for, segments.
    pub ssthresh: f64,
    /// Segments the sender has sent in all.
    pub sent: u64,
    /// The cumulative ACK advanced and this ACK marked nothing lost.
    pub clean_advance: bool,
}

impl Prr {
    /// A reduction from a window of `prior_cwnd` segments, with `sent` segments sent so
    /// far.
    pub(super) fn start(prior_cwnd: f64, sent: u64) -> Self {
        Prr {
            prior_cwnd: prior_cwnd.max(1.0),
            delivered: 0,
            sent_at_start: sent,
        }
    }

    /// The window after this ACK: the flight plus what may be sent now.
    pub(super) fn window(&mut self, a: PrrAck) -> f64 {
        self.delivered += a.newly_delivered;
        let out = a.sent.saturating_sub(self.sent_at_start) as f64;
        let delivered = self.delivered as f64;
        let pipe = a.pipe as f64;
        let send = if pipe > a.ssthresh {
            // Proportional: out of every prior_cwnd delivered, ssthresh leave.
            (a.ssthresh * delivered / self.prior_cwnd).ceil() - out
        } else {
            // Slow-start reduction bound: back up to ssthresh no faster than the ACKs
            // deliver, one more while the cumulative ACK advances without new losses.
            let credit = (delivered - out).max(a.newly_delivered as f64)
                + if a.clean_advance { 1.0 } else { 0.0 };
            credit.min(a.ssthresh - pipe)
        };
        // The first retransmission always leaves.
        let floor = if out == 0.0 { 1.0 } else { 0.0 };
        pipe + send.max(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(newly_delivered: u64, pipe: u64, sent: u64, clean_advance: bool) -> PrrAck {
        PrrAck {
            newly_delivered,
            pipe,
            ssthresh: 50.0,
            sent,
            clean_advance,
        }
    }

    /// Above ssthresh, half of what is delivered leaves (ssthresh / prior = 1/2), from the
    /// first ACK on: no silence while the flight falls.
    #[test]
    fn above_ssthresh_sends_in_proportion_to_delivery() {
        let mut p = Prr::start(100.0, 1000);
        // First ACK: one delivered, nothing sent yet: the retransmission leaves.
        assert_eq!(p.window(ack(1, 99, 1000, false)), 100.0);
        // One sent; two more delivered (3 in all): ceil(1.5) - 1 = 1 more.
        assert_eq!(p.window(ack(2, 97, 1001, false)), 98.0);
        // One more sent; one delivered (4 in all): ceil(2) - 2 = 0.
        assert_eq!(p.window(ack(1, 97, 1002, false)), 97.0);
        // Over 100 segments delivered, 50 leave.
        let mut q = Prr::start(100.0, 0);
        let mut sent = 0;
        let mut pipe = 100u64;
        for _ in 0..100 {
            pipe -= 1;
            let w = q.window(ack(1, pipe, sent, false));
            let n = (w - pipe as f64) as u64;
            sent += n;
            pipe += n;
        }
        assert_eq!(sent, 50);
        assert_eq!(pipe, 50);
    }

    /// Below ssthresh the flight grows back by what is delivered, plus one per clean
    /// advance of the cumulative ACK, never past ssthresh.
    #[test]
    fn below_ssthresh_rebuilds_no_faster_than_delivery() {
        let mut p = Prr::start(100.0, 0);
        // Ten delivered by this ACK, five sent so far: the ACK's own ten may leave.
        assert_eq!(p.window(ack(10, 30, 5, false)), 40.0);
        assert_eq!(p.window(ack(1, 30, 15, true)), 31.0 + 1.0);
        assert_eq!(p.window(ack(40, 45, 15, true)), 50.0);
    }
}
