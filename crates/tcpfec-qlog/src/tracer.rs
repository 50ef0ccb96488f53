//! What a driver keeps per traced connection, so that only changes become events.

use crate::record::{MetricsDelta, PacketSummary, Record};
use crate::writer::Sink;
use std::io;
use std::time::Duration;
use tcpfec_proto::{Packet, TraceEvent};

/// The congestion state last written, to write only what changed.
#[derive(Default, Clone, Copy, PartialEq)]
struct Metrics {
    cwnd: u64,
    bytes_in_flight: u64,
    srtt: Option<Duration>,
    min_rtt: Option<Duration>,
    pacing_rate: Option<u64>,
    delivery_rate: Option<u64>,
}

/// A connection's trace as a driver keeps it. Every driver (the simulator, the UDP
/// endpoint) calls [`ConnTracer::sent`] and [`ConnTracer::received`] with the packets it
/// moves and [`ConnTracer::after`] once the engine has acted.
pub struct ConnTracer {
    sink: Box<dyn Sink>,
    engine_events: Vec<TraceEvent>,
    groups_failed: u64,
    code: Option<(usize, usize)>,
    last: Metrics,
    /// When the last metrics event was written.
    last_at: Option<Duration>,
    state: Option<&'static str>,
    mss: u64,
}

/// Bytes in flight change with every packet; alone, they make a metrics event at most
/// this often (the congestion window, RTT and rates whenever they change). One event per
/// packet doubled a traced loopback transfer's events.
const IN_FLIGHT_EVERY: Duration = Duration::from_millis(1);

impl ConnTracer {
    /// Traces into `sink` a connection whose segments carry up to `mss` bytes.
    pub fn new(sink: Box<dyn Sink>, mss: u16) -> Self {
        ConnTracer {
            sink,
            engine_events: Vec::new(),
            groups_failed: 0,
            code: None,
            last: Metrics::default(),
            last_at: None,
            state: None,
            mss: u64::from(mss),
        }
    }

    /// A packet the engine sent, `wire_len` bytes on the wire.
    pub fn sent(&mut self, t: Duration, p: &Packet, wire_len: usize) {
        self.packet(t, true, p, wire_len);
    }

    /// A packet handed to the engine.
    pub fn received(&mut self, t: Duration, p: &Packet, wire_len: usize) {
        self.packet(t, false, p, wire_len);
    }

    fn packet(&mut self, t: Duration, sent: bool, p: &Packet, wire_len: usize) {
        if !self.sink.is_open() {
            return;
        }
        let packet = PacketSummary::of(p);
        let wire_len = wire_len as u32;
        self.sink.push(
            t,
            Record::Packet {
                sent,
                packet,
                wire_len,
            },
        );
    }

    /// What the engine did since the last call: its own events, failed FEC groups, a new
    /// `auto` code, and the congestion metrics that changed.
    pub fn after(&mut self, t: Duration, e: &mut tcpfec_proto::Endpoint) {
        e.drain_trace(&mut self.engine_events);
        if !self.sink.is_open() {
            // The file is full: nothing more is written, so the engine stops collecting.
            self.engine_events.clear();
            e.set_trace(false);
            return;
        }
        for ev in self.engine_events.drain(..) {
            self.sink.push(t, Record::Engine(ev));
        }
        let stats = e.stats();
        if stats.unrecoverable_groups > self.groups_failed {
            let n = stats.unrecoverable_groups - self.groups_failed;
            self.groups_failed = stats.unrecoverable_groups;
            self.sink.push(t, Record::GroupsFailed(n));
        }
        if let Some((est, code)) = e.auto_state() {
            if self.code != Some((code.k, code.m)) {
                self.code = Some((code.k, code.m));
                let r = Record::CodeResized {
                    k: code.k,
                    m: code.m,
                    loss_rate: est.loss_rate,
                    mean_burst: est.mean_burst,
                };
                self.sink.push(t, r);
            }
        }
        let state = e.congestion_state();
        if self.state != Some(state) {
            let old = self.state.replace(state);
            self.sink
                .push(t, Record::CongestionState { old, new: state });
        }
        let bits = |bytes_per_s: f64| (bytes_per_s * 8.0) as u64;
        let now = Metrics {
            cwnd: (e.cwnd() * self.mss as f64) as u64,
            bytes_in_flight: e.pipe() as u64 * self.mss,
            srtt: stats.srtt,
            min_rtt: e.min_rtt(),
            pacing_rate: e.pacing_rate().map(bits),
            delivery_rate: e.delivery_rate().map(bits),
        };
        if now == self.last {
            return;
        }
        let only_in_flight = Metrics {
            bytes_in_flight: self.last.bytes_in_flight,
            ..now
        } == self.last;
        if only_in_flight
            && self
                .last_at
                .is_some_and(|a| t.saturating_sub(a) < IN_FLIGHT_EVERY)
        {
            return;
        }
        self.last_at = Some(t);
        let last = std::mem::replace(&mut self.last, now);
        let changed = |a, b| (a != b).then_some(a);
        let d = MetricsDelta {
            cwnd: changed(now.cwnd, last.cwnd),
            bytes_in_flight: changed(now.bytes_in_flight, last.bytes_in_flight),
            smoothed_rtt_ms: now
                .srtt
                .filter(|_| now.srtt != last.srtt)
                .map(|r| r.as_secs_f64() * 1e3),
            min_rtt_ms: now
                .min_rtt
                .filter(|_| now.min_rtt != last.min_rtt)
                .map(|r| r.as_secs_f64() * 1e3),
            pacing_rate: now
                .pacing_rate
                .filter(|_| now.pacing_rate != last.pacing_rate),
            delivery_rate: now
                .delivery_rate
                .filter(|_| now.delivery_rate != last.delivery_rate),
        };
        if d != MetricsDelta::default() {
            self.sink.push(t, Record::Metrics(d));
        }
    }

    /// Writes what is buffered; the first write error, if any.
    pub fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}
