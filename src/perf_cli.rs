//! `tcpfec perf`: the command line of the iperf3-like test (`tcpfec_net::perf`): flags,
//! live interval lines, the end summary, iperf3-shaped JSON, and `--compare` races.

use crate::net_cli::{resolve, runtime, runtime_with, scheme, Security, Threads};
use clap::Args;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tcpfec_channel::DelaySummary;
use tcpfec_net::perf::client::{self, Connector, Interval, IntervalStream, Options, Report};
use tcpfec_net::perf::control::{SideEnd, StreamEnd};
use tcpfec_net::perf::server::{self, Event};
use tcpfec_net::perf::timed::{Pattern, HEADER, MAX_MESSAGE};
use tcpfec_net::perf::{kernel_tcp, Transport};
use tcpfec_net::{Endpoint, EndpointConfig, DEFAULT_SCHEME};
use tcpfec_proto::Scheme;

/// Port used when an address gives none (iperf3's).
pub const DEFAULT_PORT: u16 = 5201;

/// `tcpfec perf`.
#[derive(Args)]
#[command(
    override_usage = "tcpfec perf --server [--listen ADDR] [OPTIONS]\n       \
                             tcpfec perf HOST[:PORT] [-t SECONDS | -n BYTES] [-P STREAMS] [-R] [--tcp | --compare] [OPTIONS]\n       \
                             tcpfec perf HOST[:PORT] -b RATE [-l SIZE] ...   (a paced stream: delivery delay)\n       \
                             tcpfec perf HOST[:PORT] --rr [-l SIZE] ...      (request/response: round trips)"
)]
pub struct PerfArgs {
    /// The server to test against (port 5201 if none is given).
    #[arg(value_name = "HOST[:PORT]", required_unless_present = "server")]
    addr: Option<String>,
    /// Run as the server: answer tests over tcpfec (UDP) and, at the same port number,
    /// over kernel TCP for `--tcp` and `--compare` clients.
    #[arg(short = 's', long, conflicts_with = "addr")]
    server: bool,
    /// Server: the address to listen on (UDP and TCP).
    #[arg(long, default_value = "0.0.0.0:5201", requires = "server")]
    listen: String,
    /// Server: serve tcpfec only (no kernel TCP listener).
    #[arg(long, requires = "server")]
    no_tcp: bool,
    /// Server: longest test accepted, seconds
    #[arg(long, requires = "server", default_value_t = server::MAX_SECONDS, value_name = "SECONDS")]
    max_seconds: f64,
    /// Server: most data connections per test
    #[arg(long, requires = "server", default_value_t = server::MAX_STREAMS, value_name = "N")]
    max_streams: u32,
    /// Server: largest byte count per test (`-n`)
    #[arg(long, requires = "server", default_value_t = server::MAX_BYTES, value_name = "BYTES")]
    max_bytes: u64,
    /// Seconds to send for.
    #[arg(
        short = 't',
        long = "time",
        default_value_t = 10.0,
        value_name = "SECONDS"
    )]
    seconds: f64,
    /// Send exactly this many bytes instead (e.g. 10MB, 1GiB, 5000000); the test ends
    /// when the receiver has them all.
    #[arg(short = 'n', long = "bytes", value_name = "BYTES")]
    bytes: Option<String>,
    /// Parallel data connections.
    #[arg(
        short = 'P',
        long = "parallel",
        default_value_t = 1,
        value_name = "STREAMS"
    )]
    streams: u32,
    /// Reverse: the server sends, the client receives.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Start from what the last test to this server learnt about the path (Careful
    /// Resume, RFC 9959; see `tcpfec send --help`), and save what this one learns. Off by
    /// default, so that each test measures the path from a cold start as iperf3 does.
    #[arg(long, conflicts_with = "reverse")]
    resume: bool,
    /// An application-limited stream instead of bulk data (iperf3's --bitrate): messages
    /// of -l bytes at this rate per stream (e.g. 4M or 4mbit, 500k), each stamped as it is
    /// written. The receiver reports their delivery delay, the time from a message's
    /// write to the read of its last byte, per interval and at the end: exact where both
    /// ends share a clock (one host: loopback, the relay, `tcpfec emu`), across hosts
    /// above the smallest delay seen (the report says which).
    #[arg(
        short = 'b',
        long = "bitrate",
        value_name = "RATE",
        conflicts_with = "rr"
    )]
    bitrate: Option<String>,
    /// Request/response exchanges instead of bulk data (netperf's TCP_RR): a request of
    /// -l bytes, answered with as many, the next request once the answer is read; the
    /// client reports the round trips' percentiles. One stream, client first.
    #[arg(long)]
    rr: bool,
    /// Bytes per message of -b (16 to 1 MiB; default 1K = 1000) or per request and
    /// response of --rr (1 to 1 MiB; default 100).
    #[arg(short = 'l', long = "length", value_name = "SIZE")]
    length: Option<String>,
    /// Leave the first SECONDS out of the delays of -b and --rr (iperf3's --omit: a
    /// connection's start-up, whose first round trips are window-limited); the bytes
    /// still count.
    #[arg(
        short = 'O',
        long = "omit",
        value_name = "SECONDS",
        default_value_t = 0.0
    )]
    omit: f64,
    /// Seconds between interval lines.
    #[arg(short = 'i', long, default_value_t = 1.0, value_name = "SECONDS")]
    interval: f64,
    /// Scheme of the data direction (`tcpfec schemes` lists them; see `tcpfec send
    /// --help` for the default, auto). On the server: the scheme for clients that name
    /// none.
    #[arg(long, default_value = DEFAULT_SCHEME)]
    scheme: String,
    /// Run the test over kernel TCP to the same server instead of tcpfec.
    #[arg(long, conflicts_with = "compare")]
    tcp: bool,
    /// Kernel TCP congestion control for `--tcp` (e.g. cubic, bbr; default: the
    /// system's). With `--compare`, a comma-separated list [default: cubic and bbr, those
    /// the kernel has].
    #[arg(long, value_delimiter = ',')]
    congestion: Vec<String>,
    /// Run the test over tcpfec, then over kernel TCP with each `--congestion`, and
    /// print them side by side.
    #[arg(long)]
    compare: bool,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    security: Security,
    #[command(flatten)]
    config: crate::net_cli::ConfigArg,
    #[command(flatten)]
    qlog: crate::net_cli::QlogArg,
    /// Output JSON in iperf3's shape (plus tcpfec's own fields) instead of text.
    #[arg(long, short = 'J')]
    json: bool,
}

