//! `tcpfec bench net`: real sockets on loopback. Throughput and CPU per GB with encryption
//! and FEC on and off (both ends on one core), and goodput through the impairment relay.

use clap::Args;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcpfec_channel::LossSpec;
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig};
use tcpfec_net::{Endpoint, EndpointConfig, Psk, DEFAULT_SCHEME, PEAK_SCHEME};
use tcpfec_proto::Scheme;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Options of `tcpfec bench net`.
#[derive(Args)]
pub struct NetBenchArgs {
    /// Megabytes per loopback run.
    #[arg(long, default_value_t = 512)]
    megabytes: u64,
    /// Seconds per relay run (the first third is not measured: start-up).
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Relay rate.
    #[arg(long, default_value = "50mbit")]
    rate: String,
    /// Relay round-trip time (split evenly between the directions).
    #[arg(long, default_value = "200ms")]
    rtt: String,
    /// Loss rates for the relay runs (data direction), comma-separated (empty: only the
    /// --ge conditions).
    #[arg(long, default_value = "0%,1%,5%")]
    loss: String,
    /// Also a Gilbert-Elliott condition for the relay or --emu runs, after the random
    /// ones: p,r,h,k as for `tcpfec relay --ge` (mean burst 1/r packets; 1.0204%,50%,0,1
    /// loses 2 % in bursts of 2). Repeat for more.
    #[arg(long, value_name = "P,R,H,K")]
    ge: Vec<String>,
    /// Schemes for the relay runs, comma-separated [default: sack, bbr, bbr1, the default
    /// scheme and the scheme fastest at 1 % loss]. With --emu, SCHEME+resume (e.g.
    /// auto+resume) runs `perf --resume`: its bulk run saves the path and its 10 MB run
    /// starts from it (Careful Resume); `none` races kernel TCP only.
    #[arg(long)]
    schemes: Option<String>,
    /// With --emu: the kernel TCP congestion controls to race, comma-separated (`none`
    /// for none) [default: cubic and bbr, those the kernel has]. A control the kernel
    /// lacks is refused.
    #[arg(long, value_name = "CCS", requires = "emu")]
    kernel: Option<String>,
    /// Only the loopback part.
    #[arg(long)]
    loopback_only: bool,
    /// Only the relay part.
    #[arg(long)]
    relay_only: bool,
    /// Also run the quinn (QUIC) reference in benches/quinn-bulk next to the
    /// two-process tcpfec runs (cargo builds it on first use).
    #[arg(long)]
    quinn: bool,
    /// Instead of loopback and relay: tcpfec (sack and the default scheme, or
    /// --schemes) against kernel TCP (cubic and bbr, or --kernel) on the same emulated
    /// links (`tcpfec emu`, needs root): bulk goodput per loss rate and the time of a
    /// 10 MB test.
    #[arg(long)]
    emu: bool,
    /// Bytes of the --emu completion runs (0: none, bulk runs only).
    #[arg(long, default_value_t = 10_000_000)]
    emu_bytes: u64,
    /// With --emu: seed of the emulated link's loss (repeat a measurement with another
    /// seed to see another loss pattern).
    #[arg(long, default_value_t = 1, requires = "emu")]
    seed: u64,
    /// With --emu: the drop-tail queue of each direction, in packets [default: one BDP of
    /// 1500-byte packets, at least 64].
    #[arg(long, value_name = "PACKETS", requires = "emu", value_parser = clap::value_parser!(u32).range(1..))]
    queue: Option<u32>,
    /// With --emu: instead of bulk and 10 MB, a paced stream at this rate (`perf -b`,
    /// messages of --length bytes, default 1000) for --seconds: each contender's delivery
    /// delay (p50, p99, p99.9) and what it put on the link per byte of the stream.
    #[arg(long, value_name = "RATE", requires = "emu", conflicts_with = "rr")]
    stream: Option<String>,
    /// With --emu: request/response exchanges instead (`perf --rr`, --length bytes each,
    /// default 100): round-trip percentiles.
    #[arg(long, requires = "emu")]
    rr: bool,
    /// With --emu: instead of bulk and 10 MB, each contender against one kernel TCP flow
    /// of this congestion control (e.g. cubic), both started together for --seconds:
    /// their goodputs after the first third, and the ratio.
    #[arg(long, value_name = "CC", requires = "emu", conflicts_with_all = ["rr", "stream"])]
    against: Option<String>,
    /// With --emu: instead of bulk and 10 MB, N flows of each contender at once (one
    /// `perf` each, for --seconds): their goodputs after the first third and Jain's
    /// fairness index (`tcpfec reproduce coexistence` runs the same in the simulator).
    #[arg(long, value_name = "N", requires = "emu", conflicts_with_all = ["rr", "stream", "against"],
          value_parser = clap::value_parser!(u32).range(2..=64))]
    flows: Option<u32>,
    /// With --flows: the flows start evenly spread over this time (e.g. 1s, as the
    /// simulator's coexistence runs do); 0 starts them together.
    #[arg(
        long,
        value_name = "DURATION",
        requires = "flows",
        default_value = "0s"
    )]
    stagger: String,
    /// Bytes per message of --stream or per request and response of --rr.
    #[arg(long, value_name = "SIZE", requires = "emu")]
    length: Option<u32>,
    /// One JSON object per measurement instead of tables.
    #[arg(long)]
    json: bool,
}

