//! The command-line flags of the simulator's commands (`sim`, `validate`) and how they
//! become the experiment layer's options.

use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use tcpfec_lab::shard::Shard;
use tcpfec_lab::sweep::{self, Axes, Limits};
use tcpfec_lab::validate;

/// The flags of `tcpfec sim`.
#[derive(Args)]
pub struct SimArgs {
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
    /// Random delay, uniform from 0 to this, added to every packet a host sends (order
    /// kept), e.g. 240us: breaks the phase locking of a deterministic drop-tail queue,
    /// where one flow's ACK-clocked packets take every slot that frees and another's
    /// always find the queue full (ns-2's overhead_) [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    host_jitter: Option<String>,
    /// How much faster the receiving hosts' clocks run than the senders', parts per
    /// million, e.g. 50ppm or -20ppm: real oscillators differ by tens of ppm, and NTP
    /// slews a clock by up to 500 ppm while it corrects it. The receivers' engines read
    /// the time through it; links and measurements keep true time [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    clock_skew: Option<String>,
    /// Start each finite flow (--transfer) as a connection to a peer seen before, with
    /// Careful Resume (RFC 9959): `on` resumes from the path's own payload rate less its
    /// random loss (what an earlier connection delivered) and its base RTT,
    /// `RATE,RTT` (e.g. 500mbit,200ms) from stale or wrong values, to test the RTT check
    /// and the retreat; a list takes `;` [default: off].
    #[arg(long, allow_hyphen_values = true)]
    resume: Option<String>,
    /// Data packet size on the wire, 40-byte header included [default: 1500].
    #[arg(long, allow_hyphen_values = true)]
    packet_size: Option<String>,
    /// Random loss on the bottleneck, data direction: 0.05% or 0.0005 [default: 0.05%].
    #[arg(long, allow_hyphen_values = true)]
    loss: Option<String>,
    /// Gilbert-Elliott loss instead: p,r,h,k (P good->bad, P bad->good, P deliver in bad,
    /// P deliver in good), per packet time of the link: an idle link steps the chain too,
    /// so a burst ends in time; separate several models with ';'.
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
    /// Window growth per segment acknowledged (RFC 3465 byte counting, as Linux counts)
    /// instead of per ACK: on or off [default: off]. With --delayed-ack on, this is how a
    /// Linux sender grows.
    #[arg(long, allow_hyphen_values = true)]
    byte_counting: Option<String>,
    /// RACK's loss rules (RFC 8985, as Linux runs them): a retransmission is lost when a
    /// segment sent after it is delivered, and, in recovery, so is every segment sent
    /// before a delivered one (schemes without FEC), instead of waiting for the RTO: on or
    /// off [default: off; the BBR schemes and auto always apply the first rule].
    #[arg(long, allow_hyphen_values = true)]
    rack: Option<String>,
    /// CUBIC leaves slow start by Linux's HyStart (ACK trains, rising delay) before the
    /// queue overflows: on or off [default: off].
    #[arg(long, allow_hyphen_values = true)]
    hystart: Option<String>,
    /// Window rules (not BBR) leave their first slow start by HyStart++ (RFC 9406): a
    /// round trip risen by an eighth (4-16 ms) turns slow start into Conservative Slow
    /// Start, a quarter of its growth, and five rounds of that into congestion avoidance:
    /// on or off [default: off; `send`, `perf` and the tunnel always run it].
    #[arg(long, allow_hyphen_values = true)]
    hystart_pp: Option<String>,
    /// SACK loss recovery by Proportional Rate Reduction (RFC 6937, as Linux runs it):
    /// each ACK in recovery releases a share of what it delivered, instead of sending
    /// whenever the flight is below the window: on or off [default: off].
    #[arg(long, allow_hyphen_values = true)]
    prr: Option<String>,
    /// Bytes every packet occupies on a link beyond the simulated 40-byte header and the
    /// payload: 12 models Linux TCP's timestamp option, 57 tcpfec over UDP/IPv4 (IP and
    /// UDP headers, envelope, AEAD tag) [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    encapsulation: Option<String>,
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
    /// Interactive traffic instead of bulk data, as netperf's TCP_RR: requests of
    /// REQUEST bytes, each answered with RESPONSE bytes (default: as many), the next sent
    /// when the answer is read (e.g. 100B, 100B/10KB). Delivery delay is then an
    /// exchange's, from the request's write to the response's last byte read.
    #[arg(long, value_name = "REQUEST[/RESPONSE]", allow_hyphen_values = true)]
    request_response: Option<String>,
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
    /// rate) as DIR/cwnd-RUN.csv, each flow's delivery-delay distribution in the
    /// measurement window (a CDF) as DIR/delay-RUN.csv, and DIR/cwnd.svg when there are
    /// at most 6 runs.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Write a qlog trace (JSON-SEQ, for qvis) of both ends of every flow of every run:
    /// DIR/runNNNN-flowF-client.sqlog and …-server.sqlog. Packets sent and received,
    /// losses, congestion metrics and FEC events (`docs/guide/traces.md`); at most 2000
    /// files and 256 MiB per file.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Write a pcapng capture of every flow as its client's host sees it (both
    /// directions), the packets as IPv4/UDP datagrams with simulated addresses and
    /// timestamps: DIR/runNNNN-flowF.pcapng. contrib/wireshark/tcpfec.lua decodes them.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    shard: ShardArgs,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

impl SimArgs {
    fn axes(&self) -> Result<Axes, String> {
        let mut axes = match &self.config {
            Some(path) => {
                let text = sweep::read_settings_file(path)
                    .map_err(|e| format!("--config {}: {e}", path.display()))?;
                Axes::from_toml(&text).map_err(|e| format!("--config {}: {e}", path.display()))?
            }
            None => Axes::default(),
        };
        let mut flags = Axes::default();
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
            ("host-jitter", &self.host_jitter),
            ("clock-skew", &self.clock_skew),
            ("resume", &self.resume),
            ("packet-size", &self.packet_size),
            ("loss", &self.loss),
            ("ge", &self.ge),
            ("loss-reverse", &self.loss_reverse),
            ("ge-reverse", &self.ge_reverse),
            ("delayed-ack", &self.delayed_ack),
            ("byte-counting", &self.byte_counting),
            ("rack", &self.rack),
            ("hystart", &self.hystart),
            ("hystart-pp", &self.hystart_pp),
            ("prr", &self.prr),
            ("encapsulation", &self.encapsulation),
            ("initial-window", &self.initial_window),
            ("min-rto", &self.min_rto),
            ("duration", &self.duration),
            ("window", &self.window),
            ("transfer", &self.transfer),
            ("start", &self.start),
            ("max-window", &self.max_window),
            ("loss-schedule", &self.loss_schedule),
            ("app-rate", &self.app_rate),
            ("request-response", &self.request_response),
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

/// Runs `tcpfec sim` with these flags.
pub fn sim(args: SimArgs) -> Result<(), String> {
    let shard = args.shard.resolve()?;
    tcpfec_lab::sim::run(&tcpfec_lab::sim::Options {
        axes: args.axes()?,
        seed: args.seed,
        seeds: args.seeds,
        limits: Limits {
            max_runs: args.max_runs,
            i_know: args.i_know,
        },
        json: args.json,
        csv: args.csv,
        trace: args.trace,
        qlog: args.qlog,
        pcap: args.pcap,
        progress: !args.quiet && std::io::stderr().is_terminal(),
        shard,
    })
}

/// Which slice of the runs to run, for `sim` and `reproduce` in a job array.
#[derive(Args)]
pub struct ShardArgs {
    /// Run only the K-th of N shards of the runs (balanced by expected cost) and write
    /// their rows and a manifest to a directory shard-K-of-N (`reproduce`: under
    /// results/<ID>, or --out itself; `sim`: under --csv DIR); join the shards with
    /// `tcpfec merge`. For job arrays (Slurm, Kubernetes).
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// Without --shard: the shard comes from the job array, Slurm's
    /// SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT or a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX, which needs this count of shards.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    shards: Option<usize>,
}

impl ShardArgs {
    /// The shard to run: `--shard` as given, else the job array's task (see
    /// [`tcpfec_lab::shard::from_job_array`]), said on stderr so a task's log shows which
    /// it ran; `None` to run everything.
    pub fn resolve(&self) -> Result<Option<Shard>, String> {
        if self.shard.is_some() {
            return Ok(self.shard);
        }
        let found = tcpfec_lab::shard::from_job_array(self.shards, |k| std::env::var(k).ok())?;
        Ok(found.map(|(sh, from)| {
            eprintln!("shard {}/{} from {from}", sh.index, sh.count);
            sh
        }))
    }
}

/// The flags of `tcpfec validate`.
#[derive(Args)]
pub struct ValidateArgs {
    /// The ns-2 binary.
    #[arg(long)]
    ns2: Option<PathBuf>,
    /// The compiled validation/ns3/scenario.cc.
    #[arg(long)]
    ns3: Option<PathBuf>,
    /// Directory holding path.tcl and dumbbell.tcl.
    #[arg(long, default_value = "validation/ns2")]
    tcl_dir: PathBuf,
    /// Which comparison: the window-based TCP baselines against ns-2 and ns-3, the BBR
    /// schemes against ns-3's `TcpBbr`, the simulator against Linux's TCP, or against the
    /// engine on the wire.
    #[arg(long, value_enum, default_value_t = ValidateSet::Baselines)]
    set: ValidateSet,
    /// Seeds per point [default: 10; 5 simulator seeds with --set kernel or wire].
    #[arg(long)]
    seeds: Option<u64>,
    /// A few points only.
    #[arg(long)]
    quick: bool,
    /// Directory for validation.csv and the figures [default: docs/results/validation, or
    /// docs/results/validation-bbr with --set bbr; not used by --set kernel or wire].
    #[arg(long)]
    out: Option<PathBuf>,
    /// The markdown report to write [default: docs/results/validation.md, or docs/results/validation-bbr.md,
    /// docs/results/validation-kernel.md, docs/results/validation-wire.md by --set; `-` for none with
    /// --set kernel or wire].
    #[arg(long)]
    report: Option<PathBuf>,
    /// Re-render the report and figures from an earlier run's validation.csv.
    #[arg(long, value_name = "CSV")]
    from_csv: Option<PathBuf>,
    /// --set kernel or wire: the stored measurements to compare with [default:
    /// validation/kernel/kernel.csv or wire.csv].
    #[arg(long, value_name = "CSV")]
    reference: Option<PathBuf>,
    /// --set kernel or wire: measure instead, REPS runs (seeds) per point, on emulated
    /// links (`tcpfec emu`; needs root, about 20 minutes per seed), and write the CSV.
    #[arg(long, value_name = "REPS", value_parser = clap::value_parser!(u64).range(1..))]
    measure: Option<u64>,
    /// --set kernel or wire: write the CSV from `tcpfec bench net --emu --json` output
    /// measured before (one object per line) instead.
    #[arg(long, value_name = "JSONL", conflicts_with = "measure")]
    import: Option<PathBuf>,
    /// --set kernel or wire: only these points (1-based, comma-separated; the report
    /// lists them).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    points: Option<Vec<usize>>,
    /// --set kernel or wire, with --measure: only these transports (comma-separated, as
    /// the report's "measured" column names them without "TCP " or "tcpfec ": `auto`,
    /// `cubic`). Measuring a subset of points or transports replaces those rows in the
    /// stored CSV and keeps the rest.
    #[arg(long, value_delimiter = ',', value_name = "LIST", requires = "measure")]
    transports: Option<Vec<String>>,
    /// --set kernel or wire: exit 1 unless every point agrees within 10 % or misses as
    /// recorded (each recorded miss has its explanation in the report).
    #[arg(long)]
    check: bool,
}

/// `--set` of `tcpfec validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ValidateSet {
    /// Reno, NewReno, SACK and CUBIC against ns-2.35 and ns-3.37.
    Baselines,
    /// `bbr1` and `bbr` against ns-3.37's `TcpBbr` (BBR v1).
    Bbr,
    /// The simulator's sack, cubic and bbr1 against Linux's reno, cubic and bbr on
    /// emulated links (stored measurements in validation/kernel/kernel.csv).
    Kernel,
    /// The simulator against tcpfec's engine on the wire (`tcpfec perf` through `tcpfec
    /// emu`; stored in validation/kernel/wire.csv).
    Wire,
}

/// What `tcpfec validate` is asked to do.
pub enum Validation {
    /// Against ns-2 and ns-3.
    Simulators(validate::Options),
    /// Against measurements on emulated links.
    Measured(crate::validate_kernel::Options),
}

impl ValidateArgs {
    /// The validation these flags ask for.
    pub fn validation(self) -> Validation {
        let reference = match self.set {
            ValidateSet::Kernel => crate::validate_kernel::Reference::Kernel,
            ValidateSet::Wire => crate::validate_kernel::Reference::Wire,
            _ => return Validation::Simulators(self.options()),
        };
        Validation::Measured(crate::validate_kernel::Options {
            reference,
            csv: self.reference,
            seeds: self.seeds.unwrap_or(crate::validate_kernel::DEFAULT_SEEDS),
            measure: self.measure,
            import: self.import,
            only: self.points,
            transports: self.transports,
            report: self.report,
            check: self.check,
        })
    }

    /// The comparison with ns-2 and ns-3 these flags ask for.
    fn options(self) -> validate::Options {
        validate::Options {
            ns2: self.ns2,
            ns3: self.ns3,
            tcl_dir: self.tcl_dir,
            set: match self.set {
                ValidateSet::Bbr => validate::Set::Bbr,
                _ => validate::Set::Baselines,
            },
            seeds: self.seeds.unwrap_or(10),
            quick: self.quick,
            out: self.out,
            report: self.report,
            from_csv: self.from_csv,
        }
    }
}
