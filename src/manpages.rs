//! `tcpfec man`: manual pages from the command-line definitions, one per command and
//! subcommand (`tcpfec.1`, `tcpfec-recv.1`, `tcpfec-tunnel-server.1`, …), so they say
//! what `--help` says.

use clap::Command;
use std::path::Path;

/// Writes the page of `cmd` and of every subcommand under it into `dir`.
pub fn write_all(cmd: &Command, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
    let mut written = 0;
    write_tree(cmd.clone(), "tcpfec", dir, &mut written)?;
    eprintln!("wrote {written} manual pages into {}", dir.display());
    Ok(())
}

/// Writes `cmd`'s page as `name.1`, then its subcommands' as `name-SUB.1`.
fn write_tree(cmd: Command, name: &str, dir: &Path, written: &mut usize) -> Result<(), String> {
    let cmd = cmd.name(name.to_string());
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_tree(sub.clone(), &sub_name, dir, written)?;
    }
    Ok(())
}
