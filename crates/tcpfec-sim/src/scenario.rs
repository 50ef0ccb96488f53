//! A fully specified simulation run: topology, links, traffic, protocol settings, seed.

use crate::loss::LossSpec;
use core::time::Duration;
use serde::Serialize;
use tcpfec_proto::{Config, SavedPath, Scheme};

/// How often a rate-limited application is offered the chance to write: the simulator's
/// tick, and the unit of a rate-limited scenario's estimated cost.
pub(crate) const APP_TICK_NS: u64 = 1_000_000;

/// Bytes of IP + TCP header counted on every simulated packet (no options), as ns-2's
/// `tcpip_base_hdr_size_`. SACK blocks add option bytes on ACKs; see `docs/design/simulator.md`.
pub const HEADER_BYTES: u32 = 40;

/// Longest simulated time a run may have: one day. Longer runs would take hours of wall
/// time per run; the limit makes a typo such as `220000s` an error, not a stuck sweep.
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// Most flows (measured plus background) one run may have. Each bulk flow keeps about
/// 40 KB (its engines and queued application data), so this is about 4 GB per run.
pub const MAX_FLOWS: u32 = 100_000;

/// Longest one-way propagation delay of a link (bottleneck or access): a minute, far
/// beyond any terrestrial or satellite path.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// Events a packet crossing the bottleneck costs, about: arrivals at the three hops of its
/// path and at the three hops of the ACK it causes (used by [`Scenario::estimated_events`]).
pub const EVENTS_PER_PACKET: f64 = 6.0;

/// Network shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// sender — R1 — R2 — receiver (Sato Fig. 4.6); all flows share the two hosts.
    Path,
    /// N senders — R1 — R2 — N receivers, one access link per host (Sato Figs. 3.5, 5.8).
    Dumbbell,
}

/// What each flow's application does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum App {
    /// Always has data to send.
    Bulk,
    /// Sends this many bytes, then closes; completion time is measured.
    Transfer {
        /// Bytes to send.
        bytes: u64,
    },
    /// Offers data at a constant rate (a streaming application with a target rate):
    /// whatever the connection cannot take waits in the application.
    Rate {
        /// Offered rate, bits per second.
        bps: u64,
    },
    /// Interactive traffic, as netperf's TCP_RR: the sender writes a request of `request`
    /// bytes, the receiver answers each whole request with `response` bytes, and the next
    /// request is written as soon as the whole response has been read. The delay measured
    /// is a transaction's, from the request's write to its response's last byte read.
    RequestResponse {
        /// Bytes per request.
        request: u32,
        /// Bytes per response.
        response: u32,
    },
}

/// Largest request or response of [`App::RequestResponse`]: 16 MiB, far beyond an
/// interactive exchange, and well inside the engines' send buffers.
pub const MAX_MESSAGE: u32 = 16 << 20;

/// When flows start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Start {
    /// Every flow starts at this time.
    Fixed {
        /// Start time.
        at: Duration,
    },
    /// Each flow starts at a uniformly random time in `[from, to]`.
    Uniform {
        /// Earliest start.
        from: Duration,
        /// Latest start.
        to: Duration,
    },
}

/// Whether finite flows start as connections to a peer seen before (Careful Resume).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Resume {
    /// A normal start.
    #[default]
    Off,
    /// Resume from the path as it is: the bottleneck's payload rate and the base RTT.
    Path,
    /// Resume from these saved values (stale or wrong ones test the RTT check and the
    /// retreat).
    Saved {
        /// Saved delivery rate, payload bits per second.
        rate_bps: u64,
        /// Saved minimum RTT.
        rtt: Duration,
    },
}

