//! Results of a run (SPEC C6 metrics that apply to plain TCP), per flow and aggregated.

use serde::Serialize;
pub use tcpfec_channel::DelaySummary;

/// What one flow achieved over the measurement window.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FlowResult {
    /// Application bytes delivered in the window / window length, Mb/s.
    pub goodput_mbps: f64,
    /// Data-packet bytes (headers, retransmissions and duplicates included) reaching the
    /// receiver in the window / window length, Mb/s.
    pub throughput_mbps: f64,
    /// Retransmitted / all data packets sent, in the window.
    pub retransmission_rate: f64,
    /// Data packets dropped (queue or random loss) / data packets sent, in the window.
    pub data_loss_rate: f64,
    /// Fast retransmit / fast recovery entries in the window.
    pub fast_recoveries: u64,
    /// Retransmission timeouts in the window.
    pub timeouts: u64,
    /// Data packets sent in the window.
    pub data_packets_sent: u64,
    /// Application bytes delivered over the whole run.
    pub bytes_delivered: u64,
    /// Seconds from the flow's start to its last byte delivered (finite transfers).
    pub completion_time_s: Option<f64>,
    /// Mean RTT sample over the whole run, ms.
    pub mean_rtt_ms: Option<f64>,
    /// RTO at the end of the run, ms.
    pub final_rto_ms: f64,
    /// Repair packets sent in the window.
    pub repairs_sent: u64,
    /// Segments rebuilt by FEC in the window.
    pub recovered_packets: u64,
    /// Groups with a loss FEC could not repair, in the window.
    pub unrecoverable_groups: u64,
    /// Duplicate ACKs withheld by the receiver (S4), in the window.
    pub dupacks_suppressed: u64,
    /// Repair / (repair + data) packets sent, in the window.
    pub redundancy_rate: f64,
    /// Recovered segments / repair packets sent, in the window.
    pub effective_recovery_rate: f64,
    /// Delay jitter: mean gap between successive deliveries to the application, ms,
    /// in the window (Teshima, Tables 2-4).
    pub jitter_mean_ms: f64,
    /// Standard deviation of those gaps, ms.
    pub jitter_std_ms: f64,
    /// Delivery delay in the window: time from the application's write of a byte to its
    /// in-order read, percentiles over the bytes read (a request/response flow: over its
    /// exchanges, from the request's write to the response's last byte read). `None` if
    /// nothing was read.
    pub delay: Option<DelaySummary>,
    /// One-way propagation delay of the flow's path, ms: the floor of its delivery delay
    /// (a request/response exchange's floor is twice it).
    pub one_way_delay_ms: f64,
    /// How the flow's Careful Resume ended (`ResumeStatus::as_str`); `None` for a flow
    /// started normally.
    pub resume: Option<&'static str>,
}

/// Everything a run reports.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RunResult {
    /// Sum of the flows' goodput, Mb/s.
    pub goodput_mbps: f64,
    /// Sum of the flows' throughput, Mb/s.
    pub throughput_mbps: f64,
    /// Per-flow results.
    pub flows: Vec<FlowResult>,
    /// Retransmitted / sent data packets, all flows.
    pub retransmission_rate: f64,
    /// Dropped / sent data packets, all flows.
    pub data_loss_rate: f64,
    /// Repair / (repair + data) packets sent, all flows.
    pub redundancy_rate: f64,
    /// Recovered segments / repair packets sent, all flows.
    pub effective_recovery_rate: f64,
    /// Segments rebuilt by FEC, all flows.
    pub recovered_packets: u64,
    /// Groups with a loss FEC could not repair, all flows.
    pub unrecoverable_groups: u64,
    /// Fast recoveries, all flows.
    pub fast_recoveries: u64,
    /// Timeouts, all flows.
    pub timeouts: u64,
    /// Mean completion time of the flows that completed (finite transfers).
    pub completion_time_s: Option<f64>,
    /// Flows of a finite transfer that did not complete within the run.
    pub incomplete_flows: u32,
    /// Jain's fairness index over the flows' goodput.
    pub jain_fairness: f64,
    /// Goodput of the background flows, summed, Mb/s.
    pub background_goodput_mbps: f64,
    /// Delay jitter over all flows' deliveries in the window: mean gap, ms.
    pub jitter_mean_ms: f64,
    /// Standard deviation of those gaps, ms.
    pub jitter_std_ms: f64,
    /// Delivery delay over all flows' bytes (or exchanges) in the window.
    pub delay: Option<DelaySummary>,
    /// One-way propagation delay of the flows' paths, ms (their mean).
    pub one_way_delay_ms: f64,
    /// Each flow's delivery-delay distribution in the window: (ms, share at or below).
    #[serde(skip)]
    pub delay_cdf: Vec<Vec<(f64, f64)>>,
    /// Events processed.
    pub events: u64,
    /// Data packets sent by all senders over the whole run.
    pub data_packets: u64,
    /// Every packet both ends of all flows sent over the whole run: data, repair, ACK and
    /// control packets (Anker's overhead ratio, Fig. 5).
    pub packets_total: u64,
    /// Bytes that differed from what was written (only counted with data verification).
    pub corrupt_bytes: u64,
    /// Time series of each flow's cwnd in segments: (seconds, cwnd).
    #[serde(skip)]
    pub cwnd_series: Vec<Vec<(f64, f64)>>,
    /// Time series of each flow's FEC group size: (seconds, segments).
    #[serde(skip)]
    pub group_size_series: Vec<Vec<(f64, f64)>>,
    /// Time series of each flow's `auto` controller: (seconds, [estimated loss rate,
    /// estimated mean burst in packets, data packets K and repairs M per block]); zeros
    /// for other schemes.
    #[serde(skip)]
    pub auto_series: Vec<Vec<(f64, [f64; 4])>>,
    /// Time series of each flow's application bytes delivered so far: (seconds, bytes).
    #[serde(skip)]
    pub delivered_series: Vec<Vec<(f64, f64)>>,
    /// Time series of each flow's FEC redundancy (K + k)/K.
    #[serde(skip)]
    pub redundancy_series: Vec<Vec<(f64, f64)>>,
    /// Time series of each flow's latest delivery-rate sample, Mb/s of payload (0 before
    /// the first sample).
    #[serde(skip)]
    pub delivery_rate_series: Vec<Vec<(f64, f64)>>,
}

/// Mean and sample standard deviation (n − 1); NaN for no values, sd 0 for one.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// Jain's fairness index (Σx)² / (n Σx²); 1 when all equal.
pub fn jain(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    let sq: f64 = values.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        1.0
    } else {
        sum * sum / (values.len() as f64 * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_single_taker() {
        assert!((jain(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[20.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
    }
}
