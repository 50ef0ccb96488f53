//! The library's examples run as users run them: `cargo test` builds every example, and
//! these tests start the built programs and check what they print.

use std::path::PathBuf;
use std::process::Command;

/// Runs the built example `name` (target/PROFILE/examples/NAME) and returns its output.
fn run_example(name: &str) -> String {
    // This test is target/PROFILE/deps/examples-HASH; the examples sit beside deps/.
    let exe = std::env::current_exe().unwrap();
    let dir: PathBuf = exe.parent().unwrap().parent().unwrap().join("examples");
    let bin = dir.join(name);
    assert!(
        bin.exists(),
        "{} is missing: `cargo test` builds the examples before the tests",
        bin.display()
    );
    let out = Command::new(&bin).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed: {}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_echo_example_gets_its_message_back_over_loopback() {
    let out = run_example("echo");
    assert!(out.starts_with("hello over tcpfec\n"), "{out}");
}

#[test]
fn the_send_file_example_stores_and_confirms_both_files() {
    let out = run_example("send_file");
    for line in [
        "stored   small.txt (12 bytes)",
        "stored   large.bin (8000000 bytes)",
    ] {
        assert!(out.contains(line), "{line} missing from:\n{out}");
    }
    assert_eq!(out.matches("confirmed ").count(), 2, "{out}");
}
