//! tcpfec-proto: the sans-IO protocol engine of tcpfec.
//!
//! A [`Connection`] is a state machine driven from outside: it never touches sockets,
//! clocks or threads. Time comes in as an [`Instant`]; packets come in and go out as
//! [`wire::Packet`] values (or raw bytes). The same engine runs in the simulator and over
//! real UDP.

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
