//! The receiving half: reassembly in segment order, SACK runs, and when to acknowledge.

use crate::fec::window::WindowDecoder;
use crate::fec::{Decoder, FecConfig, StreamCode};
use crate::loss_runs::LossRunMeter;
use crate::time::Instant;
use crate::wire::{FecFeedback, FecGroup, RepairInfo, SackBlock, SackBlocks, WindowInfo};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

/// At most this many extra ACKs report the runs withheld duplicate ACKs never reported
/// (`Receiver::release_suppression`); the rest are found by the usual loss recovery.
const MAX_REPLAY_ACKS: u32 = 32;

/// Out-of-order segments further ahead than this are dropped (bounds memory).
const MAX_REORDER_SEGMENTS: u64 = 1 << 20;
/// Each segment a legitimate sender has in flight carries at least this many bytes of
/// the window (or the stream is slow enough that few are in flight): so no segment can
/// lie further ahead than the window over this, and the receiver keeps no more slots
/// than that. A spoofed segment far ahead would otherwise make it reserve a slot for
/// every number below, about 40 bytes each (40 MB for 2^20).
const MIN_SEGMENT_FOR_SLOTS: u64 = 256;
/// A run of more missing segments than this is judged unrepairable without looking.
const MAX_HOLE_CHECK: u64 = 64;
/// Duplicate ACKs that make a sender retransmit (RFC 5681's DupThresh): a release of
/// suppression sends at most this many in one burst.
const DUP_THRESH: u32 = 3;

/// How an arriving segment fitted into the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// The next expected segment, nothing held behind it.
    InOrder,
    /// The next expected segment, and held segments followed it.
    FilledHole,
    /// Ahead of a gap.
    OutOfOrder,
    /// Already had it, or no room: not stored.
    Ignored,
}

/// FEC state of the receiving half.
#[derive(Debug)]
struct FecRx {
    decoder: Decoder,
    /// The sliding-window code's decoder, for senders that protect streams with it.
    window: Option<WindowDecoder>,
    cfg: FecConfig,
    /// Loss runs from the packet numbers (`auto`).
    loss_runs: Option<LossRunMeter>,
    /// Missing segment runs `[start, end)` below `high_nxt`.
    holes: Vec<(u64, u64)>,
    /// One past the highest segment received.
    high_nxt: u64,
    dupacks_suppressed: u64,
    /// Duplicate ACKs withheld since the cumulative ACK last moved (replayed if the
    /// suppression is released).
    withheld: u32,
    /// Holes below this segment were opened by runs of losses the loss-run meter counted
    /// as congestion (`FecRx::withholds_dupacks`).
    congestion_holes_end: u64,
    /// A numbered packet ended such a run since the last segment: the next segment
    /// bounds the holes the run opened.
    congestion_run_ended: bool,
}

impl FecRx {
    /// Whether duplicate ACKs are withheld now (S4), repairs permitting, with `rcv_nxt`
    /// the first missing segment.
    ///
    /// Under `auto` (`AutoParams::hold_only_at_full_queue`) only where the queue is full:
    /// for the holes of runs of losses counted as congestion, and while most arrivals
    /// meet a near-full queue (a flow's first packets included, before the meter can
    /// tell). There the ACK clock's pause is the congestion response that FEC's repair
    /// would otherwise hide. A hole the channel made at a queue with room is
    /// acknowledged at once, and the sender waits for its block's repairs itself
    /// (`Scoreboard::una_awaits_repairs`): a clean short path's block spans two windows,
    /// and the pause stalled the sender for a round trip per loss.
    fn withholds_dupacks(&self, rcv_nxt: u64) -> bool {
        if !self.cfg.suppress_dupacks {
            return false;
        }
        !self.cfg.holds_only_at_full_queue()
            || rcv_nxt < self.congestion_holes_end
            || self
                .loss_runs
                .as_ref()
                .is_none_or(LossRunMeter::queue_mostly_full)
    }
}

/// A run of segments held out of order, with the time it last grew (RFC 2018 ordering).
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    touched: u64,
    /// Reported in a SACK block since it last grew.
    reported: bool,
}

