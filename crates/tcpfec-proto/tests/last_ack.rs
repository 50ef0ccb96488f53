//! The last ACK of a connection lost: the end that finished last sends its FIN again,
//! and the other end, lingering, must still be there to acknowledge each copy, however
//! far apart the peer's doubled timeouts put them. Otherwise the peer resends its FIN
//! to nobody and never closes.

mod common;

use bytes::Bytes;
use common::Pair;
use tcpfec_proto::{Config, Connection, Scheme};

/// The client uploads a little and finishes; the server reads it all, then finishes.
/// The client's first `lost_acks` packets sent after it has the server's FIN (its ACKs
/// of that FIN) are lost. Returns both ends once nothing is pending or at 120 s of
/// virtual time.
fn close_losing_last_acks(scheme: &str, lost_acks: usize) -> (Connection, Connection) {
    let mut pair = Pair::new(Config {
        scheme: Scheme::parse(scheme).unwrap(),
        ..Config::default()
    });
    pair.client.write(Bytes::from(vec![7u8; 20_000]));
    pair.client.finish();
    let one_way = 10_000_000; // 10 ms
    let mut left = lost_acks;
    let mut server_finished = false;
    while pair.now < 120_000_000_000 {
        let client_has_fin = pair.client.peer_finished();
        pair.send_routed(
            |now, _| {
                if client_has_fin && left > 0 {
                    left -= 1;
                    return None;
                }
                Some(now + one_way)
            },
            |now, _| Some(now + one_way),
        );
        while pair.server.read_chunk().is_some() {}
        while pair.client.read_chunk().is_some() {}
        if pair.server.peer_finished() && !server_finished {
            pair.server.finish();
            server_finished = true;
        }
        if !pair.step() {
            break;
        }
    }
    (pair.client, pair.server)
}

#[test]
fn every_copy_of_the_last_fin_is_acknowledged_until_the_peer_closes() {
    for scheme in ["sack", "auto"] {
        for lost_acks in [0, 1, 2, 4] {
            let (client, server) = close_losing_last_acks(scheme, lost_acks);
            let what = format!("{scheme}, {lost_acks} last ACKs lost");
            assert!(server.is_closed(), "{what}: the server never closed");
            assert_eq!(server.error(), None, "{what}: server");
            assert!(client.is_closed(), "{what}: the client never closed");
            assert_eq!(client.error(), None, "{what}: client");
        }
    }
}
