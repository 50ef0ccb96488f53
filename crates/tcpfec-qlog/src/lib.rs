//! qlog traces of tcpfec connections: one JSON-SEQ file (`.sqlog`) per connection and
//! vantage point, in the qlog main schema (draft-ietf-quic-qlog-main-schema) with the
//! event names and fields of its QUIC event definitions, in the categories qlog 0.3 and
//! qvis use (`transport:packet_sent`, `transport:packet_received`, `recovery:packet_lost`,
//! `recovery:metrics_updated`), where tcpfec has the same thing, and tcpfec's own FEC
//! events under `tcpfec:`.
//!
//! A tcpfec packet maps onto a QUIC one as qvis draws it: the packet number is the
//! segment number (a retransmission repeats it, as TCP's sequence numbers do), a data
//! segment is a `stream` frame, the cumulative ACK and SACK blocks are an `ack` frame's
//! ranges of segment numbers, and a repair packet carries a `tcpfec_repair` frame naming
//! its group. Nothing is written unless a trace is asked for; the simulator writes each
//! file directly, the network drivers through one writer thread per process.
//!
//! The serialisation is written here rather than with the `qlog` crate: that crate turns
//! on serde_json's `preserve_order` for the whole program, which would change the key
//! order of every other JSON line tcpfec prints, and its event model is QUIC's frames.

#![warn(missing_docs)]

mod background;
pub mod pcap;
mod read;
mod record;
mod tracer;
mod writer;

pub use background::{flush_all, Background};
pub use pcap::PcapWriter;
pub use read::records;
pub use record::{MetricsDelta, PacketSummary, Record};
pub use tracer::ConnTracer;
pub use writer::{QlogWriter, Side, Sink, DEFAULT_FILE_LIMIT, QLOG_VERSION};