/// What the receiver reports in the next acknowledgement.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AckFields {
    pub ack: u64,
    pub window: u32,
    pub ts_ecr: u32,
    pub sack: SackBlocks,
    pub ece: bool,
    /// Decoder counters, for TCP-dFEC senders.
    pub fec_feedback: Option<FecFeedback>,
}

#[derive(Debug)]
pub(crate) struct Receiver {
    rcv_nxt: u64,
    /// Slot `i` holds segment `rcv_nxt + i` if it arrived out of order.
    held: VecDeque<Option<(Bytes, bool)>>,
    held_bytes: usize,
    runs: Vec<Run>,
    touch_counter: u64,
    ready: VecDeque<Bytes>,
    ready_bytes: usize,
    fin_delivered: bool,
    /// The receive buffer in use: the window advertised is what of it is free.
    window_limit: u32,
    /// Receive-window auto-tuning, if on (`Config::recv_window_initial`).
    growth: Option<WindowGrowth>,
    delayed_ack: bool,
    delayed_ack_timeout: Duration,
    unacked_in_order: u32,
    ack_now: bool,
    /// ACKs still to send after the next one: a repeated recovery ACK (see
    /// `FecConfig::repeat_recovery_ack`) or replayed duplicates (see `release_suppression`).
    extra_acks: u32,
    delack_deadline: Option<Instant>,
    ts_recent: u32,
    ece_latched: bool,
    sack_enabled: bool,
    max_sack_blocks: usize,
    /// The next ACKs report the runs never reported, lowest first (`release_suppression`).
    replaying: bool,
    fec: Option<FecRx>,
    pub segments_received: u64,
    pub duplicate_segments: u64,
    pub bytes_delivered: u64,
    /// Bytes the application has read.
    bytes_read: u64,
    /// Rebuilt segments, for a trace (`Config::trace`).
    pub(crate) trace: crate::trace::TraceLog,
}

/// State of receive-window auto-tuning (dynamic right-sizing).
#[derive(Debug, Clone)]
struct WindowGrowth {
    /// The largest window, bytes.
    max: u32,
    /// Receive-side round trip, microseconds (from echoed timestamps).
    rtt_us: Option<u64>,
    /// Start of the current measurement.
    since: Option<Instant>,
    /// `bytes_read` at its start.
    read_then: u64,
    /// The most the application read in one round trip so far, bytes.
    space: u64,
}

impl Receiver {
    pub fn new(window_limit: u32, delayed_ack: bool, delayed_ack_timeout: Duration) -> Self {
        Receiver {
            rcv_nxt: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            runs: Vec::new(),
            touch_counter: 0,
            ready: VecDeque::new(),
            ready_bytes: 0,
            fin_delivered: false,
            window_limit,
            growth: None,
            delayed_ack,
            delayed_ack_timeout,
            unacked_in_order: 0,
            ack_now: false,
            extra_acks: 0,
            delack_deadline: None,
            ts_recent: 0,
            ece_latched: false,
            sack_enabled: false,
            max_sack_blocks: 3,
            replaying: false,
            fec: None,
            segments_received: 0,
            duplicate_segments: 0,
            bytes_delivered: 0,
            bytes_read: 0,
            trace: crate::trace::TraceLog::default(),
        }
    }

    /// Lets the window grow up to `max` bytes by dynamic right-sizing, as Linux tunes
    /// its receive buffer: once per receive-side round trip (measured by the timestamps
    /// the sender echoes), the buffer becomes at least twice what the application read
    /// in that round trip, up to six times while that amount is still growing (the
    /// sender is in slow start). An application that stops reading reads nothing per round trip,
    /// so the buffer stays where it is. Nothing changes if `max` is not above the
    /// starting window.
    pub fn with_window_growth(mut self, max: u32) -> Self {
        if max > self.window_limit {
            self.growth = Some(WindowGrowth {
                max,
                rtt_us: None,
                since: None,
                read_then: 0,
                // From the first round trip on: a start at the window itself would wait
                // until the application read that much in one round trip, and the
                // window would limit the sender's slow start first.
                space: 0,
            });
        }
        self
    }

    /// How far ahead of the next expected segment one may lie and be stored: what the
    /// window allows (see [`MIN_SEGMENT_FOR_SLOTS`]), at most [`MAX_REORDER_SEGMENTS`].
    fn reorder_slots(&self) -> u64 {
        (self.window_limit as u64 / MIN_SEGMENT_FOR_SLOTS).clamp(1024, MAX_REORDER_SEGMENTS)
    }

