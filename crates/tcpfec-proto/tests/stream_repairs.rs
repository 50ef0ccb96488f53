//! `auto` repairs a stream on time: while the application limits the sender, every data
//! packet is covered by a repair of the sliding-window code that leaves within the
//! stream's wait (three quarters of the delay budget, a quarter of the round trip), not
//! when a block of 64 packets fills.

mod common;

use bytes::Bytes;
use common::Pair;
use std::collections::BTreeMap;
use tcpfec_proto::{Config, Scheme};

const MS: u64 = 1_000_000;

/// What [`stream`] saw: the client's data and repair packets as (send time, first
/// segment, window repair's count or 0 for data), the stream as written and as read,
/// and the pair for its counters.
struct Streamed {
    sent: Vec<(u64, u64, u16)>,
    written: Vec<u8>,
    read: Vec<u8>,
    pair: Pair,
}

/// A 1000-byte message every 5 ms for 4 s (1.6 Mb/s) over a wire of 50 ms each way that
/// loses every 33rd packet the client sends (3 %).
fn stream() -> Streamed {
    let cfg = Config {
        scheme: Scheme::parse("auto").unwrap(),
        initial_window: 10,
        ..Config::default()
    };
    let mut p = Pair::new(cfg);
    let mut sent = Vec::new();
    let (mut written, mut read) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    let mut next_write = 0;
    while p.now < 6_000 * MS {
        if p.now >= next_write && next_write < 4_000 * MS {
            let msg: Vec<u8> = (0..1000).map(|i| (i + written.len()) as u8).collect();
            written.extend_from_slice(&msg);
            p.client.write(Bytes::from(msg));
            next_write += 5 * MS;
        }
        // Everything both ends send now; every 33rd client packet is lost.
        p.send_routed(
            |now, pk| {
                n += 1;
                let count = pk.window_repair.map_or(0, |w| w.count);
                if !pk.payload.is_empty() || count > 0 {
                    sent.push((now, pk.seg, count));
                }
                (!n.is_multiple_of(33)).then_some(now + 50 * MS)
            },
            |now, _| Some(now + 50 * MS),
        );
        while let Some(b) = p.server.read_chunk() {
            read.extend_from_slice(&b);
        }
        let limit = if next_write < 4_000 * MS {
            next_write
        } else {
            u64::MAX
        };
        if !p.step_until(limit) {
            break;
        }
    }
    Streamed {
        sent,
        written,
        read,
        pair: p,
    }
}

#[test]
fn every_packet_of_a_stream_is_covered_by_a_repair_within_its_wait() {
    let Streamed {
        sent,
        written,
        read,
        pair: p,
    } = stream();
    assert_eq!(read, written, "the stream arrived intact");
    // First transmissions and when they left; and every window repair's window.
    let mut first_sent: BTreeMap<u64, u64> = BTreeMap::new();
    let mut repairs = Vec::new();
    for &(t, seg, count) in &sent {
        if count == 0 {
            first_sent.entry(seg).or_insert(t);
        } else {
            repairs.push((t, seg, seg + count as u64));
        }
    }
    assert!(repairs.len() > 50, "{} window repairs", repairs.len());
    // After the first second (the round trip is measured, the sender is a stream), each
    // data packet's first covering repair leaves within the wait: 0.75 of a quarter of
    // the smoothed round trip, 100 ms on the wire and a little more with ACK timing.
    let wait = 20 * MS;
    let mut checked = 0;
    for (&seg, &t) in first_sent
        .range(..)
        .filter(|(_, &t)| t > 1_000 * MS && t < 3_900 * MS)
    {
        let first_repair = repairs
            .iter()
            .filter(|r| r.1 <= seg && seg < r.2 && r.0 >= t)
            .map(|r| r.0)
            .min()
            .unwrap_or_else(|| panic!("segment {seg} sent at {t} never covered"));
        assert!(
            first_repair - t <= wait,
            "segment {seg} waited {:.2} ms for its repair",
            (first_repair - t) as f64 / MS as f64
        );
        checked += 1;
    }
    assert!(checked > 400, "{checked} segments checked");
    // The losses were rebuilt, not retransmitted.
    let (client, server) = (p.client.stats(), p.server.stats());
    assert!(server.recovered >= 15, "{} rebuilt", server.recovered);
    assert!(
        client.retransmissions * 5 <= server.recovered,
        "{} retransmissions for {} rebuilt",
        client.retransmissions,
        server.recovered
    );
}
