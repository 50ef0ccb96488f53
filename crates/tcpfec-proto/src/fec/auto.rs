//! The `auto` scheme's redundancy controller: the receiver's loss-run counters feed a
//! Gilbert channel estimate, and the estimate sizes the Reed-Solomon code to a
//! block-failure target at the least overhead (docs/design/auto.md).
//!
//! Only channel losses enter the estimate. Losses the receiver classes as congestion (a
//! full queue when the run ended, `loss_runs`) are left out: repair sized to them would add
//! load to the queue that dropped them, which drops more, which the estimate would read as
//! a worse channel (the feedback loop the first version of this scheme fell into).

use super::channel::{ChannelEstimate, ChannelEstimator, SLOW_MEMORY};
use super::sizing::{size_code, CodeSize, Sizer, MOST_REPAIR};
use super::stream::Sizing;
use crate::wire::FecFeedback;
use core::cell::RefCell;

/// Settings of the `auto` controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoParams {
    /// Largest probability that a block cannot be rebuilt.
    pub target_failure: f64,
    /// Most data packets per block, whatever the window (bounds decoding work).
    pub max_block: u16,
    /// Share of a round trip's packets one block may span: a lost packet waits for the
    /// rest of its block, so this bounds the delay a block adds to recovery.
    pub block_share_of_window: f64,
    /// The longer share a block may span when a code that long meets the failure target
    /// within [`AutoParams::max_overhead`]. A small window makes quarter-window blocks
    /// dear (10 Mb/s, 20 ms, 1 % loss: 8 data + 2 repairs, 20 % of the packets, where
    /// 17 + 2 costs 10.5 %), and a block that rarely fails adds its delay rarely. Where
    /// nothing meets the target, blocks stay at the shorter share: failures are frequent
    /// then, and the receiver learns that a block failed only at its end.
    pub block_share_when_met: f64,
    /// Largest share of the packets sent that may be repair. Loss beyond what this
    /// repairs is left to retransmission and so reaches the congestion controller. It
    /// breaks the loop of losses the sending itself causes without a queueing delay to
    /// show it (a host's socket buffer, a policer): there, more repair meant more drops,
    /// and `auto` climbed to 254 repairs per data packet through a loopback relay at
    /// 100 Mb/s.
    pub max_overhead: f64,
    /// Raise the target to 1/BDP where the path is short (see `AutoControl::target`):
    /// at 10 Mb/s and RTT 20 ms, Gilbert-Elliott loss of 1 % in bursts of 5 cost 29 % of
    /// the packets in repair to meet 10⁻³ and left 6.8 Mb/s; retransmitting what a
    /// 1/17 target leaves moves 8.8. Off when the target is given (`auto-tT`).
    pub price_failures: bool,
    /// Answer congestion as CUBIC does: a round whose losses at a full queue exceed the
    /// channel's caps the flight at 0.7 of itself, regrowing along CUBIC's curve
    /// (`cc::CongestionCap`). Off: BBR's own 2 % loss tolerance only (`auto-greedy`).
    pub yield_to_congestion: bool,
    /// Withhold duplicate ACKs (SPEC S4) only where the queue is full: for the holes of
    /// loss runs counted as congestion, and while most arrivals meet a near-full queue
    /// (`Receiver`'s `FecRx::withholds_dupacks`). Elsewhere the receiver acknowledges
    /// every arrival and the sender holds the fast retransmit of a hole its block's
    /// repairs may still rebuild. Withheld always, a lost packet's repair a round trip
    /// away stalled the ACK clock on short paths (10 Mb/s, RTT 30 ms, 0.5 % loss: 8.6
    /// Mb/s against `bbr1`'s 9.4). Off: withheld always (`auto-hold`).
    pub hold_only_at_full_queue: bool,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            target_failure: 1e-3,
            max_block: 128,
            block_share_of_window: 0.25,
            block_share_when_met: 0.5,
            max_overhead: 1.0 / 3.0,
            price_failures: true,
            yield_to_congestion: true,
            hold_only_at_full_queue: true,
        }
    }
}

/// Measured packets between two sizings: sizing costs a table over every block length,
/// and a handful of packets cannot move the estimate.
const RESIZE_EVERY: u64 = 64;

/// Probe block on a path shown clean: one repair per 64 data packets, 1.5 % of the packets.
/// Not 49 (2 %): blocks closed early at the ends of flights (ProbeRTT, recovery) add to
/// it, and at 10 Mb/s / RTT 20 ms the repair share was 2.16 % with 49 and is 1.7 % with 64.
const CLEAN_PROBE_BLOCK: usize = 64;

