//! tcpfec-channel: how a path impairs packets, apart from its queue, and how the delay
//! data meets on it is measured. The loss models (Bernoulli, Gilbert–Elliott, a switching
//! schedule), the seeded random streams that drive them, the parser for the values users
//! write ("50mbit", "0.05%", "200ms"), and the delivery-delay histogram.
//!
//! The simulator's links and the real UDP relay both draw from here, so a loss pattern
//! named on the command line means the same thing in both, and `tcpfec sim` and
//! `tcpfec perf` report delivery delay the same way.

#![warn(missing_docs)]

pub mod delay;
pub mod loss;
pub mod rng;
pub mod units;

pub use delay::{DelayHistogram, DelaySummary};
pub use loss::{LossModel, LossSpec};
pub use rng::Rng;
