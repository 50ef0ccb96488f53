//! An outage (the path drops everything for a while) fires the retransmission timer
//! several times as it backs off. With `Config::hold_on_repeated_timeout` the first
//! timeout reduces ssthresh once and the later ones keep it (RFC 5681 §3.1), so the flow
//! regrows towards its old window in slow start once the path returns; without it
//! (ns-2's rule) every timeout halves again and the flow crawls back in congestion
//! avoidance from a window of 2.

mod common;

use bytes::Bytes;
use common::Pair;
use tcpfec_proto::{Config, Scheme};

const ONE_WAY: u64 = 50_000_000; // 50 ms
const RATE_BPS: u64 = 20_000_000;
const OUTAGE: (u64, u64) = (3_000_000_000, 8_000_000_000);

/// Sends for 20 s over a 20 Mb/s, RTT 100 ms path with a 100-packet queue that drops
/// everything between 3 and 8 s; returns (ssthresh just after the outage, bytes read in
/// the 3 s after it, timeouts).
fn through_outage(scheme: &str, hold: bool) -> (f64, usize, u64) {
    let cfg = Config {
        scheme: Scheme::parse(scheme).unwrap(),
        initial_window: 10,
        hold_on_repeated_timeout: hold,
        ..Config::default()
    };
    let mut p = Pair::new(cfg);
    let chunk = Bytes::from(vec![1u8; 1 << 20]);
    let (mut link_free, mut after, mut ssthresh_after) = (0u64, 0usize, None);
    while p.now < 20_000_000_000 {
        while p.client.write_capacity() > 0 {
            p.client.write(chunk.clone());
        }
        p.send_routed(
            |now, pk| {
                if (OUTAGE.0..OUTAGE.1).contains(&now) {
                    return None;
                }
                let bits = (pk.payload.len() as u64 + 40) * 8;
                let start = link_free.max(now);
                if start - now > 100 * 1500 * 8 * 1_000_000_000 / RATE_BPS {
                    return None; // the queue is full
                }
                link_free = start + bits * 1_000_000_000 / RATE_BPS;
                Some(link_free + ONE_WAY)
            },
            |now, _| (!(OUTAGE.0..OUTAGE.1).contains(&now)).then_some(now + ONE_WAY),
        );
        while let Some(b) = p.server.read_chunk() {
            if (OUTAGE.1..OUTAGE.1 + 3_000_000_000).contains(&p.now) {
                after += b.len();
            }
        }
        if p.now >= OUTAGE.1 && ssthresh_after.is_none() {
            ssthresh_after = Some(p.client.ssthresh());
        }
        if !p.step_until(p.now + 1_000_000) {
            break;
        }
    }
    let timeouts = p.client.stats().timeouts;
    (ssthresh_after.unwrap(), after, timeouts)
}

#[test]
fn an_outage_reduces_ssthresh_once_and_the_flow_regrows_fast() {
    for scheme in ["sack", "cubic"] {
        let (held, fast, timeouts) = through_outage(scheme, true);
        let (halved, slow, _) = through_outage(scheme, false);
        assert!(
            timeouts >= 4,
            "{scheme}: the outage backed the timer off ({timeouts})"
        );
        assert!(
            held > 20.0,
            "{scheme}: ssthresh {held} after the outage (one reduction from a ~170-packet window)"
        );
        assert!(halved <= 2.0, "{scheme}: ns-2's rule leaves {halved}");
        assert!(
            fast as f64 > 1.5 * slow as f64,
            "{scheme}: {fast} bytes in the 3 s after the outage, against {slow} reducing every time"
        );
        eprintln!("{scheme}: ssthresh {held:.0} vs {halved:.0}; 3 s after: {fast} vs {slow} bytes");
    }
}
