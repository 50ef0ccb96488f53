//! Tests of delay rather than throughput: an application-limited stream of timestamped
//! messages (`perf -b RATE -l SIZE`), whose receiver measures each message's delivery
//! delay, and request/response exchanges (`perf --rr`), whose client measures each
//! exchange's round trip.
//!
//! A message of the stream starts with its number and the sender's wall clock (`u64`
//! each, big-endian); its delay is the receiver's wall clock when its last byte is read,
//! less that stamp. Both ends of a test on one host (loopback, the relay, `tcpfec emu`)
//! share the wall clock, and the delay is exact. Across hosts the client estimates the
//! offset between the two clocks from the control connection's accept ([`Clock::from_exchange`]);
//! where the clocks disagree by more than that estimate's error, the delays are corrected
//! by the offset and reported above the smallest seen, since the correction is only good
//! to half a round trip.

use super::movers::{end_sending, Budget};
use super::BoxStream;
use serde::{Deserialize, Serialize};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tcpfec_channel::{DelayHistogram, DelaySummary};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes of a stream message ahead of its filler: its number and its send time.
pub const HEADER: u32 = 16;

/// Largest message (`-l`) of a paced stream or an exchange: 1 MiB.
pub const MAX_MESSAGE: u32 = 1 << 20;

/// How the data of a test moves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Pattern {
    /// As fast as the transport takes it (the throughput test).
    #[default]
    Bulk,
    /// Messages of `length` bytes at `bitrate` bits per second per stream, each stamped
    /// when written.
    Paced {
        /// Bits per second of each stream.
        bitrate: f64,
        /// Bytes per message, at least [`HEADER`].
        length: u32,
    },
    /// Requests of `length` bytes, each answered with as many before the next.
    Exchange {
        /// Bytes per request and per response.
        length: u32,
    },
}

/// The wall clock now, nanoseconds since the Unix epoch.
pub fn wall_ns() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_nanos().min(i64::MAX as u128) as i64
}

/// How a receiver reads a sender's stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Clock {
    /// Both ends share the wall clock (within the estimate's error): delays are exact.
    Shared,
    /// The receiver's clock is `offset_ns` ahead of the sender's, to within `error_ns`:
    /// delays are corrected by it and reported above the smallest seen.
    Offset {
        /// Receiver's clock less sender's.
        offset_ns: i64,
        /// Half the round trip of the estimate.
        error_ns: u64,
    },
}

/// A difference between the clocks no larger than this besides the estimate's error is
/// taken for none: NTP keeps hosts on one network within a millisecond or so.
const SAME_CLOCK_NS: u64 = 1_000_000;

impl Clock {
    /// The server's clock against the client's, from the control exchange: the client
    /// sent its hello at `sent_ns` and received the accept at `received_ns` (its clock),
    /// which the server stamped `server_ns` (its clock). `server_receives`: the server
    /// reads the stream (the client's stamps), else the client does.
    pub fn from_exchange(
        sent_ns: i64,
        received_ns: i64,
        server_ns: i64,
        server_receives: bool,
    ) -> Clock {
        let mid = sent_ns + (received_ns - sent_ns) / 2;
        let server_ahead = server_ns - mid;
        let error_ns = ((received_ns - sent_ns).max(0) / 2) as u64;
        if server_ahead.unsigned_abs() <= error_ns + SAME_CLOCK_NS {
            return Clock::Shared;
        }
        Clock::Offset {
            offset_ns: if server_receives {
                server_ahead
            } else {
                -server_ahead
            },
            error_ns,
        }
    }

    /// "shared" or "relative", for reports.
    pub fn label(&self) -> &'static str {
        match self {
            Clock::Shared => "shared",
            Clock::Offset { .. } => "relative",
        }
    }
}

/// One stream's delays: those of the current interval and of the whole test.
#[derive(Debug, Default)]
struct StreamDelays {
    interval: DelayHistogram,
    total: DelayHistogram,
}

/// The delays a side measures (message delays of a paced stream's receiver, or round
/// trips of an exchange's client), per stream.
#[derive(Debug)]
pub struct Delays {
    streams: Vec<Mutex<StreamDelays>>,
    clock: Clock,
    /// Delays measured before this are left out (iperf3's `--omit`: a start-up's).
    from: Instant,
}

/// What a side measured of its streams' delays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayReport {
    /// Per stream, in stream order.
    pub streams: Vec<Option<DelaySummary>>,
    /// All streams together.
    pub all: Option<DelaySummary>,
    /// "shared" or "relative" (see [`Clock::label`]).
    pub clock: String,
}

impl Delays {
    /// Room for `n` streams' delays, read with `clock`, counted from `from` on.
    pub fn new(n: usize, clock: Clock, from: Instant) -> Arc<Self> {
        Arc::new(Delays {
            streams: (0..n).map(|_| Mutex::default()).collect(),
            clock,
            from,
        })
    }

