//! A stream's last data segment lost and rebuilt from its FEC repair: the receiver must
//! still see the end of the stream. (Found by the pair fuzz target: the FIN rode on that
//! data segment, the rebuild restored the bytes but not the flag, the receiver's ACK
//! covered the FIN anyway, and the stream never ended.)

use bytes::Bytes;
use tcpfec_proto::{Config, Connection, Instant, Packet, Scheme};

/// Runs a short transfer from the server (so the client is established before data
/// comes) with a fixed 10 ms delay, dropping the server's first data segment; returns
/// what the client read and whether it saw the end of the stream.
fn transfer(scheme: &str, data: &[u8]) -> (Vec<u8>, bool) {
    let cfg = Config {
        scheme: Scheme::parse(scheme).unwrap(),
        ..Config::default()
    };
    let mut client = Connection::client(cfg.clone());
    let mut server = Connection::server(cfg);
    server.write(Bytes::copy_from_slice(data));
    server.finish();
    let mut wire: Vec<(u64, bool, Packet)> = Vec::new(); // (arrival, to server?, packet)
    let mut dropped = false;
    let mut got = Vec::new();
    let mut now = 0u64;
    for _ in 0..10_000 {
        let t = Instant(now);
        while let Some(p) = client.poll_packet(t) {
            wire.push((now + 10_000_000, true, p));
        }
        while let Some(p) = server.poll_packet(t) {
            if !dropped && !p.is_repair() && !p.payload.is_empty() {
                dropped = true;
                continue;
            }
            wire.push((now + 10_000_000, false, p));
        }
        while let Some(c) = client.read_chunk() {
            got.extend_from_slice(&c);
        }
        if client.peer_finished() {
            return (got, true);
        }
        let timers = [client.poll_timeout(), server.poll_timeout()];
        let next = wire
            .iter()
            .map(|w| w.0)
            .chain(timers.into_iter().flatten().map(|i| i.0))
            .min();
        let Some(next) = next else { break };
        now = now.max(next);
        let t = Instant(now);
        let (due, later): (Vec<_>, Vec<_>) = wire.into_iter().partition(|w| w.0 <= now);
        wire = later;
        for (_, to_server, p) in due {
            if to_server {
                server.handle_packet(t, p);
            } else {
                client.handle_packet(t, p);
            }
        }
        for c in [&mut client, &mut server] {
            if c.poll_timeout().is_some_and(|d| d <= t) {
                c.handle_timeout(t);
            }
        }
    }
    (got, false)
}

#[test]
fn the_stream_ends_when_its_last_segment_is_rebuilt() {
    let data: Vec<u8> = (0..95u8).collect();
    for scheme in [
        "fec-cwnd",
        "fec-static-4",
        "anker-8-1",
        "anker-4-2",
        "tcp-ir",
        "dfec",
        "afec",
        "tfec",
        "fec-il-g2-l0-r1",
    ] {
        let (got, ended) = transfer(scheme, &data);
        assert_eq!(got, data, "{scheme}: data");
        assert!(ended, "{scheme}: the end of the stream never arrived");
    }
}
