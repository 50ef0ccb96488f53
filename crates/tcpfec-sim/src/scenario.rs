//! A fully specified simulation run: topology, links, traffic, protocol settings, seed.

use crate::loss::LossSpec;
use core::time::Duration;
use serde::Serialize;
use tcpfec_proto::{Config, Scheme};

/// Bytes of IP + TCP header counted on every simulated packet (no options), as ns-2's
/// `tcpip_base_hdr_size_`. SACK blocks add option bytes on ACKs; see `docs/header-model.md`.
pub const HEADER_BYTES: u32 = 40;

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
}

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
    /// Background Reno flows with bulk data sharing the bottleneck (Teshima's WLAN
    /// setting), each between its own pair of hosts. Not counted in the run's metrics.
    pub background: u32,
    /// The background flows send right to left (uplink), against the measured flows.
    pub background_uplink: bool,
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
            packet_size: 1500,
            loss: LossSpec::Bernoulli { p: 0.0005 },
            reverse_loss: LossSpec::None,
            scheme: Scheme::parse("sack").expect("built-in"),
            delayed_ack: false,
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
            background_uplink: true,
        }
    }
}

impl Scenario {
    /// Checks the combination of values; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 {
            return Err("--flows: must be at least 1".into());
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
        if self.duration.is_zero() {
            return Err("--duration: must be positive".into());
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
        if let App::Transfer { bytes: 0 } = self.app {
            return Err("--transfer: must be at least 1 byte".into());
        }
        if let App::Rate { bps: 0 } = self.app {
            return Err("--app-rate: must be positive".into());
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
        Config {
            mss: self.mss(),
            initial_window: self.initial_window,
            min_rto: self.min_rto,
            delayed_ack: self.delayed_ack,
            scheme: self.scheme.clone(),
            // Large enough never to limit a simulated flow; payloads are shared, not copied.
            send_buffer: 64 << 20,
            recv_window: self
                .max_window
                .map_or(256 << 20, |w| w.saturating_mul(self.mss() as u32)),
            syn_retries: 12,
            target_rate_bps: self.target_rate_bps(),
            ..Config::default()
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

    /// The configuration of the background flows: Reno with the same engine settings.
    pub fn background_config(&self) -> Config {
        Config {
            scheme: Scheme::parse("reno").expect("built-in"),
            target_rate_bps: None,
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