impl Resume {
    /// Parses `on`, `off` or `RATE,RTT` (e.g. `500mbit,200ms`).
    pub fn parse(v: &str) -> Result<Resume, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "on" => return Ok(Resume::Path),
            "off" => return Ok(Resume::Off),
            _ => {}
        }
        let usage = format!("'{v}' is not on, off or RATE,RTT (e.g. 50mbit,200ms)");
        let (rate, rtt) = v.split_once(',').ok_or_else(|| usage.clone())?;
        let rate_bps =
            crate::units::parse_rate(rate.trim()).map_err(|e| format!("{usage}: {e}"))?;
        let rtt = crate::units::parse_duration(rtt.trim()).map_err(|e| format!("{usage}: {e}"))?;
        if rate_bps == 0 || rtt.is_zero() {
            return Err(format!("{usage}: the rate and the RTT must be above zero"));
        }
        Ok(Resume::Saved { rate_bps, rtt })
    }
}

impl core::fmt::Display for Resume {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Resume::Off => f.write_str("off"),
            Resume::Path => f.write_str("on"),
            Resume::Saved { rate_bps, rtt } => write!(f, "{rate_bps}bit,{}us", rtt.as_micros()),
        }
    }
}

impl Serialize for Resume {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_str(self)
    }
}

/// One simulation run.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    /// Network shape.
    pub topology: Topology,
    /// Number of flows.
    pub flows: u32,
    /// Bottleneck (R1–R2) rate in bit/s.
    pub bottleneck_bps: u64,
    /// Access link rate in bit/s.
    pub access_bps: u64,
    /// One-way propagation delay of the bottleneck.
    pub delay: Duration,
    /// One-way access delays: flow i gets `from + (to - from) * i / (flows - 1)`.
    pub access_delay: (Duration, Duration),
    /// Drop-tail queue limit of every link direction, packets.
    pub buffer: u32,
    /// Queue limit of links leaving a host, packets (`None`: same as `buffer`). Sato ch. 5
    /// gives end nodes unlimited buffers.
    pub host_buffer: Option<u32>,
    /// Largest random delay added to a packet leaving a host (uniform, order kept): a
    /// deterministic drop-tail queue locks into phases where one flow's ACK-clocked
    /// packets take every slot that frees and another's always find it full (Floyd and
    /// Jacobson's phase effects; ns-2's `overhead_`). Zero by default.
    pub send_jitter: Duration,
    /// How much faster the receiving hosts' clocks run than the sending hosts', parts per
    /// million (negative: slower; `clock::HostClock`). Oscillators differ by tens of
    /// ppm, and NTP slews a clock by up to 500 ppm while it corrects it. Zero by default.
    #[serde(skip_serializing_if = "is_zero")]
    pub clock_skew_ppm: f64,
    /// Size of a full data packet on the wire, headers included.
    pub packet_size: u32,
    /// Random loss on the bottleneck in the data direction (R1 → R2).
    pub loss: LossSpec,
    /// Random loss on the bottleneck in the ACK direction (R2 → R1).
    pub reverse_loss: LossSpec,
    /// Congestion control scheme.
    #[serde(serialize_with = "scheme_name")]
    pub scheme: Scheme,
    /// Delayed ACKs at the receivers.
    pub delayed_ack: bool,
    /// Window growth by segments acknowledged rather than per ACK
    /// (`Config::byte_counting`, as Linux grows).
    pub byte_counting: bool,
    /// Lost retransmissions found by RACK's rule rather than the RTO (`Config::rack`, as
    /// Linux finds them).
    pub rack: bool,
    /// CUBIC leaves slow start by Linux's HyStart (`Config::hystart`).
    pub hystart: bool,
    /// Window rules leave their first slow start by HyStart++ (`Config::hystart_pp`).
    pub hystart_pp: bool,
    /// SACK recovery sends by Proportional Rate Reduction (`Config::prr`, as Linux does).
    pub prr: bool,
    /// Initial window, segments.
    pub initial_window: u32,
    /// Minimum RTO.
    pub min_rto: Duration,
    /// Simulated time.
    pub duration: Duration,
    /// Measurement window `[from, to)`.
    pub window: (Duration, Duration),
    /// Application.
    pub app: App,
    /// Start times.
    pub start: Start,
    /// Seed of every random stream.
    pub seed: u64,
    /// Sample every flow's cwnd at this interval (no samples if `None`).
    #[serde(skip)]
    pub cwnd_sample: Option<Duration>,
    /// Check every delivered byte against what was written (costs a compare per byte).
    #[serde(skip)]
    pub verify_data: bool,
    /// Receiver window in packets (Anker's W_m); `None` never limits a flow.
    pub max_window: Option<u32>,
    /// Target rate of the schemes that have one (bits per second); defaults to the
    /// application's rate when it has one.
    pub target_rate: Option<u64>,
    /// Background flows with bulk data sharing the bottleneck (Teshima's WLAN setting),
    /// each between its own pair of hosts. Not counted in the run's metrics.
    pub background: u32,
    /// Scheme of the background flows (Reno in Teshima's setting).
    #[serde(serialize_with = "scheme_name")]
    pub background_scheme: Scheme,
    /// The background flows send right to left (uplink), against the measured flows.
    pub background_uplink: bool,
    /// Finite flows start with Careful Resume from this saved path.
    pub resume: Resume,
    /// Bytes every packet occupies on a link beyond the 40-byte header, payload and SACK
    /// option the simulator charges (`sim::wire_size`): what a real path wraps around a
    /// segment. 12 models kernel TCP's timestamp option; tcpfec on UDP adds IPv4 and UDP
    /// headers, its envelope and the AEAD tag. Zero by default.
    pub encapsulation: u32,
    /// The engine settings of a real host's endpoint instead of the simulator's (`None`:
    /// the simulator's own, which never limit a flow).
    #[serde(skip)]
    pub host: Option<HostSettings>,
}

