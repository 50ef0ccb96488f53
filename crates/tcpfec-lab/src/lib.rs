//! tcpfec-lab: the experiment layer on top of the simulator. A sweep of scenarios
//! ([`sweep`]) runs in parallel ([`runner`]) and lands in CSV, JSON, tables and figures
//! ([`output`], [`plot`]); [`reproduce`] checks a paper's claims from an experiment file
//! (and a scheme's delays against on-time [`targets`]), one shard at a time if asked
//! ([`shard`], joined by [`merge`]); [`sim`] runs a sweep
//! from the command line; [`validate`] compares the baselines with
//! ns-2 and ns-3; [`calibrate`], [`model`] and [`bench`](mod@bench) serve the studies behind the
//! docs. The `tcpfec` binary parses the command line and calls in here.

#![warn(missing_docs)]

pub mod bench;
pub mod bench_fuzz;
pub mod calibrate;
pub mod compare;
pub mod demo;
pub mod merge;
pub mod model;
pub mod output;
pub mod plot;
pub mod reproduce;
pub mod runner;
pub mod shard;
pub mod sim;
pub mod sweep;
pub mod targets;
pub mod toml_check;
pub mod trace_view;
pub mod validate;
