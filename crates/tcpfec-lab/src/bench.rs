//! `tcpfec bench sim`: simulator speed on the reference scenarios, each in its own process
//! so that its peak memory is measured alone; when ns-2 and ns-3 are installed (see
//! `validation/run.sh`), the same scenarios run in them too and the ratios are printed.

use core::time::Duration;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant as WallClock;
use tcpfec_proto::Scheme;
use tcpfec_sim::{LossSpec, Scenario, Start, Topology};

/// A reference scenario: how tcpfec, ns-2 and ns-3 run it.
pub struct BenchScenario {
    /// Short name.
    pub id: &'static str,
    /// What it is.
    pub what: &'static str,
    /// The tcpfec scenario.
    pub scenario: Scenario,
    /// Arguments after `ns` (the .tcl file name is relative to the tcl directory); empty
    /// when ns-2 has no counterpart (BBR).
    pub ns2: Vec<&'static str>,
    /// Arguments of the ns-3 scenario program.
    pub ns3: Vec<&'static str>,
    /// Payload bytes per segment (to turn goodput into delivered packets).
    pub payload: f64,
}

/// The reference scenarios.
pub fn scenarios() -> Vec<BenchScenario> {
    let path = Scenario {
        delay: Duration::from_millis(10),
        window: (Duration::ZERO, Duration::from_secs(220)),
        ..Scenario::default()
    };
    let path_bbr = Scenario {
        scheme: Scheme::parse("bbr").expect("built-in"),
        ..path.clone()
    };
    let path_auto = Scenario {
        scheme: Scheme::parse("auto").expect("built-in"),
        ..path.clone()
    };
    let dumbbell = Scenario {
        topology: Topology::Dumbbell,
        flows: 16,
        bottleneck_bps: 50_000_000,
        access_bps: 100_000_000,
        delay: Duration::from_millis(100),
        access_delay: (Duration::from_millis(1), Duration::from_millis(5)),
        buffer: 300,
        packet_size: 1040,
        loss: LossSpec::None,
        scheme: Scheme::parse("newreno").expect("built-in"),
        duration: Duration::from_secs(60),
        window: (Duration::ZERO, Duration::from_secs(60)),
        start: Start::Uniform {
            from: Duration::ZERO,
            to: Duration::from_secs(1),
        },
        ..Scenario::default()
    };
    vec![
        BenchScenario {
            id: "sato-ch4-path",
            what: "path 100 Mb/s, D 10 ms, p 0.05 %, SACK, 220 s",
            scenario: path,
            ns2: vec![
                "path.tcl", "10", "0.0005", "1", "0", "50", "220", "0", "Sack1",
            ],
            ns3: vec![
                "--delayMs=10",
                "--loss=0.0005",
                "--variant=newreno-sack",
                "--wstart=0",
            ],
            payload: 1460.0,
        },
        BenchScenario {
            id: "path-bbr",
            what: "the same path with bbr (paced: one event per release)",
            scenario: path_bbr,
            ns2: vec![],
            ns3: vec![
                "--delayMs=10",
                "--loss=0.0005",
                "--variant=bbr",
                "--wstart=0",
            ],
            payload: 1460.0,
        },
        BenchScenario {
            id: "path-auto",
            what: "the same path with auto (bbr paced, Reed-Solomon repairs, loss-run reports)",
            scenario: path_auto,
            ns2: vec![],
            ns3: vec![],
            payload: 1460.0,
        },
        BenchScenario {
            id: "dumbbell-16",
            what: "16 NewReno flows, 50 Mb/s, D 100 ms, buffer 300, 1000 B segments, 60 s",
            scenario: dumbbell,
            ns2: vec![
                "dumbbell.tcl",
                "16",
                "100",
                "1",
                "300",
                "50",
                "100",
                "1",
                "5",
                "60",
                "0",
            ],
            ns3: vec![
                "--topology=dumbbell",
                "--flows=16",
                "--delayMs=100",
                "--loss=0",
                "--buffer=300",
                "--segment=1000",
                "--bottleneck=50Mbps",
                "--accessMinMs=1",
                "--accessMaxMs=5",
                "--duration=60",
                "--wstart=0",
                "--startSpread=1",
                "--variant=newreno",
            ],
            payload: 1000.0,
        },
    ]
}

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Runs one reference scenario in this process and prints one JSON line.
pub fn child(id: &str) -> Result<(), String> {
    let b = scenarios()
        .into_iter()
        .find(|s| s.id == id)
        .ok_or_else(|| format!("unknown bench scenario '{id}'"))?;
    let t = WallClock::now();
    let r = tcpfec_sim::run(&b.scenario);
    let wall = t.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"id": id, "wall_s": wall, "events": r.events, "data_packets": r.data_packets,
               "packets_total": r.packets_total,
               "goodput_mbps": r.goodput_mbps, "peak_rss_mb": peak_rss_mb()})
    );
    Ok(())
}

