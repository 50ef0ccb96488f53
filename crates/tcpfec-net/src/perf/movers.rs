//! The data connections' work, the same on client and server: a sender writes test data
//! until its time or byte budget is spent, a receiver reads to the end. Each side then
//! tells the other it is done by ending its own direction, so the sender's time runs
//! until the receiver has read every byte, on any transport.

use super::control::StreamEnd;
use super::probe::{Probe, Sample};
use super::timed::{self, Counter, Delays, Pattern};
use super::{BoxStream, BLOCK};
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Interval;

/// How much a sender sends.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// Until this long after the start.
    Time(Duration),
    /// Exactly this many bytes.
    Bytes(u64),
}

impl Budget {
    /// Each of `streams` streams' share of a test's budget (bytes split evenly, the
    /// remainder to the first streams).
    pub fn split(seconds: f64, bytes: Option<u64>, streams: u32) -> Vec<Budget> {
        (0..streams as u64)
            .map(|i| match bytes {
                Some(b) => {
                    let n = streams as u64;
                    Budget::Bytes(b / n + u64::from(i < b % n))
                }
                None => Budget::Time(Duration::from_secs_f64(seconds)),
            })
            .collect()
    }
}

/// Data streams at work, with their live byte counters.
pub struct Movers {
    /// Bytes written (senders) or read (receivers) so far, per stream.
    pub moved: Arc<Vec<AtomicU64>>,
    /// Counters of each stream's connection.
    pub probes: Arc<Vec<Probe>>,
    /// The delays this side measures: a paced stream's receiver, an exchange's client.
    pub delays: Option<Arc<Delays>>,
    tasks: Vec<JoinHandle<io::Result<(u64, f64)>>>,
    /// Streams still moving data.
    left: Arc<AtomicUsize>,
    /// Told when the last stream is done.
    all_done: Arc<Notify>,
}

/// An interval timer whose first tick is one period from now (a report covers a
/// whole period).
pub fn ticker(seconds: f64) -> Interval {
    let period = Duration::from_secs_f64(seconds);
    tokio::time::interval_at(tokio::time::Instant::now() + period, period)
}

impl Movers {
    /// Starts sending on every stream with its budget, in `pattern`. An exchange's
    /// client (the sender of requests) measures the round trips into `delays`.
    pub fn send(
        streams: Vec<BoxStream>,
        probes: Vec<Probe>,
        budgets: Vec<Budget>,
        start: Instant,
        pattern: Pattern,
        delays: Option<Arc<Delays>>,
    ) -> Self {
        let moved = counters(streams.len());
        let probes = Arc::new(probes);
        let work: Vec<Work> =
            streams
                .into_iter()
                .zip(budgets)
                .enumerate()
                .map(|(i, (s, b))| -> Work {
                    let counter = Counter {
                        moved: moved.clone(),
                        i,
                    };
                    match (pattern, &delays) {
                        (Pattern::Paced { bitrate, length }, _) => {
                            Box::pin(timed::paced_send(s, bitrate, length, b, start, counter))
                        }
                        (Pattern::Exchange { length }, Some(d)) => Box::pin(
                            timed::exchange_client(s, length, b, start, d.clone(), counter),
                        ),
                        _ => {
                            let at = Counters {
                                moved: moved.clone(),
                                probes: probes.clone(),
                                i,
                            };
                            Box::pin(send_one(s, b, start, at))
                        }
                    }
                })
                .collect();
        Self::spawn(work, moved, probes, delays)
    }

    /// Starts reading every stream to its end, in `pattern`. A paced stream's receiver
    /// measures the messages' delays into `delays`; an exchange's server answers.
    pub fn receive(
        streams: Vec<BoxStream>,
        probes: Vec<Probe>,
        start: Instant,
        pattern: Pattern,
        delays: Option<Arc<Delays>>,
    ) -> Self {
        let moved = counters(streams.len());
        let work: Vec<Work> = streams
            .into_iter()
            .enumerate()
            .map(|(i, s)| -> Work {
                let counter = Counter {
                    moved: moved.clone(),
                    i,
                };
                match (pattern, &delays) {
                    (Pattern::Paced { length, .. }, Some(d)) => {
                        Box::pin(timed::timed_receive(s, length, d.clone(), start, counter))
                    }
                    (Pattern::Exchange { length }, _) => {
                        Box::pin(timed::exchange_server(s, length, start, counter))
                    }
                    _ => Box::pin(receive_one(s, start, moved.clone(), i)),
                }
            })
            .collect();
        Self::spawn(work, moved, Arc::new(probes), delays)
    }

