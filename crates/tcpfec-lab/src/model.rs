//! `tcpfec model anker`: Anker's closed forms (seed 004) for one window size and loss rate.

use tcpfec_sim::models;
use tcpfec_sim::units::{parse_duration, parse_probability};

/// Prints every closed form in packets per RTT and Mb/s.
pub fn anker(
    window: u32,
    loss: &str,
    rtt: &str,
    block: &str,
    packet_size: u32,
) -> Result<(), String> {
    let p = parse_probability(loss).map_err(|e| format!("--loss: {e}"))?;
    if p <= 0.0 || p >= 0.25 {
        return Err("--loss: the models need 0 < p < 25 %".into());
    }
    let rtt_s = parse_duration(rtt)
        .map_err(|e| format!("--rtt: {e}"))?
        .as_secs_f64();
    if rtt_s <= 0.0 {
        return Err("--rtt: must be positive".into());
    }
    let (n, m) = block
        .split_once(',')
        .and_then(|(a, b)| Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?)))
        .filter(|&(n, m)| n >= 1 && m >= 1)
        .ok_or("--block: write N,M with N, M >= 1 (e.g. 8,1)")?;
    if window == 0 {
        return Err("--window: must be at least 1 packet".into());
    }
    let w = window as f64;
    let t0 = 4.0 * rtt_s; // Anker: "T0 usually taken as 4 RTT"
    let mbps = |per_rtt: f64| per_rtt * packet_size as f64 * 8.0 / rtt_s / 1e6;
    let rows: Vec<(String, f64)> = vec![
        (
            "TCP, eq. (10), capped at W".into(),
            models::mathis(p, 1.0).min(w),
        ),
        (
            "TCP with timeouts (PFTK), eq. (15), T0 = 4 RTT".into(),
            (models::pftk(p, rtt_s, t0, 1.0) * rtt_s).min(w),
        ),
        (
            format!("TCP-FEC ({n},1), eq. (14)"),
            models::fec_xor(p, n, 1.0, w),
        ),
        (
            format!("TCP-FEC ({n},1) with timeouts, eq. (15) with p'"),
            (models::fec_xor_with_timeouts(p, n, rtt_s, t0, 1.0) * rtt_s).min(w),
        ),
        (
            format!(
                "TCP-FEC optimal M = 4pW = {:.2}, eq. (16)",
                models::optimal_repairs(p, w)
            ),
            models::fec_optimal(p, w),
        ),
        (
            "TCP-SACK, constant window, eq. (21)".into(),
            models::sack_constant_window(p, window),
        ),
        (
            "TCP-SACK, constant window, eq. (22)".into(),
            models::sack_constant_window_approx(p, w),
        ),
    ];
    println!("Anker's closed forms: W = {window} packets, p = {}, RTT = {rtt}, {packet_size}-byte packets", loss);
    println!(
        "unrecoverable loss p' for ({n},{m}) blocks, eq. (11): {:.6} (p = {p})",
        models::unrecoverable_loss(p, n, m)
    );
    println!("{:<52} {:>14} {:>10}", "model", "packets/RTT", "Mb/s");
    for (name, per_rtt) in rows {
        println!("{name:<52} {per_rtt:>14.2} {:>10.3}", mbps(per_rtt));
    }
    Ok(())
}