/// Engine settings in which a real network endpoint differs from a simulated one: its
/// RTO's variance floor and ceiling, and its send buffer. Set from `tcpfec-net`'s
/// configuration to simulate what `tcpfec send` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostSettings {
    /// Floor of the RTO's variance term (`Config::clock_granularity`).
    pub clock_granularity: Duration,
    /// Longest RTO after back-off.
    pub max_rto: Duration,
    /// Bytes the sender holds, in flight and queued.
    pub send_buffer: usize,
}

/// Largest clock skew a scenario may give, ppm: a tenth of a second per second, far
/// beyond any oscillator or NTP slew, and small enough that a skewed clock never runs
/// backwards.
pub const MAX_CLOCK_SKEW_PPM: f64 = 100_000.0;

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn scheme_name<S: serde::Serializer>(s: &Scheme, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&s.name)
}

impl Default for Scenario {
    /// The Sato ch. 4 path: 100 Mb/s, D = 200 ms, 1 ms access links, 50-packet buffers,
    /// 1500-byte packets, 0.05 % random loss, one SACK flow, 220 s measured over 20–220 s.
    fn default() -> Self {
        Scenario {
            topology: Topology::Path,
            flows: 1,
            bottleneck_bps: 100_000_000,
            access_bps: 100_000_000,
            delay: Duration::from_millis(200),
            access_delay: (Duration::from_millis(1), Duration::from_millis(1)),
            buffer: 50,
            host_buffer: None,
            send_jitter: Duration::ZERO,
            clock_skew_ppm: 0.0,
            packet_size: 1500,
            loss: LossSpec::Bernoulli { p: 0.0005 },
            reverse_loss: LossSpec::None,
            scheme: Scheme::parse("sack").expect("built-in"),
            delayed_ack: false,
            byte_counting: false,
            rack: false,
            hystart: false,
            hystart_pp: false,
            prr: false,
            initial_window: 2,
            min_rto: Duration::from_millis(200),
            duration: Duration::from_secs(220),
            window: (Duration::from_secs(20), Duration::from_secs(220)),
            app: App::Bulk,
            start: Start::Fixed { at: Duration::ZERO },
            seed: 1,
            cwnd_sample: None,
            verify_data: false,
            max_window: None,
            target_rate: None,
            background: 0,
            background_scheme: Scheme::parse("reno").expect("built-in"),
            background_uplink: true,
            resume: Resume::Off,
            encapsulation: 0,
            host: None,
        }
    }
}

