//! tcpfec-channel: how a path impairs packets, apart from its queue. The loss models
//! (Bernoulli, Gilbert–Elliott, a switching schedule), the seeded random streams that
//! drive them, and the parser for the values users write ("50mbit", "0.05%", "200ms").
//!
//! The simulator's links and the real UDP relay both draw from here, so a loss pattern
//! named on the command line means the same thing in both.

pub mod loss;
pub mod rng;
pub mod units;

pub use loss::{LossModel, LossSpec};
pub use rng::Rng;
