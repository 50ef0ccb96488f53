//! One trace event as a driver hands it over ([`Record`]: small, owned, cheap to queue)
//! and its JSON text, written by hand: this runs for every packet of a traced
//! connection, and building `serde_json` values for each cost a loopback transfer 9/10
//! of its speed.

use std::io::Write;
use std::time::Duration;
use tcpfec_proto::wire::{FecGroup, Flags};
use tcpfec_proto::{Packet, TraceEvent};

/// Most SACK blocks a packet carries.
const SACK: usize = 4;

/// What a trace needs of one packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketSummary {
    seg: u64,
    ack: u64,
    window: u32,
    flags: Flags,
    payload_len: u32,
    sack: [(u64, u64); SACK],
    sack_len: u8,
    fec: Option<FecGroup>,
    repair_index: Option<u8>,
    window_repair: Option<u16>,
    number: Option<u32>,
    repair: bool,
    occupies: bool,
}

impl PacketSummary {
    /// The fields of `p` a trace shows.
    pub fn of(p: &Packet) -> Self {
        let mut sack = [(0, 0); SACK];
        let blocks = p.sack.as_slice();
        for (s, b) in sack.iter_mut().zip(blocks) {
            *s = (b.start, b.end);
        }
        PacketSummary {
            seg: p.seg,
            ack: p.ack,
            window: p.window,
            flags: p.flags,
            payload_len: p.payload.len() as u32,
            sack,
            sack_len: blocks.len().min(SACK) as u8,
            fec: p.fec,
            repair_index: p.repair.map(|r| r.index),
            window_repair: p.window_repair.map(|w| w.count),
            number: p.number,
            repair: p.is_repair(),
            occupies: p.occupies_segment(),
        }
    }
}

/// Congestion metrics that changed (`None`: unchanged, left out of the event).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricsDelta {
    /// Congestion window, bytes.
    pub cwnd: Option<u64>,
    /// Bytes in flight.
    pub bytes_in_flight: Option<u64>,
    /// Smoothed RTT, ms.
    pub smoothed_rtt_ms: Option<f64>,
    /// Minimum RTT, ms.
    pub min_rtt_ms: Option<f64>,
    /// Pacing rate, bits per second.
    pub pacing_rate: Option<u64>,
    /// Delivery rate, bits per second.
    pub delivery_rate: Option<u64>,
}

/// One event to write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    /// `transport:packet_sent` (and `tcpfec:repair_sent` for a repair) or
    /// `transport:packet_received`.
    Packet {
        /// Sent (true) or received.
        sent: bool,
        /// The packet.
        packet: PacketSummary,
        /// Bytes on the wire.
        wire_len: u32,
    },
    /// An engine event.
    Engine(TraceEvent),
    /// `tcpfec:block_failed`.
    GroupsFailed(u64),
    /// `tcpfec:code_resized`.
    CodeResized {
        /// Data packets per block.
        k: usize,
        /// Repair packets per block.
        m: usize,
        /// Estimated loss rate.
        loss_rate: f64,
        /// Estimated mean burst.
        mean_burst: f64,
    },
    /// `recovery:metrics_updated`.
    Metrics(MetricsDelta),
    /// `tcpfec:trace_cut`: the file reached its limit of this many bytes; nothing follows.
    TraceCut {
        /// The limit, bytes.
        limit: u64,
    },
    /// `tcpfec:events_dropped`: this many events did not reach the file (the writer thread
    /// fell behind).
    EventsDropped(u64),
    /// `recovery:congestion_state_updated`.
    CongestionState {
        /// The state before, if one was written.
        old: Option<&'static str>,
        /// The state now.
        new: &'static str,
    },
}

