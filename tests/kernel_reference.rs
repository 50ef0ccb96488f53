//! The kernel reference re-measured: one point (RTT 100 ms, 1 BDP, no loss) of
//! `validate --set kernel` measured afresh on emulated links with Linux's reno, cubic and
//! bbr, then compared with the simulator as the stored data is. Needs root (network
//! namespaces, TUN devices); skipped with a message otherwise. Takes about 80 s.
#![cfg(target_os = "linux")]

use std::process::Command;

#[test]
fn one_kernel_point_measured_afresh_agrees_as_recorded() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "SKIPPED one_kernel_point_measured_afresh_agrees_as_recorded: measuring kernel TCP \
             on emulated links needs root (network namespaces, TUN devices)"
        );
        return;
    }
    let have = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    let missing: Vec<&str> = ["reno", "cubic", "bbr"]
        .into_iter()
        .filter(|cc| !have.split_whitespace().any(|h| h == *cc))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "SKIPPED one_kernel_point_measured_afresh_agrees_as_recorded: this kernel has no \
             TCP {} (it has: {})",
            missing.join(", "),
            have.trim()
        );
        return;
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!(
            "SKIPPED one_kernel_point_measured_afresh_agrees_as_recorded: no /dev/net/tun \
             for the link emulator"
        );
        return;
    }
    let exe = env!("CARGO_BIN_EXE_tcpfec");
    let dir = std::env::temp_dir().join(format!("tcpfec-kernel-ref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("kernel.csv");
    let measured = Command::new(exe)
        .args([
            "validate",
            "--set",
            "kernel",
            "--measure",
            "1",
            "--points",
            "6",
        ])
        .arg("--reference")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        measured.status.success(),
        "{}",
        String::from_utf8_lossy(&measured.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.contains("# kernel: Linux"), "{text}");
    let rows = text
        .lines()
        .filter(|l| l.starts_with("100,417,none,TCP "))
        .count();
    assert_eq!(rows, 3, "reno, cubic and bbr at point 6:\n{text}");
    let compared = Command::new(exe)
        .args([
            "validate", "--set", "kernel", "--points", "6", "--report", "-", "--check",
        ])
        .arg("--reference")
        .arg(&csv)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&compared.stdout);
    assert!(
        compared.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(last.ends_with("points within 10 %"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