/// CPU seconds (user and system) this process has used.
fn cpu_seconds() -> f64 {
    let (user, system) = tcpfec_net::perf::cpu::used();
    user + system
}

fn any() -> SocketAddr {
    "127.0.0.1:0".parse().expect("address")
}

/// Sends `bytes` from a client to a server (and waits for the one-byte answer).
async fn loopback_run(cfg: EndpointConfig, bytes: u64) -> Result<(), String> {
    let srv = Endpoint::bind(any(), cfg.clone(), true)
        .await
        .map_err(|e| e.to_string())?;
    let addr = srv.local_addr().map_err(|e| e.to_string())?;
    let receiver = tokio::spawn(async move {
        let mut s = srv.accept().await.ok_or("no connection")?;
        let mut buf = vec![0u8; 1 << 18];
        let mut n = 0u64;
        loop {
            let k = s.read(&mut buf).await.map_err(|e| e.to_string())?;
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        s.write_all(&[1]).await.map_err(|e| e.to_string())?;
        s.shutdown().await.map_err(|e| e.to_string())?;
        drop(s);
        srv.wait_idle(Duration::from_secs(2)).await;
        Ok::<u64, String>(n)
    });
    let cli = Endpoint::bind(any(), cfg, false)
        .await
        .map_err(|e| e.to_string())?;
    let mut s = cli.connect(addr).await.map_err(|e| e.to_string())?;
    let chunk = vec![0x5au8; 1 << 18];
    let mut left = bytes;
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..k]).await.map_err(|e| e.to_string())?;
        left -= k as u64;
    }
    s.shutdown().await.map_err(|e| e.to_string())?;
    let mut ans = Vec::new();
    s.read_to_end(&mut ans).await.map_err(|e| e.to_string())?;
    let got = receiver.await.map_err(|e| e.to_string())??;
    if got != bytes {
        return Err(format!("received {got} of {bytes} bytes"));
    }
    Ok(())
}

fn loopback(a: &NetBenchArgs) -> Result<(), String> {
    let bytes = a.megabytes << 20;
    if !a.json {
        println!(
            "loopback, sender and receiver on one core, {} MiB per run",
            a.megabytes
        );
        println!(
            "{:<10} {:<18} {:>10} {:>14}",
            "crypto", "scheme", "Gb/s", "CPU s per GB"
        );
    }
    for encrypted in [true, false] {
        for scheme in ["sack", DEFAULT_SCHEME] {
            let key = encrypted.then(Psk::generate);
            let cfg = EndpointConfig::new(key, Scheme::parse(scheme)?);
            // One thread for everything: the "one core" of the target.
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let (t0, c0) = (Instant::now(), cpu_seconds());
            rt.block_on(loopback_run(cfg, bytes))?;
            let (secs, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
            let gbps = bytes as f64 * 8.0 / secs / 1e9;
            let cpu_per_gb = cpu / (bytes as f64 / 1e9);
            let crypto = if encrypted { "noise" } else { "insecure" };
            if a.json {
                println!(
                    "{}",
                    json!({"bench": "loopback", "crypto": crypto, "scheme": scheme, "bytes": bytes, "secs": secs, "gbps": gbps, "cpu_s_per_gb": cpu_per_gb})
                );
            } else {
                println!("{crypto:<10} {scheme:<18} {gbps:>10.2} {cpu_per_gb:>14.2}");
            }
        }
    }
    Ok(())
}

/// Bulk transfer through a relay for `secs`; returns goodput (Mb/s) after the warm-up.
async fn relay_run(
    scheme: &str,
    rate: u64,
    rtt: Duration,
    loss: LossSpec,
    secs: f64,
) -> Result<(f64, u64, tcpfec_proto::Stats), String> {
    let key = Psk::generate();
    let cfg = EndpointConfig::new(Some(key), Scheme::parse(scheme)?);
    let srv = Endpoint::bind(any(), cfg.clone(), true)
        .await
        .map_err(|e| e.to_string())?;
    let one_way = rtt / 2;
    let bdp = (rate as f64 * rtt.as_secs_f64() / 8.0 / 1500.0) as usize;
    let link = LinkSpec {
        rate_bps: Some(rate),
        delay: one_way,
        queue: bdp.max(64),
        max_bytes: tcpfec_net::relay::DEFAULT_MAX_BYTES,
        loss: LossSpec::None,
    };
    let relay = Relay::start(RelayConfig {
        listen: any(),
        to: srv.local_addr().map_err(|e| e.to_string())?,
        forward: LinkSpec { loss, ..link },
        back: link,
        seed: 1,
        max_sources: tcpfec_net::relay::DEFAULT_MAX_SOURCES,
        idle_expiry: tcpfec_net::relay::DEFAULT_IDLE_EXPIRY,
    })
    .await
    .map_err(|e| e.to_string())?;
    let count = Arc::new(AtomicU64::new(0));
    let c2 = count.clone();
    let recovered = Arc::new(AtomicU64::new(0));
    let r2 = recovered.clone();
    let receiver = tokio::spawn(async move {
        let Some(mut s) = srv.accept().await else {
            return;
        };
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(k) = s.read(&mut buf).await {
            if k == 0 {
                break;
            }
            c2.fetch_add(k as u64, Ordering::Relaxed);
            r2.store(s.stats().recovered, Ordering::Relaxed);
        }
    });
    let cli = Endpoint::bind(any(), cfg, false)
        .await
        .map_err(|e| e.to_string())?;
    let mut s = cli
        .connect(relay.local_addr())
        .await
        .map_err(|e| e.to_string())?;
    let watch = s.watch();
    let sender = tokio::spawn(async move {
        let chunk = vec![0xa5u8; 1 << 16];
        while s.write_all(&chunk).await.is_ok() {}
    });
    let warm = secs / 3.0;
    tokio::time::sleep(Duration::from_secs_f64(warm)).await;
    let b0 = count.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs_f64(secs - warm)).await;
    let b1 = count.load(Ordering::Relaxed);
    let sent = watch.stats();
    sender.abort();
    receiver.abort();
    let mbps = (b1 - b0) as f64 * 8.0 / (secs - warm) / 1e6;
    Ok((mbps, recovered.load(Ordering::Relaxed), sent))
}

