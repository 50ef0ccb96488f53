//! Careful Resume (RFC 9959, draft-ietf-tsvwg-careful-resume): a connection to a peer
//! seen before starts at a paced half of the path's saved capacity instead of probing
//! up from the initial window, and retreats to half of what it has validated if the jump
//! meets congestion.
//!
//! The phases are the RFC's (§3): Reconnaissance until an RTT sample confirms the path,
//! Unvalidated while the jump is paced out, Validating until the jump's last packet is
//! acknowledged, then normal congestion control; Safe Retreat on a loss or a delay
//! increase during the jump. One deviation, recorded in `docs/design/fast-start.md`: the
//! handshake is the reconnaissance round. Its round-trip sample confirms the path's RTT
//! and that the peer answers, so the jump may start with the first data rather than one
//! round trip later; without a handshake sample the first ACK of the initial window
//! confirms the path, as in the RFC.
//!
//! The state machine works on any congestion controller: the sender raises the window to
//! `CarefulResume::cwnd_floor`, lowers it to `CarefulResume::cwnd_cap`, and paces at
//! `CarefulResume::pacing_rate` while they are set.

use crate::time::Instant;
use core::time::Duration;

/// What a connection learnt about its path, to start the next one to the same peer
/// (RFC 9959's saved_cwnd, as a rate, and saved_rtt).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SavedPath {
    /// Delivery rate the path sustained, payload bytes per second.
    pub rate: f64,
    /// The path's minimum round-trip time.
    pub min_rtt: Duration,
}

impl SavedPath {
    /// The saved capacity, bytes: rate × minimum RTT (RFC 9959's saved_cwnd).
    pub fn bdp_bytes(&self) -> f64 {
        self.rate * self.min_rtt.as_secs_f64()
    }
}

/// Where a resumed connection is (RFC 9959 §3), or how its resume ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResumeStatus {
    /// No saved path: a normal start.
    #[default]
    Off,
    /// Waiting for an RTT sample to confirm the path.
    Reconnaissance,
    /// The jump is being paced out.
    Unvalidated,
    /// Waiting for the jump's last packet to be acknowledged.
    Validating,
    /// The jump met congestion: the window is held at half the validated pipe.
    SafeRetreat,
    /// The jump was validated: normal congestion control from the window it reached.
    Completed,
    /// The jump met congestion and the retreat has ended.
    Retreated,
    /// The current RTT lay outside (saved/2, 10 × saved]: the path changed, no jump.
    RttNotValidated,
    /// The jump would not exceed the window the connection already had.
    NothingToGain,
    /// The application did not fill the jump: the window is what it used.
    RateLimited,
    /// A retransmission timeout ended the resume.
    Timeout,
}

impl ResumeStatus {
    /// The status as one word for logs, JSON and CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            ResumeStatus::Off => "off",
            ResumeStatus::Reconnaissance => "reconnaissance",
            ResumeStatus::Unvalidated => "unvalidated",
            ResumeStatus::Validating => "validating",
            ResumeStatus::SafeRetreat => "safe_retreat",
            ResumeStatus::Completed => "completed",
            ResumeStatus::Retreated => "retreated",
            ResumeStatus::RttNotValidated => "rtt_not_validated",
            ResumeStatus::NothingToGain => "nothing_to_gain",
            ResumeStatus::RateLimited => "rate_limited",
            ResumeStatus::Timeout => "timeout",
        }
    }

    /// True once the resume has ended, one way or another.
    pub fn is_over(self) -> bool {
        !matches!(
            self,
            ResumeStatus::Reconnaissance
                | ResumeStatus::Unvalidated
                | ResumeStatus::Validating
                | ResumeStatus::SafeRetreat
        )
    }
}

impl core::fmt::Display for ResumeStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The share of the saved capacity the jump takes (RFC 9959 §4.3: at most half).
const JUMP_SHARE: f64 = 0.5;

/// The RTT check (RFC 9959 §4.2.1): a current RTT at or below saved/`RTT_LOW` or above
/// `RTT_HIGH` × saved means a different path.
const RTT_LOW: f64 = 2.0;
const RTT_HIGH: f64 = 10.0;

