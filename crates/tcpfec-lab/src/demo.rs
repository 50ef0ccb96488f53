//! `tcpfec demo`: the classic TCP variants, BBR, a seed FEC scheme and `auto` on the Sato
//! ch. 4 path, a table and a figure, how much of the gap between the loss-based variants
//! and the link FEC closes, and how it compares with the best scheme without FEC.

use crate::sweep::Run;
use core::time::Duration;
use std::path::Path;
use tcpfec_proto::Scheme;
use tcpfec_sim::Scenario;

/// Loss-based TCP variants the demo compares.
pub const DEMO_TCP: [&str; 4] = ["tahoe", "newreno", "sack", "cubic"];

/// Controllers without FEC that ignore random loss: BBR v1 and v3.
pub const DEMO_BBR: [&str; 2] = ["bbr1", "bbr"];

/// FEC schemes the demo sets beside them: Anker's (8, 1) blocks (a seed scheme) and `auto`.
pub const DEMO_FEC: [&str; 2] = ["anker-8-1", "auto"];

/// Runs the demo and writes its files into `dir`.
pub fn run(dir: &Path) -> Result<(), String> {
    let base = Scenario {
        cwnd_sample: Some(Duration::from_millis(100)),
        ..Scenario::default()
    };
    println!("tcpfec demo: one bulk flow over the Sato ch. 4 path (dissertation Fig. 4.6)");
    println!(
        "  sender -1 ms- R1 -100 Mb/s, 200 ms, 0.05% random loss- R2 -1 ms- receiver; 50-packet buffers,"
    );
    println!("  1500-byte packets, 220 s simulated, goodput measured over 20-220 s, seed 1\n");
    let runs: Vec<Run> = DEMO_TCP
        .iter()
        .chain(DEMO_BBR.iter())
        .chain(DEMO_FEC.iter())
        .map(|name| {
            let scenario = Scenario {
                scheme: Scheme::parse(name).expect("built-in scheme"),
                ..base.clone()
            };
            Run {
                params: vec![("scheme".into(), name.to_string())],
                scenario,
            }
        })
        .collect();
    let outcomes = crate::runner::run_all(runs, true);
    print!(
        "{}",
        crate::output::table(&outcomes, &["scheme".to_string()])
    );
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    crate::output::write_csv(dir, &outcomes).map_err(|e| format!("cannot write CSV: {e}"))?;
    let series: Vec<(String, Vec<(f64, f64)>)> = outcomes
        .iter()
        .map(|o| (o.run.params[0].1.clone(), o.result.cwnd_series[0].clone()))
        .collect();
    let svg = dir.join("cwnd.svg");
    crate::plot::cwnd_svg(
        &svg,
        "cwnd over time: 100 Mb/s, RTT ~404 ms, 0.05% loss",
        &series,
    )?;
    let bdp = 100e6 * 0.404 / (1500.0 * 8.0);
    println!(
        "\nThe path holds about {bdp:.0} packets in flight; random loss keeps every loss-based"
    );
    println!("variant far below that. This gap is what the FEC schemes of tcpfec close;");
    println!("BBR ignores random loss and is the bar to beat without FEC.");
    let goodput = |name: &str| {
        outcomes
            .iter()
            .find(|o| o.run.params[0].1 == name)
            .map_or(0.0, |o| o.result.goodput_mbps)
    };
    let best_tcp = DEMO_TCP.iter().map(|n| goodput(n)).fold(0.0, f64::max);
    let (best_plain, best_plain_rate) = DEMO_TCP
        .iter()
        .chain(DEMO_BBR.iter())
        .map(|n| (*n, goodput(n)))
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    // What the link carries as payload (1460 of every 1500 bytes).
    let hdr = tcpfec_sim::scenario::HEADER_BYTES;
    let link = base.bottleneck_bps as f64 * 1e-6 * (base.packet_size - hdr) as f64
        / base.packet_size as f64;
    for name in DEMO_FEC {
        let closed = (goodput(name) - best_tcp) / (link - best_tcp);
        println!(
            "{name}: {:.1} Mb/s, closes {:.0} % of the gap between the best loss-based variant ({best_tcp:.1} Mb/s) and the link ({link:.1} Mb/s of payload); {:.2}x the best scheme without FEC ({best_plain}, {best_plain_rate:.1} Mb/s)",
            goodput(name),
            100.0 * closed,
            goodput(name) / best_plain_rate.max(1e-9)
        );
    }
    println!(
        "Wrote {}, {} and {}",
        svg.display(),
        dir.join("results.csv").display(),
        dir.join("flows.csv").display()
    );
    Ok(())
}
