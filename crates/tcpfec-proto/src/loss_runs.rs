//! Receiver side of the `auto` scheme's channel measurement: runs of lost packets, read
//! from the gaps in the transmission numbers that every data and repair packet carries.
//!
//! The sender cannot measure the channel itself: a segment rebuilt from a repair is
//! acknowledged like one that arrived, so only the receiver sees every loss. It counts,
//! as wrapping cumulative counters reported on each ACK (`wire::LossCounters`), the
//! packets lost and the runs they came in — for a two-state Gilbert channel those counts
//! and the packets received are the whole likelihood (good→bad transitions = runs, time in
//! the bad state = packets lost).
//!
//! **Channel or congestion.** A drop-tail queue drops only when it is full, a lossy link
//! drops whatever the queue holds. So each run is classed by the queueing delay of the
//! packet that ends it: its one-way delay (arrival minus the sender's timestamp, an
//! unknown clock offset included) above the smallest seen, which moves up as the
//! receiver's clock gains on the sender's (`LossRunMeter::follow_clock_gain`). A run that ends
//! while that delay is within [`CONGESTED_SHARE`] of the largest recently seen (and at least
//! [`MIN_QUEUE`]) is counted as congestion: FEC sized to it would only add load to a full
//! queue. So is a run that follows a packet which met such a queue: a full queue drops the
//! packets that come right after the one that took its last place, and when the sender
//! pauses after them (a burst's end, a window that closed) the packet that ends the run
//! arrives at a queue that has drained. (Judged by that packet alone, the drops of a
//! start-up overshoot into a 7-packet queue read as a 12 % channel, and `auto` sent a
//! fifth of a 10 MB transfer as repair.) The split errs on the safe side: a channel loss
//! that happens to strike while the queue is full is counted as congestion, never a
//! feedback loop where repair adds load that adds drops that add repair. Runs longer than [`MAX_CHANNEL_RUN`] are counted there
//! too, whatever the queue.
//!
//! The packets that arrive while the queue is near full are counted apart as well
//! (`congestion_received`), so the channel estimate is made from the packets that met a
//! queue with room only, losses and arrivals alike. Counting them as channel packets that
//! arrived, with the channel's losses among them taken as congestion, had read a 1 %
//! link as low as 0.3 % whenever a standing queue held most of the flight; the sender then also
//! knows how many of the congestion losses the channel alone would have caused.

use crate::time::Instant;
use crate::wire::LossCounters;

/// A run ending at a queueing delay at least this share of the recent maximum counts as
/// congestion.
pub const CONGESTED_SHARE: f64 = 0.8;

/// Queueing delays below this (µs) never count as congestion: a queue that shallow is not
/// full, and clock jitter alone reaches a few hundred microseconds on real hosts.
pub const MIN_QUEUE: u32 = 2_000;

/// Per packet, the recent maximum of the queueing delay keeps this share of itself, so it
/// forgets a queue that has gone within a few thousand packets.
const QUEUE_MAX_DECAY: f64 = 1.0 - 1.0 / 131072.0;

/// The recent maximum also halves over this many seconds, whatever the packet rate: a
/// slow flow forgot a start-up's queue only after minutes (eight flows sharing a
/// 42-packet buffer kept an 18.5 ms maximum from their start-up where the full queue
/// was 10-13 ms, classed its drops as the channel's, and sized a third of their packets
/// as repair).
const QUEUE_MAX_HALF_LIFE_S: f64 = 10.0;

/// Below this gap between packets the per-packet decay is the larger one (it equals the
/// time decay at about 0.11 ms), so the time decay's power is not computed per packet.
const TIME_DECAY_NEGLIGIBLE_S: f64 = 1e-4;

/// Runs longer than this are left to retransmission, counted with the congestion drops:
/// no block `auto` may send repairs more (128 data packets, a third of the packets
/// repair), and such runs are outages or overflowing buffers, not the channel FEC is
/// sized for. (A 30 s blackout read as channel loss sized every block after it for a
/// 55 % loss rate.)
pub const MAX_CHANNEL_RUN: u32 = 64;

/// The recent maximum of the queueing delay is raised only by the smallest delay of this
/// many arrivals in a row. A burst of the flow's own, queued at its sender's access link
/// or behind a burst of its own at the bottleneck, lasts a few packets; a full queue at
/// the bottleneck lasts for many. (Each packet's own delay had set the maximum: a flow's
/// start-up bursts into a 10 Mb/s link raised it to 20 ms where the full bottleneck queue
/// held 10 ms, and the drops at that full queue read as the channel's.)
const QUEUE_MAX_SAMPLE: u8 = 8;