impl Scenario {
    /// Checks the combination of values; the message names the offending field (as its
    /// command-line flag) and what it must be. Besides values the simulator cannot run, it
    /// refuses degenerate ones that would run and report nonsense (no queue, a window of
    /// zero, a link slower than one packet per second, flows that never start) and sizes
    /// beyond the stated maxima ([`MAX_DURATION`], [`MAX_FLOWS`], [`MAX_DELAY`]).
    pub fn validate(&self) -> Result<(), String> {
        self.validate_counts()?;
        self.validate_rates()?;
        self.validate_times()?;
        self.validate_app()
    }

    /// Flows, packet size, windows and queues.
    fn validate_counts(&self) -> Result<(), String> {
        if self.flows == 0 {
            return Err("--flows: must be at least 1".into());
        }
        if self.flows as u64 + self.background as u64 > MAX_FLOWS as u64 {
            let background = match self.background {
                0 => String::new(),
                n => format!(" plus {n} background flows"),
            };
            let flag = if self.flows > MAX_FLOWS {
                "--flows"
            } else {
                "--background"
            };
            return Err(format!(
                "{flag}: {} flows{background} are more than the {MAX_FLOWS} a run may hold \
                 (each bulk flow needs about 40 KB of memory)",
                self.flows
            ));
        }
        if self.packet_size <= HEADER_BYTES || self.packet_size > 65_535 {
            return Err(format!(
                "--packet-size: {} must be between {} and 65535 bytes",
                self.packet_size,
                HEADER_BYTES + 1
            ));
        }
        if self.initial_window == 0 {
            return Err("--initial-window: must be at least 1 segment".into());
        }
        if self.max_window == Some(0) {
            return Err(
                "--max-window: must be at least 1 packet (a window of 0 sends nothing)".into(),
            );
        }
        if self.buffer == 0 {
            return Err("--buffer: must be at least 1 packet".into());
        }
        if self.host_buffer == Some(0) {
            return Err("--host-buffer: must be at least 1 packet (or inf)".into());
        }
        Ok(())
    }

    /// Link rates: each must carry at least one full packet per second.
    fn validate_rates(&self) -> Result<(), String> {
        let least = self.packet_size as u64 * 8;
        for (flag, bps) in [
            ("--bottleneck", self.bottleneck_bps),
            ("--access-rate", self.access_bps),
        ] {
            if bps < least {
                return Err(format!(
                    "{flag}: {bps} bit/s carries less than one {}-byte packet per second; \
                     give at least {least}bit",
                    self.packet_size
                ));
            }
        }
        Ok(())
    }

    /// Duration, delays, RTO, measurement window and start times.
    fn validate_times(&self) -> Result<(), String> {
        if self.duration.is_zero() {
            return Err("--duration: must be positive".into());
        }
        if self.duration > MAX_DURATION {
            return Err(format!(
                "--duration: {:?} is longer than the maximum of {:?} (one simulated day)",
                self.duration, MAX_DURATION
            ));
        }
        if self.delay > MAX_DELAY {
            return Err(format!(
                "--delay: {:?} is longer than the maximum of {MAX_DELAY:?}",
                self.delay
            ));
        }
        if self.send_jitter > MAX_DELAY {
            return Err(format!(
                "--host-jitter: {:?} is longer than the maximum of {MAX_DELAY:?}",
                self.send_jitter
            ));
        }
        if self.clock_skew_ppm.is_nan() || self.clock_skew_ppm.abs() > MAX_CLOCK_SKEW_PPM {
            return Err(format!(
                "--clock-skew: {} ppm is beyond the ±{MAX_CLOCK_SKEW_PPM} ppm a host's clock may \
                 run off true time here",
                self.clock_skew_ppm
            ));
        }
        if self.access_delay.1 > MAX_DELAY {
            return Err(format!(
                "--access-delay: {:?} is longer than the maximum of {MAX_DELAY:?}",
                self.access_delay.1
            ));
        }
        if self.min_rto.is_zero() {
            return Err("--min-rto: must be positive (RFC 6298 uses 1s, Linux 200ms)".into());
        }
        let max_rto = Config::default().max_rto;
        if self.min_rto > max_rto {
            return Err(format!(
                "--min-rto: {:?} is above the maximum RTO of {max_rto:?}",
                self.min_rto
            ));
        }
        if self.window.0 >= self.window.1 {
            return Err("--window: must be a non-empty range A..B".into());
        }
        if self.window.1 > self.duration {
            return Err(format!(
                "--window: ends at {:?}, after the end of the run ({:?})",
                self.window.1, self.duration
            ));
        }
        self.validate_start()
    }