fn relayed(a: &NetBenchArgs) -> Result<(), String> {
    let rate = tcpfec_channel::units::parse_rate(&a.rate).map_err(|e| format!("--rate: {e}"))?;
    let rtt = tcpfec_channel::units::parse_duration(&a.rtt).map_err(|e| format!("--rtt: {e}"))?;
    let losses = conditions(a)?;
    let schemes: Vec<String> = match &a.schemes {
        Some(s) => s.split(',').map(|x| x.trim().to_string()).collect(),
        None => vec![
            "sack".into(),
            "bbr".into(),
            "bbr1".into(),
            DEFAULT_SCHEME.into(),
            PEAK_SCHEME.into(),
        ],
    };
    for s in &schemes {
        Scheme::parse(s).map_err(|e| format!("--schemes: {e}"))?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if !a.json {
        println!(
            "\nrelay {} Mb/s, RTT {:?}, queue 1 BDP, {:.0} s per run (last 2/3 measured)",
            rate as f64 / 1e6,
            rtt,
            a.seconds
        );
        println!(
            "{:<18} {:>12} {:>12} {:>10} {:>8} {:>5} {:>7} {:>7} {:>14}",
            "scheme", "loss", "goodput", "recovered", "FR", "RTO", "repair", "resent", "of C(1-p)"
        );
    }
    // C: the best loss-free goodput seen (measured first when 0 is in the list).
    let mut capacity: Option<f64> = None;
    let mut order = losses.clone();
    order.sort_by(|x, y| x.mean_loss().total_cmp(&y.mean_loss()));
    for &l in &order {
        let p = l.mean_loss();
        for s in &schemes {
            let (mbps, rec, st) = rt.block_on(relay_run(s, rate, rtt, l, a.seconds))?;
            if l == LossSpec::None {
                capacity = Some(capacity.map_or(mbps, |c: f64| c.max(mbps)));
            }
            let share = capacity.map(|c| mbps / (c * (1.0 - p)));
            if a.json {
                println!(
                    "{}",
                    json!({"bench": "relay", "scheme": s, "loss": p, "loss_model": l, "rate_bps": rate, "rtt_ms": rtt.as_secs_f64() * 1e3, "goodput_mbps": mbps, "recovered": rec, "fast_recoveries": st.fast_recoveries, "timeouts": st.timeouts, "share_of_capacity": share, "data_packets_sent": st.data_packets_sent, "retransmissions": st.retransmissions, "repairs_sent": st.repairs_sent, "payload_bytes_sent": st.payload_bytes_sent})
                );
            } else {
                println!(
                    "{:<18} {:>12} {:>7.2} Mb/s {:>10} {:>8} {:>5} {:>7} {:>7} {:>14}",
                    s,
                    l.label(),
                    mbps,
                    rec,
                    st.fast_recoveries,
                    st.timeouts,
                    percent_of_sent(st.repairs_sent, &st),
                    percent_of_sent(st.retransmissions, &st),
                    share.map_or("-".into(), |x| format!("{:.0}%", x * 100.0))
                );
            }
        }
    }
    if !a.json {
        println!("C = best loss-free goodput through the relay (UDP/IP headers, tcpfec headers and the FEC share of the scheme that reached it are outside C)");
    }
    Ok(())
}

/// `n` as a share of every data and repair packet the sender sent, for the relay table.
fn percent_of_sent(n: u64, st: &tcpfec_proto::Stats) -> String {
    let all = st.data_packets_sent + st.repairs_sent;
    if all == 0 {
        return "-".into();
    }
    format!("{:.1}%", n as f64 * 100.0 / all as f64)
}

/// Two processes on loopback: `tcpfec perf` with sack and the default scheme, and quinn
/// with `--quinn`, the same bytes each.
fn two_process(a: &NetBenchArgs) -> Result<(), String> {
    use crate::loopback_bench as lb;
    let bytes = a.megabytes << 20;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let key = std::env::temp_dir().join(format!("tcpfec-lb-key-{}", std::process::id()));
    let _ = std::fs::remove_file(&key);
    Psk::generate()
        .write_new(&key)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    if !a.json {
        println!(
            "\nloopback, two processes (`tcpfec perf`, encrypted), {} MiB per run",
            a.megabytes
        );
        println!(
            "{:<22} {:>8} {:>16} {:>16}",
            "transport", "Gb/s", "send GB/CPU-s", "recv GB/CPU-s"
        );
    }
    let mut ours = Vec::new();
    for scheme in ["sack", DEFAULT_SCHEME] {
        let m = lb::tcpfec_perf(&exe, &key, scheme, bytes);
        let _ = m
            .as_ref()
            .map(|m| lb::print(&format!("tcpfec {scheme}"), m, bytes, a.json));
        ours.push(m?);
    }
    let _ = std::fs::remove_file(&key);
    if a.quinn {
        let q = lb::quinn(bytes)?;
        lb::print("quinn 0.11", &q, bytes, a.json);
        if !a.json {
            println!(
                "tcpfec sack / quinn: {:.2}x Gb/s, {:.2}x sender and {:.2}x receiver bytes per CPU-second",
                ours[0].gbps / q.gbps,
                ours[0].sender_bpcs / q.sender_bpcs,
                ours[0].receiver_bpcs / q.receiver_bpcs
            );
        }
    }
    Ok(())
}

/// The loss conditions of `--loss` (random, in the order given) and `--ge` (after them).
fn conditions(a: &NetBenchArgs) -> Result<Vec<LossSpec>, String> {
    let mut v: Vec<LossSpec> = a
        .loss
        .split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| tcpfec_channel::units::parse_probability(x).map(LossSpec::bernoulli))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--loss: {e}"))?;
    for g in &a.ge {
        v.push(LossSpec::parse_ge(g).map_err(|e| format!("--ge: {e}"))?);
    }
    Ok(v)
}