    /// The receive buffer now in use, bytes (grows with auto-tuning).
    pub fn window_limit(&self) -> u32 {
        self.window_limit
    }

    /// A data segment arrived at `now` echoing our timestamp `ts_ecr` (microseconds):
    /// samples the round trip and, once per round trip, sizes the window to what the
    /// application read.
    pub fn on_echo(&mut self, now: Instant, ts_ecr: u32) {
        let Some(g) = self.growth.as_mut() else {
            return;
        };
        if ts_ecr == 0 {
            return;
        }
        // The echo can be older than the round trip (an idle sender echoes the last
        // ACK it had): take the minimum at once and larger samples slowly.
        let sample = now.timestamp_micros().wrapping_sub(ts_ecr) as u64;
        if sample > 60_000_000 {
            return; // wrapped or absurd
        }
        let rtt = match g.rtt_us {
            Some(r) if sample >= r => r - r / 8 + sample / 8,
            _ => sample.max(1),
        };
        g.rtt_us = Some(rtt);
        let Some(since) = g.since else {
            g.since = Some(now);
            g.read_then = self.bytes_read;
            return;
        };
        if now.saturating_since(since).as_micros() < rtt as u128 {
            return;
        }
        let read = self.bytes_read - g.read_then;
        if read > g.space {
            // Twice the round trip's reads, and up to three times more as fast as they
            // grew (Linux's rule): a sender in slow start doubles its flight every
            // round trip, and the measurement lags it by one.
            let growth = if g.space == 0 {
                1.0
            } else {
                ((read - g.space) as f64 / g.space as f64).min(1.0)
            };
            let want = (read as f64 * (2.0 + 4.0 * growth)).min(g.max as f64) as u32;
            self.window_limit = self.window_limit.max(want);
            g.space = read;
        }
        g.since = Some(now);
        g.read_then = self.bytes_read;
    }

    pub fn enable_sack(&mut self, max_blocks: usize) {
        self.sack_enabled = true;
        self.max_sack_blocks = max_blocks.min(crate::wire::MAX_SACK_BLOCKS);
    }

    /// Decodes repair packets (and, per `cfg`, suppresses duplicate ACKs and echoes
    /// recoveries as ECN).
    pub fn enable_fec(&mut self, cfg: FecConfig) {
        self.fec = Some(FecRx {
            decoder: if cfg.protect_retransmissions {
                Decoder::with_overlapping_groups()
            } else {
                Decoder::default()
            },
            window: cfg
                .stream
                .filter(|s| s.code == StreamCode::Window)
                .map(|_| WindowDecoder::default()),
            cfg,
            loss_runs: cfg.measures_loss_runs().then(LossRunMeter::default),
            holes: Vec::new(),
            high_nxt: self.rcv_nxt,
            dupacks_suppressed: 0,
            withheld: 0,
            congestion_holes_end: 0,
            congestion_run_ended: false,
        });
    }

    /// FEC counters: (repairs received, unneeded, recovered, unrecoverable groups,
    /// duplicate ACKs suppressed).
    pub fn fec_counts(&self) -> (u64, u64, u64, u64, u64) {
        self.fec.as_ref().map_or((0, 0, 0, 0, 0), |f| {
            let d = f.decoder.stats;
            let w = f.window.as_ref().map(|w| w.stats).unwrap_or_default();
            (
                d.repairs_received + w.repairs_received,
                d.repairs_unneeded + w.repairs_unneeded + w.repairs_too_old,
                d.recovered + w.recovered,
                d.unrecoverable_groups,
                f.dupacks_suppressed,
            )
        })
    }

    /// True once the peer's FIN has been delivered in order.
    pub fn fin_delivered(&self) -> bool {
        self.fin_delivered
    }

