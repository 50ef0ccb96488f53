//! tcpfec command-line interface: demo, simulation sweeps, scheme list, benchmarks.

// The doc comments of the argument structs are clap's `--help` texts, written for a
// terminal: `results/<ID>` and `[default: …]` are text there, not HTML or links.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod auth_cli;
mod child;
mod config_file;
mod emu_bench;
mod emu_cli;
mod lab_cli;
mod loopback_bench;
mod manpages;
mod net_bench;
mod net_cli;
mod perf_cli;
mod soak_bench;
mod tables_cli;
mod validate_kernel;

use clap::{Parser, Subcommand};
use lab_cli::{ShardArgs, SimArgs, ValidateArgs};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tcpfec_lab::{bench, bench_fuzz, calibrate, demo, model, reproduce, sweep};

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
    /// Compare the simulator with references and write a report: ns-2 and ns-3 (normally
    /// through validation/run.sh, which installs and builds them), or, with --set kernel
    /// or wire, measurements of Linux's TCP and of the engine on emulated links stored in
    /// validation/kernel/ (--measure takes them again, as root).
    Validate(ValidateArgs),
    /// Reproduce a paper's experiment: runs the sweeps of experiments/<ID>.toml and writes
    /// results/<ID>/ (CSV, one SVG per paper figure, report.md with each claim checked).
    /// Built in: sato-ch3, sato-ch4, sato-ch5, anker, ferlin, teshima, botos, adaptive,
    /// latency, coexistence. A path to a TOML file works too.
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
        #[command(flatten)]
        shard: ShardArgs,
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
    /// Join the shard directories of one `reproduce --shard K/N` or `sim --shard K/N` run
    /// into the outputs a single run writes (results.csv, flows.csv, and for reproduce the
    /// figures and report.md; only wall times differ). Refuses shards of different
    /// experiments, sweeps or versions, and names any run missing or given twice.
    Merge {
        /// The shard directories, one per shard.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output directory [default: results/<ID>, or for a sim sweep the directory
        /// holding the shards].
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
    /// Make a pre-shared key file, or a key pair (--pair), for send, recv, tunnel and perf.
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
    /// Read back a qlog trace (`--qlog`): `tcpfec trace show FILE.sqlog`.
    Trace {
        #[command(subcommand)]
        what: TraceWhat,
    },
    /// Print a shell completion script: `tcpfec completions bash > /etc/bash_completion.d/tcpfec`
    /// (zsh: into a directory of $fpath as _tcpfec; fish: ~/.config/fish/completions/tcpfec.fish).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write manual pages (tcpfec.1 and one per subcommand, tcpfec-recv.1, …) into a
    /// directory: `tcpfec man --out /usr/local/share/man/man1`.
    Man {
        /// Where to write them (created if missing).
        #[arg(long, value_name = "DIR", default_value = "man")]
        out: std::path::PathBuf,
    },
    /// Rewrite the result tables of README.md and docs/ from the committed data in results/
    /// (the emulator races, the matrices), or with --check only compare them and fail on a
    /// difference. Run it from the repository's root after measuring anew.
    Tables(tables_cli::TablesArgs),
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

/// What `trace` does with a trace.
#[derive(Subcommand, Debug)]
enum TraceWhat {
    /// Print a summary (totals; rate, RTT, losses, repairs and rebuilt segments per
    /// interval) and write a time-sequence plot (segments sent, acknowledged, repaired,
    /// lost, rebuilt over time) as SVG.
    Show {
        /// The trace, a .sqlog file.
        file: std::path::PathBuf,
        /// Seconds per line of the summary.
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
        /// Where to write the plot [default: FILE with .svg].
        #[arg(long, value_name = "FILE")]
        svg: Option<std::path::PathBuf>,
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
    /// Long run: a file transfer and a tunnel through the relay for --minutes, through
    /// loss phases, Gilbert-Elliott bursts and relay restarts (each moves the connections
    /// to a new address); every byte checked, memory and descriptors sampled; then many
    /// idle tunnel connections on one server. Exits non-zero if a byte is wrong, a stall
    /// outlasts its outage by more than three RTO caps, or memory or descriptors keep
    /// growing.
    Soak(soak_bench::SoakArgs),
    /// Erasure-code speed: XOR, Reed-Solomon and RaptorQ encode and decode MB/s.
    Codes {
        /// Seconds per measurement.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
    },
    /// Simulator wall time, events/s, packets/s, cost per packet and peak memory on the
    /// reference scenarios (the Sato path with sack, bbr and auto; a 16-flow dumbbell), next
    /// to ns-2 and ns-3 where installed.
    Sim {
        /// Runs per scenario (the best is reported). The engine's scenarios run in this
        /// many rounds, each once a round; a path scheme's cost beside sack's is the median
        /// of the rounds' ratios.
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

fn schemes() {
    for (name, what, _, _) in tcpfec_proto::BASELINE_SCHEMES {
        println!("{name:<18} {what}");
    }
    for (name, what) in tcpfec_proto::FEC_SCHEMES {
        println!("{name:<18} {what}");
    }
}

/// `tcpfec trace show`.
fn trace_show(
    file: &std::path::Path,
    interval: f64,
    svg: Option<std::path::PathBuf>,
) -> Result<(), String> {
    use tcpfec_lab::trace_view;
    if !(interval > 0.0 && interval.is_finite()) {
        return Err("--interval: give seconds above 0".into());
    }
    let s = trace_view::read(file, interval)?;
    print!("{}", trace_view::text(&s, interval));
    let svg = svg.unwrap_or_else(|| file.with_extension("svg"));
    trace_view::svg(&s, &svg)?;
    eprintln!("wrote {}", svg.display());
    Ok(())
}

fn main() -> ExitCode {
    use clap::CommandFactory;
    let argv = match config_file::expand(std::env::args_os().collect(), &Cli::command()) {
        Ok(argv) => argv,
        Err(msg) => {
            eprintln!("error: {msg}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(argv);
    let result = match cli.command {
        Command::Demo { out } => demo::run(&out),
        Command::Sim(args) => lab_cli::sim(*args),
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
            quiet,
            max_runs,
            i_know,
        } => match shard.resolve() {
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
        Command::Validate(args) => match args.validation() {
            lab_cli::Validation::Simulators(o) => tcpfec_lab::validate::run(&o),
            lab_cli::Validation::Measured(o) => validate_kernel::run(&o),
        },
        Command::Merge { dirs, out } => tcpfec_lab::merge::merge(&dirs, out),
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
        Command::Send(a) => {
            let json = a.json();
            net_cli::json_error(json, net_cli::send(a))
        }
        Command::Recv(a) => {
            let json = a.json();
            net_cli::json_error(json, net_cli::recv(a))
        }
        Command::Tunnel { side } => {
            let json = side.json();
            net_cli::json_error(json, net_cli::tunnel(side))
        }
        Command::Relay(a) => net_cli::relay(a),
        Command::Perf(a) => perf_cli::perf(*a),
        Command::Emu(a) => emu_cli::emu(a),
        Command::Trace {
            what:
                TraceWhat::Show {
                    file,
                    interval,
                    svg,
                },
        } => trace_show(&file, interval, svg),
        Command::Completions { shell } => {
            // Into memory first: a closed pipe (`| head`) is then an ordinary write error.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "tcpfec", &mut script);
            use std::io::Write;
            match std::io::stdout().write_all(&script) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
                _ => Ok(()),
            }
        }
        Command::Man { out } => manpages::write_all(&Cli::command(), &out),
        Command::Tables(a) => tables_cli::run(&a),
        Command::Bench {
            what: BenchWhat::Net(a),
        } => net_bench::run(a),
        Command::Bench {
            what: BenchWhat::Codes { seconds },
        } => bench::codes(seconds),
        Command::Bench {
            what: BenchWhat::Soak(a),
        } => soak_bench::run(a),
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
    // The network commands' qlog traces are written by a thread: let it finish.
    tcpfec_qlog::flush_all(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