/// Controllers that model the path take a loss in the jump as congestion only beyond
/// this share of the jump's bytes, plus [`LOSS_SLACK_PACKETS`]. They are built to ignore
/// random loss, and while `auto`'s FEC has not yet measured the channel, a 5 % loss path
/// leaves about 6 % of the first round unrepaired, above BBRv3's 2 % threshold. A jump
/// into a queue that cannot hold it
/// shows the queue's delay first (`delay_limit`), and one that overflows it loses a fifth
/// of its packets or more. Window rules take any loss as congestion, as RFC 9959 does.
const LOSS_THRESH: f64 = 0.10;
const LOSS_SLACK_PACKETS: f64 = 3.0;
/// Controllers that model the path judge the jump's loss rate only once this share of
/// the jump has been acknowledged or lost. The first packets of a jump meet an empty
/// queue, so their losses are the channel's; a channel that loses four of a jump's
/// first nine packets (a Gilbert–Elliott channel of 1 % in bursts of two did) otherwise
/// retreated a jump that had all the room it needed. A jump that overflows a queue
/// shows the queue's delay first, or loses a fifth of its packets and more.
const LOSS_SAMPLE_SHARE: f64 = 0.25;

/// ssthresh on leaving Safe Retreat, as a share of the pipe validated (RFC 9959 §4.5,
/// Beta's default).
const RETREAT_BETA: f64 = 0.5;

/// Round trips in a row that must exceed the delay limit (`CarefulResume::delay_limit`,
/// HyStart++'s N_RTT_SAMPLE, RFC 9406 §4.3): one packet rebuilt from a repair is
/// acknowledged late, and at 5 % random loss single late samples retreated jumps on
/// paths with room to spare.
const DELAY_SAMPLES: u32 = crate::cc::hystart_pp::N_RTT_SAMPLE;

/// What the sender must do to its congestion controller after an ACK.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ResumeAction {
    /// Nothing.
    None,
    /// The jump is validated (or was not filled): the controller's window is at least
    /// this many bytes from now on.
    Settle { cwnd_bytes: f64 },
    /// The jump is validated: as `Settle`, and the ACKs of the jump came back at
    /// `delivery_rate` bytes per second, a rate the path has carried. The delivery-rate
    /// samples of the jump's packets say less: sent into an empty pipe, each spans the
    /// round trip before the first ACK as well.
    Validated { cwnd_bytes: f64, delivery_rate: f64 },
    /// The jump met congestion: the controller leaves its start-up (a BBR enters Drain).
    /// `queue` if a queue's delay showed it, not loss alone.
    Retreat { queue: bool },
    /// The retreat ended: a window rule restarts with this window, bytes, as its
    /// window and its slow-start threshold (a BBR keeps its model).
    EndRetreat { window_bytes: f64 },
    /// In the round after a validated jump, the queue grew: a window rule's slow start
    /// ends here (HyStart++'s delay exit, once).
    EndSlowStart,
}

