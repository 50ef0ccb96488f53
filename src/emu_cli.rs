//! `tcpfec emu`: the TUN link emulator on the command line. Two network namespaces joined
//! by an emulated link; the user runs any programs in them (kernel TCP, tcpfec, iperf3).

use crate::net_cli::{on_sigusr1, runtime, Link, LinkArgs};
use clap::Args;
use serde_json::{json, Value};
use tcpfec_net::emu::{self, EmuConfig, Emulator};
use tcpfec_net::link::DirCounts;

/// `tcpfec emu`.
#[derive(Args)]
pub struct EmuArgs {
    /// Namespaces are NAME-a (address 10.77.0.1) and NAME-b (10.77.0.2).
    #[arg(long, default_value = "tcpfec-emu")]
    name: String,
    #[command(flatten)]
    link: LinkArgs,
    /// Print the counters as JSON at exit (and on SIGUSR1).
    #[arg(long)]
    json: bool,
}

/// The counters of one direction as JSON.
pub fn counts_json(c: &DirCounts) -> Value {
    json!({
        "received": c.received,
        "received_bytes": c.received_bytes,
        "delivered": c.delivered,
        "delivered_bytes": c.delivered_bytes,
        "loss_drops": c.lost,
        "queue_drops": c.overflow,
        "queue_peak": c.queue_peak,
    })
}

/// Both directions' counters, as text or JSON.
fn counters(f: &DirCounts, b: &DirCounts, as_json: bool) -> String {
    if as_json {
        return json!({"a_to_b": counts_json(f), "b_to_a": counts_json(b)}).to_string();
    }
    let line = |name: &str, c: &DirCounts| {
        format!(
            "{name}: {} packets in, {} delivered ({} bytes), {} loss drops, {} queue drops, queue peak {}",
            c.received, c.delivered, c.delivered_bytes, c.lost, c.overflow, c.queue_peak
        )
    };
    format!("{}\n{}", line("a -> b", f), line("b -> a", b))
}

/// Starts an emulator with namespaces `name-a`, `name-b` joined by `link` (the error
/// says what is missing, such as root).
fn start(name: &str, link: &Link) -> Result<Emulator, String> {
    Emulator::start(&EmuConfig {
        name: name.to_string(),
        forward: link.forward,
        back: link.back,
        seed: link.seed,
    })
    .map_err(|e| format!("emu: {e}"))
}

/// `tcpfec emu`.
pub fn emu(a: EmuArgs) -> Result<(), String> {
    let link = a.link.link()?;
    let desc = link.describe();
    let e = start(&a.name, &link)?;
    let (na, nb) = (e.a.name().to_string(), e.b.name().to_string());
    eprintln!(
        "emulated link up: {na} ({}) <-> {nb} ({}): {desc}\n\
         run programs on each side, for example:\n  \
         ip netns exec {nb} tcpfec perf --server --insecure\n  \
         ip netns exec {na} tcpfec perf {} --insecure --compare\n\
         Ctrl-C (or SIGTERM) stops the link and removes the namespaces.",
        emu::ADDR_A,
        emu::ADDR_B,
        emu::ADDR_B
    );
    let (f, b) = (e.forward.clone(), e.back.clone());
    let as_json = a.json;
    let (f2, b2) = (f.clone(), b.clone());
    runtime()?.block_on(async move {
        let _sig = on_sigusr1(move || counters(&f2.snapshot(), &b2.snapshot(), as_json));
        // Ctrl-C, or a `kill` (SIGTERM) of an emulator run in the background: either
        // way the namespaces go with it.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        Ok::<(), String>(())
    })?;
    drop(e);
    println!("{}", counters(&f.snapshot(), &b.snapshot(), as_json));
    Ok(())
}
