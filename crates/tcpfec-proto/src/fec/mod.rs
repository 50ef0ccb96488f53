//! Forward error correction: group policies, the XOR code, the sender's encoder and the
//! receiver's decoder (SPEC C4, C5, S1–S6).

mod decoder;
mod dfec;
mod encoder;
pub mod policy;
pub mod rs;
pub mod xor;

pub(crate) use decoder::Decoder;
pub(crate) use dfec::RatioControl;
pub(crate) use encoder::{Encoder, RepairOut};
pub use policy::{DynamicFec, FecConfig, GroupPolicy};