/// Per packet, the share of recent arrivals that met a queue with room moves this far
/// toward 1 (room) or 0 (near full): it follows the last few hundred packets.
const ROOM_SHARE_GAIN: f64 = 1.0 / 512.0;

/// Duplicate ACKs are withheld (SPEC S4) while at most this share of recent arrivals met
/// a queue with room (`LossRunMeter::queue_mostly_full`).
const HOLD_ROOM_SHARE: f64 = 0.5;

/// The base delay follows the receiver's clock ahead of the sender's once it has gained
/// more than this, µs (see `LossRunMeter::offset_high`). Below it, a sender's varying
/// pause between an ACK and the next packet could move it.
const CLOCK_GAIN_STEP: i32 = 1_000;

/// A jump in the numbers larger than this is not a loss run (a peer restarting its
/// numbering, or a corrupted field); the meter resynchronises instead.
const MAX_RUN: u32 = 1 << 16;

/// Loss runs measured so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct LossRunMeter {
    /// The number the next packet should carry.
    next: Option<u32>,
    /// Smallest one-way delay seen (µs, wrapping, offset by the clocks' difference),
    /// moved up as far as the receiver's clock has gained on the sender's since.
    min_delay: Option<u32>,
    /// Largest `ts_ecr − ts_val` seen (µs, wrapping): the receiver's clock when it sent
    /// an ACK less the sender's when it sent a packet echoing it, which is the clocks'
    /// difference less the ACK's trip and the sender's pause. Queues on the data path
    /// do not move it, so it tells a receiver clock that runs fast (the one-way delays
    /// grow with no queue: 50 ppm is 3 ms a minute) from a queue that stands.
    offset_high: Option<u32>,
    /// `offset_high` when `min_delay` was last set or moved.
    offset_at_base: Option<u32>,
    /// Recent maximum of the queueing delay, µs (`QUEUE_MAX_SAMPLE`), and when it was
    /// last updated.
    queue_max: f64,
    queue_max_at: Option<Instant>,
    /// The last gap between packets whose time decay was computed (s), and that decay:
    /// packets that queued behind each other, or were paced at one rate, arrive at one
    /// gap, and the power was most of what the meter cost per packet.
    last_time_decay: (f64, f64),
    /// Queueing delay of the latest packet in order, µs: the one a run of losses follows.
    last_queue: u32,
    /// The smallest queueing delay of the arrivals since the maximum was last raised, and
    /// how many they are (`QUEUE_MAX_SAMPLE`).
    sample_min: u32,
    sample_len: u8,
    /// Share of recent arrivals that met a queue with room (`ROOM_SHARE_GAIN`); a new
    /// meter has seen none.
    room_share: f64,
    /// Numbered packets received.
    pub received: u64,
    counters: LossCounters,
}

impl LossRunMeter {
    /// A numbered packet arrived at `now`, sent at the peer's `ts_val` (µs) echoing our
    /// `ts_ecr` (0: none). Returns true if it ended a run of losses counted as
    /// congestion.
    pub fn on_packet(&mut self, now: Instant, number: u32, ts_val: u32, ts_ecr: u32) -> bool {
        self.received += 1;
        if ts_ecr != 0 {
            self.follow_clock_gain(ts_ecr.wrapping_sub(ts_val));
        }
        let queue = self.queueing_delay(now, now.timestamp_micros().wrapping_sub(ts_val));
        let near_full = self.near_full(queue);
        let room = if near_full { 0.0 } else { 1.0 };
        self.room_share += (room - self.room_share) * ROOM_SHARE_GAIN;
        if near_full {
            let c = &mut self.counters;
            c.congestion_received = c.congestion_received.wrapping_add(1);
        }
        let Some(next) = self.next else {
            self.next = Some(number.wrapping_add(1));
            self.last_queue = queue;
            return false;
        };
        let gap = number.wrapping_sub(next);
        if gap >= 1 << 31 {
            // Late (reordered past a later packet) or duplicated: its place was already
            // counted as lost; the estimate tolerates that rare error.
            return false;
        }
        self.next = Some(number.wrapping_add(1));
        let before = core::mem::replace(&mut self.last_queue, queue);
        if gap == 0 || gap > MAX_RUN {
            return false;
        }
        let congested = gap > MAX_CHANNEL_RUN || near_full || self.near_full(before);
        let c = &mut self.counters;
        if congested {
            c.congestion_lost = c.congestion_lost.wrapping_add(gap);
        } else {
            c.lost = c.lost.wrapping_add(gap);
            c.runs = c.runs.wrapping_add(1);
        }
        congested
    }