/// `tcpfec perf`.
pub fn perf(a: PerfArgs) -> Result<(), String> {
    if !(a.interval >= 0.1 && a.interval <= 3600.0) {
        return Err("-i: give 0.1 to 3600 seconds".into());
    }
    if a.streams == 0 || a.streams > server::MAX_STREAMS {
        return Err(format!("-P: give 1 to {} streams", server::MAX_STREAMS));
    }
    if a.server {
        return serve(a);
    }
    if a.threads.is_set() {
        return Err("--threads: a server option (the client uses one socket per -P stream)".into());
    }
    let bytes = a
        .bytes
        .as_deref()
        .map(|b| parse_bytes(b).map_err(|e| format!("-n: {e}")))
        .transpose()?;
    let pattern = pattern(&a, bytes.is_some())?;
    if !(a.omit >= 0.0 && (bytes.is_some() || a.omit < a.seconds)) {
        return Err("-O: give seconds from 0 to less than the test's -t".into());
    }
    if a.omit > 0.0 && pattern == Pattern::Bulk {
        return Err("-O: leaves a start-up out of the delays of -b or --rr".into());
    }
    if bytes.is_none() && !(a.seconds > 0.0 && a.seconds <= server::MAX_SECONDS) {
        return Err("-t: give seconds above 0, at most a day".into());
    }
    if a.tcp && a.congestion.len() > 1 {
        return Err("--congestion: give one name with --tcp (a list needs --compare)".into());
    }
    let opts = Options {
        seconds: a.seconds,
        bytes,
        streams: a.streams,
        reverse: a.reverse,
        interval: a.interval,
        pattern,
        omit: a.omit,
        // Kernel TCP tests prove the key too (a challenge), unless --insecure.
        key: a.security.key()?,
    };
    let tcp_only = a.tcp;
    let key = if tcp_only {
        None
    } else {
        Some(opts.key.clone())
    };
    let data_scheme = scheme("--scheme", &a.scheme, false)?;
    let addr_text = with_port(a.addr.as_deref().expect("clap requires it"));
    let tcpfec = Transport::Tcpfec {
        scheme: data_scheme.name.clone(),
    };
    let runs: Vec<Transport> = if a.compare {
        // cubic and bbr where the kernel has them; the system's default if neither.
        let ccs: Vec<Option<String>> = if a.congestion.is_empty() {
            let have = kernel_tcp::available();
            let picks: Vec<Option<String>> = ["cubic", "bbr"]
                .into_iter()
                .filter(|c| have.iter().any(|h| h == c))
                .map(|c| Some(c.to_string()))
                .collect();
            if picks.is_empty() {
                vec![None]
            } else {
                picks
            }
        } else {
            a.congestion.iter().cloned().map(Some).collect()
        };
        std::iter::once(tcpfec)
            .chain(
                ccs.into_iter()
                    .map(|congestion| Transport::Tcp { congestion }),
            )
            .collect()
    } else if tcp_only {
        vec![Transport::Tcp {
            congestion: a.congestion.first().cloned(),
        }]
    } else {
        vec![tcpfec]
    };
    let json_out = a.json;
    let resume = a.resume;
    let qlog = a.qlog.clone();
    runtime()?.block_on(async move {
        let server = resolve("HOST:PORT", &addr_text).await?;
        let mut reports = Vec::new();
        for run in runs {
            let report = match run {
                Transport::Tcpfec { .. } => {
                    let key = key.clone().expect("tcpfec runs have a key decision");
                    let mut cfg = EndpointConfig::new(key, data_scheme.clone());
                    qlog.apply(&mut cfg)?;
                    // The data direction uses --scheme either way; the other direction
                    // carries only acknowledgements and control lines.
                    let sack = Scheme::parse("sack").expect("built-in");
                    if opts.reverse {
                        cfg.scheme = sack;
                        cfg.peer_scheme = Some(data_scheme.clone());
                    } else {
                        cfg.peer_scheme = Some(sack);
                    }
                    cfg.path_cache = crate::net_cli::path_cache(resume);
                    // One socket per data stream, so a sharded server spreads them.
                    let mut eps = Vec::new();
                    for _ in 0..opts.streams {
                        let ep = Endpoint::client(cfg.clone())
                            .await
                            .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
                        eps.push(ep);
                    }
                    let c = Connector::Tcpfec(&eps, data_scheme.name.clone());
                    let r = one_run(&c, server, &opts, json_out).await;
                    drop(c);
                    // Let final acknowledgements go out; the test is already measured.
                    for ep in &eps {
                        ep.wait_done(Duration::from_secs(1)).await;
                    }
                    r?
                }
                Transport::Tcp { congestion } => {
                    one_run(&Connector::Tcp(congestion), server, &opts, json_out).await?
                }
            };
            reports.push(report);
        }
        if json_out {
            let v: Vec<Value> = reports.iter().map(report_json).collect();
            let out = if v.len() == 1 {
                v.into_iter().next().expect("one")
            } else {
                json!({ "runs": v })
            };
            println!("{}", serde_json::to_string_pretty(&out).expect("json"));
        } else if reports.len() > 1 {
            println!();
            print!("{}", compare_table(&reports));
        }
        Ok(())
    })
}

