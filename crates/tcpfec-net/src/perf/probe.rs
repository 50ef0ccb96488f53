//! Counters of one data connection, read the same way whether it is a tcpfec connection
//! (the engine's [`tcpfec_proto::Stats`]) or a kernel TCP socket (`TCP_INFO`).

use crate::stream::Watch;
use serde::{Deserialize, Serialize};

/// A snapshot of one connection's counters. Cumulative fields only grow; a field the
/// transport does not have stays 0 (`None` for gauges).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Application bytes the peer acknowledged (sender side).
    pub bytes_acked: u64,
    /// Data segments sent again.
    pub retransmits: u64,
    /// FEC repair packets sent.
    pub repairs_sent: u64,
    /// Segments rebuilt from repair packets (receiver side).
    pub recovered: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: Option<u64>,
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<u64>,
    /// Pacing rate, bits per second.
    pub pacing_bps: Option<f64>,
}

/// Where a [`Sample`] comes from.
pub enum Probe {
    /// A tcpfec connection.
    Tcpfec(Watch),
    /// A kernel TCP socket (a duplicate of its descriptor, so the probe outlives nothing).
    #[cfg(target_os = "linux")]
    Kernel(std::os::fd::OwnedFd),
    /// Nothing to read.
    None,
}

impl Probe {
    /// The connection's counters now.
    pub fn sample(&self) -> Sample {
        match self {
            Probe::Tcpfec(w) => {
                let (s, cwnd, pacing, mss) = w.stats_and_window();
                Sample {
                    bytes_acked: s.bytes_acked,
                    retransmits: s.retransmissions,
                    repairs_sent: s.repairs_sent,
                    recovered: s.recovered,
                    timeouts: s.timeouts,
                    rtt_us: s.srtt.map(|d| d.as_micros() as u64),
                    cwnd_bytes: cwnd.map(|c| (c * mss as f64) as u64),
                    pacing_bps: pacing.map(|p| p * 8.0),
                }
            }
            #[cfg(target_os = "linux")]
            Probe::Kernel(fd) => super::kernel_tcp::sample(fd).unwrap_or_default(),
            Probe::None => Sample::default(),
        }
    }
}
