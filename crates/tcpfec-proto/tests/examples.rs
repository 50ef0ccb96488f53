//! The engine's examples run as users run them: `cargo test` builds every example, and
//! these tests start the built programs and check what they print.

use std::process::Command;

/// Runs the built example `name` (target/PROFILE/examples/NAME) and returns its output.
fn run_example(name: &str) -> String {
    // This test is target/PROFILE/deps/examples-HASH; the examples sit beside deps/.
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name);
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

/// The number after `key` in `text`.
fn number_after(text: &str, key: &str) -> f64 {
    let rest = &text[text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {text}"))
        + key.len()..];
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn the_udp_socket_example_moves_its_bytes_and_rebuilds_dropped_packets() {
    let out = run_example("udp_socket");
    assert!(out.starts_with("4000000 bytes in "), "{out}");
    assert!(number_after(&out, "dropped") > 0.0, "{out}");
    assert!(
        number_after(&out, "server:") > 0.0,
        "no segment rebuilt:\n{out}"
    );
}

#[test]
fn the_custom_congestion_controller_replaces_renos_window_rule() {
    let out = run_example("custom_congestion");
    let reno = number_after(&out, "Reno (sack)  20000000 bytes in");
    let own = number_after(&out, "GentleAimd   20000000 bytes in");
    // A gentler decrease under random loss finishes sooner: the factory's controller ran.
    assert!(own < reno, "{out}");
}
