//! The first byte of data reaches the server 1.5 round trips after the client starts:
//! the handshake's first message goes out at once, the engines start established, and
//! the client's data follows the server's answer without another round trip. A server
//! that asks for a cookie first (`--retry always`) takes one round trip more. A lost
//! Initial costs the few milliseconds until its copy, not the retransmission timer.

mod common;

use common::{client, config, proxy, relay, server};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tcpfec_channel::LossSpec;
use tcpfec_net::{Psk, RetryPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One-way delay of the relay: a round trip of 100 ms.
const ONE_WAY: Duration = Duration::from_millis(50);
const RTT: Duration = Duration::from_millis(100);

/// Time from the client's `connect` to the server's first byte, through the relay.
async fn first_byte(retry: RetryPolicy) -> Duration {
    let mut cfg = config(Some(Psk::generate()), "auto");
    cfg.retry = retry;
    let srv = server(cfg.clone()).await;
    let relay = relay(
        srv.local_addr().unwrap(),
        100_000_000,
        ONE_WAY,
        LossSpec::None,
    )
    .await;
    let cli = client(cfg).await;
    let start = Instant::now();
    let mut s = cli.connect(relay.local_addr()).await.unwrap();
    s.write_all(b"x").await.unwrap();
    let mut at_server = srv.accept().await.unwrap();
    let mut b = [0u8; 1];
    at_server.read_exact(&mut b).await.unwrap();
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_byte_arrives_after_one_and_a_half_round_trips() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let fast = first_byte(RetryPolicy::WhenBusy).await;
        let cookie = first_byte(RetryPolicy::Always).await;
        eprintln!("first byte after {fast:?}; with a cookie round {cookie:?}");
        assert!(fast >= RTT * 3 / 2, "{fast:?} is faster than the path");
        assert!(
            fast < RTT * 2,
            "{fast:?}: more than 1.5 round trips plus slack"
        );
        assert!(
            cookie >= RTT * 5 / 2,
            "{cookie:?}: the cookie round is missing"
        );
    })
    .await
    .unwrap();
}

/// A proxy in front of `server` that drops the client's first datagram and forwards
/// everything else both ways.
async fn dropping_first(server: SocketAddr) -> SocketAddr {
    let mut first = true;
    proxy(server, move |_| !std::mem::take(&mut first)).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_initial_is_made_good_by_its_copy_not_the_retransmission_timer() {
    tokio::time::timeout(Duration::from_secs(20), async {
        let cfg = config(Some(Psk::generate()), "auto");
        let srv = server(cfg.clone()).await;
        let entry = dropping_first(srv.local_addr().unwrap()).await;
        let cli = client(cfg).await;
        let start = Instant::now();
        let mut s = cli.connect(entry).await.unwrap();
        s.write_all(b"x").await.unwrap();
        let mut at_server = srv.accept().await.unwrap();
        let mut b = [0u8; 1];
        at_server.read_exact(&mut b).await.unwrap();
        let took = start.elapsed();
        eprintln!("first byte after {took:?} with the first Initial lost");
        // The retransmission timer would have waited 500 ms.
        assert!(took < Duration::from_millis(250), "{took:?}");
    })
    .await
    .unwrap();
}