/// The test's pattern from -b, --rr and -l, refusing what cannot run together.
fn pattern(a: &PerfArgs, by_bytes: bool) -> Result<Pattern, String> {
    let length = |default: u64, least: u32| -> Result<u32, String> {
        let n = match &a.length {
            Some(l) => tcpfec_channel::units::parse_size(l).map_err(|e| format!("-l: {e}"))?,
            None => default,
        };
        if n < least as u64 || n > MAX_MESSAGE as u64 {
            return Err(format!(
                "-l: {n} bytes; give {least} to {MAX_MESSAGE} (1 MiB){}",
                if least > 1 {
                    " (a message carries its number and send time)"
                } else {
                    ""
                }
            ));
        }
        Ok(n as u32)
    };
    if a.rr {
        if a.reverse || a.streams != 1 || by_bytes {
            return Err(
                "--rr: one stream, client first, for a time (not with -R, -P or -n)".into(),
            );
        }
        return Ok(Pattern::Exchange {
            length: length(100, 1)?,
        });
    }
    if let Some(b) = &a.bitrate {
        let bitrate = parse_bitrate(b).map_err(|e| format!("-b: {e}"))?;
        return Ok(Pattern::Paced {
            bitrate,
            length: length(1000, HEADER)?,
        });
    }
    if a.length.is_some() {
        return Err("-l: the message size of -b or --rr; bulk tests write 128 KiB".into());
    }
    Ok(Pattern::Bulk)
}

/// Parses a rate as iperf3 writes it (`4M`, `500k`, `1G`, bits per second, SI) or as
/// the simulator does (`4mbit`); above zero.
fn parse_bitrate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let scaled = match t.char_indices().last() {
        Some((i, c)) if "kKmMgG".contains(c) => {
            let scale = match c.to_ascii_lowercase() {
                'k' => 1e3,
                'm' => 1e6,
                _ => 1e9,
            };
            t[..i].parse::<f64>().ok().map(|v| v * scale)
        }
        _ => t.parse::<f64>().ok(),
    };
    let bps = match scaled {
        Some(v) => v,
        None => tcpfec_channel::units::parse_rate(t)? as f64,
    };
    if !(bps.is_finite() && bps > 0.0) {
        return Err(format!("'{s}': give a rate above 0 (e.g. 4M, 4mbit)"));
    }
    Ok(bps)
}

