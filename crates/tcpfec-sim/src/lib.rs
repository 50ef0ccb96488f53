//! tcpfec-sim: a deterministic discrete-event network simulator that drives the tcpfec
//! engine. Same scenario and seed ⇒ identical results, bit for bit.

#![warn(missing_docs)]

pub mod clock;
mod delivery;
pub mod event;
mod heap;
pub mod link;
pub mod metrics;
pub mod models;
pub mod scenario;
pub mod sim;
pub mod topology;

/// The loss models, random streams and unit parser live in `tcpfec-channel`, shared with
/// the UDP relay; they keep their paths here.
pub use tcpfec_channel::{loss, rng, units};

pub use loss::LossSpec;
pub use metrics::{FlowResult, RunResult};
pub use scenario::{
    App, HostSettings, Resume, Scenario, Start, Topology, EVENTS_PER_PACKET, HEADER_BYTES,
    MAX_DELAY, MAX_DURATION, MAX_FLOWS, MAX_MESSAGE,
};
pub use sim::run;
