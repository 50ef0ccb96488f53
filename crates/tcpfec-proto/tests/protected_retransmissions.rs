//! `auto` protects its retransmissions: a group of them carries repairs sized to the
//! failure target, so a retransmission that is lost too is rebuilt instead of sent a third
//! time.

mod common;

use common::upload;
use std::collections::HashMap;
use tcpfec_proto::{Config, Scheme};

/// Sends 4 MB under `auto` over a wire (10 ms each way) that loses every 20th data packet
/// (the channel `auto` sizes its code for), a run of 40 from the 1500th, the repairs of
/// the blocks the run falls in (so 40 retransmissions, and only what protects them can
/// rebuild one: with the blocks' own repairs, the lost retransmissions can be too few to
/// exceed them), and the first retransmission of every segment numbered a multiple of 4.
/// `protect` sets whether retransmissions are protected. Returns (segments sent three
/// times or more, retransmissions). Panics unless the stream arrives intact.
fn transfer_losing_retransmissions(protect: bool) -> (usize, u64) {
    let mut scheme = Scheme::parse("auto").unwrap();
    scheme.fec.as_mut().unwrap().protect_retransmissions = protect;
    let cfg = Config {
        scheme,
        initial_window: 10,
        ..Config::default()
    };
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i * 7) as u8).collect();
    let mut first_transmissions = 0u32;
    let mut sent: HashMap<u64, u32> = HashMap::new();
    // The run's first and last segment (with the every-20th loss right after it), once
    // sent.
    let (mut run_first, mut run_last) = (u64::MAX, u64::MAX);
    let p = upload(cfg, &data, 10_000_000, |pk| {
        if pk.is_repair() {
            // A block reaching past the run is one of the blocks it fell in; a
            // retransmission group lies within it.
            return pk.fec.is_some_and(|g| {
                let last = g.first + u64::from(g.count.max(1)) - 1;
                let overlaps = last >= run_first && g.first <= run_last;
                overlaps && (g.first < run_first || run_last < last)
            });
        }
        if pk.payload.is_empty() {
            return false;
        }
        let times = sent.entry(pk.seg).or_insert(0);
        *times += 1;
        match *times {
            1 => {
                first_transmissions += 1;
                let n = first_transmissions;
                if n == 1500 {
                    run_first = pk.seg;
                }
                if n == 1540 {
                    // Lost as every 20th: its retransmission joins the run's.
                    run_last = pk.seg;
                }
                n.is_multiple_of(20) || (1500..1540).contains(&n)
            }
            2 => pk.seg.is_multiple_of(4),
            _ => false,
        }
    });
    let thrice = sent.values().filter(|&&n| n >= 3).count();
    (thrice, p.client.stats().retransmissions)
}

#[test]
fn a_lost_retransmission_is_rebuilt_not_sent_a_third_time() {
    let (thrice, retransmissions) = transfer_losing_retransmissions(true);
    let (thrice_before, retransmissions_before) = transfer_losing_retransmissions(false);
    // Unprotected, the 10 retransmissions lost among the 40 are sent a third time (55
    // retransmissions in all); protected, their group's repairs rebuild them (45).
    assert!(
        thrice_before >= 8,
        "the case this guards: {thrice_before} segments sent three times unprotected"
    );
    assert!(
        thrice * 4 <= thrice_before,
        "{thrice} segments sent three times (unprotected: {thrice_before})"
    );
    assert!(retransmissions < retransmissions_before);
}
