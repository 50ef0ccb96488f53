//! The fuzz targets on the stable toolchain: every committed corpus file replays without
//! a finding, and a short run of seeded adversarial schedules covers every scheme.

use std::path::PathBuf;
use tcpfec_fuzz::corpus::{dir as fuzz_dir, files, replays_cleanly};
use tcpfec_fuzz::pair::SCHEMES;
use tcpfec_fuzz::{schedule, TARGETS};

/// Runs `target` on every file; a panic names the file, so it can be replayed alone.
fn replay(name: &str, target: tcpfec_fuzz::targets::Target, files: &[PathBuf]) {
    for f in files {
        let bytes = std::fs::read(f).expect("corpus file");
        assert!(
            replays_cleanly(target, &bytes),
            "{name}: {} fails",
            f.display()
        );
    }
}

#[test]
fn every_committed_corpus_file_replays_cleanly() {
    for (name, target) in TARGETS {
        let corpus = files(&fuzz_dir().join("corpus").join(name));
        assert!(
            corpus.len() >= 5,
            "{name}: only {} corpus files",
            corpus.len()
        );
        replay(name, *target, &corpus);
    }
}

#[test]
fn every_past_finding_stays_fixed() {
    // fuzz/regressions/<target>/: the inputs that found bugs, named after them.
    let mut n = 0;
    for (name, target) in TARGETS {
        let found = files(&fuzz_dir().join("regressions").join(name));
        n += found.len();
        replay(name, *target, &found);
    }
    assert!(n >= 7, "only {n} regression inputs");
}

#[test]
fn the_scheme_list_covers_every_family_tcpfec_schemes_lists() {
    for (name, ..) in tcpfec_proto::BASELINE_SCHEMES {
        assert!(SCHEMES.contains(name), "{name} missing");
    }
    for (pattern, _) in tcpfec_proto::FEC_SCHEMES {
        // The fixed part of a pattern: up to its first placeholder (N, [..], ...).
        let stem: String = pattern
            .chars()
            .take_while(|c| !(c.is_ascii_uppercase() || *c == '[' || *c == '.'))
            .collect();
        assert!(
            SCHEMES.iter().any(|s| s.starts_with(&stem)),
            "no scheme of the family {pattern}"
        );
    }
}

#[test]
fn twenty_seeded_schedules_for_every_scheme_lose_and_corrupt_nothing() {
    let mut failures = Vec::new();
    for (i, name) in SCHEMES.iter().enumerate() {
        for seed in 0..20 {
            if let Some(why) = schedule::run(seed, i).failure {
                failures.push(format!("{name} seed {seed}: {why}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
