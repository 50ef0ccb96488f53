//! Connection parameters and the named schemes that select congestion behaviour.

use crate::cc::CcKind;
use core::time::Duration;

/// How lost segments are detected and repaired once duplicate ACKs arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Fast retransmit, then slow start from one segment (go-back-N).
    Tahoe,
    /// Fast retransmit and fast recovery; leaves recovery on the first new ACK (RFC 5681).
    Reno,
    /// Reno with partial-ACK handling (RFC 6582).
    NewReno,
    /// SACK scoreboard and pipe-based recovery (RFC 6675).
    Sack,
}

/// A named congestion-control scheme: a recovery algorithm plus a window-growth rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The name users type (`sack`, `cubic`, …).
    pub name: String,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Window growth and decrease.
    pub cc: CcKind,
}

/// The baseline schemes: name, description, recovery, window rule.
pub const BASELINE_SCHEMES: &[(&str, &str, Recovery, CcKind)] = &[
    (
        "tahoe",
        "TCP Tahoe: fast retransmit, then slow start from 1",
        Recovery::Tahoe,
        CcKind::Reno,
    ),
    (
        "reno",
        "TCP Reno: fast retransmit and fast recovery (RFC 5681)",
        Recovery::Reno,
        CcKind::Reno,
    ),
    (
        "newreno",
        "TCP NewReno: Reno with partial-ACK recovery (RFC 6582)",
        Recovery::NewReno,
        CcKind::Reno,
    ),
    (
        "sack",
        "TCP Reno+SACK: scoreboard and pipe recovery (RFC 2018, RFC 6675)",
        Recovery::Sack,
        CcKind::Reno,
    ),
    (
        "cubic",
        "CUBIC window (RFC 9438, beta 0.7) with SACK recovery",
        Recovery::Sack,
        CcKind::Cubic,
    ),
];

impl Scheme {
    /// Looks a scheme up by name (case-insensitive).
    pub fn parse(name: &str) -> Result<Scheme, String> {
        let lower = name.trim().to_ascii_lowercase();
        BASELINE_SCHEMES
            .iter()
            .find(|s| s.0 == lower)
            .map(|&(n, _, recovery, cc)| Scheme {
                name: n.to_string(),
                recovery,
                cc,
            })
            .ok_or_else(|| {
                let known: Vec<&str> = BASELINE_SCHEMES.iter().map(|s| s.0).collect();
                format!("unknown scheme '{name}' (known: {})", known.join(", "))
            })
    }

    /// True if the scheme negotiates and uses SACK blocks.
    pub fn uses_sack(&self) -> bool {
        self.recovery == Recovery::Sack
    }
}

/// Everything a connection needs to know up front. Defaults follow ns-2.35 and the RFCs;
/// `docs/defaults.md` explains each choice.
#[derive(Debug, Clone)]
pub struct Config {
    /// Largest payload per segment, bytes.
    pub mss: u16,
    /// Initial congestion window, segments.
    pub initial_window: u32,
    /// Lower bound of the RTO (RFC 6298 says 1 s; ns-2 and Linux use 200 ms).
    pub min_rto: Duration,
    /// Upper bound of the RTO.
    pub max_rto: Duration,
    /// RTO before any RTT sample (RFC 6298: 1 s).
    pub initial_rto: Duration,
    /// RFC 6298 clock granularity G.
    pub clock_granularity: Duration,
    /// Acknowledge every second full segment (or after `delayed_ack_timeout`).
    pub delayed_ack: bool,
    /// Longest an ACK may be delayed.
    pub delayed_ack_timeout: Duration,
    /// Receive buffer, bytes: the largest window this side advertises.
    pub recv_window: u32,
    /// Send buffer, bytes: how much unacknowledged plus unsent data `write` accepts.
    pub send_buffer: usize,
    /// Duplicate ACKs (or SACKed segments above a hole) that signal a loss.
    pub dupthresh: u32,
    /// SACK blocks per ACK (RFC 2018 allows 3 with timestamps).
    pub max_sack_blocks: usize,
    /// SYN / SYN-ACK transmissions before the handshake fails.
    pub syn_retries: u32,
    /// Congestion control and loss recovery.
    pub scheme: Scheme,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mss: 1460,
            initial_window: 2,
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            clock_granularity: Duration::from_millis(1),
            delayed_ack: false,
            delayed_ack_timeout: Duration::from_millis(100),
            recv_window: 64 << 20,
            send_buffer: 4 << 20,
            dupthresh: 3,
            max_sack_blocks: 3,
            syn_retries: 6,
            scheme: Scheme::parse("sack").expect("built-in scheme"),
        }
    }
}
