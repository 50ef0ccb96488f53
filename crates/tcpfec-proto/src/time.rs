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

impl core::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }
}