/// Measured packets (the estimator's decayed count) a path must have shown before its
/// probe block may exceed a small window.
const CLEAN_EVIDENCE: f64 = 1000.0;

/// Measured packets, in BDPs, before the failure target is priced (`AutoControl::target`).
const PRICED_AFTER_PIPES: f64 = 8.0;
/// Most packet outcomes one report feeds the channel estimator. The estimator forgets
/// with a memory of [`SLOW_MEMORY`] packets, so past 16 memories (older weight e⁻¹⁶) more
/// outcomes of the same mix change nothing it can show; a report claiming more (a peer's
/// corrupt or hostile counters: up to 2³¹ passed the staleness check) is scaled down to
/// this many in the same proportions, instead of costing the sender seconds of CPU.
const MAX_OUTCOMES_PER_REPORT: u64 = 16 * SLOW_MEMORY as u64;

/// `est` with its loss rate raised to what its evidence cannot rule out, roughly the upper
/// end of a 95 % interval: `p + 2·√(p/n)` over `n` measured packets, and while fewer than
/// [`CLEAN_EVIDENCE`] packets were measured, `3/n` more (the rule of three: with no loss
/// seen yet, a stream's first packets are protected as if 3/n of them could be lost).
/// Beyond that a path that lost nothing is taken for clean: at 3/n for ever (the decayed
/// count saturates near 12 000 packets) a clean stream's every interval had a repair, a
/// third to a half of its packets.
fn cautious(est: &ChannelEstimate) -> ChannelEstimate {
    let n = est.packets.max(1.0);
    let p = est.loss_rate;
    let unseen = if n < CLEAN_EVIDENCE { 3.0 / n } else { 0.0 };
    ChannelEstimate {
        loss_rate: (p + 2.0 * (p / n).sqrt() + unseen).min(0.5),
        ..*est
    }
}

/// The weight a count keeps after `packets` more measured packets: it halves over
/// [`SLOW_MEMORY`], as the channel estimate forgets.
fn fade(packets: u64) -> f64 {
    // Reports come with every ACK and count a packet or two each: their weights are read
    // from a table of the same `powf`s, which was most of what a report cost.
    static SMALL: std::sync::LazyLock<[f64; FADES_TABULATED]> =
        std::sync::LazyLock::new(|| core::array::from_fn(|n| fade_computed(n as u64)));
    usize::try_from(packets)
        .ok()
        .and_then(|n| SMALL.get(n).copied())
        .unwrap_or_else(|| fade_computed(packets))
}

/// Counts whose fade is read from a table.
const FADES_TABULATED: usize = 64;

fn fade_computed(packets: u64) -> f64 {
    0.5f64.powf(packets as f64 / SLOW_MEMORY)
}

/// Repair tables sized from the estimate of the last resize, built when first read: a
/// flow that never retransmits or streams never needs them, and building them (a table
/// of every block length each) took two thirds of a bulk `auto` flow's simulation. Built
/// later from the same estimate and target, they hold what they would have held.
#[derive(Debug, Clone, Default)]
struct LazyTables {
    /// Repairs for a group of n retransmissions, by n (`retransmission_repairs`).
    retransmission: Vec<u8>,
    /// Repairs for two intervals of n packets of a stream, by n (`stream_repairs`).
    stream: Vec<u8>,
    /// Repairs for one interval of n packets of a stream that paused, by n.
    lone_interval: Vec<u8>,
    /// The estimate and target the retransmission table is to be built from, and whether
    /// the queue drops at least as much as the channel (then it protects none).
    retransmission_due: Option<(ChannelEstimate, f64, bool)>,
    /// The estimate and target the stream tables are to be built from.
    stream_due: Option<(ChannelEstimate, f64)>,
}

