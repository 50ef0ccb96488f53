//! ACK aggregation, as both BBR versions estimate it: how much more the ACKs deliver than
//! the bandwidth estimate expects. ACKs that come in bursts (a receiver or a network card
//! batching them, a path that holds them back and releases them together) acknowledge a
//! flight at once and then none for a while; a window of a BDP or two runs dry between
//! such bursts unless it holds the excess too.

use super::filter::MaxFilter;
use crate::time::Instant;

/// Rounds over which the largest excess is remembered (Linux keeps two windows of five).
const ROUNDS: u64 = 10;

/// The excess of recent rounds, in bytes.
#[derive(Debug, Clone)]
pub(crate) struct AckAggregation {
    filter: MaxFilter<{ ROUNDS as usize }>,
    extra: f64,
    /// When the current epoch began: the last time the ACKs fell behind the estimate.
    start: Instant,
    /// Bytes acknowledged since then.
    delivered: f64,
}

impl AckAggregation {
    pub(crate) fn new() -> Self {
        AckAggregation {
            filter: MaxFilter::new(),
            extra: 0.0,
            start: Instant::ZERO,
            delivered: 0.0,
        }
    }

    /// Counts an ACK of `newly_acked` bytes at `now` in round `round`, against a bandwidth
    /// estimate of `bw` bytes/s; the excess of one epoch is at most `cwnd` bytes.
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        newly_acked: u64,
        bw: f64,
        cwnd: f64,
        round: u64,
    ) {
        let interval = now.saturating_since(self.start).as_secs_f64();
        let mut expected = bw * interval;
        if self.delivered <= expected {
            // The ACKs are no faster than the estimate: a new epoch starts here.
            self.delivered = 0.0;
            self.start = now;
            expected = 0.0;
        }
        self.delivered += newly_acked as f64;
        let extra = (self.delivered - expected).min(cwnd);
        self.extra = self.filter.update(round, extra);
    }

    /// The largest excess of the last [`ROUNDS`] rounds, in bytes.
    pub(crate) fn extra(&self) -> f64 {
        self.extra
    }
}