    /// Runs each stream's work as a task that says when the last one is done.
    fn spawn(
        work: Vec<Work>,
        moved: Arc<Vec<AtomicU64>>,
        probes: Arc<Vec<Probe>>,
        delays: Option<Arc<Delays>>,
    ) -> Self {
        let left = Arc::new(AtomicUsize::new(work.len()));
        let all_done = Arc::new(Notify::new());
        let tasks = work
            .into_iter()
            .map(|w| {
                let (left, all_done) = (left.clone(), all_done.clone());
                tokio::spawn(async move {
                    let r = w.await;
                    if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                        all_done.notify_one();
                    }
                    r
                })
            })
            .collect();
        Movers {
            moved,
            probes,
            delays,
            tasks,
            left,
            all_done,
        }
    }

    /// True once every stream is done.
    pub fn finished(&self) -> bool {
        self.left.load(Ordering::Acquire) == 0
    }

    /// Waits for the next tick of `tick` or for the last stream to finish; true once
    /// every stream is done.
    pub async fn tick_or_done(&self, tick: &mut Interval) -> bool {
        if !self.finished() {
            tokio::select! {
                _ = tick.tick() => {}
                _ = self.all_done.notified() => {}
            }
        }
        self.finished()
    }

    /// Waits for every stream and returns their totals (the first error, if any).
    pub async fn join(self) -> io::Result<Vec<StreamEnd>> {
        let mut ends = Vec::with_capacity(self.tasks.len());
        for (i, t) in self.tasks.into_iter().enumerate() {
            let (bytes, seconds) = t
                .await
                .map_err(|e| io::Error::other(format!("stream {i}: {e}")))??;
            ends.push(StreamEnd {
                bytes,
                seconds,
                sample: self.probes[i].sample(),
            });
        }
        Ok(ends)
    }

    /// Stops every stream at once.
    pub fn abort(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// One stream's work: its bytes and its seconds when done.
type Work = std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<(u64, f64)>> + Send>>;

/// A zeroed byte counter per stream.
fn counters(n: usize) -> Arc<Vec<AtomicU64>> {
    Arc::new((0..n).map(|_| AtomicU64::new(0)).collect())
}

/// One stream's place in the shared counters.
struct Counters {
    moved: Arc<Vec<AtomicU64>>,
    probes: Arc<Vec<Probe>>,
    i: usize,
}

/// Unacknowledged bytes a timed sender keeps at most: this many congestion windows, at
/// least [`MIN_AHEAD`]. A transport's send buffer (4 MiB in tcpfec) would otherwise hold
/// data written before the deadline that takes long to drain on a slow path, and the
/// test would run well past its time.
const WINDOWS_AHEAD: u64 = 8;
/// See [`WINDOWS_AHEAD`].
const MIN_AHEAD: u64 = 64 * 1024;
/// Nor less than the connection's pacing rate sends in this time. A timed sender with no
/// room waits a timer tick (about a millisecond) before it writes again; on loopback,
/// where eight windows drain in about that time, the connection ran dry at every wait
/// (`auto` moved 3.7 Gb/s in a timed test at 65 % of a core, 10 Gb/s sending a size).
const AHEAD_TIME: Duration = Duration::from_millis(10);
/// A pacing rate above this (bits per second) is a transport's "unpaced", not a rate.
const MAX_PACING_BPS: f64 = 1e12;

/// Writes test data until the budget is spent, ends the stream, and waits for the
/// receiver to end its side (it does so after reading everything).
async fn send_one(
    mut s: BoxStream,
    budget: Budget,
    start: Instant,
    at: Counters,
) -> io::Result<(u64, f64)> {
    // Not all zeros, so a transport that compresses or special-cases zeros gains nothing.
    let block: Vec<u8> = (0..BLOCK).map(|k| (k * 131 % 251) as u8).collect();
    let mut sent = 0u64;
    loop {
        let n = match budget {
            Budget::Time(d) if start.elapsed() >= d => break,
            Budget::Time(_) => match room_ahead(&at.probes[at.i], sent) {
                0 => {
                    // Polling is fine here: a measuring tool, and 1 ms is far below
                    // the time the window ahead takes to drain.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                room => room.min(BLOCK as u64) as usize,
            },
            Budget::Bytes(b) if sent >= b => break,
            Budget::Bytes(b) => (b - sent).min(BLOCK as u64) as usize,
        };
        let w = s.write(&block[..n]).await?;
        if w == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        sent += w as u64;
        at.moved[at.i].store(sent, Ordering::Relaxed);
    }
    end_sending(s, sent, start).await
}

/// Ends a sending side: closes it, waits for the peer to close its own (the receiver has
/// read everything), and returns the bytes sent and the seconds since `start`.
pub(super) async fn end_sending(
    mut s: BoxStream,
    sent: u64,
    start: Instant,
) -> io::Result<(u64, f64)> {
    s.shutdown().await?;
    let mut rest = [0u8; 64];
    while s.read(&mut rest).await? > 0 {}
    Ok((sent, start.elapsed().as_secs_f64()))
}

/// Bytes that may be written before [`WINDOWS_AHEAD`] windows (or [`AHEAD_TIME`] at the
/// pacing rate) are unacknowledged (unbounded for a transport whose counters cannot be
/// read).
fn room_ahead(probe: &Probe, sent: u64) -> u64 {
    let s = probe.sample();
    match ahead_limit(&s) {
        Some(limit) => limit.saturating_sub(sent.saturating_sub(s.bytes_acked)),
        None => u64::MAX,
    }
}

/// The most unacknowledged bytes a timed sender keeps, from its connection's counters
/// (`None` when they have no window).
fn ahead_limit(s: &Sample) -> Option<u64> {
    let w = s.cwnd_bytes?;
    let by_rate = s
        .pacing_bps
        .filter(|r| r.is_finite() && *r < MAX_PACING_BPS)
        .map_or(0, |r| (r / 8.0 * AHEAD_TIME.as_secs_f64()) as u64);
    Some((WINDOWS_AHEAD * w).max(by_rate).max(MIN_AHEAD))
}

/// Reads to the end of the stream, then ends this side to say so.
async fn receive_one(
    mut s: BoxStream,
    start: Instant,
    moved: Arc<Vec<AtomicU64>>,
    i: usize,
) -> io::Result<(u64, f64)> {
    let mut buf = vec![0u8; BLOCK];
    let mut got = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        got += n as u64;
        moved[i].store(got, Ordering::Relaxed);
    }
    let secs = start.elapsed().as_secs_f64();
    s.shutdown().await?;
    Ok((got, secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_split_evenly_with_the_remainder_first() {
        let b: Vec<u64> = Budget::split(0.0, Some(10), 4)
            .into_iter()
            .map(|b| match b {
                Budget::Bytes(n) => n,
                Budget::Time(_) => panic!("bytes"),
            })
            .collect();
        assert_eq!(b, vec![3, 3, 2, 2]);
    }

    #[test]
    fn a_timed_sender_keeps_eight_windows_or_ten_milliseconds_ahead() {
        let at = |cwnd: u64, pacing_bps: Option<f64>| {
            ahead_limit(&Sample {
                cwnd_bytes: Some(cwnd),
                pacing_bps,
                ..Sample::default()
            })
        };
        // A slow path: eight windows are far more than 10 ms of sending.
        assert_eq!(at(100_000, Some(10e6)), Some(800_000));
        // Loopback: 10 ms at 10 Gb/s (12.5 MB) is more than eight 250 kB windows.
        assert_eq!(at(250_000, Some(10e9)), Some(12_500_000));
        // No rate, or a transport's "unpaced": windows only; never below the floor.
        assert_eq!(at(250_000, None), Some(2_000_000));
        assert_eq!(at(250_000, Some(f64::INFINITY)), Some(2_000_000));
        assert_eq!(at(250_000, Some(1.5e20)), Some(2_000_000));
        assert_eq!(at(1_000, None), Some(MIN_AHEAD));
        assert_eq!(ahead_limit(&Sample::default()), None);
    }

    #[tokio::test]
    async fn a_sender_and_a_receiver_agree_on_the_bytes() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let start = Instant::now();
        let tx = Movers::send(
            vec![Box::new(a)],
            vec![Probe::None],
            vec![Budget::Bytes(1_000_003)],
            start,
            Pattern::Bulk,
            None,
        );
        let rx = Movers::receive(
            vec![Box::new(b)],
            vec![Probe::None],
            start,
            Pattern::Bulk,
            None,
        );
        let (sent, got) = (tx.join().await.unwrap(), rx.join().await.unwrap());
        assert_eq!(sent[0].bytes, 1_000_003);
        assert_eq!(got[0].bytes, 1_000_003);
    }
}
