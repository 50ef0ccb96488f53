#![no_main]
//! See `tcpfec_lab::toml_check` for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tcpfec_lab::toml_check::check(data));