    /// Handles an arriving data (or FIN) segment; `fec` is its group option, if any.
    #[allow(clippy::too_many_arguments)]
    pub fn on_segment(
        &mut self,
        now: Instant,
        seg: u64,
        payload: Bytes,
        fin: bool,
        ts_val: u32,
        cwr: bool,
        fec: Option<FecGroup>,
    ) {
        self.segments_received += 1;
        if let Some(f) = self.fec.as_mut() {
            if std::mem::take(&mut f.congestion_run_ended) {
                f.congestion_holes_end = f.congestion_holes_end.max(seg);
            }
        }
        if cwr {
            self.ece_latched = false;
        }
        // Once the stream is complete the window code has nothing left to rebuild, and a
        // late copy is not kept again (`deliver` released what it kept).
        let ended = self.fin_delivered;
        let rebuilt = match self.fec.as_mut() {
            Some(f) if !payload.is_empty() => {
                let mut rebuilt = f.decoder.on_source(seg, fec, &payload);
                if let Some(w) = f.window.as_mut().filter(|_| !ended) {
                    rebuilt.extend(w.on_source(seg, &payload));
                }
                rebuilt
            }
            _ => Vec::new(),
        };
        let arrival = self.accept(seg, payload, fin, ts_val);
        if arrival == Arrival::Ignored && seg < self.rcv_nxt {
            self.duplicate_segments += 1;
        }
        self.ack_for(now, arrival, fin);
        self.note_arrival(seg);
        for (s, p) in rebuilt {
            self.on_rebuilt(s, p);
        }
        self.apply_suppression(arrival);
    }

    /// A data or repair packet carried transmission number `number`, the sender's
    /// timestamp `ts_val` and its echo of ours, `ts_ecr`: the loss-run meter reads it.
    pub fn on_numbered(&mut self, now: Instant, number: u32, ts_val: u32, ts_ecr: u32) {
        if let Some(f) = self.fec.as_mut() {
            if let Some(m) = f.loss_runs.as_mut() {
                // A repair that ends such a run leaves it to the next segment.
                f.congestion_run_ended |= m.on_packet(now, number, ts_val, ts_ecr);
            }
        }
    }

    /// Handles a repair packet.
    pub fn on_repair(&mut self, group: FecGroup, info: RepairInfo, payload: Bytes) {
        let rcv_nxt = self.rcv_nxt;
        let Some(f) = self.fec.as_mut() else { return };
        let unneeded = f.decoder.stats.repairs_unneeded;
        let rebuilt = f.decoder.on_repair(group, info, payload, rcv_nxt);
        // A repair whose group lost nothing (or was rebuilt already) tells nothing about
        // the gaps, and its duplicate ACK would only count towards a fast retransmit.
        let surplus = f.cfg.quiet_surplus_repairs && f.decoder.stats.repairs_unneeded > unneeded;
        let any = !rebuilt.is_empty();
        for (s, p) in rebuilt {
            if let Some(w) = self.fec.as_mut().and_then(|f| f.window.as_mut()) {
                w.on_source(s, &p); // a stream's retransmission may have been in a group
            }
            self.on_rebuilt(s, p);
        }
        if !any && !surplus && !self.all_gaps_repairable() {
            // Recovery just became impossible: release the withheld duplicate ACKs.
            self.ack_now = true;
            self.release_suppression();
        }
    }

    /// Handles a repair packet of the sliding-window code over `[first, first +
    /// w.count)`. A repair that rebuilds nothing sends no ACK: the gaps it leaves are
    /// reported by the ACKs of the segments that arrive, and the sender waits for the
    /// repairs covering a hole before it counts SACKs above it.
    pub fn on_window_repair(&mut self, first: u64, w: WindowInfo, payload: &[u8]) {
        let rcv_nxt = self.rcv_nxt;
        let Some(dec) = self.fec.as_mut().and_then(|f| f.window.as_mut()) else {
            return;
        };
        let rebuilt = dec.on_repair(first, w.count, w.key, payload, rcv_nxt);
        for (s, p) in rebuilt {
            self.on_rebuilt(s, p);
        }
    }

    fn on_rebuilt(&mut self, seg: u64, payload: Bytes) {
        self.trace.push(crate::TraceEvent::Rebuilt {
            seg,
            len: payload.len() as u32,
        });
        let ts = self.ts_recent;
        let arrival = self.accept(seg, payload, false, ts);
        self.note_arrival(seg);
        if arrival != Arrival::Ignored {
            // Deliver the cumulative ACK covering the rebuilt data at once.
            self.ack_now = true;
            if self.fec.as_ref().is_some_and(|f| f.cfg.repeat_recovery_ack) {
                self.extra_acks = self.extra_acks.max(1);
            }
            if self
                .fec
                .as_ref()
                .is_some_and(|f| f.cfg.ecn_factor.is_some())
            {
                self.ece_latched = true;
            }
        }
    }

