//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use core::time::Duration;

/// The longest RTO, whatever the RTT: RFC 6298 (2.5) lets an implementation bound the
/// RTO at 60 s or more. With a `max_rto` of 60 s (the simulator's) the RTO is clamped
/// exactly as it always was.
pub const RTO_CEILING: Duration = Duration::from_secs(60);

/// Smoothed RTT, RTT variance and the RTO derived from them, with exponential back-off.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    initial_rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    granularity: Duration,
    backoff: u32,
    samples: u64,
    sample_sum_ns: u128,
}

impl RttEstimator {
    /// A fresh estimator. `granularity` is RFC 6298's clock granularity G.
    pub fn new(
        initial_rto: Duration,
        min_rto: Duration,
        max_rto: Duration,
        granularity: Duration,
    ) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            initial_rto,
            min_rto,
            max_rto,
            granularity,
            backoff: 0,
            samples: 0,
            sample_sum_ns: 0,
        }
    }

    /// Feeds one RTT measurement (RFC 6298 §2.2–2.3, α = 1/8, β = 1/4).
    pub fn on_sample(&mut self, rtt: Duration) {
        self.latest = Some(rtt);
        self.samples += 1;
        self.sample_sum_ns += rtt.as_nanos();
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let diff = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
    }

    /// The current RTO: RFC 6298's from the RTT (at least `min_rto`), doubled per
    /// back-off up to `max_rto`. The cap bounds the back-off, not the RTO the path's own
    /// RTT asks for: on a path whose RTT exceeds the cap (a satellite hop behind a deep
    /// queue) a capped RTO would fire before any ACK could arrive. That RTO is bounded
    /// only by [`RTO_CEILING`], so extreme variance cannot stall a flow for longer.
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => self.initial_rto,
            Some(srtt) => srtt + self.granularity.max(self.rttvar * 4),
        };
        let base = base.max(self.min_rto);
        let backed = base.saturating_mul(1u32 << self.backoff.min(16));
        backed.min(self.max_rto.max(base.min(RTO_CEILING)))
    }

    /// Timeouts since new data was last acknowledged (each doubled the RTO).
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Doubles the RTO after a timeout (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// Clears the back-off once new data is acknowledged.
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    /// Smoothed RTT, once a sample exists.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// RTT variation (RTTVAR).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// Smallest RTT seen.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// Mean of all samples (for reports and analytic models).
    pub fn mean(&self) -> Option<Duration> {
        (self.samples > 0)
            .then(|| Duration::from_nanos((self.sample_sum_ns / self.samples as u128) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(
            Duration::from_secs(1),
            Duration::from_millis(200),
            Duration::from_secs(60),
            Duration::from_millis(1),
        )
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = est();
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.on_sample(Duration::from_millis(100));
        // RTO = 100 + 4 * 50 = 300 ms.
        assert_eq!(e.rto(), Duration::from_millis(300));
    }

    /// The cap bounds the back-off, never the path's own RTO: on a 5 s path with a 3 s
    /// cap a timeout still waits for the ACK that can come; a fast path backs off to the
    /// cap and no further; an RTO inflated past a minute is held at the ceiling.
    #[test]
    fn the_cap_bounds_only_the_back_off() {
        let estimator = |rtt: Duration| {
            let mut e = RttEstimator::new(
                Duration::from_secs(1),
                Duration::from_millis(200),
                Duration::from_secs(3),
                Duration::from_millis(200),
            );
            e.on_sample(rtt);
            e
        };
        let mut slow = estimator(Duration::from_secs(5));
        assert_eq!(slow.rto(), Duration::from_secs(15)); // 5 + 4 · 2.5
        slow.back_off();
        assert_eq!(slow.rto(), Duration::from_secs(15));
        let mut fast = estimator(Duration::from_millis(100));
        assert_eq!(fast.rto(), Duration::from_millis(300));
        for _ in 0..5 {
            fast.back_off();
        }
        assert_eq!(fast.rto(), Duration::from_secs(3));
        assert_eq!(estimator(Duration::from_secs(100)).rto(), RTO_CEILING);
    }

    #[test]
    fn min_rto_and_backoff_apply() {
        let mut e = est();
        for _ in 0..50 {
            e.on_sample(Duration::from_millis(10));
        }
        assert_eq!(e.rto(), Duration::from_millis(200));
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), Duration::from_millis(800));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
        e.reset_backoff();
        assert_eq!(e.rto(), Duration::from_millis(200));
    }
}