/// Careful Resume for one connection (see the module documentation).
#[derive(Debug, Clone)]
pub(crate) struct CarefulResume {
    saved: SavedPath,
    status: ResumeStatus,
    /// The window before any resume, bytes (the initial window).
    initial_bytes: f64,
    /// The jump, bytes.
    jump: f64,
    /// The rate the jump is paced at: the jump over the current RTT, bytes per second.
    jump_rate: f64,
    /// The RTT sample that confirmed the path.
    current_rtt: Duration,
    /// When the jump began.
    entered: Instant,
    /// RFC 9959's PipeSize: bytes in flight at the jump plus every byte acknowledged since.
    pipe: f64,
    /// Send order (`crate::rate::TxState::order`) of the first packet of the jump: send
    /// orders number every packet, as QUIC's packet numbers do, so a retransmission's ACK
    /// is not taken for the original's.
    first_unvalidated: u64,
    /// Send order of the jump's last packet (known once Unvalidated ends).
    last_unvalidated: u64,
    /// Validating: the flight on entering it, the window's floor as it started.
    validating_base: f64,
    /// Validating: bytes acknowledged since entering it (the floor grows as slow start).
    validating_acked: f64,
    /// Validating: when its first ACK arrived and the bytes acknowledged by then (the
    /// ACK rate is measured from there).
    validating_since: Option<(Instant, f64)>,
    /// Safe Retreat: the window's cap, bytes.
    retreat_cap: f64,
    /// Completed: the slow start or start-up that follows the jump is watched. A queue
    /// (or a loss) ends a window rule's slow start; a path model is watched until the
    /// sender stops it (`stop_watching`).
    watching: bool,
    /// Bytes declared lost when the jump was validated.
    lost_at_completion: u64,
    /// Bytes declared lost when the jump began.
    lost_at_jump: u64,
    /// Round-trip samples in a row above the delay limit.
    late_samples: u32,
    /// `PipeSize` when the jump began.
    pipe_at_jump: f64,
    /// The share of the jump's bytes that may be lost before it counts as congestion
    /// (see [`LOSS_THRESH`]); zero for window rules.
    loss_tolerance: f64,
    /// Segment size, bytes.
    mss: f64,
}

impl CarefulResume {
    /// A connection with a saved path, an initial window of `initial_bytes` and
    /// segments of `mss` bytes; `models_path` for controllers built to ignore random
    /// loss (see [`LOSS_THRESH`]).
    pub(crate) fn new(saved: SavedPath, initial_bytes: f64, mss: f64, models_path: bool) -> Self {
        CarefulResume {
            saved,
            status: ResumeStatus::Reconnaissance,
            initial_bytes,
            jump: 0.0,
            jump_rate: 0.0,
            current_rtt: Duration::ZERO,
            entered: Instant::ZERO,
            pipe: 0.0,
            first_unvalidated: 0,
            last_unvalidated: 0,
            validating_base: 0.0,
            validating_acked: 0.0,
            validating_since: None,
            retreat_cap: 0.0,
            watching: false,
            lost_at_completion: 0,
            lost_at_jump: 0,
            late_samples: 0,
            pipe_at_jump: 0.0,
            loss_tolerance: if models_path { LOSS_THRESH } else { 0.0 },
            mss,
        }
    }

    /// Where the resume is.
    pub(crate) fn status(&self) -> ResumeStatus {
        self.status
    }

    /// True once the jump has gone out (whatever became of it since).
    pub(crate) fn jumped(&self) -> bool {
        self.jump > 0.0
    }

    /// True for a controller that models the path (BBR, `auto`): the one kind that
    /// tolerates loss in the jump.
    fn models_path(&self) -> bool {
        self.loss_tolerance > 0.0
    }

    /// The saved delivery rate, payload bytes per second.
    pub(crate) fn saved_rate(&self) -> f64 {
        self.saved.rate
    }

    /// After a validated jump, until the slow start or start-up that follows it ends.
    pub(crate) fn watching(&self) -> bool {
        self.watching
    }

    /// The saved capacity, bytes (saved rate × saved minimum RTT).
    pub(crate) fn saved_bdp(&self) -> f64 {
        self.saved.bdp_bytes()
    }

    /// After a validated jump: the latest round trips show a queue (the delay check's
    /// [`DELAY_SAMPLES`] in a row above the RTT that confirmed the path).
    pub(crate) fn queue_seen(&self) -> bool {
        self.watching && self.late_samples >= DELAY_SAMPLES
    }

    /// The controller has left its start-up: nothing after a validated jump is left
    /// to watch.
    pub(crate) fn stop_watching(&mut self) {
        self.watching = false;
    }

    /// True until an RTT sample has decided whether to jump.
    pub(crate) fn awaits_rtt(&self) -> bool {
        self.status == ResumeStatus::Reconnaissance
    }