    fn ack_for(&mut self, now: Instant, arrival: Arrival, fin: bool) {
        match arrival {
            Arrival::InOrder if self.delayed_ack && !fin => {
                self.unacked_in_order += 1;
                if self.unacked_in_order >= 2 {
                    self.ack_now = true;
                } else if self.delack_deadline.is_none() {
                    self.delack_deadline = Some(now + self.delayed_ack_timeout);
                }
            }
            _ => self.ack_now = true,
        }
    }

    /// Keeps the list of gaps below the highest segment received (FEC only).
    fn note_arrival(&mut self, seg: u64) {
        let rcv_nxt = self.rcv_nxt;
        // A segment this far ahead was not stored (see `accept`), so it opens no gap; and
        // one at the end of the number space (a corrupted or hostile header) would
        // overflow `seg + 1` below (found by the engine fuzz target).
        if seg.saturating_sub(rcv_nxt) >= self.reorder_slots() {
            return;
        }
        let Some(f) = self.fec.as_mut() else { return };
        if seg >= f.high_nxt {
            if seg > f.high_nxt.max(rcv_nxt) {
                f.holes.push((f.high_nxt.max(rcv_nxt), seg));
            }
            f.high_nxt = seg + 1;
        } else if let Some(i) = f.holes.iter().position(|&(a, b)| a <= seg && seg < b) {
            let (a, b) = f.holes[i];
            f.holes.swap_remove(i);
            if a < seg {
                f.holes.push((a, seg));
            }
            if seg + 1 < b {
                f.holes.push((seg + 1, b));
            }
        }
        f.holes.retain_mut(|h| {
            h.0 = h.0.max(rcv_nxt);
            h.0 < h.1
        });
        f.decoder.forget_below(rcv_nxt);
    }

    fn all_gaps_repairable(&mut self) -> bool {
        let Some(f) = self.fec.as_mut() else {
            return false;
        };
        let highest = f.high_nxt.saturating_sub(1);
        for &(a, b) in &f.holes {
            if b - a > MAX_HOLE_CHECK {
                return false;
            }
            for s in a..b {
                if !f.decoder.gap_repairable(s, highest) {
                    return false;
                }
            }
        }
        true
    }

    /// S4: an out-of-order arrival normally triggers a duplicate ACK; withhold it while every
    /// gap can still be repaired by FEC (under `auto`, only where the queue is full:
    /// `FecRx::withholds_dupacks`).
    fn apply_suppression(&mut self, arrival: Arrival) {
        let rcv_nxt = self.rcv_nxt;
        let suppress = self
            .fec
            .as_ref()
            .is_some_and(|f| f.withholds_dupacks(rcv_nxt));
        if !suppress || arrival != Arrival::OutOfOrder || !self.ack_now {
            return;
        }
        if self.all_gaps_repairable() {
            self.ack_now = false;
            if let Some(f) = self.fec.as_mut() {
                f.dupacks_suppressed += 1;
                f.withheld += 1;
            }
        } else {
            self.release_suppression();
        }
    }

    /// A gap can no longer be repaired: the ACK about to go out is joined by the
    /// duplicates withheld for it, up to DupThresh in all, so the sender can retransmit at
    /// once instead of waiting for that many more arrivals.
    fn release_suppression(&mut self) {
        let Some(f) = self.fec.as_mut() else { return };
        let withheld = std::mem::take(&mut f.withheld);
        let replay = if f.cfg.replay_withheld_dupacks {
            withheld.min(DUP_THRESH - 1)
        } else {
            0
        };
        let report_runs = f.cfg.replay_withheld_runs;
        // The withheld ACKs would have reported the runs that arrived meanwhile; without
        // them the sender takes every run it never heard of for lost once the failed
        // group's holes are (under `auto` at 5 % loss, 101 segments that had arrived were
        // sent again after one failed block, and BBR read them as a loss). So the ACKs
        // that go out now report every such run, lowest first.
        let unreported = if report_runs {
            self.runs.iter().filter(|r| !r.reported).count()
        } else {
            0
        };
        self.replaying = unreported > 0;
        let needed = unreported.div_ceil(self.max_sack_blocks.max(1)) as u32;
        self.extra_acks = self
            .extra_acks
            .max(replay)
            .max(needed.saturating_sub(1).min(MAX_REPLAY_ACKS));
    }