/// Runs one test, printing its lines as they come unless JSON is wanted.
async fn one_run(
    c: &Connector<'_>,
    server: SocketAddr,
    opts: &Options,
    json_out: bool,
) -> Result<Report, String> {
    let transport = c.transport();
    if !json_out {
        println!(
            "Connecting to {server} over {}{}",
            transport.label(),
            if opts.reverse {
                " (reverse: the server sends)"
            } else {
                ""
            }
        );
        println!("{}", header(opts.pattern));
    }
    let streams = opts.streams;
    let mut on_interval = |iv: &Interval| {
        if json_out {
            return;
        }
        let delay = |i: Option<usize>| {
            let d = iv.delays.as_ref()?;
            match i {
                Some(i) => d.streams.get(i).copied().flatten(),
                None => d.all,
            }
        };
        if streams > 1 {
            for (i, s) in iv.streams.iter().enumerate() {
                println!(
                    "{}",
                    interval_line(&format!("{:>3}", i + 1), iv, s, delay(Some(i)))
                );
            }
        }
        let label = if streams > 1 {
            "SUM".to_string()
        } else {
            "  1".into()
        };
        println!("{}", interval_line(&label, iv, &iv.sum(), delay(None)));
    };
    let r = client::run(c, server, opts, &mut on_interval)
        .await
        .map_err(|e| format!("{}: {e}", transport.label()))?;
    if !json_out {
        print!("{}", summary(&r));
    }
    Ok(r)
}

fn header(pattern: Pattern) -> String {
    let delay = match pattern {
        Pattern::Bulk => "",
        Pattern::Paced { .. } => "  Delay p50 / p99",
        Pattern::Exchange { .. } => "  Round trip p50 / p99",
    };
    format!(
        "[ ID] {:<17} {:>13} {:>16} {:>6} {:>7} {:>7} {:>9}  {:<24}{delay}",
        "Interval", "Transfer", "Bitrate", "Retr", "Repair", "FEC-rec", "RTT", "Cwnd / pacing"
    )
}

/// "p50 / p99 ms" of a delay summary.
fn delay_cell(d: &DelaySummary) -> String {
    format!("{:.1} / {:.1} ms", d.p50_ms, d.p99_ms)
}

fn interval_line(
    id: &str,
    iv: &Interval,
    s: &IntervalStream,
    delay: Option<DelaySummary>,
) -> String {
    let secs = (iv.end - iv.start).max(1e-9);
    let window = match (s.cwnd_bytes, s.pacing_bps) {
        (Some(c), Some(p)) => format!("{} / {}", size(c as f64), rate(p)),
        (Some(c), None) => size(c as f64),
        (None, Some(p)) => rate(p),
        (None, None) => "-".into(),
    };
    format!(
        "[{id}] {:>6.2}-{:<6.2} sec {:>13} {:>16} {:>6} {:>7} {:>7} {:>9}  {}",
        iv.start,
        iv.end,
        size(s.bytes as f64),
        rate(s.bytes as f64 * 8.0 / secs),
        s.retransmits,
        s.repairs_sent,
        s.recovered,
        s.rtt_us
            .map_or("-".into(), |r| format!("{:.1} ms", r as f64 / 1e3)),
        match delay {
            Some(d) => format!("{window:<24}  {}", delay_cell(&d)),
            None => window,
        }
    )
}

/// Totals of one side: bytes, and seconds until the last stream finished.
fn side_total(e: &SideEnd) -> (u64, f64) {
    (
        e.streams.iter().map(|s| s.bytes).sum(),
        e.streams.iter().map(|s| s.seconds).fold(0.0, f64::max),
    )
}

fn sum_samples(e: &SideEnd, f: impl Fn(&StreamEnd) -> u64) -> u64 {
    e.streams.iter().map(f).sum()
}

/// Bytes per CPU-second of one side (its whole process: endpoint, crypto, test data).
fn bytes_per_cpu_second(e: &SideEnd, bytes: u64) -> f64 {
    bytes as f64 / (e.cpu_user + e.cpu_system).max(1e-9)
}