    /// Reconnaissance ends with the first RTT sample `rtt`: jump if it confirms the saved
    /// path. `flight` bytes are in flight, `next` is the send order of the next packet,
    /// `lost` the bytes declared lost so far, `cwnd_bytes` the controller's window.
    pub(crate) fn confirm(
        &mut self,
        now: Instant,
        rtt: Duration,
        flight: f64,
        next: u64,
        lost: u64,
        cwnd_bytes: f64,
    ) {
        if self.status != ResumeStatus::Reconnaissance {
            return;
        }
        let saved = self.saved.min_rtt.as_secs_f64();
        let current = rtt.as_secs_f64();
        if current <= saved / RTT_LOW || current > saved * RTT_HIGH {
            self.status = ResumeStatus::RttNotValidated;
            return;
        }
        let jump = self.saved.bdp_bytes() * JUMP_SHARE;
        if jump <= cwnd_bytes.max(self.initial_bytes) {
            self.status = ResumeStatus::NothingToGain;
            return;
        }
        self.status = ResumeStatus::Unvalidated;
        self.jump = jump;
        // Over one current RTT, not the saved one (RFC 9959 §4.3.2): a longer path gets
        // a proportionally lower rate. All of it goes out before the first ACK can
        // return, so a saved rate ten times the path's loses about three BDPs before the
        // checks see anything; paced over two RTTs it lost a quarter of that, but every
        // resumed transfer took a round trip longer (`docs/design/fast-start.md`).
        self.jump_rate = jump / current.max(1e-6);
        self.current_rtt = rtt;
        self.entered = now;
        self.pipe = flight;
        self.pipe_at_jump = flight;
        self.first_unvalidated = next;
        self.lost_at_jump = lost;
    }

    /// True while ACKs still matter: the resume has not ended, or it watches the slow
    /// start after a validated jump.
    pub(crate) fn wants_acks(&self) -> bool {
        !self.status.is_over() || self.watching
    }

    /// The least window while the jump goes out or is validated, bytes.
    pub(crate) fn cwnd_floor(&self) -> Option<f64> {
        match self.status {
            ResumeStatus::Unvalidated => Some(self.jump),
            ResumeStatus::Validating => Some(self.validating_base + self.validating_acked),
            _ => None,
        }
    }

    /// The most window during Safe Retreat, bytes: it must not grow (RFC 9959 §4.5).
    pub(crate) fn cwnd_cap(&self) -> Option<f64> {
        (self.status == ResumeStatus::SafeRetreat).then_some(self.retreat_cap)
    }

    /// The pacing rate of the jump, bytes per second.
    pub(crate) fn pacing_rate(&self) -> Option<f64> {
        (self.status == ResumeStatus::Unvalidated).then_some(self.jump_rate)
    }

    /// The jump has filled its window: Unvalidated ends (RFC 9959 §4.3, "the unused
    /// window is less than one segment"). `flight` bytes are in flight and `next` is the
    /// send order of the next packet.
    pub(crate) fn on_window_full(&mut self, flight: f64, next: u64) -> ResumeAction {
        if self.status != ResumeStatus::Unvalidated {
            return ResumeAction::None;
        }
        self.leave_unvalidated(flight, next)
    }

    /// Unvalidated ends: on to Validating if the jump was used, else settle on what was
    /// used (RFC 9959 §4.3's check).
    fn leave_unvalidated(&mut self, flight: f64, next: u64) -> ResumeAction {
        if flight < self.initial_bytes || flight <= self.pipe {
            self.status = ResumeStatus::RateLimited;
            return ResumeAction::Settle {
                cwnd_bytes: self.pipe.max(self.initial_bytes),
            };
        }
        self.status = ResumeStatus::Validating;
        self.last_unvalidated = next.saturating_sub(1).max(self.first_unvalidated);
        self.validating_base = flight;
        self.validating_acked = 0.0;
        ResumeAction::None
    }