    /// Counts one delay of stream `i`: `raw_ns`, the receiver's clock less the sender's
    /// stamp, or a round trip.
    fn record(&self, i: usize, raw_ns: i64) {
        if Instant::now() < self.from {
            return;
        }
        let ns = match self.clock {
            Clock::Shared => raw_ns.max(0),
            // Kept above zero by twice the correction's error; the smallest is taken off
            // when reported.
            Clock::Offset {
                offset_ns,
                error_ns,
            } => raw_ns - offset_ns + 2 * error_ns as i64 + SAME_CLOCK_NS as i64,
        };
        let d = Duration::from_nanos(ns.max(0) as u64);
        let mut s = self.streams[i].lock().expect("not poisoned");
        s.interval.record(d, 1);
        s.total.record(d, 1);
    }

    fn summary(&self, h: &DelayHistogram) -> Option<DelaySummary> {
        let s = h.summary()?;
        Some(match self.clock {
            Clock::Shared => s,
            Clock::Offset { .. } => s.above(h.quantile_ms(0.0)),
        })
    }

    /// Each stream's delays since the last call (an interval's), and all streams'.
    pub fn take_interval(&self) -> DelayReport {
        let mut all = DelayHistogram::new();
        let streams = self
            .streams
            .iter()
            .map(|m| {
                let mut s = m.lock().expect("not poisoned");
                all.merge(&s.interval);
                let out = self.summary(&s.interval);
                s.interval.clear();
                out
            })
            .collect();
        DelayReport {
            streams,
            all: self.summary(&all),
            clock: self.clock.label().to_string(),
        }
    }

    /// The whole test's delays.
    pub fn report(&self) -> DelayReport {
        let mut all = DelayHistogram::new();
        let streams = self
            .streams
            .iter()
            .map(|m| {
                let s = m.lock().expect("not poisoned");
                all.merge(&s.total);
                self.summary(&s.total)
            })
            .collect();
        DelayReport {
            streams,
            all: self.summary(&all),
            clock: self.clock.label().to_string(),
        }
    }
}

/// Stream `i`'s byte counter, shared with the reporting loop.
pub(super) struct Counter {
    pub moved: Arc<Vec<AtomicU64>>,
    pub i: usize,
}

impl Counter {
    fn set(&self, n: u64) {
        self.moved[self.i].store(n, Ordering::Relaxed);
    }
}

/// How far behind its schedule a paced sender may fall before it ends the test: the
/// transport cannot carry the stream's rate, and every later message would only wait
/// longer (CUBIC at 1 % loss and RTT 100 ms moves 1.5 Mb/s of a 4 Mb/s stream).
pub const MAX_BEHIND: Duration = Duration::from_secs(10);

/// Writes messages of `length` bytes at `bitrate` bits per second until the budget is
/// spent, each stamped with its number and the wall-clock time it was due; then ends the
/// stream and waits for the receiver to end its side. A message the transport would not
/// take at once leaves as soon as it can, stamped with its due time (the application had
/// it then: the wait is the transport's), and the next ones keep the schedule: the
/// stream's rate is the schedule's, its delay what the transport adds. A sender more than
/// [`MAX_BEHIND`] late ends the test early.
pub(super) async fn paced_send(
    mut s: BoxStream,
    bitrate: f64,
    length: u32,
    budget: Budget,
    start: Instant,
    at: Counter,
) -> io::Result<(u64, f64)> {
    let length = length.max(HEADER) as usize;
    let every = Duration::from_secs_f64(length as f64 * 8.0 / bitrate);
    let mut msg: Vec<u8> = (0..length).map(|k| (k * 131 % 251) as u8).collect();
    let wall_start = wall_ns() - start.elapsed().as_nanos() as i64;
    let (mut sent, mut n) = (0u64, 0u64);
    loop {
        let offset = every.mul_f64(n as f64);
        let due = start + offset;
        let over = match budget {
            Budget::Time(d) => offset >= d,
            Budget::Bytes(b) => sent + length as u64 > b,
        };
        if over || Instant::now() > due + MAX_BEHIND {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        msg[..8].copy_from_slice(&n.to_be_bytes());
        let stamp = wall_start + offset.as_nanos() as i64;
        msg[8..16].copy_from_slice(&stamp.to_be_bytes());
        s.write_all(&msg).await?;
        sent += length as u64;
        n += 1;
        at.set(sent);
    }
    end_sending(s, sent, start).await
}

/// Reads a paced stream to its end, recording each message's delay as its last byte is
/// read; then ends this side to say so.
pub(super) async fn timed_receive(
    mut s: BoxStream,
    length: u32,
    delays: Arc<Delays>,
    start: Instant,
    at: Counter,
) -> io::Result<(u64, f64)> {
    let length = length.max(HEADER) as u64;
    let mut buf = vec![0u8; 64 * 1024];
    let mut header = [0u8; HEADER as usize];
    let mut got = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        let now = wall_ns();
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let at_in = (got % length) as usize;
            if at_in < HEADER as usize {
                let take = (HEADER as usize - at_in).min(rest.len());
                header[at_in..at_in + take].copy_from_slice(&rest[..take]);
            }
            let take = (length as usize - at_in).min(rest.len());
            got += take as u64;
            rest = &rest[take..];
            if got.is_multiple_of(length) {
                let stamp = i64::from_be_bytes(header[8..16].try_into().expect("8 bytes"));
                delays.record(at.i, now - stamp);
            }
        }
        at.set(got);
    }
    let seconds = start.elapsed().as_secs_f64();
    s.shutdown().await?;
    Ok((got, seconds))
}