impl LazyTables {
    /// Repairs for every length of a stream's interval, to the same target as the blocks,
    /// at most one per packet (`stream_repairs`), sized to the loss rate the estimate
    /// cannot rule out rather than to the estimate itself (`cautious`): a slow stream
    /// measures few packets (17 a second at 200 kb/s), and until it has measured enough,
    /// a loss the estimate has not seen yet costs its data a round trip.
    fn build_stream(&mut self, max_block: usize) {
        let Some((est, target)) = self.stream_due.take() else {
            return;
        };
        let mut sizer = Sizer::new(&cautious(&est), target);
        self.stream.clear();
        self.stream.push(0);
        self.lone_interval.clear();
        self.lone_interval.push(0);
        for n in 1..=max_block {
            // The next interval's repairs cover this one too: half of what two intervals
            // need, rather than all of what one needs (at 10 Mb/s on 50, RTT 24 ms and
            // 5 % loss, 39 % of the packets were repair instead of 46 %, with the same
            // delays), and the fraction carried rather than rounded up (28.7 % instead
            // of 31.5 % over the latency matrix, p99 targets met alike).
            let pooled = sizer.repairs_for(2 * n, 2 * n);
            self.stream
                .push(pooled.min(2 * n).min(u8::MAX as usize) as u8);
            // Alone, up to two repairs a packet: a request of an exchange at 5 % loss
            // with one copy is lost with it one time in 400, and each such exchange
            // waits for a retransmission (p99.9 of 100-byte exchanges at RTT 100 ms: 409
            // ms with one repair).
            let alone = sizer.repairs_for(n, 2 * n);
            self.lone_interval.push(alone.min(u8::MAX as usize) as u8);
        }
    }

    /// Repairs for every length of a group of retransmissions, to the same target as the
    /// blocks: a retransmission is sent because its block failed, and if it is lost too
    /// its data waits another round trip (and BBR reads one more loss). At most one
    /// repair per retransmission: a lone retransmission at 5 % loss would need two to
    /// meet 10⁻³, and its copy alone takes the chance of losing it from 5 to 0.25 %.
    fn build_retransmission(&mut self, max_block: usize) {
        let Some((est, target, congestion)) = self.retransmission_due.take() else {
            return;
        };
        self.retransmission.clear();
        self.retransmission.push(0);
        if congestion {
            return;
        }
        let mut sizer = Sizer::new(&est, target);
        for n in 1..=max_block {
            let m = sizer.repairs_for(n, n);
            self.retransmission.push(m.min(u8::MAX as usize) as u8);
        }
    }
}

/// The controller's state.
#[derive(Debug, Clone)]
pub struct AutoControl {
    p: AutoParams,
    est: ChannelEstimator,
    /// The previous report's counters, to take differences (they wrap).
    last: Option<FecFeedback>,
    /// Packets measured since the code was last sized.
    since_sizing: u64,
    /// The delay bound the code was last sized for.
    max_k: usize,
    /// The longer delay bound of a code that meets the target.
    met_k: usize,
    /// The probe block the code was last sized for: one window.
    probe_k: usize,
    code: CodeSize,
    /// The path's BDP in packets, as half the largest recent congestion window (BBR's
    /// window is twice its BDP estimate), forgotten over [`SLOW_MEMORY`] packets like the
    /// channel estimate: ProbeRTT and recovery shrink the window for a round trip or two
    /// without the path changing.
    pipe: f64,
    /// Packets the receiver counted as congestion drops, in total.
    pub congestion_lost: u64,
    /// The last report's congestion drops and the packets that met a full queue, lost or
    /// not (`cc::CongestionCap` weighs them against the channel).
    pub last_congestion: (u64, u64),
    /// The repair tables of retransmissions and streams, built when first read.
    tables: RefCell<Box<LazyTables>>,
    /// Packets measured and congestion losses among them, forgotten over
    /// [`SLOW_MEMORY`] packets.
    recent_packets: f64,
    recent_congestion_lost: f64,
}

impl AutoControl {
    /// A controller that has measured nothing: the probe-level code.
    pub fn new(p: AutoParams) -> Self {
        let est = ChannelEstimator::new();
        let max_k = p.max_block as usize;
        let code = size_code(&est.estimate(), p.target_failure, max_k, max_k);
        let mut c = AutoControl {
            p,
            est,
            last: None,
            since_sizing: 0,
            max_k,
            met_k: max_k,
            probe_k: max_k,
            code,
            pipe: 0.0,
            congestion_lost: 0,
            last_congestion: (0, 0),
            tables: RefCell::new(Box::default()),
            recent_packets: 0.0,
            recent_congestion_lost: 0.0,
        };
        let est = c.est.estimate();
        c.tables.get_mut().stream_due = Some((est, p.target_failure));
        c
    }

    /// The code in force.
    pub fn code(&self) -> CodeSize {
        self.code
    }

    /// The channel estimate in force.
    pub fn estimate(&self) -> ChannelEstimate {
        self.est.estimate()
    }

