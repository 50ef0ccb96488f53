//! `tcpfec merge`: joins the shard directories of one sharded `reproduce` or `sim` run
//! into exactly what a single process would have written (wall times aside), after
//! checking that the shards belong together and that every run is there once.

use crate::shard::{check_complete, Manifest};
use std::path::{Path, PathBuf};

/// Merges `dirs` into `out`. The default output is `results/<id>` for an experiment and,
/// for a sweep, the directory the shards were written under (`sim --csv DIR`).
pub fn merge(dirs: &[PathBuf], out: Option<PathBuf>) -> Result<(), String> {
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let manifests = dirs
        .iter()
        .map(|d| Manifest::read(d))
        .collect::<Result<Vec<_>, _>>()?;
    check_complete(&manifests, &names)?;
    match &manifests[0].sweep {
        Some(sweep) => {
            let out = out.unwrap_or_else(|| {
                dirs[0]
                    .parent()
                    .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
            });
            crate::sim::merge(dirs, &manifests, sweep, &out)
        }
        None => crate::reproduce::merge(dirs, &manifests, out),
    }
}