    /// Stores or delivers a segment.
    fn accept(&mut self, seg: u64, payload: Bytes, fin: bool, ts_val: u32) -> Arrival {
        if seg < self.rcv_nxt || self.fin_delivered {
            return Arrival::Ignored;
        }
        let off = seg - self.rcv_nxt;
        if off >= self.reorder_slots()
            || self.held_bytes + self.ready_bytes + payload.len() > self.window_limit as usize
        {
            return Arrival::Ignored;
        }
        if off == 0 {
            let filled_hole = !self.held.is_empty();
            if self.unacked_in_order == 0 {
                self.ts_recent = ts_val;
            }
            self.deliver(payload, fin);
            if !filled_hole {
                return Arrival::InOrder;
            }
            self.held.pop_front(); // the slot of the segment just delivered
            while let Some(Some(_)) = self.held.front() {
                let (p, f) = self.held.pop_front().flatten().expect("checked Some");
                self.held_bytes -= p.len();
                self.deliver(p, f);
            }
            let nxt = self.rcv_nxt;
            self.runs.retain(|r| r.end > nxt);
            return Arrival::FilledHole;
        }
        let i = off as usize;
        if self.held.len() <= i {
            self.held.resize(i + 1, None);
        }
        if self.held[i].is_some() {
            self.duplicate_segments += 1;
            return Arrival::Ignored;
        }
        self.held_bytes += payload.len();
        self.held[i] = Some((payload, fin));
        self.note_held(seg);
        Arrival::OutOfOrder
    }

    fn deliver(&mut self, payload: Bytes, fin: bool) {
        self.rcv_nxt += 1;
        if let Some(f) = self.fec.as_mut() {
            f.withheld = 0; // the cumulative ACK moves: they are no longer duplicates
        }
        if fin {
            self.fin_delivered = true;
            // Every segment is here, so no repair can rebuild one: the window code's kept
            // payloads (up to 1024 packets) go now, not when the connection ends after
            // its linger.
            if let Some(w) = self.fec.as_mut().and_then(|f| f.window.as_mut()) {
                w.release();
            }
        }
        if !payload.is_empty() {
            self.bytes_delivered += payload.len() as u64;
            self.ready_bytes += payload.len();
            self.ready.push_back(payload);
        }
    }

    fn note_held(&mut self, seg: u64) {
        self.touch_counter += 1;
        let t = self.touch_counter;
        let below = self.runs.iter().position(|r| r.end == seg);
        let above = self.runs.iter().position(|r| r.start == seg + 1);
        match (below, above) {
            (Some(b), Some(a)) => {
                self.runs[b].end = self.runs[a].end;
                self.runs[b].touched = t;
                self.runs[b].reported = false;
                self.runs.swap_remove(a);
            }
            (Some(b), None) => {
                self.runs[b].end = seg + 1;
                self.runs[b].touched = t;
                self.runs[b].reported = false;
            }
            (None, Some(a)) => {
                self.runs[a].start = seg;
                self.runs[a].touched = t;
                self.runs[a].reported = false;
            }
            (None, None) => self.runs.push(Run {
                start: seg,
                end: seg + 1,
                touched: t,
                reported: false,
            }),
        }
    }

    /// Takes the next in-order chunk of application bytes.
    pub fn read_chunk(&mut self) -> Option<Bytes> {
        let b = self.ready.pop_front()?;
        self.ready_bytes -= b.len();
        self.bytes_read += b.len() as u64;
        Some(b)
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.ready_bytes
    }

    /// True if an acknowledgement should go out now.
    pub fn wants_ack(&self, now: Instant) -> bool {
        self.ack_now || self.delack_deadline.is_some_and(|d| d <= now)
    }

    /// Forces an acknowledgement (e.g. to answer a duplicate handshake packet).
    pub fn request_ack(&mut self) {
        self.ack_now = true;
    }

