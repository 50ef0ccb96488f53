//! `auto` protects its retransmissions: a group of them carries repairs sized to the
//! failure target, so a retransmission that is lost too is rebuilt instead of sent a third
//! time.

mod common;

use bytes::Bytes;
use common::Pair;
use std::collections::HashMap;
use tcpfec_proto::{Config, Scheme};

/// Sends 4 MB under `auto` over a wire (10 ms each way) that loses every 20th data packet
/// (the channel `auto` sizes its code for), a run of 40 from the 1500th (a block its
/// repairs cannot rebuild, so 40 retransmissions), and the first retransmission of every
/// segment numbered a multiple of 4. `protect` sets whether retransmissions are protected.
/// Returns (segments sent three times or more, retransmissions). Panics unless the stream
/// arrives intact.
fn transfer_losing_retransmissions(protect: bool) -> (usize, u64) {
    let mut scheme = Scheme::parse("auto").unwrap();
    scheme.fec.as_mut().unwrap().protect_retransmissions = protect;
    let mut p = Pair::new(Config {
        scheme,
        initial_window: 10,
        ..Config::default()
    });
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i * 7) as u8).collect();
    p.client.write(Bytes::from(data.clone()));
    p.client.finish();
    let mut got = Vec::new();
    let mut first_transmissions = 0u32;
    let mut sent: HashMap<u64, u32> = HashMap::new();
    for _ in 0..1_000_000 {
        p.send_routed(
            |now, pk| {
                if !pk.is_repair() && !pk.payload.is_empty() {
                    let times = sent.entry(pk.seg).or_insert(0);
                    *times += 1;
                    let lost = match *times {
                        1 => {
                            first_transmissions += 1;
                            let n = first_transmissions;
                            n.is_multiple_of(20) || (1500..1540).contains(&n)
                        }
                        2 => pk.seg.is_multiple_of(4),
                        _ => false,
                    };
                    if lost {
                        return None;
                    }
                }
                Some(now + 10_000_000)
            },
            |now, _| Some(now + 10_000_000),
        );
        while let Some(b) = p.server.read_chunk() {
            got.extend_from_slice(&b);
        }
        if !p.step() {
            break;
        }
    }
    assert!(got == data, "the stream arrived intact");
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
