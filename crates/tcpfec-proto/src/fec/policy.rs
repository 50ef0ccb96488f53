//! How big FEC groups are and how the receiver treats gaps: the Sato schemes S1–S6.

/// How the sender sizes its groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GroupPolicy {
    /// S2: a fixed group size.
    Static(u16),
    /// S1: group size = cwnd − offset, read when a group opens (at least 1).
    Cwnd {
        /// Segments subtracted from cwnd (1 in the dissertation's ch. 4).
        offset: u16,
    },
    /// S3: group size = min(cwnd − 1, fmax).
    Fmax(u16),
    /// S6: `groups` groups open at once, members assigned round-robin; size =
    /// min(⌊cwnd / groups⌋, limit) (limit 0 = none); one group when cwnd < 2·groups.
    Interleave {
        /// Interleaving depth g.
        groups: u16,
        /// Size limit l (0 = no limit).
        limit: u16,
    },
}

impl GroupPolicy {
    /// (members per group, number of interleaved groups) for a group opened at `cwnd`.
    pub fn shape(&self, cwnd: f64) -> (u16, u16) {
        let w = cwnd.floor().max(1.0) as u32;
        let clamp = |x: u32| x.clamp(1, u16::MAX as u32) as u16;
        match *self {
            GroupPolicy::Static(n) => (n.max(1), 1),
            GroupPolicy::Cwnd { offset } => (clamp(w.saturating_sub(offset as u32)), 1),
            GroupPolicy::Fmax(fmax) => (clamp(w.saturating_sub(1).min(fmax as u32)), 1),
            GroupPolicy::Interleave { groups, limit } => {
                let g = groups.max(1) as u32;
                let g = if w < 2 * g { 1 } else { g };
                let mut n = w / g;
                if limit > 0 {
                    n = n.min(limit as u32);
                }
                (clamp(n), g as u16)
            }
        }
    }
}

/// FEC settings of a scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FecConfig {
    /// Group sizing.
    pub policy: GroupPolicy,
    /// S4: withhold duplicate ACKs while every gap can still be repaired.
    pub suppress_dupacks: bool,
    /// S5: on recovery the receiver sets ECN-Echo and the sender multiplies cwnd by this
    /// factor (at most once per window). `None`: recovered losses are not signalled.
    pub ecn_factor: Option<f64>,
    /// Repair packets per group: 1 = XOR, M > 1 = Reed-Solomon (K+M, K).
    pub repairs: u8,
    /// Close the open groups when the window stops the sender and no ACK has come for
    /// this share of the smoothed round trip (the end of a stalled flight), not only when
    /// a group fills or data runs out. Without it a block larger than the window never
    /// completes while the receiver withholds duplicate ACKs, and every loss in it waits
    /// for the retransmission timer. Anker's and Teshima's schemes wait half a round trip;
    /// `auto` an eighth, since a loss in the flight waits that long for its repair (in
    /// a running ACK clock the gap between ACKs is a packet time, far below either).
    /// Sato's schemes size groups from cwnd and keep this off (`None`), as the
    /// dissertation describes them.
    pub flush_at_flight_end: Option<f64>,
    /// Once the stream has ended (FIN queued), close the open group right after its last
    /// member instead of half a round trip later: nothing more can join it, and a loss at
    /// the transfer's tail is repaired sooner. `auto` only; the seed schemes keep the wait
    /// their papers' reproductions were made with.
    pub close_at_stream_end: bool,
    /// Send the cumulative ACK that follows a repair twice. With duplicate-ACK suppression
    /// that ACK may acknowledge a whole window at once; if it is lost the sender, its
    /// window full, waits for the retransmission timer (12 timeouts a minute at 1 % ACK
    /// loss and 10 % data loss before this). Off for Sato's schemes, as described.
    pub repeat_recovery_ack: bool,
    /// Protect retransmissions too: consecutive retransmissions of consecutive segments
    /// form groups of their own, with their own repairs, and the receiver counts a
    /// segment in every group that holds it. Sato §3.2: "The retransmitted packets are
    /// handled in the same manner as the original packets". Sato's schemes give every
    /// group a block's repairs; `auto` sizes them to its failure target (`AutoControl`).
    pub protect_retransmissions: bool,
    /// When suppression is released (a gap can no longer be repaired), send the withheld
    /// duplicate ACKs with the one that released it, up to DupThresh in all, so a sender
    /// counting duplicates retransmits at once. Sato's NewReno-based schemes only: the
    /// other schemes detect loss from SACK blocks, where a replay adds no information, and
    /// with `anker-16-3-bbr1` at 5 % loss it cut one 30 s run from 37.7 to 4.9 Mb/s.
    pub replay_withheld_dupacks: bool,
    /// When suppression is released, the ACKs that go out report every run of arrivals
    /// the withheld duplicate ACKs would have, lowest first (`Receiver`). Without them a
    /// SACK sender takes every run it never heard of for lost once the failed group's
    /// holes are. `auto` only: the seed schemes keep what their papers describe.
    pub replay_withheld_runs: bool,
    /// A repair that rebuilds nothing because its group lost nothing (or was rebuilt
    /// already) sends no ACK. Otherwise, while a gap waits for its retransmission, every
    /// such repair sent a duplicate ACK that counted towards a fast retransmit: under
    /// `auto`, whose retransmissions are followed by their own repairs, that cost 2 % of
    /// the goodput at 50 Mb/s / RTT 20 ms / 1 % loss. `auto` only: the seed schemes keep
    /// the behaviour their reproductions were made with.
    pub quiet_surplus_repairs: bool,
    /// Repair on time for streams: while the application limits the sender, repairs
    /// leave by time (a share of the delay budget after a packet) rather than by count
    /// (`auto` only; docs/design/on-time.md).
    pub stream: Option<StreamRepair>,
    /// A redundancy controller that changes the groups during the connection.
    pub adaptive: Option<Adaptive>,
}

