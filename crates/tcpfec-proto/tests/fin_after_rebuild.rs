//! A stream's last data segment lost and rebuilt from its FEC repair: the receiver must
//! still see the end of the stream. (Found by the pair fuzz target: the FIN rode on that
//! data segment, the rebuild restored the bytes but not the flag, the receiver's ACK
//! covered the FIN anyway, and the stream never ended.)

mod common;

use bytes::Bytes;
use common::Pair;
use tcpfec_proto::{Config, Scheme};

/// Runs a short transfer from the server (so the client is established before data
/// comes) with a fixed 10 ms delay, dropping the server's first data segment; returns
/// what the client read and whether it saw the end of the stream.
fn transfer(scheme: &str, data: &[u8]) -> (Vec<u8>, bool) {
    let mut pair = Pair::new(Config {
        scheme: Scheme::parse(scheme).unwrap(),
        ..Config::default()
    });
    pair.server.write(Bytes::copy_from_slice(data));
    pair.server.finish();
    let mut dropped = false;
    let mut got = Vec::new();
    for _ in 0..10_000 {
        pair.send(10_000_000, |now, p| {
            if !dropped && !p.is_repair() && !p.payload.is_empty() {
                dropped = true;
                return None;
            }
            Some(now + 10_000_000)
        });
        while let Some(c) = pair.client.read_chunk() {
            got.extend_from_slice(&c);
        }
        if pair.client.peer_finished() {
            return (got, true);
        }
        if !pair.step() {
            break;
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
