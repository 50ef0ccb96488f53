//! The result tables of the README and docs/ are what their committed data says:
//! `tcpfec tables --check` makes each one afresh from results/ and compares.

use std::process::Command;

#[test]
fn every_generated_table_matches_its_committed_data() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_tcpfec"))
        .args(["tables", "--check", "--root", root])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The README's headline and the design pages' tables are among them.
    let n: usize = stdout.split_whitespace().next().unwrap().parse().unwrap();
    assert!(n >= 6, "only {n} generated tables: {stdout}");
}
