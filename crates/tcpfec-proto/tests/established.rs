//! Connections opened by a handshake outside the engine (the UDP driver's): they start
//! established, the first packet on the wire carries data, and the byte stream and its
//! end arrive intact both ways.

mod common;

use bytes::Bytes;
use common::Pair;
use core::time::Duration;
use tcpfec_proto::{Config, Connection, Flags, PeerOpening, Scheme, State};

/// The settings both ends use: `scheme`, an initial window of 10.
fn config(scheme: &str) -> Config {
    Config {
        scheme: Scheme::parse(scheme).unwrap(),
        initial_window: 10,
        ..Config::default()
    }
}

/// Two ends that start established with `cfg`, as after the UDP driver's handshake.
fn established(cfg: Config) -> Pair {
    let opening = PeerOpening {
        mss: Some(cfg.mss),
        window: cfg.recv_window,
        sack: cfg.scheme.uses_sack(),
        rtt: Some(Duration::from_millis(20)),
    };
    let mut p = Pair::new(cfg.clone());
    p.client = Connection::established(cfg.clone(), &cfg.scheme, &opening);
    p.server = Connection::established(cfg.clone(), &cfg.scheme, &opening);
    p
}

/// Appends what each end can read now: the server's to `up`, the client's to `down`.
fn read_both(p: &mut Pair, up: &mut Vec<u8>, down: &mut Vec<u8>) {
    while let Some(b) = p.server.read_chunk() {
        up.extend_from_slice(&b);
    }
    while let Some(b) = p.client.read_chunk() {
        down.extend_from_slice(&b);
    }
}

#[test]
fn data_flows_without_a_syn_exchange() {
    for scheme in ["sack", "auto", "anker-16-3-cubic"] {
        let mut p = established(config(scheme));
        assert_eq!(p.client.state(), State::Established);
        let up: Vec<u8> = (0..200_000u32).map(|i| (i * 13) as u8).collect();
        let down = b"verdict".to_vec();
        p.client.write(Bytes::from(up.clone()));
        p.client.finish();
        let first = p.client.poll_packet(tcpfec_proto::Instant(0)).unwrap();
        assert!(
            !first.flags.contains(Flags::SYN),
            "{scheme}: a SYN went out"
        );
        assert!(
            !first.payload.is_empty(),
            "{scheme}: the first packet carries no data"
        );
        p.server
            .handle_packet(tcpfec_proto::Instant(10_000_000), first);
        let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
        let mut answered = false;
        for _ in 0..100_000 {
            p.send(10_000_000, |now, _| Some(now + 10_000_000));
            read_both(&mut p, &mut got_up, &mut got_down);
            if p.server.peer_finished() && !answered {
                p.server.write(Bytes::from(down.clone()));
                p.server.finish();
                answered = true;
            }
            if !p.step() {
                break;
            }
        }
        assert_eq!(got_up, up, "{scheme}");
        assert_eq!(got_down, down, "{scheme}");
        assert!(p.client.peer_finished(), "{scheme}");
    }
}

/// Both ends send 400 KB at once with `scheme` over a wire that loses every 15th packet
/// each way; returns the longest data packet the client sent, the pure ACKs it sent and
/// the fast recoveries of both ends. Panics unless both streams arrive intact.
fn both_ways_with_loss(scheme: &str, mss: u16, max_packet_len: Option<usize>) -> (usize, u32, u64) {
    let mut p = established(Config {
        mss,
        max_packet_len,
        ..config(scheme)
    });
    let up: Vec<u8> = (0..400_000u32).map(|i| (i * 7) as u8).collect();
    let down: Vec<u8> = (0..400_000u32).map(|i| (i * 11) as u8).collect();
    p.client.write(Bytes::from(up.clone()));
    p.client.finish();
    p.server.write(Bytes::from(down.clone()));
    p.server.finish();
    let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
    let (mut longest, mut pure_acks) = (0, 0);
    let (mut n_up, mut n_down) = (0u64, 0u64);
    for _ in 0..200_000 {
        p.send_routed(
            |now, pk| {
                if pk.is_repair() {
                } else if pk.payload.is_empty() {
                    pure_acks += 1;
                } else {
                    longest = longest.max(pk.encoded_len());
                }
                n_up += 1;
                (!n_up.is_multiple_of(15)).then_some(now + 10_000_000)
            },
            |now, _| {
                n_down += 1;
                (!n_down.is_multiple_of(15)).then_some(now + 10_000_000)
            },
        );
        read_both(&mut p, &mut got_up, &mut got_down);
        if !p.step() {
            break;
        }
    }
    assert_eq!(got_up, up, "{scheme}, limit {max_packet_len:?}");
    assert_eq!(got_down, down, "{scheme}, limit {max_packet_len:?}");
    let recoveries = p.client.stats().fast_recoveries + p.server.stats().fast_recoveries;
    (longest, pure_acks, recoveries)
}

#[test]
fn piggybacked_acknowledgements_never_take_a_data_packet_past_the_limit() {
    // Data packets both ways over a lossy wire would carry SACK blocks (and, under
    // `auto`, FEC feedback) for the other direction. The MSS fills the limit but for the
    // largest data header (40 bytes under `sack`; under `auto` 40 + 15 + 6, its full FEC
    // group option and transmission number), so with the limit they leave those out and
    // pure ACKs carry them, not many more than piggybacking needed, and not so many that
    // the peer, to whom a pure ACK at an unmoved cumulative ACK is a duplicate, starts
    // needless fast recoveries. The streams still arrive.
    const LIMIT: usize = 1443;
    for (scheme, mss) in [("sack", 1400), ("auto", 1372)] {
        let (unlimited, acks_before, recoveries_before) = both_ways_with_loss(scheme, mss, None);
        assert!(
            unlimited > LIMIT,
            "{scheme}: the test never filled a packet ({unlimited})"
        );
        let (limited, acks, recoveries) = both_ways_with_loss(scheme, mss, Some(LIMIT));
        assert!(limited <= LIMIT, "{scheme}: a {limited}-byte data packet");
        // What was left out goes on pure ACKs, but not one per data packet: only where
        // the receiver owed an ACK, or after 16 packets without `auto`'s feedback.
        assert!(
            acks * 2 <= acks_before * 3,
            "{scheme}: {acks} pure ACKs where piggybacking needed {acks_before}"
        );
        // Pure ACKs go out where the receiver owed one, as with data one way only, so the
        // peer may count a few more duplicates than when data carried them (`auto` here:
        // 4 fast recoveries against 2); an ACK forced for every trimmed packet gave 14.
        assert!(
            recoveries <= 2 * recoveries_before.max(2),
            "{scheme}: {recoveries} fast recoveries, {recoveries_before} with piggybacking"
        );
    }
}