    /// Every flow must start before the run ends, and some before the window closes.
    fn validate_start(&self) -> Result<(), String> {
        let (first, last) = match self.start {
            Start::Fixed { at } => (at, at),
            Start::Uniform { from, to } => (from, to),
        };
        if last >= self.duration {
            return Err(format!(
                "--start: flows start as late as {last:?}, not before the end of the run \
                 ({:?})",
                self.duration
            ));
        }
        if first >= self.window.1 {
            return Err(format!(
                "--start: flows start at {first:?}, after the measurement window ends ({:?})",
                self.window.1
            ));
        }
        Ok(())
    }

    /// The application and the schemes that need a particular one.
    fn validate_app(&self) -> Result<(), String> {
        if let App::Transfer { bytes: 0 } = self.app {
            return Err("--transfer: must be at least 1 byte".into());
        }
        if let App::Rate { bps: 0 } = self.app {
            return Err("--app-rate: must be positive".into());
        }
        if let App::RequestResponse { request, response } = self.app {
            if request == 0 || response == 0 || request.max(response) > MAX_MESSAGE {
                return Err(format!(
                    "--request-response: requests and responses must be 1 byte to {} MiB",
                    MAX_MESSAGE >> 20
                ));
            }
        }
        if self.scheme.fountain.is_some() && !matches!(self.app, App::Transfer { .. }) {
            return Err(format!(
                "--scheme {}: FECTCP moves blocks; give their size with --transfer",
                self.scheme.name
            ));
        }
        Ok(())
    }

    /// Payload bytes per full segment.
    pub fn mss(&self) -> u16 {
        (self.packet_size - HEADER_BYTES) as u16
    }

    /// The engine configuration every endpoint of this run uses.
    pub fn config(&self) -> Config {
        let mut c = Config {
            mss: self.mss(),
            initial_window: self.initial_window,
            min_rto: self.min_rto,
            delayed_ack: self.delayed_ack,
            byte_counting: self.byte_counting,
            rack: self.rack,
            hystart: self.hystart,
            hystart_pp: self.hystart_pp,
            prr: self.prr,
            scheme: self.scheme.clone(),
            // Large enough never to limit a simulated flow; payloads are shared, not copied.
            send_buffer: 64 << 20,
            recv_window: self
                .max_window
                .map_or(256 << 20, |w| w.saturating_mul(self.mss() as u32)),
            syn_retries: 12,
            target_rate_bps: self.target_rate_bps(),
            resume: self.saved_path(),
            ..Config::default()
        };
        if let Some(h) = self.host {
            c.clock_granularity = h.clock_granularity;
            c.max_rto = h.max_rto;
            c.send_buffer = h.send_buffer;
        }
        c
    }

    /// The saved path a finite flow resumes from (`None`: a normal start). Flows with no
    /// end have no previous connection worth the name: only transfers resume.
    pub fn saved_path(&self) -> Option<SavedPath> {
        if !matches!(self.app, App::Transfer { .. }) {
            return None;
        }
        let payload = self.mss() as f64 / self.packet_size as f64;
        match self.resume {
            Resume::Off => None,
            // The rate is what a previous connection measured: the channel's losses
            // were not delivered.
            Resume::Path => Some(SavedPath {
                rate: self.bottleneck_bps as f64 / 8.0 * payload * (1.0 - self.loss.mean_loss()),
                min_rtt: Duration::from_secs_f64(self.base_rtt_s()),
            }),
            Resume::Saved { rate_bps, rtt } => Some(SavedPath {
                rate: rate_bps as f64 / 8.0,
                min_rtt: rtt,
            }),
        }
    }