/// Runs `cmd` to completion and prints its wall time and peak memory as JSON: the
/// measurement wrapper for the reference simulators (one child per wrapper, so the
/// kernel's maximum resident size of children is that one process's).
pub fn measure(cmd: &[String]) -> Result<(), String> {
    let (prog, args) = cmd.split_first().ok_or("measure: no command")?;
    let t = WallClock::now();
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{prog} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let maxrss_kb = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss as f64
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let goodput = text
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("goodput_mbps="))
        .and_then(|v| v.parse::<f64>().ok());
    println!(
        "{}",
        json!({"wall_s": wall, "peak_rss_mb": maxrss_kb / 1024.0, "goodput_mbps": goodput})
    );
    Ok(())
}

/// Runs `cmd` to completion; its stdout, or an error naming `what` with its stderr.
pub fn stdout_of(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

fn run_json(exe: &Path, args: &[String]) -> Result<serde_json::Value, String> {
    let out = stdout_of(Command::new(exe).args(args), "bench child")?;
    serde_json::from_slice(&out).map_err(|e| format!("bench child printed no result: {e}"))
}

fn best_of(
    repeat: u32,
    mut once: impl FnMut() -> Result<serde_json::Value, String>,
) -> Result<serde_json::Value, String> {
    let mut best: Option<serde_json::Value> = None;
    for _ in 0..repeat.max(1) {
        let v = once()?;
        if best
            .as_ref()
            .is_none_or(|b| v["wall_s"].as_f64() < b["wall_s"].as_f64())
        {
            best = Some(v);
        }
    }
    Ok(best.expect("at least one run"))
}

/// Where to find the reference simulators.
pub struct References {
    /// ns-2's `ns` binary.
    pub ns2: Option<PathBuf>,
    /// The compiled ns-3 validation scenario.
    pub ns3: Option<PathBuf>,
    /// Directory with the ns-2 scripts.
    pub tcl_dir: PathBuf,
}

/// Runs every reference scenario in child processes and prints a table.
pub fn run(repeat: u32, refs: &References) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    println!(
        "simulator speed, single-threaded, best of {repeat} run(s) per scenario and simulator"
    );
    // The engine's scenarios run in rounds, each scenario once a round: a machine whose
    // speed drifts slows them alike, and a path scheme's cost beside sack's is the median
    // of the rounds' ratios (best-of-N per scenario, taken minutes apart, moved the
    // `auto` ratio between 2.10 and 2.27 from one invocation to the next).
    let list = scenarios();
    let mut rounds: Vec<Vec<serde_json::Value>> = vec![Vec::new(); list.len()];
    for _ in 0..repeat.max(1) {
        for (b, runs) in list.iter().zip(rounds.iter_mut()) {
            runs.push(run_json(
                &exe,
                &["bench".into(), "sim".into(), "--child".into(), b.id.into()],
            )?);
        }
    }
    let ns_per_packet = |v: &serde_json::Value| {
        v["wall_s"].as_f64().unwrap_or(f64::NAN) * 1e9
            / v["packets_total"].as_f64().unwrap_or(f64::NAN)
    };
    let sack_runs = list
        .iter()
        .position(|b| b.id == "sato-ch4-path")
        .map(|i| &rounds[i]);
    println!(
        "{:<15} {:<7} {:>9} {:>13} {:>16} {:>9} {:>9} {:>9} {:>9}",
        "scenario",
        "sim",
        "wall s",
        "events/s",
        "delivered pkt/s",
        "ns/pkt",
        "peak MB",
        "goodput",
        "speed-up"
    );
    for (b, runs) in list.iter().zip(&rounds) {
        let t = runs
            .iter()
            .min_by(|x, y| {
                x["wall_s"]
                    .as_f64()
                    .partial_cmp(&y["wall_s"].as_f64())
                    .expect("wall times")
            })
            .expect("at least one round");
        let duration = b.scenario.duration.as_secs_f64();
        let delivered = |v: &serde_json::Value| {
            v["goodput_mbps"].as_f64().unwrap_or(f64::NAN) * 1e6 * duration
                / 8.0
                / b.payload
                / v["wall_s"].as_f64().unwrap_or(f64::NAN)
        };
        let t_wall = t["wall_s"].as_f64().unwrap_or(f64::NAN);
        let events = t["events"].as_f64().unwrap_or(f64::NAN);
        let relative = match sack_runs {
            Some(sack) if b.id.starts_with("path-") => {
                let mut ratios: Vec<f64> = runs
                    .iter()
                    .zip(sack)
                    .map(|(x, s)| ns_per_packet(x) / ns_per_packet(s))
                    .collect();
                ratios.sort_by(f64::total_cmp);
                format!(
                    " ({:.2}x sack's per packet, median of {} rounds, {:.2}-{:.2})",
                    ratios[ratios.len() / 2],
                    ratios.len(),
                    ratios[0],
                    ratios[ratios.len() - 1]
                )
            }
            _ => String::new(),
        };
        println!(
            "{:<15} {:<7} {:>9.3} {:>13.0} {:>16.0} {:>9.0} {:>9.1} {:>9.2} {:>9}   {}{relative}",
            b.id,
            "tcpfec",
            t_wall,
            events / t_wall,
            delivered(t),
            ns_per_packet(t),
            t["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            t["goodput_mbps"].as_f64().unwrap_or(f64::NAN),
            "",
            b.what
        );
        let mut others: Vec<(&str, Vec<String>)> = Vec::new();
        if let (Some(ns), false) = (&refs.ns2, b.ns2.is_empty()) {
            let mut args = vec![
                ns.display().to_string(),
                refs.tcl_dir.join(b.ns2[0]).display().to_string(),
            ];
            args.extend(b.ns2[1..].iter().map(|s| s.to_string()));
            others.push(("ns-2", args));
        }
        if let Some(ns3) = &refs.ns3 {
            let mut args = vec![ns3.display().to_string()];
            args.extend(b.ns3.iter().map(|s| s.to_string()));
            others.push(("ns-3", args));
        }
        for (name, args) in others {
            let mut full = vec![
                "bench".to_string(),
                "sim".into(),
                "--measure".into(),
                "--".into(),
            ];
            full.extend(args);
            let v = best_of(repeat, || run_json(&exe, &full))?;
            let wall = v["wall_s"].as_f64().unwrap_or(f64::NAN);
            println!(
                "{:<15} {:<7} {:>9.3} {:>13} {:>16.0} {:>9} {:>9.1} {:>9.2} {:>8.1}x",
                b.id,
                name,
                wall,
                "-",
                delivered(&v),
                "-",
                v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
                v["goodput_mbps"].as_f64().unwrap_or(f64::NAN),
                wall / t_wall
            );
        }
    }
    println!(
        "\nspeed-up = reference wall time / tcpfec wall time on the same scenario; ns/pkt = \
         tcpfec's wall time per packet it simulated (data, repairs and ACKs)."
    );
    let missing: Vec<&str> = [("ns-2", refs.ns2.is_none()), ("ns-3", refs.ns3.is_none())]
        .into_iter()
        .filter_map(|(name, gone)| gone.then_some(name))
        .collect();
    if !missing.is_empty() {
        println!(
            "({} not found: run validation/run.sh --quick once to install and build them)",
            missing.join(" and ")
        );
    }
    Ok(())
}

/// Finds `ns` on PATH and the ns-3 scenario binary in its build directory.
pub fn detect(ns2: Option<PathBuf>, ns3: Option<PathBuf>) -> References {
    let on_path = |name: &str| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        })
    };
    let ns3_default = PathBuf::from("validation/build/ns3-scenario");
    References {
        ns2: ns2.or_else(|| on_path("ns")),
        ns3: ns3.or_else(|| ns3_default.is_file().then_some(ns3_default)),
        tcl_dir: PathBuf::from("validation/ns2"),
    }
}

