//! Forward error correction: group policies, the XOR code, the sender's encoder and the
//! receiver's decoder (SPEC C4, C5, S1–S6).

pub mod afec;
pub mod auto;
pub mod channel;
mod controller;
mod decoder;
mod dfec;
mod encoder;
pub mod fountain;
pub mod policy;
pub mod rs;
pub mod sizing;
mod stream;
pub mod tfec;
pub mod window;
pub mod xor;

pub use afec::AfecParams;
pub(crate) use controller::{Controller, FeedbackDelta, SenderTotals};
pub use decoder::{Decoder, DecoderStats, Rebuilt};
pub(crate) use encoder::{Encoder, RepairOut};
pub use policy::{Adaptive, DynamicFec, FecConfig, GroupPolicy, StreamCode, StreamRepair};
pub use stream::Sizing;
pub(crate) use stream::StreamRepairs;
pub use tfec::TfecParams;