fn summary(r: &Report) -> String {
    let (sb, ss) = side_total(&r.sender);
    let (rb, rs) = side_total(&r.receiver);
    let retr = sum_samples(&r.sender, |s| s.sample.retransmits);
    let rep = sum_samples(&r.sender, |s| s.sample.repairs_sent);
    let rec = sum_samples(&r.receiver, |s| s.sample.recovered);
    let cpu = |e: &SideEnd| 100.0 * (e.cpu_user + e.cpu_system) / e.wall.max(1e-9);
    let mut out = String::new();
    out.push_str("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    let sum_line = |secs: f64, bytes: u64, retr: &str, rep: &str, rec: &str, side: &str| {
        format!(
            "[SUM] {:>6.2}-{:<6.2} sec {:>13} {:>16} {retr:>6} {rep:>7} {rec:>7}            {side}\n",
            0.0,
            secs,
            size(bytes as f64),
            rate(bytes as f64 * 8.0 / secs.max(1e-9)),
        )
    };
    out.push_str(&sum_line(
        ss,
        sb,
        &retr.to_string(),
        &rep.to_string(),
        "",
        "sender",
    ));
    out.push_str(&sum_line(rs, rb, "", "", &rec.to_string(), "receiver"));
    out.push_str(&format!(
        "CPU: sender {:.1} % ({} per CPU-second), receiver {:.1} % ({} per CPU-second)\n",
        cpu(&r.sender),
        size(bytes_per_cpu_second(&r.sender, sb)),
        cpu(&r.receiver),
        size(bytes_per_cpu_second(&r.receiver, rb)),
    ));
    if sb != rb {
        out.push_str(&format!(
            "note: the receiver read {rb} bytes of the {sb} sent (the test ended early)\n"
        ));
    }
    if let Some(d) = r.delays().and_then(|d| d.all.map(|a| (a, d.clock.clone()))) {
        let (a, clock) = d;
        let (what, unit) = match r.hello.pattern {
            Pattern::Exchange { .. } => ("Round trip", "exchanges"),
            _ if clock == "relative" => (
                "Delivery delay above the smallest seen (the hosts' clocks differ)",
                "messages",
            ),
            _ => ("Delivery delay (write to read, one clock)", "messages"),
        };
        out.push_str(&format!(
            "{what}: p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, p99.9 {:.1} ms, max {:.1} ms over {} {unit}\n",
            a.p50_ms, a.p90_ms, a.p99_ms, a.p999_ms, a.max_ms, a.weight
        ));
    }
    out
}

/// The `--compare` table: one row per transport.
fn compare_table(reports: &[Report]) -> String {
    let delays = reports.iter().any(|r| r.delays().is_some());
    let mut out = format!(
        "{:<24} {:>14} {:>10} {:>8} {:>8} {:>8} {:>11}{}\n",
        "transport",
        "goodput",
        "seconds",
        "retr",
        "repair",
        "fec-rec",
        "timeouts",
        if delays {
            "  delay p50 / p99 / p99.9 [ms]"
        } else {
            ""
        }
    );
    for r in reports {
        let (rb, rs) = side_total(&r.receiver);
        let delay = r.delays().and_then(|d| d.all).map_or(String::new(), |a| {
            format!("  {:.1} / {:.1} / {:.1}", a.p50_ms, a.p99_ms, a.p999_ms)
        });
        out.push_str(&format!(
            "{:<24} {:>14} {:>10.2} {:>8} {:>8} {:>8} {:>11}{delay}\n",
            r.transport.label(),
            rate(rb as f64 * 8.0 / rs.max(1e-9)),
            rs,
            sum_samples(&r.sender, |s| s.sample.retransmits),
            sum_samples(&r.sender, |s| s.sample.repairs_sent),
            sum_samples(&r.receiver, |s| s.sample.recovered),
            sum_samples(&r.sender, |s| s.sample.timeouts),
        ));
    }
    out
}

