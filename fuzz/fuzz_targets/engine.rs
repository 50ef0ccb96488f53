#![no_main]
//! See `tcpfec_fuzz::targets::engine` for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tcpfec_fuzz::targets::engine(data));
