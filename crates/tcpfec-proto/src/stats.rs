//! Per-connection counters (SPEC C6), cheap to copy out at any time.

use core::time::Duration;

/// Counters of one connection. Sender-side fields count this endpoint's data direction,
/// receiver-side fields the peer's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Data segments sent, first transmissions and retransmissions (FIN included).
    pub data_packets_sent: u64,
    /// Of those, retransmissions.
    pub retransmissions: u64,
    /// Payload bytes sent, retransmissions included.
    pub payload_bytes_sent: u64,
    /// Application bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Pure acknowledgements sent.
    pub acks_sent: u64,
    /// Entries into fast retransmit / fast recovery.
    pub fast_recoveries: u64,
    /// Retransmission timeouts that fired with data outstanding.
    pub timeouts: u64,
    /// Tail loss probes sent (schemes with `tail_loss_probe`).
    pub tail_loss_probes: u64,
    /// Window reductions caused by ECN-Echo.
    pub ecn_reductions: u64,
    /// Duplicate ACKs received.
    pub dup_acks_received: u64,
    /// Data segments received (duplicates included).
    pub segments_received: u64,
    /// Data segments received that had already arrived.
    pub duplicate_segments: u64,
    /// Application bytes delivered in order to the reader's buffer.
    pub bytes_delivered: u64,
    /// Repair packets sent.
    pub repairs_sent: u64,
    /// Repair packets received.
    pub repairs_received: u64,
    /// Repair packets received for groups that had lost nothing (discarded).
    pub repairs_unneeded: u64,
    /// Segments rebuilt from repair packets.
    pub recovered: u64,
    /// Groups with a loss that FEC could not repair (two losses, or the repair lost).
    pub unrecoverable_groups: u64,
    /// Duplicate ACKs withheld while a gap could still be repaired (S4).
    pub dupacks_suppressed: u64,
    /// Smoothed RTT at the time of the snapshot.
    pub srtt: Option<Duration>,
    /// Mean of all RTT samples.
    pub mean_rtt: Option<Duration>,
    /// Current RTO.
    pub rto: Duration,
    /// Latest delivery-rate sample, payload bytes per second (`None` before the first).
    pub delivery_rate: Option<f64>,
    /// Careful Resume: where the connection's resume is, or how it ended.
    pub resume: crate::resume::ResumeStatus,
}
