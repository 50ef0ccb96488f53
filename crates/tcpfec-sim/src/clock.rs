//! A host's own clock: the simulator keeps one true time, and each endpoint reads it
//! through its host's clock, which may run fast or slow (`Scenario::clock_skew_ppm`).
//!
//! Real hosts' oscillators differ by tens of parts per million, and NTP slews a clock by
//! up to 500 ppm while it corrects an offset. The engine compares the peer's timestamps
//! with its own clock (the loss-run meter reads queueing delays from one-way delays), so
//! a skew is something a long connection meets. The link and the application's
//! measurements stay in true time.

use tcpfec_proto::Instant;

/// One part per billion of a nanosecond clock, as the unit of a skew.
const PPB: i128 = 1_000_000_000;

/// A host clock running `skew_ppb` parts per billion faster than true time (slower if
/// negative), both starting at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostClock {
    skew_ppb: i64,
}

impl HostClock {
    /// The clock of a host whose oscillator runs `ppm` parts per million fast; more than
    /// a tenth of a second per second either way is refused by the scenario's checks.
    pub fn with_skew_ppm(ppm: f64) -> Self {
        HostClock {
            skew_ppb: (ppm * 1e3).round() as i64,
        }
    }

    /// What the host's clock reads at true time `true_ns`. Never decreasing in
    /// `true_ns` (the skew is far below one), and exactly `true_ns` without a skew.
    pub fn local(&self, true_ns: u64) -> Instant {
        if self.skew_ppb == 0 {
            return Instant(true_ns);
        }
        let t = true_ns as i128;
        let drift = (t * self.skew_ppb as i128).div_euclid(PPB);
        Instant((t + drift).max(0) as u64)
    }

    /// The earliest true time at which the host's clock reads at least `local`: when a
    /// timer the engine set for `local` fires.
    pub fn true_time(&self, local: Instant) -> u64 {
        if self.skew_ppb == 0 {
            return local.0;
        }
        // A first guess from the inverse rate, then the rounding put right: `local` is
        // monotone, so the answer is found by stepping.
        let l = local.0 as i128;
        let mut t = (l * PPB / (PPB + self.skew_ppb as i128)).max(0) as u64;
        while self.local(t) < local {
            t += 1;
        }
        while t > 0 && self.local(t - 1) >= local {
            t -= 1;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn without_a_skew_the_host_reads_true_time() {
        let c = HostClock::default();
        assert_eq!(c.local(123_456_789), Instant(123_456_789));
        assert_eq!(c.true_time(Instant(42)), 42);
    }

    #[test]
    fn a_fast_clock_gains_its_skew() {
        // 50 ppm over 1000 s: 50 ms ahead.
        let c = HostClock::with_skew_ppm(50.0);
        assert_eq!(c.local(1_000_000_000_000), Instant(1_000_050_000_000));
        let slow = HostClock::with_skew_ppm(-50.0);
        assert_eq!(slow.local(1_000_000_000_000), Instant(999_950_000_000));
    }

    proptest! {
        /// A timer set for `local` fires at the first true time the clock reads it.
        #[test]
        fn a_timer_fires_when_the_clock_first_reads_its_deadline(
            ppm in -100_000.0f64..100_000.0,
            local in 0u64..(1u64 << 50),
        ) {
            let c = HostClock::with_skew_ppm(ppm);
            let t = c.true_time(Instant(local));
            prop_assert!(c.local(t) >= Instant(local));
            prop_assert!(t == 0 || c.local(t - 1) < Instant(local));
        }
    }
}
