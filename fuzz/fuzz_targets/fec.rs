#![no_main]
//! See `tcpfec_fuzz::targets::fec` for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| tcpfec_fuzz::targets::fec(data));