    /// The receiver's counters arrived; `window` is the congestion window in packets (the
    /// delay bound of a block follows it). Returns the new code if it changed.
    ///
    /// Losses during the congestion controller's startup are measured like any other: on
    /// a lossy path the code must be right before startup ends (leaving them out cost a
    /// quarter to a third of the goodput at 5 % loss, docs/design/auto.md).
    pub fn on_feedback(&mut self, fb: FecFeedback, window: f64) -> Option<CodeSize> {
        self.on_feedback_bounded(fb, window, None)
    }

    /// [`AutoControl::on_feedback`] for a sender that may be a stream: `stream_block`, if
    /// given, is how many packets the application sends within the time a block may wait
    /// for its repairs, and no block is longer.
    pub fn on_feedback_bounded(
        &mut self,
        fb: FecFeedback,
        window: f64,
        stream_block: Option<usize>,
    ) -> Option<CodeSize> {
        self.last_congestion = (0, 0);
        let loss = fb.loss?;
        // The first report is only the baseline the next ones are measured from.
        let prev = self.last.replace(fb)?;
        let prev_loss = prev.loss.unwrap_or_default();
        let received = fb.received.wrapping_sub(prev.received) as u64;
        let lost = loss.lost.wrapping_sub(prev_loss.lost) as u64;
        let runs = loss.runs.wrapping_sub(prev_loss.runs) as u64;
        let congestion_lost = loss.congestion_lost.wrapping_sub(prev_loss.congestion_lost) as u64;
        let congestion_received = loss
            .congestion_received
            .wrapping_sub(prev_loss.congestion_received) as u64;
        if [received, lost, congestion_lost, congestion_received]
            .iter()
            .any(|&x| x >= 1 << 31)
        {
            return None; // an older report overtaken by a newer one
        }
        self.congestion_lost += congestion_lost;
        self.last_congestion = (congestion_lost, congestion_lost + congestion_received);
        // The channel is measured on the packets that met a queue with room only: the
        // losses at a full queue are left out, so must the arrivals be.
        let received = received.saturating_sub(congestion_received);
        self.observe(received, lost, runs);
        // One `powf` per distinct count: a report comes with every ACK, and most count
        // no packet at a full queue.
        let measured = received + lost;
        let fade_measured = fade(measured);
        self.pipe = (self.pipe * fade_measured).max(window / 2.0);
        let all = measured + congestion_received + congestion_lost;
        let fade_all = if all == measured {
            fade_measured
        } else {
            fade(all)
        };
        self.recent_packets = self.recent_packets * fade_all + all as f64;
        self.recent_congestion_lost =
            self.recent_congestion_lost * fade_all + congestion_lost as f64;
        self.since_sizing += measured;
        let longest = stream_block.map_or(self.p.max_block as usize, |n| {
            n.clamp(2, self.p.max_block as usize)
        });
        let bound = |share: f64| ((window * share) as usize).clamp(2, longest);
        let max_k = bound(self.p.block_share_of_window);
        let met_k = bound(self.p.block_share_when_met);
        // The probe's block spans at most a window, so its repair comes within a round
        // trip of a loss. Not less either: a probe block of at least 49 packets (2 % on a
        // 35-packet window instead of 3 %) left the first flights of a startup with one
        // repair per 49 packets instead of one per window, and a 100 KB transfer at 5 %
        // loss took 0.61 s instead of 0.46 s (100 Mb/s, RTT 100 ms, 2 seeds).
        let probe_k = bound(1.0);
        if self.since_sizing < RESIZE_EVERY && max_k == self.max_k && probe_k == self.probe_k {
            return None;
        }
        self.since_sizing = 0;
        self.max_k = max_k;
        self.met_k = met_k;
        self.probe_k = probe_k;
        let est = self.est.estimate();
        let target = self.target(&est);
        // Where the queue drops at least as much as the channel, retransmissions are
        // mostly of congestion losses, and their repairs would add load to a queue that
        // is already full, taking from the flows that share it (RFC 9265, section 5). On
        // a clean dumbbell four `auto` flows, whose late joiners read their own start-up
        // drops as channel loss, reached Jain 0.839 / 0.786 at 0.5 / 1 BDP with
        // every retransmission protected and 0.861 / 0.815 with this rule (seeds 1–16).
        let congestion =
            self.recent_congestion_lost / self.recent_packets.max(1.0) >= est.loss_rate;
        let tables = self.tables.get_mut();
        tables.retransmission_due = Some((est, target, congestion));
        // Not the priced target: a stream's failed interval costs its data a round trip
        // of delay, whatever the path's length.
        tables.stream_due = Some((est, self.p.target_failure));
        let mut sizer = Sizer::new(&est, target);
        let code = self.sized(&mut sizer, &est);
        (code != self.code).then(|| {
            self.code = code;
            code
        })
    }

