//! Per-direction schemes: a receiver told the peer's scheme decodes the peer's repair
//! packets even when its own (sending) scheme has no FEC.

use bytes::Bytes;
use tcpfec_proto::{Config, Connection, Instant, Scheme};

/// Sends 200 kB from an `anker-8-1` client to a `sack` server, dropping the client's 20th
/// data segment once; returns the segments the server rebuilt from repairs.
fn recovered(tell_server: bool) -> u64 {
    let anker = Scheme::parse("anker-8-1").unwrap();
    let mut client = Connection::client(Config {
        scheme: anker.clone(),
        ..Config::default()
    });
    let mut server = Connection::server(Config::default());
    if tell_server {
        server.set_peer_scheme(&anker);
    }
    client.write(Bytes::from(vec![3u8; 200_000]));
    client.finish();
    let (mut now, mut data_seen) = (0u64, 0);
    for _ in 0..200 {
        now += 10_000_000;
        let t = Instant(now);
        client.handle_timeout(t);
        server.handle_timeout(t);
        while let Some(p) = client.poll_packet(t) {
            if p.repair.is_none() && !p.payload.is_empty() {
                data_seen += 1;
                if data_seen == 20 {
                    continue;
                }
            }
            server.handle_packet(t, p);
        }
        while let Some(p) = server.poll_packet(t) {
            client.handle_packet(t, p);
        }
    }
    let mut got = 0;
    while let Some(c) = server.read_chunk() {
        got += c.len();
    }
    assert_eq!(got, 200_000);
    server.stats().recovered
}

#[test]
fn receiver_decodes_for_the_peer_scheme() {
    assert!(
        recovered(true) >= 1,
        "the repair must rebuild the lost segment"
    );
    assert_eq!(recovered(false), 0, "without FEC the loss is retransmitted");
}
