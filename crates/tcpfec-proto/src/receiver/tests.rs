//! Tests of `receiver`.

use super::*;
use crate::fec::Adaptive;
use crate::wire::RepairInfo;

fn rx() -> Receiver {
    let mut r = Receiver::new(1 << 20, false, Duration::from_millis(100));
    r.enable_sack(3);
    r
}

fn data(n: u8) -> Bytes {
    Bytes::from(vec![n; 10])
}

#[test]
fn reorders_and_reports_most_recent_run_first() {
    let mut r = rx();
    let t = Instant::ZERO;
    r.on_segment(t, 0, data(0), false, 1, false, None);
    r.on_segment(t, 2, data(2), false, 1, false, None);
    r.on_segment(t, 5, data(5), false, 1, false, None);
    r.on_segment(t, 3, data(3), false, 1, false, None);
    let a = r.take_ack();
    assert_eq!(a.ack, 1);
    assert_eq!(
        a.sack.as_slice(),
        &[
            SackBlock { start: 2, end: 4 },
            SackBlock { start: 5, end: 6 }
        ]
    );
    r.on_segment(t, 1, data(1), false, 1, false, None);
    let a = r.take_ack();
    assert_eq!(a.ack, 4);
    assert_eq!(a.sack.as_slice(), &[SackBlock { start: 5, end: 6 }]);
    let mut got = vec![];
    while let Some(c) = r.read_chunk() {
        got.push(c[0]);
    }
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[test]
fn delayed_ack_every_second_segment_or_timeout() {
    let mut r = Receiver::new(1 << 20, true, Duration::from_millis(100));
    let t = Instant::ZERO;
    r.on_segment(t, 0, data(0), false, 1, false, None);
    assert!(!r.wants_ack(t));
    assert_eq!(r.timeout(), Some(Instant(100_000_000)));
    assert!(r.wants_ack(Instant(100_000_000)));
    r.on_segment(t, 1, data(1), false, 1, false, None);
    assert!(r.wants_ack(t));
    r.take_ack();
    // Out of order: immediate.
    r.on_segment(t, 3, data(3), false, 1, false, None);
    assert!(r.wants_ack(t));
}

#[test]
fn duplicates_are_counted_not_delivered() {
    let mut r = rx();
    let t = Instant::ZERO;
    r.on_segment(t, 0, data(0), false, 1, false, None);
    r.on_segment(t, 0, data(0), false, 1, false, None);
    r.on_segment(t, 2, data(2), false, 1, false, None);
    r.on_segment(t, 2, data(2), false, 1, false, None);
    assert_eq!(r.duplicate_segments, 2);
    assert_eq!(r.bytes_delivered, 10);
}

fn fec_rx(suppress: bool) -> Receiver {
    let mut r = rx();
    r.enable_fec(fec_cfg(suppress));
    r
}

fn fec_cfg(suppress: bool) -> FecConfig {
    FecConfig {
        policy: crate::fec::GroupPolicy::Static(4),
        suppress_dupacks: suppress,
        ecn_factor: Some(0.7),
        repairs: 1,
        flush_at_flight_end: None,
        close_at_stream_end: false,
        repeat_recovery_ack: false,
        protect_retransmissions: false,
        replay_withheld_dupacks: true,
        replay_withheld_runs: true,
        quiet_surplus_repairs: true,
        stream: None,
        adaptive: None,
    }
}

/// Segment `seg` arrives as a member of the group of 4 consecutive segments from
/// `first`.
fn member(r: &mut Receiver, seg: u64, first: u64) {
    member_of(
        r,
        seg,
        FecGroup {
            first,
            count: 4,
            stride: 1,
            repairs: 1,
            retransmission_group: 0,
        },
    );
}

/// Segment `seg` arrives as a member of group `g`.
fn member_of(r: &mut Receiver, seg: u64, g: FecGroup) {
    r.on_segment(
        Instant::ZERO,
        seg,
        data(seg as u8),
        false,
        1,
        false,
        Some(g),
    );
}

fn repair(r: &mut Receiver, first: u64) {
    let mut acc = crate::fec::xor::XorAccumulator::default();
    for s in first..first + 4 {
        acc.add(&data(s as u8));
    }
    let info = RepairInfo {
        len_xor: acc.len_xor(),
        index: 0,
        total: 1,
    };
    r.on_repair(
        FecGroup {
            first,
            count: 4,
            stride: 1,
            repairs: 1,
            retransmission_group: 0,
        },
        info,
        Bytes::copy_from_slice(acc.bytes()),
    );
}

#[test]
fn suppression_holds_dup_acks_until_a_second_loss_in_the_group() {
    let mut r = fec_rx(true);
    member(&mut r, 0, 0);
    r.take_ack();
    member(&mut r, 2, 0); // 1 missing: repairable
    assert!(!r.wants_ack(Instant::ZERO), "dup ACK must be withheld");
    member(&mut r, 3, 0);
    assert!(!r.wants_ack(Instant::ZERO));
    // Next group: its first member missing too is fine (different group)...
    member(&mut r, 5, 4);
    // ...but segment 4 missing while 5 arrived is a hole in group 4 with the repair of
    // group 0 not yet here and 4 > last of group 0: group 0's repair is known lost.
    assert!(
        r.wants_ack(Instant::ZERO),
        "repair of group 0 known lost: release"
    );
    assert_eq!(r.fec_counts().4, 2);
}

#[test]
fn suppression_releases_on_a_second_loss_and_recovery_acks_at_once() {
    let mut r = fec_rx(true);
    member(&mut r, 0, 0);
    r.take_ack();
    member(&mut r, 2, 0);
    assert!(!r.wants_ack(Instant::ZERO));
    // The repair arrives: segment 1 is rebuilt and the cumulative ACK goes out at once,
    // with ECN-Echo set (S5).
    member(&mut r, 3, 0);
    repair(&mut r, 0);
    assert!(r.wants_ack(Instant::ZERO));
    let a = r.take_ack();
    assert_eq!(a.ack, 4);
    assert!(a.ece);
    assert_eq!(r.fec_counts().2, 1, "one recovered");
    // Second group: two losses (5 and 6) → release on the arrival that shows the second.
    member(&mut r, 4, 4);
    r.take_ack();
    member(&mut r, 7, 4);
    assert!(
        r.wants_ack(Instant::ZERO),
        "two members missing: not repairable"
    );
}

/// A repair of a group that lost nothing, arriving while another gap waits for its
/// retransmission, sends no duplicate ACK: it changes nothing the sender could learn.
#[test]
fn a_surplus_repair_sends_no_duplicate_ack() {
    for quiet in [true, false] {
        let mut r = fec_rx(true);
        r.fec.as_mut().unwrap().cfg.quiet_surplus_repairs = quiet;
        for s in 0..4 {
            member(&mut r, s, 0);
        }
        member(&mut r, 4, 4);
        member(&mut r, 7, 4); // 5 and 6 lost: group 4 cannot be rebuilt
        drain_acks(&mut r);
        repair(&mut r, 0); // group 0 lost nothing
        assert_eq!(r.wants_ack(Instant::ZERO), !quiet, "quiet: {quiet}");
    }
}

/// ACKs that go out now, one after another (each `take_ack` may leave more wanted).
fn drain_acks(r: &mut Receiver) -> Vec<u64> {
    let mut acks = Vec::new();
    while r.wants_ack(Instant::ZERO) {
        acks.push(r.take_ack().ack);
    }
    acks
}

#[test]
fn a_release_replays_the_withheld_duplicate_acks_up_to_dupthresh() {
    // Group 0..4 loses 1; arrivals of 2 and 3 are withheld (repairable)...
    let mut r = fec_rx(true);
    member(&mut r, 0, 0);
    r.take_ack();
    member(&mut r, 2, 0);
    member(&mut r, 3, 0);
    assert!(drain_acks(&mut r).is_empty());
    // ...then the next group shows group 0's repair lost: the release sends the
    // triggering duplicate and the two withheld ones, three in all, so the sender can
    // fast-retransmit now rather than after two more arrivals.
    member(&mut r, 5, 4);
    assert_eq!(drain_acks(&mut r), vec![1, 1, 1]);
    // Later duplicates go out one per arrival, as without suppression.
    member(&mut r, 6, 4);
    assert_eq!(drain_acks(&mut r), vec![1]);
}

/// One Reed-Solomon group of 20 with `repairs` repairs loses every odd member. The
/// arrivals of 2, 4, … are withheld while at most `repairs` holes show; the next even
/// one shows one more. Returns the segments the ACKs that go out then report and how
/// many ACKs there are; every one of them carries SACK blocks.
fn release_after_withheld_runs(repairs: u8) -> (std::collections::BTreeSet<u64>, usize) {
    let g = FecGroup {
        first: 0,
        count: 20,
        stride: 1,
        repairs,
        retransmission_group: 0,
    };
    let mut r = fec_rx(true);
    member_of(&mut r, 0, g);
    r.take_ack();
    let last_withheld = 2 * repairs as u64;
    for seg in (2..=last_withheld).step_by(2) {
        member_of(&mut r, seg, g);
    }
    assert!(drain_acks(&mut r).is_empty());
    member_of(&mut r, last_withheld + 2, g);
    let mut reported = std::collections::BTreeSet::new();
    let mut acks = 0;
    while r.wants_ack(Instant::ZERO) {
        acks += 1;
        let sack = r.take_ack().sack;
        assert!(!sack.is_empty(), "ACK {acks} reports no run");
        for b in sack.as_slice() {
            reported.extend(b.start..b.end);
        }
    }
    (reported, acks)
}

#[test]
fn a_release_reports_every_run_the_withheld_acks_would_have() {
    // Six repairs: the arrivals of 2 to 12 are withheld, 14 shows a seventh hole.
    // Without the replay of the runs, three ACKs each carried the three most recent
    // (10, 12, 14): the sender never heard of 2 to 8 and retransmitted them.
    let (reported, acks) = release_after_withheld_runs(6);
    assert_eq!(reported, (2..=14).step_by(2).collect());
    assert_eq!(acks, 3, "the duplicates the sender needs, no more");
    // Five: six runs fill the first two ACKs exactly, and the third, a replayed
    // duplicate with nothing new to report, still carries the most recent runs.
    let (reported, acks) = release_after_withheld_runs(5);
    assert_eq!(reported, (2..=12).step_by(2).collect());
    assert_eq!(acks, 3);
}

#[test]
fn a_repair_that_cannot_rebuild_releases_the_withheld_duplicates() {
    // Group 0..4 loses 1 and 3; the arrival of 2 is withheld (only 1 is known missing).
    let mut r = fec_rx(true);
    member(&mut r, 0, 0);
    r.take_ack();
    member(&mut r, 2, 0);
    assert!(drain_acks(&mut r).is_empty());
    // The repair follows the group's last member, so its arrival shows 3 lost too: one
    // repair cannot rebuild two. The ACK it releases carries the withheld duplicate.
    repair(&mut r, 0);
    assert_eq!(drain_acks(&mut r), vec![1, 1]);
}

#[test]
fn a_lost_first_member_of_an_interleaved_block_leaks_no_duplicate_acks() {
    // Four interleaved groups of 3 over segments 0..12; segment 0 is lost. The first
    // members of groups 1-3 arrive before anything of group 0: three duplicate ACKs
    // leaking here would make the sender retransmit what the repair will rebuild.
    let mut r = fec_rx(true);
    for seg in 1..5u64 {
        let g = FecGroup {
            first: seg % 4,
            count: 3,
            stride: 4,
            repairs: 1,
            retransmission_group: 0,
        };
        member_of(&mut r, seg, g);
    }
    assert!(drain_acks(&mut r).is_empty());
    assert_eq!(r.fec_counts().4, 4);
}

/// A receiver of `auto` (withholding only where the queue is full unless `always_hold`)
/// that has measured `packets` numbered arrivals, each `queue_ms` above the smallest
/// delay; then segment 0 of a block arrives, segment 1 is lost and segment 2 arrives,
/// both `hole_queue_ms` above it. Segment 1 may still be rebuilt.
fn auto_rx_after(always_hold: bool, packets: u32, queue_ms: u64, hole_queue_ms: u64) -> Receiver {
    let mut r = rx();
    let p = crate::fec::auto::AutoParams {
        hold_only_at_full_queue: !always_hold,
        ..Default::default()
    };
    r.enable_fec(FecConfig {
        adaptive: Some(Adaptive::Auto(p)),
        ..fec_cfg(true)
    });
    let numbered = |r: &mut Receiver, n: u32, queue_ms: u64| {
        let sent_us = 1_000_000 + n as u64 * 1_000;
        // The first packet sets the smallest delay (20 ms).
        let queue_us = if n == 0 { 0 } else { queue_ms * 1_000 };
        let at = Instant((sent_us + 20_000 + queue_us) * 1_000);
        r.on_numbered(at, n, sent_us as u32, 0);
    };
    for n in 0..packets {
        numbered(&mut r, n, queue_ms);
    }
    numbered(&mut r, packets, hole_queue_ms);
    member(&mut r, 0, 0);
    r.take_ack();
    numbered(&mut r, packets + 2, hole_queue_ms);
    member(&mut r, 2, 0);
    r
}

#[test]
fn auto_withholds_duplicate_acks_only_where_the_queue_is_full() {
    let withheld = |always_hold, packets, queue_ms, hole_queue_ms| {
        !auto_rx_after(always_hold, packets, queue_ms, hole_queue_ms).wants_ack(Instant::ZERO)
    };
    // A new flow has measured nothing: it withholds, as every flow did.
    assert!(withheld(false, 0, 0, 0));
    // Arrivals that met a queue with room, and a channel loss among them: the gap is
    // acknowledged at once, and the sender waits for the block's repairs itself
    // (`Scoreboard::una_awaits_repairs`).
    assert!(!withheld(false, 2_000, 0, 0));
    // The same, but the loss came at a 10 ms queue, the largest seen: congestion.
    assert!(withheld(false, 2_000, 0, 10));
    // Arrivals at a steady 10 ms queue: mostly full, every gap is withheld.
    assert!(withheld(false, 2_000, 10, 0));
    // `auto-hold` withholds whatever the queue.
    assert!(withheld(true, 2_000, 0, 0));
}

#[test]
fn without_suppression_every_gap_is_acknowledged() {
    let mut r = fec_rx(false);
    member(&mut r, 0, 0);
    r.take_ack();
    member(&mut r, 2, 0);
    assert!(r.wants_ack(Instant::ZERO));
}

/// A segment claiming a number far ahead makes the receiver reserve slots only as far
/// as its window allows: a 2 MiB window keeps at most 8192 (about 320 KB), not 2^20.
#[test]
fn reorder_slots_are_bounded_by_the_window() {
    let mut r = Receiver::new(2 << 20, false, Duration::from_millis(100));
    r.on_segment(Instant::ZERO, 8191, data(100), false, 1, false, None);
    assert_eq!(r.held.len(), 8192, "within the window: stored");
    r.on_segment(Instant::ZERO, 8192, data(100), false, 1, false, None);
    r.on_segment(
        Instant::ZERO,
        (1 << 20) - 1,
        data(100),
        false,
        1,
        false,
        None,
    );
    assert_eq!(r.held.len(), 8192, "beyond it: dropped, no slots reserved");
    // A larger window allows more, up to the fixed limit.
    let mut big = Receiver::new(1 << 30, false, Duration::from_millis(100));
    big.on_segment(
        Instant::ZERO,
        MAX_REORDER_SEGMENTS,
        data(1),
        false,
        1,
        false,
        None,
    );
    assert!(big.held.is_empty());
}

#[test]
fn a_segment_beyond_the_reorder_limit_opens_no_gap() {
    // Found by the engine fuzz target: seg = u64::MAX overflowed `seg + 1` (a panic
    // with overflow checks; without them the FEC gap tracking wrapped to zero).
    let mut r = fec_rx(true);
    member(&mut r, 0, 0);
    member(&mut r, 2, 0);
    for seg in [u64::MAX, 2 + MAX_REORDER_SEGMENTS] {
        r.on_segment(Instant::ZERO, seg, data(9), false, 1, false, None);
        let f = r.fec.as_ref().unwrap();
        assert_eq!(
            (f.high_nxt, &f.holes[..]),
            (3, &[(1, 2)][..]),
            "after {seg}"
        );
    }
}