/// `tcpfec bench codes`: encode and decode speed of the erasure codes on 1460-byte packets,
/// a new loss pattern on every decode. MB/s counts the source payload bytes protected.
pub fn codes(seconds: f64) -> Result<(), String> {
    use bytes::Bytes;
    use tcpfec_proto::fec::rs::RsCache;
    use tcpfec_proto::fec::xor::XorAccumulator;
    const PKT: usize = 1460;
    let payloads = |k: usize| -> Vec<Bytes> {
        (0..k)
            .map(|i| {
                Bytes::from(
                    (0..PKT)
                        .map(|j| (i * 31 + j * 7) as u8)
                        .collect::<Vec<u8>>(),
                )
            })
            .collect()
    };
    // Runs `f` repeatedly for about `seconds`; returns calls per second.
    let rate = |f: &mut dyn FnMut(u64)| {
        let start = WallClock::now();
        let mut n = 0u64;
        while start.elapsed().as_secs_f64() < seconds {
            for _ in 0..16 {
                f(n);
                n += 1;
            }
        }
        n as f64 / start.elapsed().as_secs_f64()
    };
    println!("erasure codes on {PKT}-byte packets, single core; MB/s of source data protected");
    println!("{:<22} {:>14} {:>14}", "code", "encode MB/s", "decode MB/s");
    for k in [4usize, 16, 64] {
        let p = payloads(k);
        let enc = rate(&mut |_| {
            let mut acc = XorAccumulator::default();
            for x in &p {
                acc.add(x);
            }
            std::hint::black_box(acc.len_xor());
        });
        let mut full = XorAccumulator::default();
        for x in &p {
            full.add(x);
        }
        let dec = rate(&mut |n| {
            let lost = (n as usize * 7) % k;
            let mut acc = XorAccumulator::default();
            for (i, x) in p.iter().enumerate() {
                if i != lost {
                    acc.add(x);
                }
            }
            std::hint::black_box(acc.recover(full.bytes(), full.len_xor()));
        });
        let mb = (k * PKT) as f64 / 1e6;
        println!(
            "{:<22} {:>14.0} {:>14.0}",
            format!("XOR k={k}"),
            enc * mb,
            dec * mb
        );
    }
    let mut cache = RsCache::default();
    for (k, m) in [(10usize, 3usize), (20, 3), (100, 10)] {
        let p = payloads(k);
        let enc = rate(&mut |_| {
            std::hint::black_box(cache.encode(&p, m));
        });
        let rep: Vec<Option<Bytes>> = cache
            .encode(&p, m)
            .ok_or("encode failed")?
            .into_iter()
            .map(|r| Some(Bytes::from(r)))
            .collect();
        let dec = rate(&mut |n| {
            // m losses at positions that change with every call.
            let data: Vec<Option<Bytes>> = (0..k)
                .map(|i| ((i + n as usize) % k >= m).then(|| p[i].clone()))
                .collect();
            std::hint::black_box(cache.decode(&data, &rep));
        });
        let mb = (k * PKT) as f64 / 1e6;
        println!(
            "{:<22} {:>14.0} {:>14.0}",
            format!("Reed-Solomon ({k},{m})"),
            enc * mb,
            dec * mb
        );
    }
    fountain(seconds);
    Ok(())
}

