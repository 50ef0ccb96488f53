//! tcpfec command-line interface: demo, simulation sweeps, scheme list, benchmarks.

mod bench;
mod bench_fuzz;
mod calibrate;
mod child;
mod compare;
mod demo;
mod emu_bench;
mod emu_cli;
mod loopback_bench;
mod model;
mod net_bench;
mod net_cli;
mod output;
mod perf_cli;
mod plot;
mod reproduce;
mod runner;
mod shard;
mod sweep;
mod validate;

use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// TCP-like reliable transport with adaptive forward error correction: a deterministic
/// network simulator that reproduces the TCP-FEC literature, built on one sans-IO engine.
#[derive(Parser)]
#[command(name = "tcpfec", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate Tahoe, NewReno, SACK, CUBIC, Anker's (8,1) FEC and `auto` on the Sato ch. 4
    /// path (100 Mb/s, 200 ms, 0.05 % loss); print a table and how much of the gap to the
    /// link FEC closes, and write ./tcpfec-demo/cwnd.svg. Needs no arguments.
    Demo {
        /// Where to write the figure and CSV files.
        #[arg(long, default_value = "tcpfec-demo")]
        out: PathBuf,
    },
    /// Simulate any scenario. Every setting accepts a comma-separated list; the runs are
    /// all combinations times the seeds, run in parallel.
    Sim(Box<SimArgs>),
    /// List the congestion-control schemes that --scheme accepts.
    Schemes,
    /// Run the validation scenarios in tcpfec, ns-2 and ns-3 and write a comparison report
    /// (normally through validation/run.sh, which installs and builds the references).
    Validate(validate::Options),
    /// Reproduce a paper's experiment: runs the sweeps of experiments/<ID>.toml and writes
    /// results/<ID>/ (CSV, one SVG per paper figure, report.md with each claim checked).
    /// Built in: sato-ch3, sato-ch4, sato-ch5, anker, ferlin, teshima, botos, adaptive. A path to a
    /// TOML file works too.
    Reproduce {
        /// Experiment id or TOML file.
        experiment: String,
        /// A reduced sweep (fewer points, seeds and seconds) for a first look.
        #[arg(long)]
        quick: bool,
        /// Seeds per point (default: the experiment's).
        #[arg(long)]
        seeds: Option<u64>,
        /// Output directory [default: results/<ID>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Simulate nothing: rewrite the figures and report.md from the results.csv that
        /// an earlier run of the same experiment (same --quick and --seeds) left in the
        /// output directory; refused if its rows are not exactly that run's.
        #[arg(long)]
        report_only: bool,
        /// Run only the K-th of N shards of the run list (balanced by expected cost) and
        /// write its rows and a manifest to results/<ID>/shard-K-of-N (or --out); join
        /// the shards with `tcpfec merge`. For job arrays (Slurm, Kubernetes).
        #[arg(long, value_name = "K/N")]
        shard: Option<shard::Shard>,
        /// Without --shard: the shard comes from the job array, Slurm's
        /// SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT or a Kubernetes Indexed Job's
        /// JOB_COMPLETION_INDEX, which needs this count of shards.
        #[arg(long, value_name = "N", conflicts_with = "shard")]
        shards: Option<usize>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Refuse experiments of more runs than this.
        #[arg(long, value_name = "N", default_value_t = sweep::DEFAULT_MAX_RUNS)]
        max_runs: u64,
        /// Run even if the experiment is estimated to take more than 1e11 simulator events
        /// (about 30 core-hours) or to keep more than 10 million per-flow results.
        #[arg(long)]
        i_know: bool,
    },
    /// Join the shard directories of one `reproduce --shard K/N` run into the outputs a
    /// single run writes (results.csv, flows.csv, figures, report.md; only wall times
    /// differ). Refuses shards of different experiments or versions, and names any run
    /// missing or given twice.
    Merge {
        /// The shard directories, one per shard.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output directory [default: results/<ID>].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Build data that schemes ship with from simulator sweeps.
    Calibrate {
        #[command(subcommand)]
        which: CalibrateWhich,
    },
    /// Evaluate closed-form throughput models.
    Model {
        #[command(subcommand)]
        which: ModelWhich,
    },
    /// Make a pre-shared key file for send, recv and tunnel.
    Keygen(net_cli::KeygenArgs),
    /// Send files to a `tcpfec recv` over UDP, encrypted, with an end-to-end BLAKE3 check.
    Send(net_cli::SendArgs),
    /// Receive files sent with `tcpfec send` into a directory.
    Recv(net_cli::RecvArgs),
    /// Forward TCP connections (and UDP datagrams) over tcpfec, like kcptun.
    Tunnel {
        #[command(subcommand)]
        side: net_cli::TunnelSide,
    },
    /// A link emulator for any IP traffic (kernel TCP too): two network namespaces joined
    /// by a link with rate, delay, queue and loss, until Ctrl-C. Needs root.
    Emu(emu_cli::EmuArgs),
    /// Measure throughput like iperf3: `perf --server` on one machine, `perf HOST` on
    /// the other. Runs over tcpfec, or over kernel TCP to the same server (`--tcp`,
    /// `--compare`) to race the two on one path.
    Perf(Box<perf_cli::PerfArgs>),
    /// A UDP impairment proxy (rate, delay, queue, random or bursty loss) to try tcpfec on
    /// a bad path on one machine.
    Relay(net_cli::RelayArgs),
    /// Measure speed.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

/// What `calibrate` builds.
#[derive(Subcommand, Debug)]
enum CalibrateWhich {
    /// TCP-TFEC's redundancy table (Teshima Fig. 6): for each loss rate 0.1-20 %, the repair
    /// count per 100 packets with the highest goodput on the Teshima WLAN path. Writes the
    /// table tfec is built with, plus the sweep's CSV and figure.
    Tfec {
        /// The table to write (rebuild tcpfec afterwards to use it).
        #[arg(long, default_value = "crates/tcpfec-proto/data/tfec-redundancy.csv")]
        table: PathBuf,
        /// Directory for results.csv and fig6.svg.
        #[arg(long, default_value = "results/teshima-calibration")]
        out: PathBuf,
        /// One seed, 30 s runs.
        #[arg(long)]
        quick: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
}

#[derive(Subcommand)]
enum ModelWhich {
    /// Anker's (N,M) TCP-FEC analysis (seed 004, eqs. 10-16, 21-22): TCP, TCP-FEC and
    /// constant-window SACK throughput, in packets per RTT and Mb/s.
    Anker {
        /// Window size W (packets): the maximal window W_m.
        #[arg(long)]
        window: u32,
        /// Packet loss probability, e.g. 2% or 0.02.
        #[arg(long)]
        loss: String,
        /// Round-trip time (for Mb/s and the timeout T0 = 4 RTT).
        #[arg(long, default_value = "100ms")]
        rtt: String,
        /// Block N,M: N data packets and M repair packets.
        #[arg(long, default_value = "8,1")]
        block: String,
        /// Packet size in bytes (for Mb/s).
        #[arg(long, default_value_t = 1500)]
        packet_size: u32,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Real sockets on loopback: throughput and CPU per GB (encryption and FEC on/off), and
    /// goodput through the impairment relay.
    Net(net_bench::NetBenchArgs),
    /// Seeded adversarial channel schedules x every scheme: a client and a server engine
    /// over a channel that drops, duplicates, reorders, delays and corrupts, then turns
    /// clean. Counts wrong and missing bytes; exits non-zero if there is any.
    Fuzz {
        /// Schedules per scheme.
        #[arg(long, default_value_t = 10_000)]
        schedules: u64,
        /// First seed (seeds SEED, SEED+1, ...).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Only these schemes, comma-separated [default: one of every family `tcpfec
        /// schemes` lists].
        #[arg(long, value_delimiter = ',')]
        scheme: Vec<String>,
        /// Worker threads [default: all cores].
        #[arg(long)]
        jobs: Option<usize>,
        /// Write each failing run here as a fuzz input of the pair target.
        #[arg(long, value_name = "DIR")]
        save_failures: Option<PathBuf>,
    },
    /// Erasure-code speed: XOR, Reed-Solomon and RaptorQ encode and decode MB/s.
    Codes {
        /// Seconds per measurement.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
    },
    /// Simulator wall time, events/s, packets/s and peak memory on two reference scenarios.
    Sim {
        /// Runs per scenario (the best is reported).
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// ns-2 binary to compare with [default: `ns` on PATH, if any].
        #[arg(long)]
        ns2: Option<PathBuf>,
        /// ns-3 scenario binary to compare with [default: validation/build/ns3-scenario].
        #[arg(long)]
        ns3: Option<PathBuf>,
        /// Internal: run one scenario in this process and print JSON.
        #[arg(long, hide = true)]
        child: Option<String>,
        /// Internal: run the command after `--` and print its wall time and peak memory.
        #[arg(long, hide = true)]
        measure: bool,
        /// The command for --measure.
        #[arg(last = true, hide = true)]
        command: Vec<String>,
    },
}

#[derive(Args)]
struct SimArgs {
    /// TOML file with settings (keys are these flag names; values may be lists), at most
    /// 1 MiB. Flags given on the command line override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Scheme: tahoe, reno, newreno, sack, cubic, or a FEC scheme such as fec-fmax-10
    /// (`tcpfec schemes` lists them) [default: sack].
    #[arg(long, allow_hyphen_values = true)]
    scheme: Option<String>,
    /// path (sender-R1-R2-receiver) or dumbbell (N sender/receiver pairs) [default: path].
    #[arg(long, allow_hyphen_values = true)]
    topology: Option<String>,
    /// Number of flows; with --background at most 100000 [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    flows: Option<String>,
    /// Bottleneck rate, e.g. 100mbit; at least one packet per second [default: 100mbit].
    #[arg(long, allow_hyphen_values = true)]
    bottleneck: Option<String>,
    /// Access link rate [default: the bottleneck rate].
    #[arg(long, allow_hyphen_values = true)]
    access_rate: Option<String>,
    /// One-way bottleneck propagation delay, e.g. 200ms; at most 60s [default: 200ms].
    #[arg(long, allow_hyphen_values = true)]
    delay: Option<String>,
    /// One-way access delay; A..B spreads flows evenly over the range; at most 60s
    /// [default: 1ms].
    #[arg(long, allow_hyphen_values = true)]
    access_delay: Option<String>,
    /// Drop-tail queue limit of every link direction, packets, at least 1 [default: 50].
    #[arg(long, allow_hyphen_values = true)]
    buffer: Option<String>,
    /// Queue limit of links leaving hosts, packets, or inf [default: same as --buffer].
    #[arg(long, allow_hyphen_values = true)]
    host_buffer: Option<String>,
    /// Data packet size on the wire, 40-byte header included [default: 1500].
    #[arg(long, allow_hyphen_values = true)]
    packet_size: Option<String>,
    /// Random loss on the bottleneck, data direction: 0.05% or 0.0005 [default: 0.05%].
    #[arg(long, allow_hyphen_values = true)]
    loss: Option<String>,
    /// Gilbert-Elliott loss instead: p,r,h,k (P good->bad, P bad->good, P deliver in bad,
    /// P deliver in good); separate several models with ';'.
    #[arg(long, allow_hyphen_values = true)]
    ge: Option<String>,
    /// Random loss on the bottleneck, ACK direction [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    loss_reverse: Option<String>,
    /// Gilbert-Elliott loss on the bottleneck, ACK direction: p,r,h,k.
    #[arg(long, allow_hyphen_values = true)]
    ge_reverse: Option<String>,
    /// Delayed ACKs at the receiver: on or off [default: off].
    #[arg(long, allow_hyphen_values = true)]
    delayed_ack: Option<String>,
    /// Initial congestion window, segments [default: 2].
    #[arg(long, allow_hyphen_values = true)]
    initial_window: Option<String>,
    /// Minimum retransmission timeout, above 0 and at most 60s [default: 200ms].
    #[arg(long, allow_hyphen_values = true)]
    min_rto: Option<String>,
    /// Simulated time, at most one day (86400s) [default: 220s].
    #[arg(long, allow_hyphen_values = true)]
    duration: Option<String>,
    /// Measurement window A..B, e.g. 20s..220s [default: the whole run].
    #[arg(long, allow_hyphen_values = true)]
    window: Option<String>,
    /// Finite transfer of this many bytes per flow (e.g. 1080KiB) instead of bulk.
    #[arg(long, allow_hyphen_values = true)]
    transfer: Option<String>,
    /// Start time of every flow, or A..B for uniformly random starts; before the end of
    /// the run [default: 0s].
    #[arg(long, allow_hyphen_values = true)]
    start: Option<String>,
    /// Receiver window in packets (at least 1), the most a flow can have in flight
    /// [default: unlimited].
    #[arg(long, allow_hyphen_values = true)]
    max_window: Option<String>,
    /// Loss on the bottleneck switching between two rates: A/B@T (e.g. 0.1%/10%@10s starts
    /// at 0.1 % and alternates every 10 s); replaces --loss. Several with ';'.
    #[arg(long, allow_hyphen_values = true)]
    loss_schedule: Option<String>,
    /// A streaming application offering this rate (e.g. 10mbit) instead of bulk data; it is
    /// also the target rate of schemes that have one (afec, tfec).
    #[arg(long, allow_hyphen_values = true)]
    app_rate: Option<String>,
    /// Target rate of the schemes that have one (afec, tfec) with bulk data, e.g. 10mbit
    /// [default: the --app-rate, if given].
    #[arg(long, allow_hyphen_values = true)]
    target_rate: Option<String>,
    /// Background flows with bulk data sharing the bottleneck, each between its own hosts;
    /// they load the queue but are not in the metrics except as background_goodput
    /// [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    background: Option<String>,
    /// Direction of the background flows: uplink (right to left, against the measured
    /// flows, Teshima's setting) or downlink [default: uplink].
    #[arg(long, allow_hyphen_values = true)]
    background_direction: Option<String>,
    /// Scheme of the background flows, e.g. cubic to measure a scheme against a
    /// competitor with --background 1 --background-direction downlink [default: reno].
    #[arg(long, allow_hyphen_values = true)]
    background_scheme: Option<String>,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of seeds per point (seed, seed+1, ...).
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Refuse sweeps of more runs than this.
    #[arg(long, value_name = "N", default_value_t = sweep::DEFAULT_MAX_RUNS)]
    max_runs: u64,
    /// Run a sweep even if it is estimated to take more than 1e11 simulator events (about
    /// 30 core-hours) or to keep more than 10 million per-flow results (about 2 GB).
    #[arg(long)]
    i_know: bool,
    /// Print one JSON object per run instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write results.csv and flows.csv into this directory.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
    /// Write each run's time series (sampled every 100 ms: cwnd, FEC group size, delivery
    /// rate) as DIR/cwnd-RUN.csv, and DIR/cwnd.svg when there are at most 6 runs.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

impl SimArgs {
    fn axes(&self) -> Result<sweep::Axes, String> {
        let mut axes = match &self.config {
            Some(path) => {
                let text = sweep::read_settings_file(path)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?;
                sweep::Axes::from_toml(&text)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?
            }
            None => sweep::Axes::default(),
        };
        let mut flags = sweep::Axes::default();
        let given = [
            ("scheme", &self.scheme),
            ("topology", &self.topology),
            ("flows", &self.flows),
            ("bottleneck", &self.bottleneck),
            ("access-rate", &self.access_rate),
            ("delay", &self.delay),
            ("access-delay", &self.access_delay),
            ("buffer", &self.buffer),
            ("host-buffer", &self.host_buffer),
            ("packet-size", &self.packet_size),
            ("loss", &self.loss),
            ("ge", &self.ge),
            ("loss-reverse", &self.loss_reverse),
            ("ge-reverse", &self.ge_reverse),
            ("delayed-ack", &self.delayed_ack),
            ("initial-window", &self.initial_window),
            ("min-rto", &self.min_rto),
            ("duration", &self.duration),
            ("window", &self.window),
            ("transfer", &self.transfer),
            ("start", &self.start),
            ("max-window", &self.max_window),
            ("loss-schedule", &self.loss_schedule),
            ("app-rate", &self.app_rate),
            ("target-rate", &self.target_rate),
            ("background", &self.background),
            ("background-direction", &self.background_direction),
            ("background-scheme", &self.background_scheme),
        ];
        for (axis, value) in given {
            if let Some(v) = value {
                flags.set(axis, v)?;
            }
        }
        // A loss model on the command line replaces either kind from the file.
        if flags.has("ge") || flags.has("loss") {
            axes.clear("loss");
            axes.clear("ge");
        }
        if flags.has("ge-reverse") || flags.has("loss-reverse") {
            axes.clear("loss-reverse");
            axes.clear("ge-reverse");
        }
        axes.merge(flags);
        Ok(axes)
    }
}

fn sim(args: SimArgs) -> Result<(), String> {
    let axes = args.axes()?;
    let limits = sweep::Limits {
        max_runs: args.max_runs,
        i_know: args.i_know,
    };
    let mut runs = axes.expand(args.seed, args.seeds, &limits)?;
    limits.check(&runs)?;
    if args.trace.is_some() {
        for r in &mut runs {
            r.scenario.cwnd_sample = Some(core::time::Duration::from_millis(100));
        }
    }
    let progress = !args.quiet && std::io::stderr().is_terminal();
    let outcomes = runner::run_all(runs, progress);
    if args.json {
        for o in &outcomes {
            println!("{}", output::run_json(o));
        }
    } else {
        print!("{}", output::table(&outcomes, &axes.swept()));
    }
    if let Some(dir) = &args.trace {
        output::write_traces(dir, &outcomes)
            .map_err(|e| format!("--trace {}: {e}", dir.display()))?;
    }
    if let Some(dir) = &args.csv {
        output::write_csv(dir, &outcomes).map_err(|e| format!("--csv {}: {e}", dir.display()))?;
        if !args.json {
            println!("wrote {}/results.csv and flows.csv", dir.display());
        }
    }
    Ok(())
}

fn schemes() {
    for (name, what, _, _) in tcpfec_proto::BASELINE_SCHEMES {
        println!("{name:<18} {what}");
    }
    for (name, what) in tcpfec_proto::FEC_SCHEMES {
        println!("{name:<18} {what}");
    }
}

/// The shard to run: `--shard` as given, else the job array's task (see
/// [`shard::from_job_array`]), said on stderr so a task's log shows which it ran.
fn job_array_shard(
    given: Option<shard::Shard>,
    shards: Option<usize>,
) -> Result<Option<shard::Shard>, String> {
    if given.is_some() {
        return Ok(given);
    }
    let found = shard::from_job_array(shards, |k| std::env::var(k).ok())?;
    Ok(found.map(|(sh, from)| {
        eprintln!("shard {}/{} from {from}", sh.index, sh.count);
        sh
    }))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { out } => demo::run(&out),
        Command::Sim(args) => sim(*args),
        Command::Schemes => {
            schemes();
            Ok(())
        }
        Command::Reproduce {
            experiment,
            quick,
            seeds,
            out,
            report_only,
            shard,
            shards,
            quiet,
            max_runs,
            i_know,
        } => match job_array_shard(shard, shards) {
            Err(e) => Err(e),
            Ok(shard) => reproduce::run(&reproduce::Options {
                experiment,
                quick,
                seeds,
                out,
                report_only,
                shard,
                progress: !quiet && std::io::stderr().is_terminal(),
                limits: sweep::Limits { max_runs, i_know },
            }),
        },
        Command::Validate(opts) => validate::run(&opts),
        Command::Merge { dirs, out } => reproduce::merge(&dirs, out),
        Command::Calibrate {
            which:
                CalibrateWhich::Tfec {
                    table,
                    out,
                    quick,
                    quiet,
                },
        } => calibrate::tfec(&calibrate::Options {
            table,
            out,
            quick,
            progress: !quiet && std::io::stderr().is_terminal(),
        }),
        Command::Model {
            which:
                ModelWhich::Anker {
                    window,
                    loss,
                    rtt,
                    block,
                    packet_size,
                },
        } => model::anker(window, &loss, &rtt, &block, packet_size),
        Command::Keygen(a) => net_cli::keygen(a),
        Command::Send(a) => net_cli::send(a),
        Command::Recv(a) => net_cli::recv(a),
        Command::Tunnel { side } => net_cli::tunnel(side),
        Command::Relay(a) => net_cli::relay(a),
        Command::Perf(a) => perf_cli::perf(*a),
        Command::Emu(a) => emu_cli::emu(a),
        Command::Bench {
            what: BenchWhat::Net(a),
        } => net_bench::run(a),
        Command::Bench {
            what: BenchWhat::Codes { seconds },
        } => bench::codes(seconds),
        Command::Bench {
            what:
                BenchWhat::Fuzz {
                    schedules,
                    seed,
                    scheme,
                    jobs,
                    save_failures,
                },
        } => bench_fuzz::run(&bench_fuzz::Options {
            schedules,
            seed,
            schemes: scheme,
            jobs,
            save_failures,
        }),
        Command::Bench {
            what:
                BenchWhat::Sim {
                    repeat,
                    ns2,
                    ns3,
                    child,
                    measure,
                    command,
                },
        } => match (child, measure) {
            (Some(id), _) => bench::child(&id),
            (None, true) => bench::measure(&command),
            (None, false) => bench::run(repeat, &bench::detect(ns2, ns3)),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