    /// The target rate of schemes that have one: `target_rate`, else the application's
    /// rate, if either is set.
    pub fn target_rate_bps(&self) -> Option<u64> {
        self.target_rate.or(match self.app {
            App::Rate { bps } => Some(bps),
            _ => None,
        })
    }

    /// Round trip of the first flow's path with empty queues: propagation both ways plus
    /// one data-packet serialisation per hop (bottleneck and two access links), seconds.
    pub fn base_rtt_s(&self) -> f64 {
        let serialise = |bps: u64| self.packet_size as f64 * 8.0 / bps as f64;
        2.0 * (self.delay.as_secs_f64() + 2.0 * self.access_delay.0.as_secs_f64())
            + serialise(self.bottleneck_bps)
            + 2.0 * serialise(self.access_bps)
    }

    /// Roughly how many events the run will process at most, to size a sweep before it
    /// starts: about [`EVENTS_PER_PACKET`] per packet the bottleneck carries at full rate
    /// (in both directions when background flows send against the measured ones), fewer
    /// when a receiver window, a streaming rate or a finite transfer limits the packets,
    /// plus a rate-limited application's tick every millisecond per flow.
    pub fn estimated_events(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        let flows = self.flows as f64 + self.background as f64;
        let mut pps = self.bottleneck_bps as f64 / (self.packet_size as f64 * 8.0);
        if let Some(w) = self.max_window {
            // A window of w packets per round trip, per flow.
            pps = pps.min(flows * w as f64 / self.base_rtt_s());
        }
        if let (App::Rate { bps }, 0) = (self.app, self.background) {
            // The applications offer no more than their rate.
            pps = pps.min(self.flows as f64 * bps as f64 / (self.packet_size as f64 * 8.0));
        }
        let directions = if self.background > 0 && self.background_uplink {
            2.0
        } else {
            1.0
        };
        let mut packets = pps * directions * secs;
        if let (App::Transfer { bytes }, 0) = (self.app, self.background) {
            // A finite transfer stops early; twice its segments leaves room for
            // retransmissions and repair packets.
            let segments = (bytes as f64 / self.mss() as f64).ceil();
            packets = packets.min(2.0 * self.flows as f64 * segments);
        }
        if let (App::RequestResponse { request, response }, 0) = (self.app, self.background) {
            // One exchange per round trip at most: its segments and their ACKs.
            let segments = |bytes: u32| (bytes as f64 / self.mss() as f64).ceil();
            let exchanges = secs / self.base_rtt_s();
            packets = packets.min(
                2.0 * self.flows as f64 * exchanges * (segments(request) + segments(response)),
            );
        }
        let ticks = match self.app {
            App::Rate { .. } => self.flows as f64 * secs * 1e9 / APP_TICK_NS as f64,
            _ => 0.0,
        };
        EVENTS_PER_PACKET * packets + ticks
    }

    /// The configuration of the background flows: their scheme with the same engine
    /// settings.
    pub fn background_config(&self) -> Config {
        Config {
            scheme: self.background_scheme.clone(),
            target_rate_bps: None,
            resume: None,
            ..self.config()
        }
    }