    /// The least-overhead code within the longer delay bound if one meets the target
    /// within the repair cap; otherwise the code within the shorter bound, capped.
    fn sized(&self, sizer: &mut Sizer, est: &ChannelEstimate) -> CodeSize {
        // The probe block is a window: a startup's first flights need their repair within
        // the flight (a floor from the first packet cost 100 KB transfers at 5 % loss a
        // third more time). Once a path has shown itself clean over enough packets, a
        // small window would pay more than the 2 % a probe may cost (one repair per 35
        // packets at 10 Mb/s and 20 ms, 2.8 %); a block of 64 costs 1.5 %, and its rare loss
        // waits at most about two round trips for the repair.
        let clean_k = CLEAN_PROBE_BLOCK.min(self.p.max_block as usize);
        if self.probe_k < clean_k
            && est.packets >= CLEAN_EVIDENCE
            && sizer.one_repair_suffices(clean_k)
        {
            return CodeSize { k: clean_k, m: 1 };
        }
        let long = sizer.code(self.met_k, self.probe_k);
        if let Some(long) = long.filter(|c| c.overhead() <= self.p.max_overhead) {
            return long;
        }
        self.capped(sizer.code(self.max_k, self.probe_k).unwrap_or(MOST_REPAIR))
    }

    /// Repairs for an interval of `n` packets of a stream (`fec::stream`) on the channel
    /// estimated now, to the blocks' failure target; none where a loss among them is
    /// rarer than it. [`Sizing::Pooled`]: half of what two intervals of `n` need, at most
    /// one per packet (the next interval's repairs cover this one too), a fraction the
    /// stream carries to the next interval; [`Sizing::Alone`]: all of what the interval
    /// needs by itself, at most two per packet.
    pub fn stream_repairs(&self, n: usize, sizing: Sizing) -> f64 {
        let mut tables = self.tables.borrow_mut();
        tables.build_stream(self.p.max_block as usize);
        let t = match sizing {
            Sizing::Pooled => &tables.stream,
            Sizing::Alone => &tables.lone_interval,
        };
        let m = t.get(n).or(t.last()).copied().unwrap_or(0) as f64;
        match sizing {
            Sizing::Pooled => m / 2.0,
            Sizing::Alone => m,
        }
    }

    /// Repairs for a group of `n` retransmissions on the channel estimated now (0: the
    /// retransmissions go unprotected, as a loss among them is less likely than the
    /// target).
    pub fn retransmission_repairs(&self, n: usize) -> u8 {
        let mut tables = self.tables.borrow_mut();
        tables.build_retransmission(self.p.max_block as usize);
        let t = &tables.retransmission;
        t.get(n).or(t.last()).copied().unwrap_or(0)
    }

    /// The block-failure target in force. A failed block costs its data one more round
    /// trip, about a path's worth of packet times (the BDP in packets), where a repair
    /// costs one packet time; so, unless the target was given explicitly, a target below
    /// 1/BDP buys less than its repairs cost and is raised to it. Only once the estimate
    /// rests on [`CLEAN_EVIDENCE`] packets and four windows (`PRICED_AFTER_PIPES` halves):
    /// a startup, which has sent about two of its windows, is still far below the path's
    /// BDP, and a short transfer's failure lands on its completion time.
    fn target(&self, est: &ChannelEstimate) -> f64 {
        let t = self.p.target_failure;
        let settled = est.packets >= CLEAN_EVIDENCE.max(PRICED_AFTER_PIPES * self.pipe);
        if !self.p.price_failures || !settled {
            return t;
        }
        t.max(1.0 / self.pipe.max(1.0))
    }

    /// `code`, or, if it spends more than [`AutoParams::max_overhead`] on repair, the
    /// largest block the delay bound allows with as much repair as the cap leaves.
    fn capped(&self, code: CodeSize) -> CodeSize {
        let cap = self.p.max_overhead;
        if code.overhead() <= cap {
            return code;
        }
        let k = self.max_k;
        let m = ((cap / (1.0 - cap) * k as f64).floor() as usize).max(1);
        CodeSize { k, m }
    }