/// RaptorQ, the FECTCP fountain code: encode = preparing the block and producing its
/// source symbols plus 5 % repair symbols; decode = rebuilding it from a fresh set of
/// symbols with 5 % of them lost (at positions that change every call).
fn fountain(seconds: f64) {
    use tcpfec_proto::fec::fountain::{parameters, FountainDecoder, FountainEncoder};
    const PAYLOAD: usize = 1456;
    for len in [64usize << 10, 1 << 20, 16 << 20] {
        let data: Vec<u8> = (0..len).map(|i| (i * 131 + i / 3) as u8).collect();
        let oti = parameters(len as u64, PAYLOAD);
        let mut enc_calls = 0u32;
        let start = WallClock::now();
        let mut last = None;
        while enc_calls == 0 || start.elapsed().as_secs_f64() < seconds {
            let enc = FountainEncoder::new(data.clone(), oti);
            let k = enc.source_symbol_count();
            for n in 0..k + k / 20 + 1 {
                std::hint::black_box(enc.symbol(n));
            }
            last = Some(enc);
            enc_calls += 1;
        }
        let enc_rate = enc_calls as f64 * len as f64 / start.elapsed().as_secs_f64() / 1e6;
        let enc = last.expect("encoded once");
        let k = enc.source_symbol_count();
        let symbols: Vec<Vec<u8>> = (0..k + k / 10 + 8).map(|n| enc.symbol(n)).collect();
        let mut dec_calls = 0u64;
        let mut dec_time = 0.0;
        while dec_calls == 0 || dec_time < seconds {
            let mut dec = FountainDecoder::new(&enc.oti(), PAYLOAD).expect("own parameters");
            let t = WallClock::now();
            let mut done = false;
            for (n, s) in symbols.iter().enumerate() {
                // 5 % lost, scattered (a hash of the symbol and the call), so that every
                // source block loses about its share whatever the interleaving.
                let h = (n as u64 ^ (dec_calls << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                if (h >> 40).is_multiple_of(20) {
                    continue;
                }
                if dec.add(s).is_some() {
                    done = true;
                    break;
                }
            }
            dec_time += t.elapsed().as_secs_f64();
            assert!(done, "RaptorQ failed to decode in the benchmark");
            dec_calls += 1;
        }
        let dec_rate = dec_calls as f64 * len as f64 / dec_time / 1e6;
        println!(
            "{:<22} {:>14.0} {:>14.0}",
            format!("RaptorQ {} KiB", len >> 10),
            enc_rate,
            dec_rate
        );
    }
}