impl FecConfig {
    /// Whether packets carry transmission numbers and the receiver reports loss runs.
    pub fn measures_loss_runs(&self) -> bool {
        self.adaptive.is_some_and(|a| a.measures_loss_runs())
    }

    /// Whether duplicate ACKs are withheld only where the queue is full, and the sender
    /// waits for a block's repairs before it counts them (`auto`:
    /// `AutoParams::hold_only_at_full_queue`).
    pub fn holds_only_at_full_queue(&self) -> bool {
        matches!(self.adaptive, Some(Adaptive::Auto(p)) if p.hold_only_at_full_queue)
    }
}

/// How a stream's repairs are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCode {
    /// Repairs of the sliding-window code over the packets of the last two intervals
    /// (`fec::stream`, `fec::window`).
    Window,
    /// Blocks of the bulk code closed early: a stream's open block closes when the wait
    /// is over, however few members it has.
    Blocks,
}

/// Repair on time for streams.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamRepair {
    /// The code.
    pub code: StreamCode,
    /// How long a packet waits for its repair at most, as a share of the delay budget
    /// (`Sender::delay_budget`).
    pub wait_share: f64,
}

/// The adaptive redundancy controllers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Adaptive {
    /// TCP-dFEC (Ferlin F2–F3): FEC-aware cwnd rules and an XOR group size steered toward
    /// a target residual loss rate.
    Dfec(DynamicFec),
    /// TCP-AFEC (Teshima T2): a Reed-Solomon redundancy level moved by losses and drop
    /// timers.
    Afec(super::afec::AfecParams),
    /// TCP-TFEC (Teshima T3): redundancy read from a calibration table at the measured
    /// loss rate.
    Tfec(super::tfec::TfecParams),
    /// `auto`: Reed-Solomon blocks sized from the measured channel to a block-failure
    /// target (docs/design/auto.md).
    Auto(super::auto::AutoParams),
}

impl Adaptive {
    /// Whether the receiver must report its counters on every ACK.
    pub fn needs_feedback(&self) -> bool {
        matches!(
            self,
            Adaptive::Dfec(_) | Adaptive::Tfec(_) | Adaptive::Auto(_)
        )
    }

    /// Whether packets carry transmission numbers and the receiver reports loss runs.
    pub fn measures_loss_runs(&self) -> bool {
        matches!(self, Adaptive::Auto(_))
    }
}

/// TCP-dFEC settings (Ferlin, seed 003). The slides give the rules, not the numbers; the
/// defaults are our choices (docs/design/fec.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DynamicFec {
    /// Residual loss rate (losses FEC did not repair, per data packet) to steer toward.
    pub target_residual: f64,
    /// Relative step δ of the FEC ratio per period.
    pub step: f64,
    /// Period T, in data packets sent.
    pub period: u32,
    /// Largest XOR group (smallest ratio 1/max_group).
    pub max_group: u16,
}

impl Default for DynamicFec {
    fn default() -> Self {
        DynamicFec {
            target_residual: 0.005,
            step: 0.25,
            period: 100,
            max_group: 16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_the_dissertation() {
        assert_eq!(GroupPolicy::Static(10).shape(100.0), (10, 1));
        assert_eq!(GroupPolicy::Cwnd { offset: 1 }.shape(20.7), (19, 1));
        assert_eq!(GroupPolicy::Cwnd { offset: 1 }.shape(1.0), (1, 1));
        assert_eq!(GroupPolicy::Fmax(10).shape(100.0), (10, 1));
        assert_eq!(GroupPolicy::Fmax(10).shape(6.0), (5, 1));
        let il = GroupPolicy::Interleave {
            groups: 3,
            limit: 30,
        };
        assert_eq!(il.shape(300.0), (30, 3));
        assert_eq!(il.shape(30.0), (10, 3));
        // cwnd < 2g: no interleaving.
        assert_eq!(il.shape(5.0), (5, 1));
        assert_eq!(
            GroupPolicy::Interleave {
                groups: 2,
                limit: 0
            }
            .shape(41.0),
            (20, 2)
        );
    }
}