/// Runs the benchmark.
pub fn run(a: NetBenchArgs) -> Result<(), String> {
    if a.emu {
        let losses = conditions(&a)?;
        return crate::emu_bench::run(&crate::emu_bench::Plan {
            rate: tcpfec_channel::units::parse_rate(&a.rate).map_err(|e| format!("--rate: {e}"))?,
            rtt: tcpfec_channel::units::parse_duration(&a.rtt)
                .map_err(|e| format!("--rtt: {e}"))?,
            losses,
            seconds: a.seconds,
            bytes: a.emu_bytes,
            seed: a.seed,
            queue: a.queue.map(|q| q as usize),
            limit: crate::emu_bench::COMPLETION_LIMIT,
            contenders: crate::emu_bench::contenders(a.schemes.as_deref(), a.kernel.as_deref())?,
            json: a.json,
            against: a.against.clone(),
            flows: match a.flows {
                Some(n) => Some(crate::emu_bench::FlowsTest {
                    flows: n as usize,
                    stagger: tcpfec_channel::units::parse_duration(&a.stagger)
                        .map_err(|e| format!("--stagger: {e}"))?,
                }),
                None => None,
            },
            delay: match (&a.stream, a.rr) {
                (Some(r), _) => Some(crate::emu_bench::DelayTest::Stream {
                    rate: r.clone(),
                    length: a.length.unwrap_or(1000),
                }),
                (None, true) => Some(crate::emu_bench::DelayTest::Exchange {
                    length: a.length.unwrap_or(100),
                }),
                (None, false) => None,
            },
        });
    }
    if !a.relay_only {
        loopback(&a)?;
        two_process(&a)?;
    }
    if !a.loopback_only {
        relayed(&a)?;
    }
    Ok(())
}