    /// One-way access delay of flow `i`.
    pub fn access_delay_of(&self, i: u32) -> Duration {
        let (a, b) = self.access_delay;
        if self.flows <= 1 || a == b {
            return a;
        }
        a + (b - a).mul_f64(i as f64 / (self.flows - 1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// One change to a scenario.
    type Change = fn(&mut Scenario);

    /// The error `validate` gives after `change` to the default scenario.
    fn refused(change: Change) -> String {
        let mut sc = Scenario::default();
        change(&mut sc);
        sc.validate().expect_err("a degenerate value is refused")
    }

    #[test]
    fn degenerate_values_are_refused_naming_the_flag() {
        Scenario::default().validate().unwrap();
        let cases: &[(&str, Change)] = &[
            ("--flows", |s| s.flows = 0),
            ("--flows", |s| s.flows = MAX_FLOWS + 1),
            ("--background", |s| s.background = MAX_FLOWS),
            ("--background", |s| s.background = u32::MAX),
            ("--packet-size", |s| s.packet_size = HEADER_BYTES),
            ("--initial-window", |s| s.initial_window = 0),
            ("--max-window", |s| s.max_window = Some(0)),
            ("--buffer", |s| s.buffer = 0),
            ("--host-buffer", |s| s.host_buffer = Some(0)),
            ("--bottleneck", |s| s.bottleneck_bps = 11_999),
            ("--access-rate", |s| s.access_bps = 100),
            ("--duration", |s| s.duration = Duration::ZERO),
            ("--duration", |s| s.duration = MAX_DURATION + secs(1)),
            ("--delay", |s| s.delay = MAX_DELAY + secs(1)),
            ("--access-delay", |s| s.access_delay = (secs(1), secs(61))),
            ("--min-rto", |s| s.min_rto = Duration::ZERO),
            ("--min-rto", |s| s.min_rto = secs(61)),
            ("--window", |s| s.window = (secs(30), secs(30))),
            ("--window", |s| s.window = (secs(0), secs(221))),
            ("--start", |s| s.start = Start::Fixed { at: secs(220) }),
            ("--start", |s| {
                s.start = Start::Uniform {
                    from: secs(0),
                    to: secs(300),
                }
            }),
            ("--start", |s| {
                s.window = (secs(0), secs(100));
                s.start = Start::Fixed { at: secs(150) };
            }),
            ("--transfer", |s| s.app = App::Transfer { bytes: 0 }),
            ("--app-rate", |s| s.app = App::Rate { bps: 0 }),
            ("--request-response", |s| {
                s.app = App::RequestResponse {
                    request: 0,
                    response: 10,
                }
            }),
            ("--request-response", |s| {
                s.app = App::RequestResponse {
                    request: 10,
                    response: MAX_MESSAGE + 1,
                }
            }),
        ];
        for (flag, change) in cases {
            let e = refused(*change);
            assert!(e.starts_with(flag), "{flag}: {e}");
        }
    }

    #[test]
    fn the_smallest_sane_values_are_accepted() {
        let sc = Scenario {
            bottleneck_bps: 12_000,
            access_bps: 12_000,
            buffer: 1,
            host_buffer: Some(1),
            max_window: Some(1),
            min_rto: Duration::from_nanos(1),
            duration: MAX_DURATION,
            window: (Duration::ZERO, MAX_DURATION),
            delay: MAX_DELAY,
            flows: MAX_FLOWS,
            ..Scenario::default()
        };
        sc.validate().unwrap();
    }

    /// (estimated, simulated) events of `sc`.
    fn estimate_and_actual(sc: &Scenario) -> (f64, f64) {
        (sc.estimated_events(), crate::run(sc).events as f64)
    }

    #[test]
    fn event_estimate_is_near_what_saturated_runs_cost() {
        let saturated = Scenario {
            delay: Duration::from_millis(1),
            loss: crate::LossSpec::None,
            buffer: 1000,
            duration: secs(3),
            window: (secs(0), secs(3)),
            ..Scenario::default()
        };
        let against_background = Scenario {
            topology: Topology::Dumbbell,
            flows: 10,
            background: 10,
            buffer: 500,
            ..saturated.clone()
        };
        let streaming = Scenario {
            topology: Topology::Dumbbell,
            flows: 20,
            app: App::Rate { bps: 1_000_000 },
            ..saturated.clone()
        };
        let transfer = Scenario {
            app: App::Transfer { bytes: 1_000_000 },
            ..saturated.clone()
        };
        let windowed = Scenario {
            delay: Duration::from_millis(50),
            max_window: Some(20),
            ..saturated.clone()
        };
        for sc in [saturated, against_background, streaming, transfer, windowed] {
            let (estimate, actual) = estimate_and_actual(&sc);
            assert!(
                actual <= 1.1 * estimate && actual >= estimate / 2.5,
                "estimated {estimate:.0}, simulated {actual:.0}: {sc:?}"
            );
        }
    }
}
