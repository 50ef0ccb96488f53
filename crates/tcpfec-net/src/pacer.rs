//! Pacing: a token bucket that spreads a window of data packets over the round trip instead
//! of sending it in one burst that would overflow a shallow router or relay queue.

use std::time::Duration;
use tcpfec_proto::Instant;

/// Datagrams at most this large are not paced: pure ACKs and control packets are small,
/// and holding them back would slow the peer's sender.
pub const UNPACED_MAX: usize = 200;

/// How far above a pacing controller's payload rate the bucket runs: a datagram carries
/// up to about 25 % more than its payload for small segments (40-byte header, options,
/// envelope and tag on a 400-byte payload); full-size segments carry about 5 %.
pub const CONTROLLER_RATE_MARGIN: f64 = 1.25;

/// Token bucket in bytes.
#[derive(Debug, Clone)]
pub struct Pacer {
    tokens: f64,
    rate: f64,
    burst: f64,
    last: Instant,
}

impl Pacer {
    /// A bucket that starts full with `burst` bytes and no rate limit yet.
    pub fn new(burst: usize) -> Self {
        Pacer {
            tokens: burst as f64,
            rate: f64::INFINITY,
            burst: burst as f64,
            last: Instant::ZERO,
        }
    }

    /// Sets the rate from the window: `gain · cwnd_bytes / srtt` (gain 2 in slow start as
    /// Linux does, 1.25 in congestion avoidance). Without an RTT sample there is no limit.
    /// The bucket holds at least 2 ms of data so timer granularity does not cap the rate.
    pub fn set_rate(&mut self, cwnd_bytes: f64, srtt: Option<Duration>, slow_start: bool) {
        let Some(srtt) = srtt.filter(|d| !d.is_zero()) else {
            self.rate = f64::INFINITY;
            return;
        };
        let gain = if slow_start { 2.0 } else { 1.25 };
        self.rate = gain * cwnd_bytes / srtt.as_secs_f64();
        self.burst = self.burst.max(self.rate * 0.002);
    }

    /// Sets the rate from a controller that paces (BBR): its rate in payload bytes per
    /// second. The engine already releases packets at that rate; this bucket is charged
    /// whole datagrams (headers, options and the AEAD tag on top of the payload), so it
    /// runs [`CONTROLLER_RATE_MARGIN`] above it and only bounds bursts, never the rate.
    pub fn set_controller_rate(&mut self, payload_rate: f64) {
        self.rate = payload_rate.max(1.0) * CONTROLLER_RATE_MARGIN;
        self.burst = self.burst.max(self.rate * 0.002);
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
    }

    /// None if a data packet may go now; otherwise when to try again.
    pub fn delay(&mut self, now: Instant) -> Option<Instant> {
        self.refill(now);
        if self.tokens > 0.0 || self.rate.is_infinite() {
            return None;
        }
        let wait = (-self.tokens + 1.0) / self.rate;
        Some(now + Duration::from_secs_f64(wait.min(1.0)))
    }

    /// Charges a sent datagram of `len` bytes (small ones are free).
    pub fn on_sent(&mut self, len: usize) {
        if len > UNPACED_MAX && self.rate.is_finite() {
            self.tokens -= len as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends 1500-byte datagrams whenever the bucket allows, for one simulated second.
    fn bytes_in_one_second(p: &mut Pacer) -> usize {
        let mut now = Instant::ZERO;
        let mut sent = 0usize;
        let end = Instant::from_nanos(1_000_000_000);
        while now < end {
            match p.delay(now) {
                None => {
                    p.on_sent(1500);
                    sent += 1500;
                }
                Some(t) => now = t,
            }
        }
        sent
    }

    #[test]
    fn a_controller_rate_is_followed_with_its_margin() {
        let mut p = Pacer::new(3000);
        p.set_controller_rate(1_000_000.0);
        let sent = bytes_in_one_second(&mut p);
        // One second at 1.25 MB/s of datagrams, plus the first burst.
        let expected = 1_000_000.0 * CONTROLLER_RATE_MARGIN;
        assert!(
            (sent as f64 - expected).abs() < 0.02 * expected + 3000.0,
            "sent {sent} bytes in 1 s, expected about {expected}"
        );
    }

    #[test]
    fn spreads_packets_at_the_rate() {
        let mut p = Pacer::new(3000);
        // 100 kB window over 100 ms, congestion avoidance: 1.25 MB/s.
        p.set_rate(100_000.0, Some(Duration::from_millis(100)), false);
        let sent = bytes_in_one_second(&mut p);
        let rate = sent as f64;
        assert!((rate - 1_250_000.0).abs() < 0.05 * 1_250_000.0, "{rate}");
        // Small packets never wait.
        p.on_sent(60);
    }
}