/// iperf3's JSON for one test, plus tcpfec's fields under `tcpfec` keys.
pub fn report_json(r: &Report) -> Value {
    let protocol = match &r.transport {
        Transport::Tcpfec { .. } => "tcpfec",
        Transport::Tcp { .. } => "TCP",
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let n = r.hello.streams as usize;
    let client_sends = r.client_sent;
    let intervals: Vec<Value> = r
        .intervals
        .iter()
        .map(|iv| {
            let delays = iv.delays.as_ref();
            let streams: Vec<Value> = iv
                .streams
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let d = delays.map(|d| d.streams.get(i).copied().flatten());
                    interval_json(i as i64 + 1, iv, s, client_sends, d)
                })
                .collect();
            let all = delays.map(|d| d.all);
            json!({ "streams": streams, "sum": interval_json(0, iv, &iv.sum(), client_sends, all) })
        })
        .collect();
    let end_stream = |socket: usize, e: &StreamEnd, sender: bool| {
        let mut v = json!({
            "socket": socket,
            "start": 0.0,
            "end": e.seconds,
            "seconds": e.seconds,
            "bytes": e.bytes,
            "bits_per_second": e.bytes as f64 * 8.0 / e.seconds.max(1e-9),
            "sender": sender,
        });
        if sender {
            v["retransmits"] = json!(e.sample.retransmits);
            v["tcpfec_repairs_sent"] = json!(e.sample.repairs_sent);
            v["tcpfec_timeouts"] = json!(e.sample.timeouts);
            v["max_rtt"] = json!(e.sample.rtt_us);
        } else {
            v["tcpfec_recovered"] = json!(e.sample.recovered);
        }
        v
    };
    let streams: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "sender": r.sender.streams.get(i).map(|e| end_stream(i + 1, e, true)),
                "receiver": r.receiver.streams.get(i).map(|e| end_stream(i + 1, e, false)),
            })
        })
        .collect();
    let (sb, ss) = side_total(&r.sender);
    let (rb, rs) = side_total(&r.receiver);
    let pct = |e: &SideEnd, x: f64| 100.0 * x / e.wall.max(1e-9);
    let (local, remote) = (r.local(), r.remote());
    let cc = match &r.transport {
        Transport::Tcp { congestion } => congestion.clone().unwrap_or_else(system_congestion),
        Transport::Tcpfec { scheme } => scheme.clone(),
    };
    json!({
        "start": {
            "connected": (1..=n).map(|i| json!({
                "socket": i,
                "remote_host": r.server.ip().to_string(),
                "remote_port": r.server.port(),
            })).collect::<Vec<_>>(),
            "version": format!("tcpfec {}", env!("CARGO_PKG_VERSION")),
            "timestamp": { "timesecs": now },
            "connecting_to": { "host": r.server.ip().to_string(), "port": r.server.port() },
            "cookie": format!("{:016x}", r.hello.test_id),
            "test_start": {
                "protocol": protocol,
                "num_streams": n,
                "blksize": tcpfec_net::perf::BLOCK,
                "omit": 0,
                "duration": if r.hello.bytes.is_some() { 0.0 } else { r.hello.seconds },
                "bytes": r.hello.bytes.unwrap_or(0),
                "blocks": 0,
                "reverse": u8::from(r.hello.reverse),
            },
            "tcpfec": { "transport": r.transport.label(), "pattern": r.hello.pattern },
        },
        "intervals": intervals,
        "end": {
            "streams": streams,
            "sum_sent": {
                "start": 0.0, "end": ss, "seconds": ss, "bytes": sb,
                "bits_per_second": sb as f64 * 8.0 / ss.max(1e-9),
                "retransmits": sum_samples(&r.sender, |s| s.sample.retransmits),
                "sender": true,
                "tcpfec_repairs_sent": sum_samples(&r.sender, |s| s.sample.repairs_sent),
                "tcpfec_timeouts": sum_samples(&r.sender, |s| s.sample.timeouts),
            },
            "sum_received": {
                "start": 0.0, "end": rs, "seconds": rs, "bytes": rb,
                "bits_per_second": rb as f64 * 8.0 / rs.max(1e-9),
                "sender": false,
                "tcpfec_recovered": sum_samples(&r.receiver, |s| s.sample.recovered),
            },
            "cpu_utilization_percent": {
                "host_total": pct(local, local.cpu_user + local.cpu_system),
                "host_user": pct(local, local.cpu_user),
                "host_system": pct(local, local.cpu_system),
                "remote_total": pct(remote, remote.cpu_user + remote.cpu_system),
                "remote_user": pct(remote, remote.cpu_user),
                "remote_system": pct(remote, remote.cpu_system),
            },
            "sender_tcp_congestion": cc,
            "receiver_tcp_congestion": cc,
            "tcpfec": end_tcpfec(r, sb, rb),
        },
    })
}

/// `end.tcpfec`: bytes per CPU-second, and the delays of a delay test.
fn end_tcpfec(r: &Report, sb: u64, rb: u64) -> Value {
    let mut v = json!({
        "sender_bytes_per_cpu_second": bytes_per_cpu_second(&r.sender, sb),
        "receiver_bytes_per_cpu_second": bytes_per_cpu_second(&r.receiver, rb),
    });
    if let Some(d) = r.delays() {
        let (key, count) = match r.hello.pattern {
            Pattern::Exchange { .. } => ("round_trip_ms", "exchanges"),
            _ => ("delivery_delay_ms", "messages"),
        };
        let mut dv = delay_json(d.all.as_ref(), count);
        dv["clock"] = json!(d.clock);
        dv["streams"] = json!(d
            .streams
            .iter()
            .map(|s| delay_json(s.as_ref(), count))
            .collect::<Vec<_>>());
        v[key] = dv;
    }
    v
}

/// A delay summary as JSON: its percentiles in ms and how many delays it counts (`null`
/// percentiles if it counts none).
fn delay_json(d: Option<&DelaySummary>, count: &str) -> Value {
    let mut v = json!({
        "p50": d.map(|d| d.p50_ms),
        "p90": d.map(|d| d.p90_ms),
        "p99": d.map(|d| d.p99_ms),
        "p999": d.map(|d| d.p999_ms),
        "max": d.map(|d| d.max_ms),
    });
    v[count] = json!(d.map_or(0, |d| d.weight));
    v
}

