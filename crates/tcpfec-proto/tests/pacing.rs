//! A paced sender's packets leave at its controller's pacing rate: the gap between two
//! data packets that both waited for pacing is one packet's time at the rate in force
//! when the first left. Window-only schemes have no rate and send as the window opens.

mod common;

use bytes::Bytes;
use common::Pair;
use tcpfec_proto::{Config, Scheme};

/// One departure from the sender: when, how many payload bytes, the pacing rate then,
/// and whether the sender was waiting for pacing just before it (not for the window).
struct Departure {
    at: u64,
    len: usize,
    rate: f64,
    paced: bool,
}

/// Runs a bulk transfer of `bytes` over a loss-free path with `one_way_ms` delay and a
/// `bottleneck_bps` serialisation rate in the data direction; returns the server's data
/// departures.
fn departures(scheme: &str, bytes: usize, one_way_ms: u64, bottleneck_bps: f64) -> Vec<Departure> {
    let mut pair = Pair::new(Config {
        scheme: Scheme::parse(scheme).unwrap(),
        ..Config::default()
    });
    pair.server.write(Bytes::from(vec![7u8; bytes]));
    pair.server.finish();
    let delay = one_way_ms * 1_000_000;
    let mut link_free = 0u64; // the bottleneck's queue drains at this time
    let mut out = Vec::new();
    let mut pacing_deadline: Option<u64> = None;
    for _ in 0..2_000_000 {
        let rate = pair.server.pacing_rate();
        pair.send(delay, |now, p| {
            if !p.payload.is_empty() {
                out.push(Departure {
                    at: now,
                    len: p.payload.len(),
                    rate: rate.unwrap_or(0.0),
                    paced: pacing_deadline == Some(now),
                });
            }
            pacing_deadline = None;
            let size = (p.payload.len() + 40) as f64 * 8.0;
            link_free = link_free.max(now) + (size / bottleneck_bps * 1e9) as u64;
            Some(link_free + delay)
        });
        while pair.client.read_chunk().is_some() {}
        if pair.client.peer_finished() {
            break;
        }
        pacing_deadline = pair.server.poll_timeout().map(|i| i.0);
        if !pair.step() {
            break;
        }
    }
    assert!(
        pair.client.peer_finished(),
        "{scheme}: the transfer did not finish"
    );
    out
}

#[test]
fn paced_gaps_match_the_pacing_rate_within_one_percent() {
    for scheme in ["bbr", "bbr1"] {
        let d = departures(scheme, 4_000_000, 20, 20e6);
        let mut checked = 0;
        for w in d.windows(2) {
            // A packet that left late (the window held it) leaves pacing credit of up to
            // one send quantum; between two packets that both left on their pacing
            // deadline there is none, and the gap is exactly one packet's time.
            if !(w[0].paced && w[1].paced) {
                continue;
            }
            let expected_ns = w[0].len as f64 / w[0].rate * 1e9;
            let gap_ns = (w[1].at - w[0].at) as f64;
            let err = (gap_ns - expected_ns).abs() / expected_ns;
            assert!(
                err <= 0.01,
                "{scheme}: gap {gap_ns} ns after a {} B packet at {:.0} B/s, expected {expected_ns:.0} ns",
                w[0].len,
                w[0].rate
            );
            checked += 1;
        }
        // Most of a bulk transfer on this path is paced, not window-limited.
        assert!(
            checked * 2 > d.len(),
            "{scheme}: only {checked} of {} departures were paced",
            d.len()
        );
    }
}

#[test]
fn window_only_schemes_have_no_pacing_rate() {
    let d = departures("sack", 500_000, 20, 20e6);
    assert!(d.iter().all(|x| x.rate == 0.0 && !x.paced));
}