    /// True if a queueing delay of `queue` µs means a queue near full: within
    /// [`CONGESTED_SHARE`] of the recent maximum, and at least [`MIN_QUEUE`].
    fn near_full(&self, queue: u32) -> bool {
        queue >= MIN_QUEUE && queue as f64 >= CONGESTED_SHARE * self.queue_max
    }

    /// True while most recent arrivals met a queue near full, as on a bottleneck that
    /// flows share and fill, and from a flow's first packet until it has seen otherwise
    /// (`Receiver`'s hold of duplicate ACKs).
    pub fn queue_mostly_full(&self) -> bool {
        self.room_share <= HOLD_ROOM_SHARE
    }

    /// The counters to report.
    pub fn counters(&self) -> LossCounters {
        self.counters
    }

    /// A packet's `ts_ecr − ts_val` was `gap`: where the largest such gap has grown by
    /// more than [`CLOCK_GAIN_STEP`] since the smallest delay was set, the receiver's
    /// clock has gained that much on the sender's, and the smallest delay moves up with
    /// it. Left alone, a clock 50 ppm fast made every packet after a few minutes look
    /// queued at a full queue, and every loss congestion. A move too far (an ACK that
    /// came back faster than any before it) is undone by the next packet that meets an
    /// empty queue, as it sets a new smallest delay.
    fn follow_clock_gain(&mut self, gap: u32) {
        let high = match self.offset_high {
            Some(h) if (gap.wrapping_sub(h) as i32) <= 0 => h,
            _ => gap,
        };
        self.offset_high = Some(high);
        let Some(at_base) = self.offset_at_base else {
            self.offset_at_base = self.min_delay.map(|_| high);
            return;
        };
        let gain = high.wrapping_sub(at_base);
        if gain as i32 > CLOCK_GAIN_STEP {
            self.min_delay = self.min_delay.map(|m| m.wrapping_add(gain));
            self.offset_at_base = Some(high);
        }
    }