fn interval_json(
    socket: i64,
    iv: &Interval,
    s: &IntervalStream,
    sender: bool,
    delay: Option<Option<DelaySummary>>,
) -> Value {
    let secs = iv.end - iv.start;
    let mut v = json!({
        "start": iv.start,
        "end": iv.end,
        "seconds": secs,
        "bytes": s.bytes,
        "bits_per_second": s.bytes as f64 * 8.0 / secs.max(1e-9),
        "retransmits": s.retransmits,
        "omitted": false,
        "sender": sender,
        "tcpfec_repairs_sent": s.repairs_sent,
        "tcpfec_recovered": s.recovered,
        "tcpfec_pacing_bps": s.pacing_bps,
    });
    if socket > 0 {
        v["socket"] = json!(socket);
    }
    if let Some(c) = s.cwnd_bytes {
        v["snd_cwnd"] = json!(c);
    }
    if let Some(r) = s.rtt_us {
        v["rtt"] = json!(r);
    }
    // A delay test's interval always says how many it timed, none included (a loaded
    // host can pass an interval without one exchange).
    if let Some(d) = delay {
        v["tcpfec_delay_ms"] = delay_json(d.as_ref(), "count");
    }
    v
}

fn system_congestion() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Attempts at an ephemeral port free for both protocols (`bind_ephemeral_pair`).
const EPHEMERAL_PAIR_ATTEMPTS: usize = 16;

/// The tcpfec endpoint and the kernel TCP listener on one ephemeral port (`--listen
/// HOST:0`). The kernel picks a TCP port, and UDP binds the same number; should another
/// socket hold that UDP port, the next pick is tried. Binding UDP first and TCP on its
/// number failed now and then (tests binding many sockets at once), where another
/// socket already held that number for TCP.
async fn bind_ephemeral_pair(
    listen: SocketAddr,
    cfg: EndpointConfig,
    threads: usize,
) -> Result<(Endpoint, Option<tokio::net::TcpListener>), String> {
    let mut last = String::new();
    for _ in 0..EPHEMERAL_PAIR_ATTEMPTS {
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("--listen {listen} (TCP): {e}"))?;
        let addr = tcp.local_addr().map_err(|e| e.to_string())?;
        match Endpoint::server(addr, cfg.clone(), threads).await {
            Ok(ep) => return Ok((ep, Some(tcp))),
            Err(e) => last = format!("--listen {addr} (UDP): {e}"),
        }
    }
    Err(format!(
        "no port free for both UDP and TCP in {EPHEMERAL_PAIR_ATTEMPTS} tries; last: {last}"
    ))
}

/// `tcpfec perf --server`.
fn serve(a: PerfArgs) -> Result<(), String> {
    let key = a.security.key()?;
    if !(a.max_seconds > 0.0 && a.max_seconds <= server::MAX_SECONDS) {
        return Err(format!(
            "--max-seconds: give above 0 and at most {}",
            server::MAX_SECONDS
        ));
    }
    if a.max_streams == 0 || a.max_streams > server::MAX_STREAMS {
        return Err(format!("--max-streams: give 1 to {}", server::MAX_STREAMS));
    }
    if a.max_bytes == 0 || a.max_bytes > server::MAX_BYTES {
        return Err(format!("--max-bytes: give 1 to {}", server::MAX_BYTES));
    }
    let policy = server::Policy {
        key: key.clone(),
        max_seconds: a.max_seconds,
        max_streams: a.max_streams,
        max_bytes: a.max_bytes,
    };
    let mut cfg = EndpointConfig::new(key, scheme("--scheme", &a.scheme, false)?);
    a.qlog.apply(&mut cfg)?;
    let json_out = a.json;
    let threads = a.threads.count();
    runtime_with(threads)?.block_on(async move {
        let listen = resolve("--listen", &with_port(&a.listen)).await?;
        let (ep, tcp) = if listen.port() == 0 && !a.no_tcp {
            bind_ephemeral_pair(listen, cfg, threads).await?
        } else {
            let ep = Endpoint::server(listen, cfg, threads)
                .await
                .map_err(|e| format!("--listen {listen} (UDP): {e}"))?;
            let local = ep.local_addr().map_err(|e| e.to_string())?;
            let tcp = if a.no_tcp {
                None
            } else {
                // The same port number, so clients find both at one address.
                match tokio::net::TcpListener::bind(local).await {
                    Ok(l) => Some(l),
                    Err(e) => {
                        eprintln!(
                            "warning: no kernel TCP listener at {local}: {e}; serving tcpfec only"
                        );
                        None
                    }
                }
            };
            (ep, tcp)
        };
        let local = ep.local_addr().map_err(|e| e.to_string())?;
        if json_out {
            println!(
                "{}",
                json!({"event": "listening", "addr": local.to_string(), "tcp": tcp.is_some()})
            );
        } else {
            eprintln!(
                "perf server listening on {local} (tcpfec{})",
                if tcp.is_some() { " and kernel TCP" } else { "" }
            );
        }
        let log: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |e| server_event(&e, json_out));
        server::serve(Some(Arc::new(ep)), tcp, policy, log).await;
        Ok(())
    })
}

