//! Real time for the engine: tokio's monotonic clock mapped to [`tcpfec_proto::Instant`]
//! (nanoseconds since the endpoint started).

use tcpfec_proto::Instant;

/// The epoch of one endpoint and conversions both ways.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: tokio::time::Instant,
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Clock {
            epoch: tokio::time::Instant::now(),
        }
    }

    /// The current time as an engine instant.
    pub fn now(&self) -> Instant {
        self.to_engine(tokio::time::Instant::now())
    }

    /// Converts a tokio instant (before the epoch maps to zero).
    pub fn to_engine(&self, t: tokio::time::Instant) -> Instant {
        Instant::from_nanos(t.saturating_duration_since(self.epoch).as_nanos() as u64)
    }

    /// Converts an engine instant back to tokio time, for timers.
    pub fn to_tokio(&self, t: Instant) -> tokio::time::Instant {
        self.epoch + std::time::Duration::from_nanos(t.as_nanos())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}