/// The client of an exchange test: writes a request of `length` bytes, reads the
/// response of as many, records the round trip, and again until the time is up; then
/// ends the stream.
pub(super) async fn exchange_client(
    mut s: BoxStream,
    length: u32,
    budget: Budget,
    start: Instant,
    delays: Arc<Delays>,
    at: Counter,
) -> io::Result<(u64, f64)> {
    let length = length.max(1) as usize;
    let request: Vec<u8> = (0..length).map(|k| (k * 7) as u8).collect();
    let mut response = vec![0u8; length];
    let mut sent = 0u64;
    loop {
        let Budget::Time(d) = budget else {
            return Err(io::Error::other("an exchange test runs for a time"));
        };
        if start.elapsed() >= d {
            break;
        }
        let t = Instant::now();
        s.write_all(&request).await?;
        s.read_exact(&mut response).await?;
        delays.record(at.i, t.elapsed().as_nanos() as i64);
        sent += length as u64;
        at.set(sent);
    }
    end_sending(s, sent, start).await
}

/// The server of an exchange test: answers every whole request of `length` bytes with a
/// response of as many until the client ends the stream; then ends its own.
pub(super) async fn exchange_server(
    mut s: BoxStream,
    length: u32,
    start: Instant,
    at: Counter,
) -> io::Result<(u64, f64)> {
    let length = length.max(1) as usize;
    let mut request = vec![0u8; length];
    let response: Vec<u8> = (0..length).map(|k| (k * 11) as u8).collect();
    let mut got = 0u64;
    loop {
        match s.read_exact(&mut request).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        s.write_all(&response).await?;
        got += length as u64;
        at.set(got);
    }
    let seconds = start.elapsed().as_secs_f64();
    s.shutdown().await?;
    Ok((got, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_within_the_estimates_error_are_one_clock() {
        // Hello at 1000 ms, accept back at 1100 ms: the server stamped it 1050 ms on a
        // clock 0.5 ms ahead (inside 50 ms of error) — or 3 s ahead.
        let ms = 1_000_000i64;
        assert_eq!(
            Clock::from_exchange(1000 * ms, 1100 * ms, 1050 * ms + ms / 2, true),
            Clock::Shared
        );
        assert_eq!(
            Clock::from_exchange(1000 * ms, 1100 * ms, 4050 * ms, true),
            Clock::Offset {
                offset_ns: 3000 * ms,
                error_ns: 50 * ms as u64
            }
        );
        assert_eq!(
            Clock::from_exchange(1000 * ms, 1100 * ms, 4050 * ms, false),
            Clock::Offset {
                offset_ns: -3000 * ms,
                error_ns: 50 * ms as u64
            }
        );
    }

    #[test]
    fn delays_read_across_clocks_are_reported_above_the_smallest() {
        let ms = 1_000_000i64;
        // Receiver 3 s ahead, known to 20 ms: raw delays of 3010..3050 ms read 0..40.
        let d = Delays::new(
            1,
            Clock::Offset {
                offset_ns: 3000 * ms,
                error_ns: 20 * ms as u64,
            },
            Instant::now(),
        );
        for k in 0..=40 {
            d.record(0, (3010 + k) * ms);
        }
        let r = d.report();
        let all = r.all.unwrap();
        assert_eq!(r.clock, "relative");
        assert!(all.p50_ms >= 19.9 && all.p50_ms <= 20.2, "{all:?}");
        assert!(all.max_ms >= 39.9 && all.max_ms <= 40.2, "{all:?}");
        // One clock: exact.
        let d = Delays::new(2, Clock::Shared, Instant::now());
        d.record(1, 25 * ms);
        let iv = d.take_interval();
        assert!(iv.streams[0].is_none());
        assert!((iv.streams[1].unwrap().max_ms - 25.0).abs() < 0.03);
        assert_eq!(iv.all, iv.streams[1]);
        assert!(d.take_interval().all.is_none(), "an interval starts empty");
        assert_eq!(d.report().all.unwrap().weight, 1);
    }
}