fn server_event(e: &Event, json_out: bool) {
    match e {
        Event::Started {
            peer,
            transport,
            hello,
        } => {
            if json_out {
                println!(
                    "{}",
                    json!({"event": "started", "peer": peer.to_string(), "protocol": transport,
                    "streams": hello.streams, "reverse": hello.reverse, "seconds": hello.seconds, "bytes": hello.bytes})
                );
            } else {
                let what = match hello.pattern {
                    Pattern::Bulk => String::new(),
                    Pattern::Paced { bitrate, length } => {
                        format!(" of {length}-byte messages at {}", rate(bitrate))
                    }
                    Pattern::Exchange { length } => format!(" of {length}-byte exchanges"),
                };
                eprintln!(
                    "{peer}: {transport} test, {} stream(s){what}, {}, {}",
                    hello.streams,
                    if hello.reverse {
                        "server sends"
                    } else {
                        "client sends"
                    },
                    hello
                        .bytes
                        .map_or(format!("{} s", hello.seconds), |b| format!("{b} bytes"))
                );
            }
        }
        Event::Finished {
            peer,
            transport,
            server,
            hello,
            ..
        } => {
            let (b, s) = side_total(server);
            let role = if hello.reverse { "sent" } else { "received" };
            if json_out {
                println!(
                    "{}",
                    json!({"event": "finished", "peer": peer.to_string(), "protocol": transport,
                    role: b, "seconds": s, "bits_per_second": b as f64 * 8.0 / s.max(1e-9)})
                );
            } else {
                eprintln!(
                    "{peer}: {transport} test done: {role} {} in {s:.2} s, {}",
                    size(b as f64),
                    rate(b as f64 * 8.0 / s.max(1e-9))
                );
            }
        }
        Event::Failed { peer, error } => {
            if json_out {
                println!(
                    "{}",
                    json!({"event": "failed", "peer": peer.to_string(), "error": error})
                );
            } else {
                eprintln!("{peer}: test failed: {error}");
            }
        }
    }
}

/// `HOST` → `HOST:5201`; addresses with a port (and bracketed IPv6 with one) are kept.
fn with_port(s: &str) -> String {
    let has_port = if let Some(rest) = s.strip_prefix('[') {
        rest.contains("]:")
    } else {
        s.matches(':').count() == 1
    };
    if has_port {
        s.to_string()
    } else if s.contains(':') {
        format!("[{s}]:{DEFAULT_PORT}")
    } else {
        format!("{s}:{DEFAULT_PORT}")
    }
}

/// Parses a byte count (`10MB`, `1GiB`, `5000000`, `64K`): the simulator's sizes, at
/// least one byte.
fn parse_bytes(s: &str) -> Result<u64, String> {
    match tcpfec_channel::units::parse_size(s)? {
        0 => Err(format!("'{s}': give at least one byte")),
        n => Ok(n),
    }
}

fn size(bytes: f64) -> String {
    if bytes >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GBytes", bytes / (1024.0 * 1024.0 * 1024.0))
    } else if bytes >= 1024.0 * 1024.0 {
        format!("{:.2} MBytes", bytes / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KBytes", bytes / 1024.0)
    }
}

fn rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbits/sec", bps / 1e9)
    } else {
        format!("{:.1} Mbits/sec", bps / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_tests_interval_without_a_sample_counts_none_and_a_bulk_one_has_no_delays() {
        let iv = Interval {
            start: 1.0,
            end: 2.0,
            streams: vec![IntervalStream::default()],
            delays: None,
        };
        let s = IntervalStream::default();
        let empty = interval_json(0, &iv, &s, true, Some(None));
        assert_eq!(empty["tcpfec_delay_ms"]["count"], 0, "{empty}");
        assert!(empty["tcpfec_delay_ms"]["p99"].is_null(), "{empty}");
        let bulk = interval_json(0, &iv, &s, true, None);
        assert!(bulk.get("tcpfec_delay_ms").is_none(), "{bulk}");
    }

    #[test]
    fn byte_counts_take_si_and_iec_units() {
        assert_eq!(parse_bytes("5000000").unwrap(), 5_000_000);
        assert_eq!(parse_bytes("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_bytes("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_bytes("1.5k").unwrap(), 1500);
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("ten").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
    }

    #[test]
    fn addresses_get_the_default_port_only_when_they_lack_one() {
        assert_eq!(with_port("10.0.0.1"), "10.0.0.1:5201");
        assert_eq!(with_port("host:7000"), "host:7000");
        assert_eq!(with_port("::1"), "[::1]:5201");
        assert_eq!(with_port("[::1]:9"), "[::1]:9");
    }
}