/// Appends the decimal digits of `v` (without the formatting machinery: this runs a few
/// times for every traced packet).
fn int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends literal text.
fn lit(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

/// Appends `t` in milliseconds with microsecond digits (`12.345`).
fn millis(out: &mut Vec<u8>, t: Duration) {
    let us = t.as_micros();
    int(out, us / 1000);
    let frac = (us % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// Appends `"key":value` pairs with commas.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }
    fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        lit(self.out, k);
        lit(self.out, "\":");
        self.out
    }
    fn num(&mut self, k: &str, v: impl itoa::Integer) {
        int(self.key(k), v);
    }
    fn float(&mut self, k: &str, v: f64) {
        let out = self.key(k);
        if v.is_finite() {
            let _ = write!(out, "{v}");
        } else {
            out.extend_from_slice(b"null");
        }
    }
    fn text(&mut self, k: &str, v: &str) {
        // Only fixed, plain names go through here: no escaping needed.
        let out = self.key(k);
        out.push(b'"');
        lit(out, v);
        out.push(b'"');
    }
    fn close(self) {
        self.out.push(b'}');
    }
}

fn group(out: &mut Vec<u8>, g: &FecGroup) {
    let mut o = Obj::open(out);
    o.num("first", g.first);
    o.num("count", g.count);
    o.num("stride", g.stride);
    o.num("repairs", g.repairs);
    o.close();
}

fn packet(out: &mut Vec<u8>, p: &PacketSummary, wire_len: u32) {
    let mut d = Obj::open(out);
    let h = d.key("header");
    lit(h, "{\"packet_type\":\"1RTT\",\"packet_number\":");
    int(h, p.seg);
    h.push(b'}');
    let r = d.key("raw");
    lit(r, "{\"length\":");
    int(r, wire_len);
    lit(r, ",\"payload_length\":");
    int(r, p.payload_len);
    r.push(b'}');
    let frames = d.key("frames");
    frames.push(b'[');
    let mut any = false;
    let mut sep = |f: &mut Vec<u8>| {
        if any {
            f.push(b',');
        }
        any = true;
    };
    if p.occupies {
        sep(frames);
        lit(
            frames,
            "{\"frame_type\":\"stream\",\"stream_id\":0,\"offset\":",
        );
        int(frames, p.seg);
        lit(frames, ",\"length\":");
        int(frames, p.payload_len);
        // qlog's `fin` defaults to false; only a segment that ends the stream says so.
        lit(
            frames,
            if p.flags.contains(Flags::FIN) {
                ",\"fin\":true}"
            } else {
                "}"
            },
        );
    }
    // Segments below the cumulative ACK and those of the SACK blocks are acknowledged. A
    // packet that acknowledges nothing (the sender's data, before any data came back)
    // gets no ack frame: on a bulk transfer that is a tenth of every record.
    let acked = || {
        (p.ack > 0)
            .then_some((0, p.ack))
            .into_iter()
            .chain(p.sack[..p.sack_len as usize].iter().copied())
            .filter(|(a, b)| b > a)
    };
    if p.flags.contains(Flags::ACK) && acked().next().is_some() {
        sep(frames);
        lit(frames, "{\"frame_type\":\"ack\",\"acked_ranges\":[");
        let mut first = true;
        for (a, b) in acked() {
            if !first {
                frames.push(b',');
            }
            first = false;
            frames.push(b'[');
            int(frames, a);
            frames.push(b',');
            int(frames, b - 1);
            frames.push(b']');
        }
        lit(frames, "]}");
    }
    if p.repair {
        sep(frames);
        lit(frames, "{\"frame_type\":\"tcpfec_repair\",\"length\":");
        int(frames, p.payload_len);
        frames.push(b'}');
    }
    frames.push(b']');
    let t = d.key("tcpfec");
    let mut o = Obj::open(t);
    let kind = if p.repair {
        "repair"
    } else if p.occupies {
        "data"
    } else {
        "ack"
    };
    o.text("kind", kind);
    o.num("window", p.window);
    if let Some(n) = p.number {
        o.num("transmission", n);
    }
    let names = [
        (Flags::SYN, "syn"),
        (Flags::FIN, "fin"),
        (Flags::RST, "rst"),
        (Flags::ECE, "ece"),
        (Flags::CWR, "cwr"),
    ];
    if names.iter().any(|(f, _)| p.flags.contains(*f)) {
        let f = o.key("flags");
        f.push(b'[');
        let mut first = true;
        for (flag, name) in names {
            if p.flags.contains(flag) {
                if !first {
                    f.push(b',');
                }
                first = false;
                f.push(b'"');
                lit(f, name);
                f.push(b'"');
            }
        }
        f.push(b']');
    }
    if let Some(g) = &p.fec {
        group(o.key("group"), g);
    }
    o.close();
    d.close();
}

fn repair(out: &mut Vec<u8>, p: &PacketSummary) {
    let mut d = Obj::open(out);
    if let Some(g) = &p.fec {
        group(d.key("group"), g);
    }
    if let Some(i) = p.repair_index {
        d.num("index", i);
    }
    if let Some(count) = p.window_repair {
        // The sliding-window code's repair covers [seg, seg + count).
        d.num("window_first", p.seg);
        d.num("window_count", count);
    }
    d.num("length", p.payload_len);
    d.close();
}

/// Appends event `name` at `t` with the data `data` writes.
fn event(out: &mut Vec<u8>, t: Duration, name: &str, data: impl FnOnce(&mut Vec<u8>)) {
    lit(out, "\u{1e}{\"time\":");
    millis(out, t);
    lit(out, ",\"name\":\"");
    lit(out, name);
    lit(out, "\",\"data\":");
    data(out);
    lit(out, "}\n");
}

/// Appends `r`, at time `t`, as JSON-SEQ records (one per event; a repair packet sent is
/// two events). Returns how many events.
pub fn format(out: &mut Vec<u8>, t: Duration, r: &Record) -> u64 {
    let ms = t;
    match r {
        Record::Packet {
            sent: true,
            packet: p,
            wire_len,
        } => {
            event(out, ms, "transport:packet_sent", |o| {
                packet(o, p, *wire_len)
            });
            if p.repair {
                event(out, ms, "tcpfec:repair_sent", |o| repair(o, p));
                return 2;
            }
        }
        Record::Packet {
            sent: false,
            packet: p,
            wire_len,
        } => event(out, ms, "transport:packet_received", |o| {
            packet(o, p, *wire_len)
        }),
        Record::Engine(TraceEvent::Retransmitted { seg, len }) => {
            event(out, ms, "recovery:packet_lost", |o| {
                let _ = write!(
                    o,
                    "{{\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{seg}}},\
                     \"frames\":[{{\"frame_type\":\"stream\",\"stream_id\":0,\"offset\":{seg},\"length\":{len}}}],\
                     \"trigger\":\"tcpfec_retransmission\"}}"
                );
            })
        }
        Record::Engine(TraceEvent::Rebuilt { seg, len }) => {
            event(out, ms, "tcpfec:segment_rebuilt", |o| {
                let _ = write!(o, "{{\"segment\":{seg},\"length\":{len}}}");
            })
        }
        Record::TraceCut { limit } => event(out, ms, "tcpfec:trace_cut", |o| {
            lit(o, "{\"reason\":\"the trace reached its limit of ");
            int(o, *limit);
            lit(o, " bytes\"}");
        }),
        Record::EventsDropped(n) => event(out, ms, "tcpfec:events_dropped", |o| {
            lit(o, "{\"events\":");
            int(o, *n);
            o.push(b'}');
        }),
        Record::GroupsFailed(n) => event(out, ms, "tcpfec:block_failed", |o| {
            let _ = write!(o, "{{\"groups\":{n}}}");
        }),
        Record::CodeResized {
            k,
            m,
            loss_rate,
            mean_burst,
        } => event(out, ms, "tcpfec:code_resized", |o| {
            let mut d = Obj::open(o);
            d.num("k", *k);
            d.num("m", *m);
            d.float("loss_rate", *loss_rate);
            d.float("mean_burst", *mean_burst);
            d.close();
        }),
        Record::CongestionState { old, new } => {
            event(out, ms, "recovery:congestion_state_updated", |o| {
                let mut d = Obj::open(o);
                if let Some(old) = old {
                    d.text("old", old);
                }
                d.text("new", new);
                d.close();
            })
        }
        Record::Metrics(m) => event(out, ms, "recovery:metrics_updated", |o| {
            let mut d = Obj::open(o);
            if let Some(v) = m.cwnd {
                d.num("congestion_window", v);
            }
            if let Some(v) = m.bytes_in_flight {
                d.num("bytes_in_flight", v);
            }
            if let Some(v) = m.smoothed_rtt_ms {
                d.float("smoothed_rtt", v);
            }
            if let Some(v) = m.min_rtt_ms {
                d.float("min_rtt", v);
            }
            if let Some(v) = m.pacing_rate {
                d.num("pacing_rate", v);
            }
            if let Some(v) = m.delivery_rate {
                d.num("tcpfec_delivery_rate", v);
            }
            d.close();
        }),
    }
    1
}