    /// Latches ECN-Echo until the sender answers with CWR (RFC 3168 §6.1.3).
    pub fn latch_ece(&mut self) {
        self.ece_latched = true;
    }

    /// Delayed-ACK deadline, if one is pending.
    pub fn timeout(&self) -> Option<Instant> {
        self.delack_deadline
    }

    /// Fields for an outgoing packet; marks the acknowledgement as sent.
    pub fn take_ack(&mut self) -> AckFields {
        // A repeated recovery ACK, or replayed duplicates, go out right after this one.
        self.ack_now = self.extra_acks > 0;
        self.extra_acks = self.extra_acks.saturating_sub(1);
        self.delack_deadline = None;
        self.unacked_in_order = 0;
        let mut a = self.peek_ack();
        if self.replaying {
            let unreported = self.lowest_unreported();
            self.replaying = unreported.len() == self.max_sack_blocks;
            // With nothing left to report, the usual blocks: an ACK without any would
            // tell the sender nothing about the data above its hole.
            if !unreported.is_empty() {
                a.sack = unreported;
            }
        }
        // Only a receiver that replays withheld runs needs to know which were reported.
        if self
            .fec
            .as_ref()
            .is_some_and(|f| f.cfg.replay_withheld_runs)
        {
            for b in a.sack.as_slice() {
                self.mark_reported(b, true);
            }
        }
        a
    }

    /// A SACK block taken from the ACK just sent was left out of its packet (the packet
    /// limit, `Connection::fit`): its run counts as unreported again.
    pub fn unreport(&mut self, b: SackBlock) {
        self.mark_reported(&b, false);
    }

    /// Marks the run block `b` reports as reported or not.
    fn mark_reported(&mut self, b: &SackBlock, reported: bool) {
        if let Some(r) = self.runs.iter_mut().find(|r| r.start == b.start) {
            r.reported = reported;
        }
    }

    /// Up to `max_sack_blocks` runs not yet reported, lowest first: `peek_ack`'s selection
    /// by another order, kept apart because `peek_ack` runs for every ACK (one loop generic
    /// over the order ran 1–3 % slower on `tcpfec bench sim`, five alternated runs).
    fn lowest_unreported(&self) -> SackBlocks {
        let mut sack = SackBlocks::default();
        let mut above = 0;
        for _ in 0..self.max_sack_blocks {
            let Some(r) = self
                .runs
                .iter()
                .filter(|r| !r.reported && r.start >= above)
                .min_by_key(|r| r.start)
            else {
                break;
            };
            above = r.end;
            sack.push(SackBlock {
                start: r.start,
                end: r.end,
            });
        }
        sack
    }

    /// Fields for an outgoing packet without changing the ACK state.
    pub fn peek_ack(&self) -> AckFields {
        let used = self.held_bytes + self.ready_bytes;
        let mut sack = SackBlocks::default();
        if self.sack_enabled {
            // Most recently touched runs first (RFC 2018), chosen without sorting or
            // allocating: this runs for every ACK. `touched` stamps are unique.
            let mut below = u64::MAX;
            for _ in 0..self.max_sack_blocks {
                let Some(r) = self
                    .runs
                    .iter()
                    .filter(|r| r.touched < below)
                    .max_by_key(|r| r.touched)
                else {
                    break;
                };
                below = r.touched;
                sack.push(SackBlock {
                    start: r.start,
                    end: r.end,
                });
            }
        }
        AckFields {
            ack: self.rcv_nxt,
            window: (self.window_limit as usize).saturating_sub(used) as u32,
            ts_ecr: self.ts_recent,
            sack,
            ece: self.ece_latched,
            fec_feedback: self.fec.as_ref().and_then(|f| {
                if !f.cfg.adaptive?.needs_feedback() {
                    return None;
                }
                let d = f.decoder.stats;
                // Wrapping counters: the sender only ever looks at differences.
                Some(FecFeedback {
                    recovered: d.recovered as u32,
                    failed: d.unrecoverable_groups as u32,
                    repairs_lost: d.repairs_lost as u32,
                    received: (self.segments_received + d.repairs_received) as u32,
                    loss: f.loss_runs.as_ref().map(|m| m.counters()),
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests;
