//! tcpfec-proto: the sans-IO protocol engine of tcpfec.
//!
//! A [`Connection`] is a state machine driven from outside: it never touches sockets,
//! clocks or threads. Time comes in as an [`Instant`]; packets come in and go out as
//! [`wire::Packet`] values (or raw bytes). The same engine runs in the simulator and over
//! real UDP.
//!
//! A driver's loop, here between two endpoints in memory, 1 ms per round:
//!
//! ```
//! use tcpfec_proto::{Config, Endpoint, Instant, Scheme};
//!
//! let cfg = Config { scheme: Scheme::parse("auto").unwrap(), ..Config::default() };
//! let (mut client, mut server) = (Endpoint::client(cfg.clone()), Endpoint::server(cfg));
//! client.write(bytes::Bytes::from_static(b"hello, sans-IO"));
//! client.finish();
//! let (mut got, mut ns) = (Vec::new(), 0);
//! while !server.peer_finished() {
//!     let now = Instant(ns);
//!     while let Some(p) = client.poll_packet(now) {
//!         server.handle_packet(now, p);
//!     }
//!     while let Some(p) = server.poll_packet(now) {
//!         client.handle_packet(now, p);
//!     }
//!     while let Some(chunk) = server.read_chunk() {
//!         got.extend_from_slice(&chunk);
//!     }
//!     ns += 1_000_000;
//!     for ep in [&mut client, &mut server] {
//!         if ep.poll_timeout().is_some_and(|due| due.0 <= ns) {
//!             ep.handle_timeout(Instant(ns));
//!         }
//!     }
//! }
//! assert_eq!(got, b"hello, sans-IO");
//! ```
//!
//! `examples/udp_socket.rs` runs the same loop over a real UDP socket.

#![warn(missing_docs)]

pub mod cc;
pub mod config;
pub mod connection;
pub mod endpoint;
pub mod fec;
pub mod fectcp;
mod loss_runs;
pub mod rate;
mod receiver;
pub mod resume;
pub mod rtt;
mod scoreboard;
mod sender;
pub mod stats;
pub mod time;
mod tlp;
pub mod trace;
pub mod wire;

pub use config::{
    Config, CongestionFactory, FectcpParams, Recovery, Scheme, BASELINE_SCHEMES, FEC_SCHEMES,
};
pub use connection::{ConnError, Connection, PeerOpening, State};
pub use endpoint::Endpoint;
pub use fectcp::Fectcp;
pub use resume::{ResumeStatus, SavedPath};
pub use stats::Stats;
pub use time::Instant;
pub use trace::TraceEvent;
pub use wire::{
    FecFeedback, FecGroup, Flags, LossCounters, Packet, RepairInfo, SackBlock, SackBlocks,
    TransferInfo, WireError,
};
