//! Runs fuzz inputs through a target on the stable toolchain, one by one, and says which
//! fail: `cargo run --release -p tcpfec-fuzz --example replay -- TARGET FILE_OR_DIR...`.
//! For the pair target it also prints how each run went.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tcpfec_fuzz::corpus::{files, replays_cleanly};

/// A directory's files, or the path itself.
fn inputs(p: &Path) -> Vec<PathBuf> {
    if p.is_dir() {
        files(p)
    } else {
        vec![p.to_path_buf()]
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = tcpfec_fuzz::TARGETS.iter().map(|t| t.0).collect();
    let Some((name, paths)) = args.split_first() else {
        eprintln!(
            "usage: replay TARGET FILE_OR_DIR... (targets: {})",
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let Some(&(_, target)) = tcpfec_fuzz::TARGETS.iter().find(|t| t.0 == name) else {
        eprintln!(
            "error: unknown target '{name}' (targets: {})",
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let mut failed = 0;
    let (start, mut n) = (std::time::Instant::now(), 0u32);
    for f in paths.iter().flat_map(|p| inputs(Path::new(p))) {
        let Ok(bytes) = std::fs::read(&f) else {
            eprintln!("error: cannot read {}", f.display());
            return ExitCode::from(2);
        };
        n += 1;
        // The pair target's outcome is worth printing: run it once, under the same guard.
        let clean = if *name == "pair" {
            std::panic::catch_unwind(|| {
                let t = std::time::Instant::now();
                let out = tcpfec_fuzz::pair::run_input(&bytes);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                println!("{}: {ms:.2} ms {out:?}", f.display());
                out.failure.is_none()
            })
            .unwrap_or(false)
        } else {
            replays_cleanly(target, &bytes)
        };
        if !clean {
            println!("FAILS {}", f.display());
            failed += 1;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "{n} inputs, {failed} failing, {:.0} per second",
        n as f64 / wall
    );
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
