//! The adaptive redundancy controllers behind one interface, so the sender only forwards
//! events and applies what comes back: TCP-dFEC's ratio control and cwnd rules, TCP-AFEC's
//! state machine and TCP-TFEC's loss-rate table.

use super::afec::AfecControl;
use super::auto::AutoControl;
use super::dfec::RatioControl;
use super::policy::{Adaptive, GroupPolicy};
use super::tfec::TfecControl;
use crate::time::Instant;
use crate::wire::FecFeedback;
use core::time::Duration;

/// What the peer's FEC counters changed by since the last ACK.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FeedbackDelta {
    pub recovered: u32,
    pub failed: u32,
    pub repairs_lost: u32,
}

/// The sender's running totals the controllers read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SenderTotals {
    pub data_sent: u64,
    pub retransmitted: u64,
    /// Data and repair packets sent.
    pub packets_sent: u64,
    /// Data and repair packets the receiver reported received.
    pub peer_received: u64,
    /// Congestion window, packets.
    pub cwnd: f64,
    /// While the application limits the sender (a stream): the packets it sends within
    /// the time an open block may wait for its repairs, which bounds the block.
    pub stream_block: Option<usize>,
}

/// What the sender must do after an event.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Reaction {
    /// Segments to add to cwnd.
    pub grow: f64,
    /// Halve cwnd (once per window).
    pub halve: bool,
    /// New group sizing for the next group.
    pub policy: Option<GroupPolicy>,
    /// New repair count for the next block.
    pub repairs: Option<u8>,
}

/// One adaptive controller.
#[derive(Debug, Clone)]
pub(crate) enum Controller {
    Dfec(RatioControl),
    Afec(AfecControl),
    Tfec(TfecControl),
    Auto(AutoControl),
}

impl Controller {
    pub fn new(a: Adaptive) -> Self {
        match a {
            Adaptive::Dfec(p) => Controller::Dfec(RatioControl::new(p)),
            Adaptive::Afec(p) => Controller::Afec(AfecControl::new(p)),
            Adaptive::Tfec(p) => Controller::Tfec(TfecControl::new(p)),
            Adaptive::Auto(p) => Controller::Auto(AutoControl::new(p)),
        }
    }

    /// Repairs per block to start with (Reed-Solomon controllers).
    pub fn initial_repairs(&self) -> Option<u8> {
        match self {
            Controller::Dfec(_) => None,
            Controller::Afec(a) => Some(a.repairs()),
            Controller::Tfec(t) => Some(t.repairs()),
            Controller::Auto(a) => Some(a.code().m as u8),
        }
    }

    /// The `auto` controller, for its estimate and code.
    pub fn as_auto(&self) -> Option<&AutoControl> {
        match self {
            Controller::Auto(a) => Some(a),
            _ => None,
        }
    }

    /// An ACK carried the receiver's counters (`fb`, and `d` their change).
    pub fn on_feedback(
        &mut self,
        now: Instant,
        fb: FecFeedback,
        d: FeedbackDelta,
        totals: SenderTotals,
        in_recovery: bool,
    ) -> Reaction {
        match self {
            Controller::Dfec(rc) => Reaction {
                // F2: +1 per segment FEC rebuilt; /2 when FEC failed or a repair was lost.
                grow: if in_recovery { 0.0 } else { d.recovered as f64 },
                halve: d.failed + d.repairs_lost > 0,
                policy: rc
                    .on_progress(totals.data_sent, totals.retransmitted)
                    .map(GroupPolicy::Static),
                repairs: None,
            },
            Controller::Tfec(t) => Reaction {
                repairs: t.on_ack(now, totals.packets_sent, totals.peer_received),
                ..Reaction::default()
            },
            Controller::Afec(_) => Reaction::default(),
            Controller::Auto(a) => {
                match a.on_feedback_bounded(fb, totals.cwnd, totals.stream_block) {
                    // The code sizes every block from here on (the sizing caps M at 254).
                    Some(code) => Reaction {
                        policy: Some(GroupPolicy::Static(code.k as u16)),
                        repairs: Some(code.m as u8),
                        ..Reaction::default()
                    },
                    None => Reaction::default(),
                }
            }
        }
    }

    /// The sender detected a loss FEC did not repair. `w_app`: target window, packets.
    pub fn on_loss(&mut self, now: Instant, cwnd: f64, w_app: Option<f64>) -> Option<u8> {
        match self {
            Controller::Afec(a) => {
                a.on_loss(now, cwnd, w_app);
                Some(a.repairs())
            }
            _ => None,
        }
    }

    /// New data went out (starts AFEC's timers).
    pub fn on_send(&mut self, now: Instant, rtt: Duration) {
        if let Controller::Afec(a) = self {
            a.start(now, rtt);
        }
    }

    /// The controller's own timer, if any.
    pub fn deadline(&self) -> Option<Instant> {
        match self {
            Controller::Afec(a) => a.deadline(),
            _ => None,
        }
    }

    /// Handles the controller's timers due at `now`; returns the repair count after them.
    pub fn on_timer(&mut self, now: Instant, cwnd: f64, rtt: Duration) -> Option<u8> {
        match self {
            Controller::Afec(a) => {
                a.on_timer(now, cwnd, rtt);
                Some(a.repairs())
            }
            _ => None,
        }
    }

    /// With a target rate: the window that carries the target, repairs included (Teshima
    /// eq. 6, window = target_bw × rtt × red), in packets. TCP-TFEC's rule; TCP-AFEC, a
    /// rate-guaranteeing TCP too, gets the same cap (choice: the paper does not give its
    /// window rule beyond W_app).
    pub fn window_cap(&self, target_bps: u64, rtt: Duration, mss: usize) -> Option<f64> {
        let (repairs, block) = match self {
            Controller::Tfec(t) => (t.repairs(), t.block()),
            Controller::Afec(a) => (a.repairs(), a.block()),
            Controller::Dfec(_) | Controller::Auto(_) => return None,
        };
        let red = 1.0 + repairs as f64 / block as f64;
        Some(target_bps as f64 * rtt.as_secs_f64() * red / (8.0 * mss as f64))
    }
}
