//! Fuzzing support for tcpfec, compiled by the stable toolchain.
//!
//! * [`targets`]: the bodies of the cargo-fuzz targets in `fuzz/` (which are one-line
//!   wrappers), so the stable test suite can replay every committed corpus file without
//!   a nightly toolchain (`tests/corpus.rs`);
//! * [`pair`]: a client and a server engine over a channel whose every drop, duplicate,
//!   delay, reordering and corruption comes from a byte string;
//! * [`schedule`]: the same channel driven by seeds, for long runs (`tcpfec bench fuzz`);
//! * [`corpus`]: where the committed inputs live and how one is replayed.
//!
//! `docs/guide/fuzzing.md` says how to run and extend them.

#![warn(missing_docs)]

pub mod corpus;
pub mod input;
pub mod pair;
pub mod schedule;
pub mod targets;

pub use targets::TARGETS;
