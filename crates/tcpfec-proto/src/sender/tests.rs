//! The sender's answers to reported losses: repaired congestion losses, ECN, Sato's
//! protected retransmissions.

use super::*;
use crate::wire::LossCounters;
use crate::Scheme;

/// A sender of `scheme` with a first flight out.
fn sender(scheme: &str) -> Sender {
    let cfg = Config {
        scheme: Scheme::parse(scheme).unwrap(),
        initial_window: 10,
        ..Config::default()
    };
    let mut s = Sender::new(&cfg);
    s.write(Bytes::from(vec![0u8; 200_000]));
    // A paced sender needs time between packets.
    for ms in 0..100 {
        while s.poll(Instant::from_nanos(ms * 1_000_000)).is_some() {}
    }
    assert!(s.nxt() >= 4, "the first flight went out");
    s
}

/// A pure cumulative ACK of `ack` at `at`, with ECN-Echo and receiver counters as given.
fn ack_with(s: &mut Sender, at: Instant, ack: u64, ece: bool, fec_feedback: Option<FecFeedback>) {
    s.on_ack(
        at,
        &AckInfo {
            ack,
            window: u32::MAX,
            ts_ecr: 0,
            sack: &[],
            ece,
            pure: true,
            fec_feedback,
        },
    );
}

/// An ACK of segment `ack` carrying receiver counters with `congestion_lost`.
fn ack(s: &mut Sender, ack: u64, received: u32, congestion_lost: u32) {
    let at = Instant::from_nanos(100_000_000 + ack * 1_000_000);
    let counters = FecFeedback {
        received,
        loss: Some(LossCounters {
            congestion_lost,
            ..LossCounters::default()
        }),
        ..FecFeedback::default()
    };
    ack_with(s, at, ack, false, Some(counters));
}

/// Full segments the rate samples count as lost.
fn declared_lost(s: &Sender) -> u64 {
    s.sb.rate.lost() / s.mss as u64
}

/// A plain cumulative ACK of `ack` at `at`, with or without ECN-Echo; nothing polled.
fn ack_only(s: &mut Sender, at: Instant, ack: u64, ece: bool) {
    ack_with(s, at, ack, ece, None);
}

/// [`ack_only`], then everything the sender will send at `at`.
fn plain_ack(s: &mut Sender, at: Instant, ack: u64, ece: bool) {
    ack_only(s, at, ack, ece);
    while s.poll(at).is_some() {}
}

#[test]
fn an_ecn_reduction_and_a_loss_in_one_window_reduce_once() {
    // Sato's interleaved FEC with r = 0.7 on NewReno: a recovered loss (ECN-Echo) cuts
    // cwnd to 0.7 W; a loss in the same window then asks for 0.5 W. Together they
    // must end at 0.5 W (RFC 3168 §6.1.2), not at 0.7 · 0.5 W = 0.35 W.
    let mut s = sender("fec-il-g1-l30-r0.7");
    let at = Instant::from_nanos(200_000_000);
    for a in 1..=6 {
        plain_ack(&mut s, at, a, false);
    }
    let w = s.cc.cwnd();
    plain_ack(&mut s, at, 7, true);
    let after_ecn = s.cc.cwnd();
    assert!(
        (after_ecn - 0.7 * (w + 1.0)).abs() < 1.0,
        "{w} -> {after_ecn}"
    );
    for _ in 0..3 {
        plain_ack(&mut s, at, 7, false);
    }
    assert_eq!(s.fast_recoveries, 1);
    let ss = s.cc.ssthresh();
    assert!(
        ss >= 0.5 * w - 1.0 && ss <= after_ecn,
        "W {w}, after ECN {after_ecn}, after the loss ssthresh {ss}"
    );
}

#[test]
fn a_sato_retransmission_is_protected_by_a_repair_of_its_own() {
    // Sato §3.2: retransmissions are handled like originals, recoverable by a repair.
    let mut s = sender("fec-il-g1-l30-r0.7");
    let at = Instant::from_nanos(200_000_000);
    for _ in 0..4 {
        ack_only(&mut s, at, 3, false);
    }
    assert_eq!(s.fast_recoveries, 1);
    let Some(Outgoing::Segment(rtx)) = s.poll(at) else {
        panic!("the fast retransmission goes first")
    };
    assert_eq!(rtx.seg, 3);
    let g = rtx.fec.expect("the retransmission joins a group");
    assert_eq!((g.first, g.count, g.retransmission_group), (3, 1, 1));
    // NewReno marks one segment at a time: the group is complete, its repair next.
    let Some(Outgoing::Repair(r)) = s.poll(at) else {
        panic!("the retransmission's repair follows it")
    };
    assert_eq!(r.group, g);
    // Without the protection (TCP-dFEC here) a retransmission joins no group.
    let mut s = sender("dfec");
    for _ in 0..4 {
        ack_only(&mut s, at, 3, false);
    }
    let rtx = std::iter::from_fn(|| s.poll(at)).find_map(|o| match o {
        Outgoing::Segment(x) if x.seg == 3 => Some(x),
        _ => None,
    });
    assert!(rtx.is_some_and(|x| x.fec.is_none()));
}

#[test]
fn repaired_congestion_losses_reach_the_rate_samples() {
    let mut s = sender("auto");
    ack(&mut s, 1, 1, 0); // the baseline report
    assert_eq!(s.sb.rate.lost(), 0);
    ack(&mut s, 2, 2, 3);
    assert_eq!(declared_lost(&s), 3);
    // The same total again declares nothing more.
    ack(&mut s, 3, 3, 3);
    assert_eq!(declared_lost(&s), 3);
}

#[test]
fn losses_the_sender_declared_itself_are_not_counted_twice() {
    let mut s = sender("auto");
    ack(&mut s, 1, 1, 0);
    s.sb.rate.on_lost(5 * s.mss as u64); // SACK had declared five
    ack(&mut s, 2, 2, 4);
    assert_eq!(declared_lost(&s), 5);
    ack(&mut s, 3, 3, 7);
    assert_eq!(declared_lost(&s), 7);
}

#[test]
fn a_window_controller_backs_off_once_for_repaired_congestion_losses() {
    let mut s = sender("auto-cubic");
    ack(&mut s, 1, 1, 0);
    let before = s.cc.cwnd();
    ack(&mut s, 2, 2, 2);
    let after = s.cc.cwnd();
    assert!(after < before, "{before} -> {after}");
    // More in the same window: no second reduction.
    ack(&mut s, 3, 3, 4);
    assert!(s.cc.cwnd() >= after, "{after} -> {}", s.cc.cwnd());
}

/// The send buffer holds at least twice the window, up to its maximum, as Linux grows a
/// socket's: a fixed buffer below twice the BDP caps a long fat path's rate.
#[test]
fn the_send_buffer_grows_with_the_window_up_to_its_maximum() {
    let cfg = Config {
        scheme: Scheme::parse("cubic").unwrap(),
        initial_window: 10,
        send_buffer: 100_000,
        send_buffer_max: 1_000_000,
        ..Config::default()
    };
    let mut s = Sender::new(&cfg);
    let mss = cfg.mss as usize;
    // Twice ten segments is below the configured buffer: that holds.
    assert_eq!(s.write_capacity(), 100_000);
    s.cc.set_cwnd(100.0);
    assert_eq!(s.write_capacity(), 200 * mss);
    assert_eq!(s.write(Bytes::from(vec![0u8; 300 * mss])), 200 * mss);
    assert_eq!(s.write_capacity(), 0);
    s.cc.set_cwnd(10_000.0);
    assert_eq!(s.write_capacity(), 1_000_000 - 200 * mss);
}