    /// Queueing delay of a packet whose one-way delay (plus clock offset) is `delay`, and
    /// the recent maximum updated with it.
    fn queueing_delay(&mut self, now: Instant, delay: u32) -> u32 {
        let queue = match self.min_delay {
            Some(min) if (delay.wrapping_sub(min) as i32) >= 0 => delay.wrapping_sub(min),
            _ => {
                self.min_delay = Some(delay);
                self.offset_at_base = self.offset_high;
                0
            }
        };
        let elapsed = self
            .queue_max_at
            .map_or(0.0, |t| now.saturating_since(t).as_secs_f64());
        self.queue_max_at = Some(now);
        let decay = if elapsed < TIME_DECAY_NEGLIGIBLE_S {
            QUEUE_MAX_DECAY
        } else if elapsed == self.last_time_decay.0 {
            self.last_time_decay.1
        } else {
            let decay = QUEUE_MAX_DECAY.min(0.5f64.powf(elapsed / QUEUE_MAX_HALF_LIFE_S));
            self.last_time_decay = (elapsed, decay);
            decay
        };
        self.queue_max *= decay;
        self.sample_min = if self.sample_len == 0 {
            queue
        } else {
            self.sample_min.min(queue)
        };
        self.sample_len += 1;
        if self.sample_len == QUEUE_MAX_SAMPLE {
            self.queue_max = self.queue_max.max(self.sample_min as f64);
            self.sample_len = 0;
        }
        queue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_us(us: u64) -> Instant {
        Instant(us * 1_000)
    }

    /// Packets numbered `numbers`, sent 100 µs apart, each delayed 10 ms plus `queue(n)` µs.
    fn feed(m: &mut LossRunMeter, numbers: impl Iterator<Item = u32>, queue: impl Fn(u32) -> u64) {
        for n in numbers {
            let sent = 1_000_000 + n as u64 * 100;
            m.on_packet(at_us(sent + 10_000 + queue(n)), n, sent as u32, 0);
        }
    }

    #[test]
    fn gaps_are_counted_as_runs_of_channel_loss_when_the_queue_is_empty() {
        let mut m = LossRunMeter::default();
        // Lost: 5 (a run of 1) and 20..23 (a run of 3).
        let kept = (0..40u32).filter(|n| *n != 5 && !(20..23).contains(n));
        feed(&mut m, kept, |_| 0);
        let c = m.counters();
        assert_eq!((c.lost, c.runs, c.congestion_lost), (4, 2, 0));
        assert_eq!(m.received, 36);
    }

    #[test]
    fn losses_at_a_full_queue_count_as_congestion() {
        let mut m = LossRunMeter::default();
        // The queue rises to 50 ms and drains again every 1000 packets. A loss at the top
        // is congestion; losses while it is at 20 ms or near empty are channel losses.
        let kept = (0..3000u32).filter(|n| ![1200, 1500, 1990].contains(n));
        feed(&mut m, kept, |n| {
            50_000 - (n as i64 % 1000 - 500).unsigned_abs() * 100
        });
        let c = m.counters();
        assert_eq!((c.lost, c.runs, c.congestion_lost), (2, 2, 1));
        // Arrivals near full: the first rise counts whole from 2 ms up (each packet is
        // above the maximum, which trails it by a sample, 481 of them), then about 200 a
        // cycle within 10 ms of the 50 ms top, a few more as the remembered top decays
        // (per packet and in time) and as it is raised only once a sample; 1007 by the
        // meter's own arithmetic.
        assert_eq!(c.congestion_received, 1007);
        assert!(c.congestion_received < m.received as u32 / 2);
    }

    #[test]
    fn a_run_after_a_packet_that_met_a_full_queue_is_congestion_though_the_queue_drained() {
        let mut m = LossRunMeter::default();
        // Packets 0..100 meet an empty queue; 100..110 a queue rising to 20 ms; 110..115
        // are dropped at the full queue; the sender pauses and 115.. meet an empty one.
        let kept = (0..200u32).filter(|n| !(110..115).contains(n));
        feed(&mut m, kept, |n| match n {
            100..=109 => (n as u64 - 99) * 2_000,
            _ => 0,
        });
        let c = m.counters();
        assert_eq!((c.lost, c.runs, c.congestion_lost), (0, 0, 5));
    }

    #[test]
    fn a_late_packet_is_not_the_one_a_run_follows() {
        let mut m = LossRunMeter::default();
        // 0..10 meet a queue rising to 20 ms; a duplicate of 3 arrives late at an empty
        // queue; 10 and 11 are dropped; 12 meets the drained queue.
        let arrive = |m: &mut LossRunMeter, n: u32, queue_us: u64| {
            let sent = 1_000_000 + n as u64 * 100;
            m.on_packet(at_us(sent + 10_000 + queue_us), n, sent as u32, 0);
        };
        for n in 0..10 {
            arrive(&mut m, n, n as u64 * 2_000 + 2_000);
        }
        arrive(&mut m, 3, 0);
        arrive(&mut m, 12, 0);
        let c = m.counters();
        assert_eq!((c.lost, c.congestion_lost), (0, 2));
    }

    #[test]
    fn a_burst_of_a_few_packets_does_not_set_the_queue_maximum() {
        let mut m = LossRunMeter::default();
        // A queue full at 10 ms, through which every 100th packet starts a burst of
        // four of the flow's own that queue 20 ms (at its access link). 1950 is dropped
        // at the full queue.
        let kept = (0..2000u32).filter(|n| *n != 1950);
        feed(&mut m, kept, |n| {
            if n == 0 {
                0
            } else if n % 100 < 4 {
                20_000
            } else {
                10_000
            }
        });
        let c = m.counters();
        // Against a 20 ms maximum the full queue is not near full (below 80 %), and the
        // drop would read as the channel's.
        assert_eq!((c.lost, c.congestion_lost), (0, 1));
        assert!(m.queue_mostly_full());
    }

    #[test]
    fn a_queue_with_room_is_told_from_a_full_one_after_a_few_hundred_packets() {
        let mut m = LossRunMeter::default();
        assert!(
            m.queue_mostly_full(),
            "a new flow starts as at a full queue"
        );
        // A queue that stays empty.
        feed(&mut m, 0..2000u32, |_| 0);
        assert!(!m.queue_mostly_full());
        // A queue that fills again and stays full.
        feed(&mut m, 2000..4000u32, |_| 10_000);
        assert!(m.queue_mostly_full());
    }

    #[test]
    fn a_slow_flow_forgets_its_start_up_queue_in_time() {
        let mut m = LossRunMeter::default();
        // A start-up queue of 20 ms, then ten packets a second for a minute through a
        // queue full at 12 ms, where one packet is dropped.
        fn arrive(m: &mut LossRunMeter, n: u32, at_ms: u64, queue_us: u64) {
            let sent = at_ms * 1_000;
            m.on_packet(at_us(sent + 10_000 + queue_us), n, sent as u32, 0);
        }
        for i in 0..20 {
            arrive(&mut m, i as u32, 1_000 + i, 1_000 * i);
        }
        for i in 0..600 {
            arrive(&mut m, 20 + i as u32, 2_000 + 100 * i, 12_000);
        }
        // 620 is dropped at the full queue.
        arrive(&mut m, 621, 62_100, 12_000);
        let c = m.counters();
        // Measured against the 20 ms of the start-up, 12 ms would not be near full
        // (below 80 %): the drop would read as the channel's.
        assert_eq!((c.lost, c.congestion_lost), (0, 1));
    }

    /// Twenty minutes of a packet every 10 ms through a path with 10 ms each way and a
    /// queue that rises from empty to 5 ms and drains every second, the receiver's clock
    /// `ppm` fast (sender's clock true, both at 1 s at the start), each packet echoing
    /// the receiver's ACK of the one before; every 97th packet lost, at whatever the
    /// queue then is. Returns the counters.
    fn skewed(ppm: i64, echo: bool) -> LossCounters {
        let mut m = LossRunMeter::default();
        let receiver_clock = |true_us: u64| true_us + true_us * ppm as u64 / 1_000_000;
        for n in 0..120_000u32 {
            let sent = 1_000_000 + n as u64 * 10_000;
            // The ACK of packet n - 1 left the receiver 10 ms before packet n was sent.
            let ts_ecr = if echo && n > 0 {
                receiver_clock(sent - 10_000) as u32
            } else {
                0
            };
            if n % 97 == 96 {
                continue;
            }
            let queue = (n as u64 % 100) * 50;
            let arrived = receiver_clock(sent + 10_000 + queue);
            m.on_packet(at_us(arrived), n, sent as u32, ts_ecr);
        }
        m.counters()
    }

    #[test]
    fn a_receiver_clock_that_runs_fast_is_not_read_as_a_queue() {
        let true_clocks = skewed(0, true);
        // Of the 1237 losses, those where the queue is within a fifth of its recent top
        // (or just after such a packet) count as congestion, about a third; the rest
        // as the channel's.
        assert_eq!(true_clocks.lost + true_clocks.congestion_lost, 1237);
        assert!(true_clocks.lost > 700, "{true_clocks:?}");
        // 50 ppm gains 60 ms in twenty minutes, twelve times the queue: read as queueing
        // it would make every loss after the first few minutes congestion. Followed in
        // steps of `CLOCK_GAIN_STEP`, it moves the split by a few losses in a hundred.
        let fast = skewed(50, true);
        assert!(
            fast.lost.abs_diff(true_clocks.lost) <= 62,
            "{fast:?} against {true_clocks:?}"
        );
        let without_echoes = skewed(50, false);
        assert!(without_echoes.lost < 300, "{without_echoes:?}");
    }

    #[test]
    fn a_queue_that_stands_does_not_move_the_smallest_delay() {
        let mut m = LossRunMeter::default();
        // An empty queue for a second, then one that stands at 30 ms to 40 ms for ten
        // minutes (clocks true, every ACK 10 ms on its way back); 60 000 is lost where
        // the queue is at its top, which is congestion.
        for n in (0..60_100u32).filter(|n| *n != 60_000) {
            let sent = 1_000_000 + n as u64 * 10_000;
            let queue = if n < 100 {
                0
            } else {
                30_000 + (n as u64 % 100) * 100
            };
            let ts_ecr = sent as u32 - 10_000;
            m.on_packet(at_us(sent + 10_000 + queue), n, sent as u32, ts_ecr);
        }
        let c = m.counters();
        assert_eq!((c.lost, c.congestion_lost), (0, 1));
    }

    #[test]
    fn numbers_wrap_and_late_packets_are_not_runs() {
        let mut m = LossRunMeter::default();
        let start = u32::MAX - 3;
        let numbers = [
            start,
            start + 1,
            start + 3,
            start + 2,
            start.wrapping_add(5),
        ];
        for (i, n) in numbers.into_iter().enumerate() {
            m.on_packet(at_us(20_000 + i as u64 * 100), n, 1 + i as u32 * 100, 0);
        }
        let c = m.counters();
        // Lost: start+2 (later arriving late, left counted) and start+4.
        assert_eq!((c.lost, c.runs), (2, 2));
    }

    #[test]
    fn a_run_longer_than_any_block_repairs_is_not_channel_loss() {
        let mut m = LossRunMeter::default();
        feed(
            &mut m,
            (0..200u32).filter(|n| !(50..150).contains(n)),
            |_| 0,
        );
        let c = m.counters();
        assert_eq!((c.lost, c.runs, c.congestion_lost), (0, 0, 100));
    }

    #[test]
    fn a_jump_beyond_any_plausible_run_resynchronises() {
        let mut m = LossRunMeter::default();
        feed(
            &mut m,
            [0u32, 1, 2, 1 << 20, (1 << 20) + 1].into_iter(),
            |_| 0,
        );
        assert_eq!(m.counters(), LossCounters::default());
    }
}
