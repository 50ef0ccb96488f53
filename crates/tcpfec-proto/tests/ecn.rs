//! ECN-Echo / CWR (RFC 3168) through two engines: the sender reduces its window at most once
//! per window of data, and the receiver stops echoing once it sees CWR.

use bytes::Bytes;
use tcpfec_proto::{Config, Connection, Flags, Instant};

/// Moves every pending packet across (no loss), 10 ms per step; returns the packets the
/// server sent that carried ECE.
fn step(client: &mut Connection, server: &mut Connection, now: &mut u64) -> usize {
    *now += 10_000_000;
    let t = Instant(*now);
    let mut ece = 0;
    while let Some(p) = client.poll_packet(t) {
        server.handle_packet(t, p);
    }
    while let Some(p) = server.poll_packet(t) {
        if p.flags.contains(Flags::ECE) {
            ece += 1;
        }
        client.handle_packet(t, p);
    }
    ece
}

/// A connected pair with a bulk transfer under way for five steps.
fn warmed_up(cfg: Config) -> (Connection, Connection, u64) {
    let mut client = Connection::client(cfg.clone());
    let mut server = Connection::server(cfg);
    let mut now = 0;
    client.write(Bytes::from(vec![7u8; 2_000_000]));
    for _ in 0..5 {
        step(&mut client, &mut server, &mut now);
    }
    (client, server, now)
}

#[test]
fn ece_reduces_once_per_window_and_cwr_stops_the_echo() {
    let (mut client, mut server, mut now) = warmed_up(Config {
        initial_window: 10,
        ..Config::default()
    });
    let before = client.cwnd();
    server.echo_congestion();
    let mut echoed = 0;
    for _ in 0..3 {
        echoed += step(&mut client, &mut server, &mut now);
    }
    assert!(echoed >= 1, "ECE must reach the sender");
    assert_eq!(client.stats().ecn_reductions, 1, "one reduction per window");
    assert!(
        client.cwnd() < before,
        "window reduced: {} -> {}",
        before,
        client.cwnd()
    );
    // CWR reached the receiver: no more ECE.
    let later = (0..5)
        .map(|_| step(&mut client, &mut server, &mut now))
        .sum::<usize>();
    assert_eq!(later, 0, "receiver keeps echoing after CWR");
    // A new congestion signal a window later is a new reduction.
    server.echo_congestion();
    for _ in 0..3 {
        step(&mut client, &mut server, &mut now);
    }
    assert_eq!(client.stats().ecn_reductions, 2);
    let delivered = server.stats().bytes_delivered;
    assert!(delivered > 0);
}

#[test]
fn fec_schemes_reduce_by_their_factor_r_once_per_window() {
    let (mut client, mut server, mut now) = warmed_up(Config {
        initial_window: 10,
        scheme: tcpfec_proto::Scheme::parse("fec-il-g1-l0-r0.7").unwrap(),
        ..Config::default()
    });
    // Every ACK of the next step carries ECE; the first one is processed (slow start adds
    // one segment) and then triggers the reduction: ssthresh = r · (cwnd + 1).
    let before = client.cwnd();
    server.echo_congestion();
    step(&mut client, &mut server, &mut now);
    assert_eq!(client.stats().ecn_reductions, 1);
    assert!(
        (client.ssthresh() - (before + 1.0) * 0.7).abs() < 1e-9,
        "ssthresh {} after cwnd {before}, expected x0.7",
        client.ssthresh()
    );
    assert!(client.cwnd() < before);
    for _ in 0..2 {
        step(&mut client, &mut server, &mut now);
    }
    assert_eq!(client.stats().ecn_reductions, 1, "once per window");
}
