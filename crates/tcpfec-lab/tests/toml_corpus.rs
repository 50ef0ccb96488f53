//! The `toml` fuzz target on the stable toolchain: every committed corpus and regression
//! file replays without a finding.

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_toml_corpus_file_replays_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let corpus = files(&root.join("corpus/toml"));
    assert!(corpus.len() >= 5, "only {} toml corpus files", corpus.len());
    for f in corpus.iter().chain(&files(&root.join("regressions/toml"))) {
        let bytes = std::fs::read(f).unwrap();
        let r = std::panic::catch_unwind(|| tcpfec_lab::toml_check::check(&bytes));
        assert!(r.is_ok(), "{} fails", f.display());
    }
}
