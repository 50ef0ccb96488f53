//! The first byte of data reaches the server 1.5 round trips after the client starts:
//! the handshake's first message goes out at once, the engines start established, and
//! the client's data follows the server's answer without another round trip. A server
//! that asks for a cookie first (`--retry always`) takes one round trip more. A lost
//! Initial costs the few milliseconds until its copy, not the retransmission timer. A
//! second connection to the same address resumes from the path the first one saved.

mod common;

use common::{client, config, proxy, relay, server};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tcpfec_channel::LossSpec;
use tcpfec_net::path_cache::{self, PathCache};
use tcpfec_net::{Psk, RetryPolicy};
use tcpfec_proto::ResumeStatus;
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

/// Sends `len` bytes from a client with `cache` to `srv` through `entry` and waits until
/// the server has read them all; returns the client's engine counters seen at the end.
async fn transfer(
    srv: &tcpfec_net::Endpoint,
    entry: SocketAddr,
    key: &Psk,
    cache: std::sync::Arc<PathCache>,
    len: usize,
) -> tcpfec_proto::Stats {
    let mut cfg = config(Some(key.clone()), "auto");
    cfg.path_cache = Some(cache);
    let cli = client(cfg).await;
    let mut s = cli.connect(entry).await.unwrap();
    let watch = s.watch();
    let payload = common::data(len, 7);
    let writer = tokio::spawn(async move {
        s.write_all(&payload).await.unwrap();
        s.shutdown().await.unwrap();
        s
    });
    let mut at_server = srv.accept().await.unwrap();
    let mut got = Vec::new();
    at_server.read_to_end(&mut got).await.unwrap();
    assert_eq!(got.len(), len);
    let stats = watch.stats();
    drop(writer.await.unwrap());
    // Dropping the client endpoint saves what its connection learnt.
    drop(cli);
    stats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_connection_resumes_from_the_path_the_first_one_saved() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let dir = std::env::temp_dir().join(format!("tcpfec-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("paths");
        let key = Psk::generate();
        let srv = server(config(Some(key.clone()), "auto")).await;
        let relay = relay(
            srv.local_addr().unwrap(),
            50_000_000,
            ONE_WAY,
            LossSpec::None,
        )
        .await;
        let entry = relay.local_addr();
        let open = || std::sync::Arc::new(PathCache::open(&file, path_cache::DEFAULT_LIFETIME).0);

        let first = transfer(&srv, entry, &key, open(), 2_000_000).await;
        assert_eq!(first.resume, ResumeStatus::Off, "nothing saved yet");
        let saved = open()
            .lookup(entry.ip())
            .expect("the first connection saved its path");
        eprintln!("saved: {saved:?}");
        assert!(saved.min_rtt >= RTT && saved.min_rtt < RTT * 2, "{saved:?}");
        assert!(
            saved.rate > 1e6 && saved.rate < 50e6 / 8.0 * 1.1,
            "{saved:?}"
        );

        let second = transfer(&srv, entry, &key, open(), 2_000_000).await;
        eprintln!("second connection: resume {}", second.resume);
        assert!(
            matches!(
                second.resume,
                ResumeStatus::Completed | ResumeStatus::Validating | ResumeStatus::Unvalidated
            ),
            "the second connection did not jump: {}",
            second.resume
        );
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await
    .unwrap();
}
