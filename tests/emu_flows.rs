//! `bench net --emu --flows`: several flows of one transport share an emulated link at
//! once, and the bench reports each one's goodput and Jain's index. Needs root (network
//! namespaces, TUN devices); skipped with a message otherwise. Takes about 15 s.
#![cfg(target_os = "linux")]

mod common;

#[test]
fn two_flows_share_the_emulated_link_and_their_index_is_reported() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "SKIPPED two_flows_share_the_emulated_link_and_their_index_is_reported: the link \
             emulator needs root (network namespaces, TUN devices)"
        );
        return;
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!(
            "SKIPPED two_flows_share_the_emulated_link_and_their_index_is_reported: no \
             /dev/net/tun for the link emulator"
        );
        return;
    }
    let out = common::tcpfec()
        .args([
            "bench",
            "net",
            "--emu",
            "--rate",
            "20mbit",
            "--rtt",
            "40ms",
            "--loss",
            "0%",
            "--seconds",
            "6",
            "--flows",
            "2",
            "--schemes",
            "sack",
            "--kernel",
            "none",
            "--json",
        ])
        .output()
        .expect("tcpfec runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("\"emu-flows\""))
        .unwrap_or_else(|| panic!("no emu-flows line in:\n{stdout}"));
    let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
    let goodputs: Vec<f64> = v["goodputs_mbps"]
        .as_array()
        .expect("goodputs")
        .iter()
        .map(|g| g.as_f64().expect("a number"))
        .collect();
    assert_eq!(goodputs.len(), 2, "{line}");
    assert!(
        goodputs.iter().all(|&g| g > 1.0),
        "a flow moved nothing: {line}"
    );
    // Run one after the other, each would have had the link to itself and the two
    // together would report about twice its rate.
    let total: f64 = goodputs.iter().sum();
    assert!(total <= 20.0 * 1.05, "more than the link carries: {line}");
    let jain = v["jain"].as_f64().expect("jain");
    let expected = total * total / (2.0 * goodputs.iter().map(|g| g * g).sum::<f64>());
    assert!((jain - expected).abs() < 1e-9, "{line}");
}
