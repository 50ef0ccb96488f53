//! tcpfec-sim: a deterministic discrete-event network simulator that drives the tcpfec
//! engine. Same scenario and seed ⇒ identical results, bit for bit.

pub mod event;
pub mod link;
pub mod loss;
pub mod metrics;
pub mod models;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod topology;
pub mod units;

pub use loss::LossSpec;
pub use metrics::{FlowResult, RunResult};
pub use scenario::{
    App, Scenario, Start, Topology, EVENTS_PER_PACKET, HEADER_BYTES, MAX_DELAY, MAX_DURATION,
    MAX_FLOWS,
};
pub use sim::run;