    /// An ACK arrived. `acked` bytes were newly delivered, `newest` is the send order of
    /// the newest packet delivered (cumulatively or by SACK), `rtt` the sample this ACK
    /// gave, `lost` the bytes declared lost so far, `flight` the bytes in flight and
    /// `next` the send order of the next packet.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        acked: u64,
        newest: Option<u64>,
        rtt: Option<Duration>,
        lost: u64,
        flight: f64,
        next: u64,
    ) -> ResumeAction {
        let in_jump = matches!(
            self.status,
            ResumeStatus::Unvalidated | ResumeStatus::Validating
        );
        let reached = |order: u64| newest.is_some_and(|n| n >= order);
        if let Some(r) = rtt {
            self.late_samples = if r > self.delay_limit() {
                self.late_samples + 1
            } else {
                0
            };
        }
        let queued = self.late_samples >= DELAY_SAMPLES;
        if self.watching && self.models_path() {
            // A controller that models the path is watched until it leaves its start-up
            // (`queue_seen`, `stop_watching`): losses do not end BBR's Startup.
            return ResumeAction::None;
        }
        if self.watching {
            // A loss ends slow start by itself; a queue before it ends it here.
            self.watching = !queued && lost == self.lost_at_completion;
            if queued {
                return ResumeAction::EndSlowStart;
            }
        }
        if !in_jump && self.status != ResumeStatus::SafeRetreat {
            return ResumeAction::None;
        }
        self.pipe += acked as f64;
        if self.status == ResumeStatus::SafeRetreat {
            if reached(self.last_unvalidated) {
                self.status = ResumeStatus::Retreated;
                // The pipe now counts everything the path delivered of the jump: half of
                // it is validated capacity, so the window restarts there rather than
                // slow-starting again from the cap a retreat found early may have set
                // (one initial window, when the first ACKs already showed the queue).
                // The pipe only grows, so this is never below that cap.
                return ResumeAction::EndRetreat {
                    window_bytes: (self.pipe * RETREAT_BETA).max(self.initial_bytes),
                };
            }
            return ResumeAction::None;
        }
        // A jump packet's ACK: the last one sent in the jump, or any while it goes out.
        let of_jump = self.status == ResumeStatus::Unvalidated || !reached(self.last_unvalidated);
        let delayed = of_jump && queued;
        if self.congested(lost) || delayed {
            if self.status == ResumeStatus::Unvalidated {
                self.last_unvalidated = next.saturating_sub(1).max(self.first_unvalidated);
            }
            self.status = ResumeStatus::SafeRetreat;
            self.retreat_cap = (self.pipe / 2.0).max(self.initial_bytes.min(self.pipe));
            return ResumeAction::Retreat { queue: delayed };
        }
        if self.status == ResumeStatus::Unvalidated {
            let rtt_passed = now.saturating_since(self.entered) > self.current_rtt;
            if reached(self.first_unvalidated) || rtt_passed {
                return self.leave_unvalidated(flight, next);
            }
            return ResumeAction::None;
        }
        self.validating_acked += acked as f64;
        let (since, acked_then) = *self
            .validating_since
            .get_or_insert((now, self.validating_acked));
        if reached(self.last_unvalidated) {
            self.status = ResumeStatus::Completed;
            // Slow start goes on from the validated window (RFC 9959 §4.4), and a queue
            // ends it: doubling on from about the path's capacity overflows a shallow
            // queue within a round or two.
            self.watching = true;
            self.lost_at_completion = lost;
            let span = now.saturating_since(since).as_secs_f64();
            let cwnd_bytes = self.validating_base + self.validating_acked;
            if span <= 0.0 {
                return ResumeAction::Settle { cwnd_bytes };
            }
            return ResumeAction::Validated {
                cwnd_bytes,
                delivery_rate: (self.validating_acked - acked_then) / span,
            };
        }
        ResumeAction::None
    }

    /// True if the bytes lost since the jump began (`lost` in all) mean congestion.
    fn congested(&self, lost: u64) -> bool {
        let lost = lost.saturating_sub(self.lost_at_jump) as f64;
        if self.loss_tolerance == 0.0 {
            return lost > 0.0;
        }
        let sent = self.pipe - self.pipe_at_jump + lost;
        sent >= LOSS_SAMPLE_SHARE * self.jump
            && lost > self.loss_tolerance * sent + LOSS_SLACK_PACKETS * self.mss
    }

    /// The longest round trip a jump packet may take before the jump retreats: the RTT
    /// that confirmed the path and an eighth of it, 4–16 ms (HyStart++'s RttThresh, RFC
    /// 9406 §4.3). Beyond it the packet met a queue: a jump paced below the saved rate
    /// builds none on the path it was saved on, so the path has less room than it had,
    /// and the jump retreats before the queue overflows.
    fn delay_limit(&self) -> Duration {
        self.current_rtt + crate::cc::hystart_pp::rtt_threshold(self.current_rtt)
    }

    /// A retransmission timeout: persistent congestion ends the resume at once (RFC 9959
    /// §3.6); the controller's own timeout response applies.
    pub(crate) fn on_timeout(&mut self) {
        if !self.status.is_over() {
            self.status = ResumeStatus::Timeout;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: f64 = 1000.0;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    /// A path of 1 MB/s and 100 ms saved (a 100 kB BDP), initial window 10 segments,
    /// under a window rule.
    fn resume() -> CarefulResume {
        resume_for(false)
    }

    /// The same under a controller that models the path (`models_path`) or not.
    fn resume_for(models_path: bool) -> CarefulResume {
        let saved = SavedPath {
            rate: 1e6,
            min_rtt: Duration::from_millis(100),
        };
        CarefulResume::new(saved, 10.0 * MSS, MSS, models_path)
    }

    #[test]
    fn a_confirmed_rtt_jumps_to_half_the_saved_capacity_paced_over_the_current_rtt() {
        let mut r = resume();
        r.confirm(ms(0), Duration::from_millis(120), 0.0, 0, 0, 10.0 * MSS);
        assert_eq!(r.status(), ResumeStatus::Unvalidated);
        assert_eq!(r.cwnd_floor(), Some(50_000.0));
        // 50 kB over one RTT of 120 ms.
        let rate = r.pacing_rate().unwrap();
        assert!((rate - 50_000.0 / 0.12).abs() < 1.0, "{rate}");
    }

    #[test]
    fn the_rtt_check_refuses_a_changed_path() {
        for (rtt_ms, ok) in [(50, false), (51, true), (1000, true), (1001, false)] {
            let mut r = resume();
            r.confirm(ms(0), Duration::from_millis(rtt_ms), 0.0, 0, 0, MSS);
            let expect = if ok {
                ResumeStatus::Unvalidated
            } else {
                ResumeStatus::RttNotValidated
            };
            assert_eq!(r.status(), expect, "rtt {rtt_ms} ms");
            assert_eq!(r.cwnd_floor().is_some(), ok);
        }
    }

    #[test]
    fn a_jump_no_larger_than_the_window_is_not_taken() {
        let mut r = resume();
        r.confirm(ms(0), Duration::from_millis(100), 0.0, 0, 0, 60.0 * MSS);
        assert_eq!(r.status(), ResumeStatus::NothingToGain);
    }

    /// Jump 50 segments (0..50), then their ACKs.
    fn jumped() -> CarefulResume {
        let mut r = resume();
        r.confirm(ms(0), Duration::from_millis(100), 0.0, 0, 0, 10.0 * MSS);
        assert_eq!(r.on_window_full(50.0 * MSS, 50), ResumeAction::None);
        assert_eq!(r.status(), ResumeStatus::Validating);
        r
    }

    #[test]
    fn a_validated_jump_settles_on_the_window_it_grew_to() {
        let mut r = jumped();
        let rtt = Some(Duration::from_millis(101));
        for una in 1..50 {
            let a = r.on_ack(ms(100 + una), 1000, Some(una - 1), rtt, 0, 50e3, 50 + una);
            assert_eq!(a, ResumeAction::None);
            // The floor grows by what was acknowledged, as slow start would.
            assert_eq!(r.cwnd_floor(), Some((50 + una) as f64 * MSS));
        }
        // 49 kB acknowledged after the first ACK, from 101 ms to 150 ms: 1 MB/s.
        let a = r.on_ack(ms(150), 1000, Some(49), rtt, 0, 50e3, 100);
        assert_eq!(
            a,
            ResumeAction::Validated {
                cwnd_bytes: 100e3,
                delivery_rate: 49_000.0 / 0.049
            }
        );
        assert_eq!(r.status(), ResumeStatus::Completed);
        assert_eq!(r.cwnd_floor(), None);
        // A queue after the jump (samples 17 ms over 100 ms) ends slow start, once.
        let late = Some(Duration::from_millis(117));
        for i in 0..7 {
            let a = r.on_ack(ms(190 + i), 1000, Some(53 + i), late, 0, 50e3, 120);
            assert_eq!(a, ResumeAction::None);
        }
        let a = r.on_ack(ms(200), 1000, Some(60), late, 0, 50e3, 120);
        assert_eq!(a, ResumeAction::EndSlowStart);
        let a = r.on_ack(ms(201), 1000, Some(61), late, 0, 50e3, 120);
        assert_eq!(a, ResumeAction::None);
    }

    #[test]
    fn a_loss_in_the_jump_retreats_to_half_the_validated_pipe_until_the_jump_is_acknowledged() {
        let mut r = jumped();
        let rtt = Some(Duration::from_millis(101));
        // 20 segments delivered, then a loss is declared.
        for una in 1..=20 {
            r.on_ack(ms(100 + una), 1000, Some(una - 1), rtt, 0, 50e3, 50);
        }
        let a = r.on_ack(ms(121), 1000, Some(22), rtt, 1000, 50e3, 50);
        assert!(matches!(a, ResumeAction::Retreat { .. }));
        assert_eq!(r.status(), ResumeStatus::SafeRetreat);
        assert_eq!(r.cwnd_cap(), Some(10_500.0), "half of 21 kB validated");
        assert_eq!(r.cwnd_floor(), None);
        // The window does not grow while the jump's packets are still being acknowledged.
        r.on_ack(ms(130), 5000, Some(35), rtt, 1000, 30e3, 50);
        assert_eq!(r.cwnd_cap(), Some(10_500.0));
        // The jump's last packet acknowledged: ssthresh is half of all that was validated.
        let a = r.on_ack(ms(160), 4000, Some(49), rtt, 1000, 0.0, 50);
        assert_eq!(
            a,
            ResumeAction::EndRetreat {
                window_bytes: 15_000.0
            }
        );
        assert_eq!(r.status(), ResumeStatus::Retreated);
        assert_eq!(r.cwnd_cap(), None);
    }

    /// As [`jumped`], for a controller that models the path (BBR, `auto`).
    fn jumped_path_model() -> CarefulResume {
        let mut r = resume_for(true);
        r.confirm(ms(0), Duration::from_millis(100), 0.0, 0, 0, 10.0 * MSS);
        r.on_window_full(50.0 * MSS, 50);
        r
    }

    #[test]
    fn a_controller_that_models_the_path_retreats_only_beyond_ten_percent_loss() {
        let mut r = jumped_path_model();
        let rtt = Some(Duration::from_millis(100));
        // 40 of the jump's segments delivered, then 7 lost: 3 + 10 % of 48 = 7.8 may be.
        r.on_ack(ms(100), 40_000, Some(40), rtt, 0, 10e3, 50);
        let a = r.on_ack(ms(101), 1000, Some(41), rtt, 7000, 9e3, 50);
        assert_eq!(a, ResumeAction::None);
        // 9 lost of 51: more than 3 + 5.1.
        let a = r.on_ack(ms(102), 1000, Some(42), rtt, 9000, 8e3, 50);
        assert!(matches!(a, ResumeAction::Retreat { .. }));
    }

    #[test]
    fn losses_among_a_jumps_first_packets_are_judged_only_over_a_quarter_of_it() {
        let mut r = jumped_path_model();
        let rtt = Some(Duration::from_millis(100));
        // 5 delivered and 5 lost of the first 10: half, but 10 of 50 are too few to say.
        let a = r.on_ack(ms(100), 5000, Some(9), rtt, 5000, 40e3, 50);
        assert_eq!(a, ResumeAction::None);
        // At 13 of 50 (a quarter), 5 lost is more than 3 + 10 % of 13: congestion.
        let a = r.on_ack(ms(101), 3000, Some(12), rtt, 5000, 37e3, 50);
        assert_eq!(a, ResumeAction::Retreat { queue: false });
    }

    #[test]
    fn a_window_rule_judges_the_first_loss_of_a_jump_at_once() {
        let mut r = jumped();
        let a = r.on_ack(
            ms(100),
            0,
            None,
            Some(Duration::from_millis(100)),
            1000,
            49e3,
            50,
        );
        assert_eq!(a, ResumeAction::Retreat { queue: false });
    }

    #[test]
    fn after_a_validated_jump_a_path_model_is_watched_for_a_queue_until_told() {
        let mut r = jumped_path_model();
        let rtt = Some(Duration::from_millis(100));
        r.on_ack(ms(100), 1000, Some(0), rtt, 0, 49e3, 50);
        let a = r.on_ack(ms(150), 49_000, Some(49), rtt, 0, 0.0, 50);
        assert!(matches!(a, ResumeAction::Validated { .. }), "{a:?}");
        let late = Some(Duration::from_millis(117));
        for i in 0..8 {
            assert!(!r.queue_seen());
            // Neither the queue nor a loss ends the watch by itself (BBR's Startup is the
            // sender's to end), and no window-rule action is asked for.
            let a = r.on_ack(ms(200 + i), 1000, Some(50 + i), late, 1000, 0.0, 60);
            assert_eq!(a, ResumeAction::None);
        }
        assert!(r.queue_seen() && r.wants_acks());
        r.stop_watching();
        assert!(!r.queue_seen() && !r.wants_acks());
    }

    #[test]
    fn a_jump_packet_delayed_by_an_eighth_of_the_rtt_retreats() {
        let mut r = jumped();
        let rtt = |us| Some(Duration::from_micros(us));
        let a = r.on_ack(ms(140), 1000, Some(0), rtt(112_400), 0, 0.0, 50);
        assert_eq!(a, ResumeAction::None);
        // Late samples count only eight in a row: a packet rebuilt by FEC is one.
        for i in 1..8 {
            let a = r.on_ack(ms(140 + i), 1000, Some(i), rtt(112_600), 0, 0.0, 50);
            assert_eq!(a, ResumeAction::None);
        }
        r.on_ack(ms(150), 1000, Some(9), rtt(100_000), 0, 0.0, 50);
        for i in 10..17 {
            let a = r.on_ack(ms(150 + i), 1000, Some(i), rtt(112_600), 0, 0.0, 50);
            assert_eq!(a, ResumeAction::None);
        }
        let a = r.on_ack(ms(170), 1000, Some(17), rtt(112_600), 0, 0.0, 50);
        assert!(matches!(a, ResumeAction::Retreat { .. }));
    }

    #[test]
    fn an_unfilled_jump_settles_on_what_was_used() {
        let mut r = resume();
        r.confirm(ms(0), Duration::from_millis(100), 0.0, 0, 0, 10.0 * MSS);
        // A round trip later only 12 segments had been written.
        let a = r.on_ack(ms(101), 1000, Some(0), None, 0, 11e3, 12);
        assert_eq!(a, ResumeAction::None, "the first ACK: on to validating");
        assert_eq!(r.status(), ResumeStatus::Validating);
        let mut r = resume();
        r.confirm(ms(0), Duration::from_millis(100), 5e3, 5, 0, 10.0 * MSS);
        let a = r.on_ack(ms(101), 1000, Some(5), None, 0, 4e3, 9);
        assert_eq!(a, ResumeAction::Settle { cwnd_bytes: 10e3 });
        assert_eq!(r.status(), ResumeStatus::RateLimited);
    }

    #[test]
    fn a_timeout_ends_the_resume() {
        let mut r = jumped();
        r.on_timeout();
        assert_eq!(r.status(), ResumeStatus::Timeout);
        assert_eq!(
            (r.cwnd_floor(), r.cwnd_cap(), r.pacing_rate()),
            (None, None, None)
        );
    }
}
