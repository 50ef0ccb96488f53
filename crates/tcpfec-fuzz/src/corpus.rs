//! The committed fuzz inputs: where they live and how one is replayed, shared by the
//! corpus tests, the replay example and the seed writer.

use std::path::{Path, PathBuf};

/// The `fuzz/` directory of the repository (corpora under `corpus/<target>/`, past
/// findings under `regressions/<target>/`).
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none if it cannot be read.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs `target` on `bytes`; false if it panicked (a finding).
pub fn replays_cleanly(target: crate::targets::Target, bytes: &[u8]) -> bool {
    std::panic::catch_unwind(|| target(bytes)).is_ok()
}