    /// `received` packets and `lost` in `runs` runs, interleaved evenly: the counters carry
    /// the sufficient statistics of a Gilbert channel, not the order.
    fn observe(&mut self, received: u64, lost: u64, runs: u64) {
        let (mut received, mut lost, mut runs) = (received, lost, runs);
        let total = received + lost;
        if total > MAX_OUTCOMES_PER_REPORT {
            let scale =
                |x: u64| (x as u128 * MAX_OUTCOMES_PER_REPORT as u128 / total as u128) as u64;
            (received, lost, runs) = (scale(received), scale(lost), scale(runs));
        }
        let runs = runs.clamp(u64::from(lost > 0), lost);
        if runs == 0 {
            self.est.observe_run(received, 0);
            return;
        }
        for i in 0..runs {
            let share = |total: u64| total / runs + u64::from(i < total % runs);
            self.est.observe_run(share(received), share(lost));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sizing::block_failure;
    use super::*;
    use crate::wire::LossCounters;

    /// Reports from a receiver that gets `received` and loses `lost` in `runs` runs per
    /// report, `reports` times, continuing from `fb`, with a window of 1000 packets.
    fn report(c: &mut AutoControl, fb: &mut FecFeedback, reports: usize, counts: (u32, u32, u32)) {
        report_in_window(c, fb, reports, counts, 1000.0);
    }

    /// [`report`] with a window of `window` packets (it bounds the blocks).
    fn report_in_window(
        c: &mut AutoControl,
        fb: &mut FecFeedback,
        reports: usize,
        (received, lost, runs): (u32, u32, u32),
        window: f64,
    ) {
        for _ in 0..reports {
            let l = fb.loss.get_or_insert_with(LossCounters::default);
            l.lost = l.lost.wrapping_add(lost);
            l.runs = l.runs.wrapping_add(runs);
            fb.received = fb.received.wrapping_add(received);
            c.on_feedback(*fb, window);
        }
    }

    fn start() -> (AutoControl, FecFeedback) {
        let fb = FecFeedback {
            received: u32::MAX - 50, // the counters wrap during the test
            loss: Some(LossCounters::default()),
            ..FecFeedback::default()
        };
        (AutoControl::new(AutoParams::default()), fb)
    }

    #[test]
    fn a_report_claiming_a_billion_packets_costs_a_bounded_number_of_observations() {
        let (mut c, mut fb) = start();
        report(&mut c, &mut fb, 1, (0, 0, 0));
        report(&mut c, &mut fb, 1, (1 << 30, 1 << 28, 1 << 27));
        assert!(
            c.est.observed() <= MAX_OUTCOMES_PER_REPORT,
            "{}",
            c.est.observed()
        );
        // Scaled down in proportion: the mix it reports is still what the estimate shows.
        let e = c.est.estimate();
        assert!((e.loss_rate - 0.2).abs() < 0.01, "{e:?}");
        assert!((e.mean_burst - 2.0).abs() < 0.1, "{e:?}");
    }

    #[test]
    fn a_small_window_on_a_path_shown_clean_pays_under_two_percent_not_a_window_share() {
        let (mut c, mut fb) = start();
        // 10 Mb/s, 20 ms: a window of 35 packets. A startup's probe spans one window.
        report_in_window(&mut c, &mut fb, 30, (10, 0, 0), 35.0);
        assert_eq!(c.code(), CodeSize { k: 35, m: 1 }, "after 300 packets");
        report_in_window(&mut c, &mut fb, 100, (10, 0, 0), 35.0);
        assert_eq!(c.code(), CodeSize { k: 64, m: 1 }, "after 1300 packets");
        // Loss the longer block cannot meet the target for brings the sizing back.
        report(&mut c, &mut fb, 50, (98, 2, 2));
        assert!(c.code().overhead() > 0.02, "{:?}", c.code());
    }

    #[test]
    fn retransmissions_are_protected_where_the_channel_loses_more_than_the_queue() {
        let (mut c, mut fb) = start();
        report(&mut c, &mut fb, 400, (100, 0, 0));
        assert_eq!(c.retransmission_repairs(1), 0, "clean path");
        assert_eq!(c.retransmission_repairs(20), 0, "clean path");
        report(&mut c, &mut fb, 400, (95, 5, 5));
        // 5 % random loss, window of 1000 packets (target 10⁻³): a lone retransmission
        // gets the one repair the cap allows, a run of 20 what meets the target.
        assert_eq!(c.retransmission_repairs(1), 1);
        let m = c.retransmission_repairs(20);
        assert!((3..=8).contains(&m), "{m} repairs for 20 retransmissions");
        assert_eq!(
            c.retransmission_repairs(1000),
            c.retransmission_repairs(128)
        );
        // A queue that drops more than the channel: its retransmissions get no repairs.
        for _ in 0..400 {
            let l = fb.loss.as_mut().unwrap();
            l.lost = l.lost.wrapping_add(5);
            l.runs = l.runs.wrapping_add(5);
            l.congestion_lost = l.congestion_lost.wrapping_add(8);
            fb.received = fb.received.wrapping_add(87);
            c.on_feedback(fb, 1000.0);
        }
        assert!(c.estimate().loss_rate > 0.03, "{:?}", c.estimate());
        assert_eq!(c.retransmission_repairs(1), 0);
        assert_eq!(c.retransmission_repairs(20), 0);
    }

    #[test]
    fn starts_at_the_probe_level_and_follows_measured_loss() {
        let (mut c, mut fb) = start();
        assert!(c.code().overhead() <= 0.02, "{:?}", c.code());
        report(&mut c, &mut fb, 400, (95, 5, 5));
        let heavy = c.code();
        assert!(
            (0.06..0.2).contains(&heavy.overhead()),
            "5 % random loss needs real but bounded repair: {heavy:?}"
        );
        // Loss stops: back down towards the probe level.
        report(&mut c, &mut fb, 4000, (100, 0, 0));
        assert!(c.code().overhead() <= 0.03, "{:?}", c.code());
    }

    #[test]
    fn a_lossy_link_behind_a_standing_queue_is_measured_on_the_packets_with_room() {
        // A 1 % link; 70 % of the packets meet a full queue, where the receiver counts
        // their losses as congestion and their arrivals apart. Per report of 1000 packets:
        // 7 lost and 693 arrived at the full queue, 3 lost (isolated) and 297 arrived with
        // room.
        let (mut c, mut fb) = start();
        for _ in 0..100 {
            let l = fb.loss.get_or_insert_with(LossCounters::default);
            l.lost = l.lost.wrapping_add(3);
            l.runs = l.runs.wrapping_add(3);
            l.congestion_lost = l.congestion_lost.wrapping_add(7);
            l.congestion_received = l.congestion_received.wrapping_add(693);
            fb.received = fb.received.wrapping_add(990);
            c.on_feedback(fb, 1000.0);
        }
        let p = c.estimate().loss_rate;
        // Counting the full queue's arrivals as channel packets would read 3 / 993.
        assert!((0.008..0.012).contains(&p), "estimated {p}");
        assert_eq!(
            c.congestion_lost,
            99 * 7,
            "the first report is the baseline"
        );
    }

    #[test]
    fn bursts_of_the_same_loss_rate_need_more_repair() {
        let (mut single, mut fb1) = start();
        report(&mut single, &mut fb1, 400, (98, 2, 2));
        // The same 2 % loss in runs of 4 packets.
        let (mut bursty, mut fb2) = start();
        report(&mut bursty, &mut fb2, 200, (196, 4, 1));
        assert!((bursty.estimate().mean_burst - 4.0).abs() < 0.5);
        assert!(
            bursty.code().overhead() > single.code().overhead() * 1.5,
            "{:?} vs {:?}",
            bursty.code(),
            single.code()
        );
    }

    #[test]
    fn congestion_drops_do_not_raise_redundancy() {
        let (mut c, mut fb) = start();
        let probe = c.code();
        for _ in 0..400 {
            let l = fb.loss.as_mut().unwrap();
            l.congestion_lost = l.congestion_lost.wrapping_add(10);
            fb.received = fb.received.wrapping_add(90);
            c.on_feedback(fb, 1000.0);
        }
        assert_eq!(c.code(), probe);
        // The first report is the baseline the others are measured from.
        assert_eq!(c.congestion_lost, 3990);
    }

    #[test]
    fn repair_never_takes_more_than_its_share() {
        let (mut c, mut fb) = start();
        // Heavy, bursty loss would call for most of the packets to be repair.
        report(&mut c, &mut fb, 400, (40, 60, 3));
        assert!(c.code().overhead() <= 1.0 / 3.0 + 1e-9, "{:?}", c.code());
        assert_eq!(c.code().k, 128, "{:?}", c.code());
    }

    #[test]
    fn the_probe_spans_a_window_not_a_quarter_of_one() {
        // Before, a window of 10 bounded every block to 2 packets, and the "probe" of a
        // clean path's startup sent one repair per two data packets.
        let (mut c, mut fb) = start();
        for _ in 0..3 {
            fb.received = fb.received.wrapping_add(10);
            c.on_feedback(fb, 10.0);
        }
        assert_eq!(c.code(), CodeSize { k: 10, m: 1 });
        for _ in 0..3 {
            fb.received = fb.received.wrapping_add(100);
            c.on_feedback(fb, 400.0);
        }
        assert!(c.code().overhead() <= 0.01, "{:?}", c.code());
    }

    /// A controller fed 400 reports of `lost` losses in `runs` runs among
    /// `received + lost` packets, with a window of `window` packets.
    fn fed(window: f64, counts: (u32, u32, u32)) -> AutoControl {
        fed_with(AutoParams::default(), window, counts)
    }

    /// [`fed`] with settings `p`.
    fn fed_with(p: AutoParams, window: f64, counts: (u32, u32, u32)) -> AutoControl {
        let (_, mut fb) = start();
        let mut c = AutoControl::new(p);
        report_in_window(&mut c, &mut fb, 400, counts, window);
        c
    }

    /// The default settings with the target held at 10⁻³, as `auto-t0.001` holds it.
    fn fixed_target() -> AutoParams {
        AutoParams {
            price_failures: false,
            ..AutoParams::default()
        }
    }

    #[test]
    fn a_small_window_bounds_the_block() {
        // 1 % isolated loss, a window of 40: within a quarter window it would take 8 + 2
        // (20 % repair); half a window meets the target for less. The target held at
        // 10⁻³ (as `auto-t0.001` does), since a window of 40 would otherwise price it.
        let fixed = fixed_target();
        let c = fed_with(fixed, 40.0, (99, 1, 1));
        let code = c.code();
        assert!((11..=20).contains(&code.k), "{code:?}");
        assert!(code.overhead() < 0.15, "{code:?}");
        let est = c.estimate();
        assert!(
            block_failure(&est, code.k + code.m, code.m) <= 1e-3,
            "{code:?}"
        );
        // 20 % loss in bursts of 5: nothing within the cap meets the target, so blocks
        // stay at a quarter window and fail early rather than late.
        let heavy = fed_with(fixed, 40.0, (80, 20, 4)).code();
        assert!(heavy.k <= 10, "{heavy:?}");
    }

    #[test]
    fn a_short_path_leaves_bursts_to_retransmission_a_long_one_does_not() {
        // 1 % loss in bursts of 5. On a window of 34 (10 Mb/s, 20 ms: a BDP of 17), 10⁻³
        // takes a third of the packets in repair; a failed block there costs a 20 ms round
        // trip, 17 packet times, so the target is 1/17.
        let bursts = (495, 5, 1);
        let short = fed(34.0, bursts);
        let fixed = fixed_target();
        let dear = fed_with(fixed, 34.0, bursts).code();
        assert!(dear.overhead() > 0.25, "{dear:?}");
        let priced = short.code();
        assert!(priced.overhead() < 0.15, "{priced:?}");
        let fail = block_failure(&short.estimate(), priced.k + priced.m, priced.m);
        assert!(fail > 1e-3 && fail <= 1.0 / 17.0, "{priced:?} fails {fail}");
        // A window of 4000 (a BDP of 2000 packets) keeps 10⁻³.
        let long = fed(4000.0, bursts);
        assert_eq!(long.code(), fed_with(fixed, 4000.0, bursts).code());
        let code = long.code();
        assert!(block_failure(&long.estimate(), code.k + code.m, code.m) <= 1e-3);
    }

    #[test]
    fn a_startup_window_is_not_taken_for_the_path() {
        // A window of 600 (a BDP of 300, so a target of 1/300) after 1500 measured
        // packets, fewer than eight BDPs: a startup sends about two windows before its
        // window stops growing, so this one is still growing and the target stays 10⁻³.
        let bursts = (495, 5, 1);
        let (mut c, mut fb) = start();
        let fails = |c: &AutoControl| {
            let code = c.code();
            block_failure(&c.estimate(), code.k + code.m, code.m)
        };
        report_in_window(&mut c, &mut fb, 3, bursts, 600.0);
        assert!(fails(&c) <= 1e-3, "{:?} fails {}", c.code(), fails(&c));
        // 3000 packets: the window has held, and the target is priced.
        report_in_window(&mut c, &mut fb, 3, bursts, 600.0);
        assert!(
            fails(&c) > 1e-3 && fails(&c) <= 1.0 / 300.0,
            "{:?}",
            c.code()
        );
    }
}
