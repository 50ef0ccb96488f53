//! `tcpfec relay`: the UDP impairment relay, and the link flags (rate, delay, queue,
//! loss) it shares with `tcpfec emu`.

use super::{on_sigusr1, resolve, runtime, ConfigArg};
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;
use tcpfec_channel::{units, LossSpec};
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig};

/// `tcpfec relay`.
#[derive(Args)]
pub struct RelayArgs {
    /// UDP address clients send to.
    #[arg(long)]
    listen: String,
    /// UDP address to forward to.
    #[arg(long)]
    to: String,
    #[command(flatten)]
    link: LinkArgs,
    /// Most clients (source addresses) served at once; a new one beyond them replaces the
    /// client heard from least recently (as a NAT forgets its oldest mapping).
    #[arg(long, default_value_t = tcpfec_net::relay::DEFAULT_MAX_SOURCES, value_name = "N")]
    max_sources: usize,
    /// Seconds without a datagram from a client after which its upstream socket closes.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    idle_expiry: f64,
    /// Write every datagram the relay forwards (both ways, after the impairments) into
    /// this pcapng file, with wall-clock timestamps; contrib/wireshark/tcpfec.lua decodes
    /// the envelope (and, for --insecure runs, the engine packets inside).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    config: ConfigArg,
}

/// The emulated link, shared by `relay` and `emu`. "Forward" is listen → to for the
/// relay, a → b for the emulator.
#[derive(Args, Clone)]
pub struct LinkArgs {
    /// Link rate each way, e.g. 50mbit [default: unlimited].
    #[arg(long)]
    rate: Option<String>,
    /// One-way delay each way, e.g. 50ms.
    #[arg(long, default_value = "0ms")]
    delay: String,
    /// Drop-tail queue per direction, packets [default: one bandwidth-delay product, at
    /// least 64].
    #[arg(long)]
    queue: Option<usize>,
    /// Most bytes one direction holds, queued and propagating, with or without --rate;
    /// more are dropped.
    #[arg(long, default_value_t = tcpfec_net::relay::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    max_bytes: usize,
    /// Random loss forward (relay: listen → to; emu: a → b), e.g. 1%.
    #[arg(long, default_value = "0")]
    loss: String,
    /// Gilbert-Elliott loss forward instead: p,r,h,k.
    #[arg(long)]
    ge: Option<String>,
    /// Random loss backward (relay: to → listen; emu: b → a).
    #[arg(long, default_value = "0")]
    loss_back: String,
    /// Gilbert-Elliott loss backward instead: p,r,h,k.
    #[arg(long)]
    ge_back: Option<String>,
    /// Seed of the loss models.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Both directions of a link.
pub struct Link {
    /// Forward.
    pub forward: LinkSpec,
    /// Backward.
    pub back: LinkSpec,
    /// Seed of the loss models.
    pub seed: u64,
}

impl Link {
    /// "rate 50 Mb/s, one-way delay 100ms, queue 833 packets, loss 1.000% forward, …".
    pub fn describe(&self) -> String {
        let f = &self.forward;
        format!(
            "rate {}, one-way delay {:?}, queue {}, loss {:.3}% forward, {:.3}% back",
            f.rate_bps
                .map_or("unlimited".into(), |r| format!("{} Mb/s", r as f64 / 1e6)),
            f.delay,
            if f.queue == usize::MAX {
                "unlimited".into()
            } else {
                format!("{} packets", f.queue)
            },
            f.loss.mean_loss() * 100.0,
            self.back.loss.mean_loss() * 100.0
        )
    }
}

impl LinkArgs {
    /// Checks the flags and builds both directions.
    pub fn link(&self) -> Result<Link, String> {
        let rate = self
            .rate
            .as_deref()
            .map(units::parse_rate)
            .transpose()
            .map_err(|e| format!("--rate: {e}"))?;
        let delay = units::parse_duration(&self.delay).map_err(|e| format!("--delay: {e}"))?;
        let queue = match (self.queue, rate) {
            (Some(q), _) => q.max(1),
            (None, Some(r)) => {
                ((r as f64 * 2.0 * delay.as_secs_f64() / 8.0 / 1500.0) as usize).max(64)
            }
            (None, None) => usize::MAX,
        };
        let fwd_loss = loss_spec("--loss", &self.loss, "--ge", &self.ge)?;
        let back_loss = loss_spec("--loss-back", &self.loss_back, "--ge-back", &self.ge_back)?;
        if self.max_bytes < 2048 {
            return Err("--max-bytes: give at least 2048 bytes (one datagram)".into());
        }
        let link = LinkSpec {
            rate_bps: rate,
            delay,
            queue,
            max_bytes: self.max_bytes,
            loss: LossSpec::None,
        };
        Ok(Link {
            forward: LinkSpec {
                loss: fwd_loss,
                ..link
            },
            back: LinkSpec {
                loss: back_loss,
                ..link
            },
            seed: self.seed,
        })
    }
}

fn loss_spec(
    flag: &str,
    loss: &str,
    ge_flag: &str,
    ge: &Option<String>,
) -> Result<LossSpec, String> {
    match ge {
        Some(g) => LossSpec::parse_ge(g).map_err(|e| format!("{ge_flag}: {e}")),
        None => units::parse_probability(loss)
            .map(LossSpec::bernoulli)
            .map_err(|e| format!("{flag}: {e}")),
    }
}

/// `tcpfec relay`.
pub fn relay(a: RelayArgs) -> Result<(), String> {
    let link = a.link.link()?;
    if a.max_sources == 0 {
        return Err("--max-sources: give at least 1".into());
    }
    if !(a.idle_expiry > 0.0 && a.idle_expiry <= 86_400.0) {
        return Err("--idle-expiry: give seconds between 0 and 86400".into());
    }
    runtime()?.block_on(async move {
        let listen = resolve("--listen", &a.listen).await?;
        let to = resolve("--to", &a.to).await?;
        let relay = Relay::start(RelayConfig {
            listen,
            to,
            forward: link.forward,
            back: link.back,
            seed: link.seed,
            max_sources: a.max_sources,
            idle_expiry: Duration::from_secs_f64(a.idle_expiry),
        })
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
        eprintln!("relay {} -> {to}: {}", relay.local_addr(), link.describe());
        if let Some(path) = &a.pcap {
            let w = tcpfec_qlog::PcapWriter::create(path, u64::MAX)
                .map_err(|e| format!("--pcap {}: {e}", path.display()))?;
            relay.capture_to(w);
        }
        let (f, b) = (relay.forward.clone(), relay.back.clone());
        let text = move || {
            json!({"forward": format!("{:?}", f.snapshot()), "back": format!("{:?}", b.snapshot())})
                .to_string()
        };
        let t2 = text.clone();
        let _sig = on_sigusr1(t2);
        let _ = tokio::signal::ctrl_c().await;
        relay.flush_capture();
        println!("{}", text());
        Ok(())
    })
}
