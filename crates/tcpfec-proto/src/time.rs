//! Injected time. The engine never reads a clock: every entry point takes `now`.

use core::time::Duration;

/// A point in time, in nanoseconds since an arbitrary epoch chosen by the driver.
///
/// The simulator uses virtual time starting at zero; the real driver uses a monotonic
/// clock. Only differences between instants carry meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The epoch itself.
    pub const ZERO: Instant = Instant(0);

    /// Builds an instant from nanoseconds since the epoch.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the epoch, as a float (for reports and plots).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// Microseconds since the epoch, truncated to 32 bits: the unit of the wire timestamps.
    pub fn timestamp_micros(self) -> u32 {
        (self.0 / 1_000) as u32
    }

    /// Time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// `Duration::from_secs_f64(secs)`, the same value, cheaper for spans below four seconds
/// (a paced sender converts one packet's time per packet). Below four seconds the product
/// with 10⁹ is within 2.4 · 10⁻⁷ ns of the exact one, so it rounds to the same nanosecond
/// unless it lies within 10⁻⁶ of a half, which is left to the standard conversion.
pub fn duration_from_secs(secs: f64) -> Duration {
    if (0.0..4.0).contains(&secs) {
        let ns = secs * 1e9;
        // Truncation, not `floor`: one instruction on every x86-64, where `floor` is a
        // library call without SSE4.1.
        let whole = ns as u64;
        let fraction = ns - whole as f64;
        if (fraction - 0.5).abs() > 1e-6 {
            return Duration::from_nanos(whole + (fraction > 0.5) as u64);
        }
    }
    Duration::from_secs_f64(secs)
}

/// `d.mul_f64(factor)` (which is `from_secs_f64` of the product), through
/// [`duration_from_secs`].
pub fn duration_scaled(d: Duration, factor: f64) -> Duration {
    duration_from_secs(factor * d.as_secs_f64())
}

impl core::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spans_near_a_half_nanosecond_convert_as_the_standard_library_does() {
        // The floats nearest k + ½ ns and their neighbours: where a product rounded to
        // f64 can fall on the other side of the half from the exact one.
        let bits = |x: f64, step: i64| f64::from_bits((x.to_bits() as i64 + step) as u64);
        for k in (0u64..4_000_000_000).step_by(9_973) {
            let half = (k as f64 + 0.5) * 1e-9;
            for step in -3..=3 {
                let secs = bits(half, step);
                assert_eq!(duration_from_secs(secs), Duration::from_secs_f64(secs));
            }
        }
        assert_eq!(duration_from_secs(5.25), Duration::from_millis(5250));
    }

    proptest! {
        #[test]
        fn every_span_converts_as_the_standard_library_does(secs in 0.0f64..5.0) {
            prop_assert_eq!(duration_from_secs(secs), Duration::from_secs_f64(secs));
        }

        #[test]
        fn scaled_spans_are_the_standard_library_products(ns in 0u64..10_000_000_000, f in 0.0f64..2.0) {
            let d = Duration::from_nanos(ns);
            prop_assert_eq!(duration_scaled(d, f), d.mul_f64(f));
        }

        #[test]
        fn packet_times_convert_as_the_standard_library_does(
            len in 1usize..70_000,
            rate in 1.0f64..1e11,
        ) {
            let secs = len as f64 / rate;
            prop_assert_eq!(duration_from_secs(secs), Duration::from_secs_f64(secs));
        }
    }
}
