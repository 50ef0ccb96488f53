//! The relay under a flood: 10⁴ source addresses and more bytes than it may hold. Its
//! upstream sockets stay under the cap, what it holds stays under the byte limit, and
//! idle clients make room again.

mod common;

use common::any;
use std::time::Duration;
use tcpfec_channel::LossSpec;
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig, DEFAULT_MAX_BYTES};
use tokio::net::UdpSocket;

const CAP: usize = 256;
const EXPIRY: Duration = Duration::from_secs(30);

async fn flood_relay(max_bytes: usize, delay: Duration) -> (Relay, UdpSocket) {
    let sink = UdpSocket::bind(any()).await.unwrap();
    let link = LinkSpec {
        max_bytes,
        ..LinkSpec::delay_only(delay)
    };
    let relay = Relay::start(RelayConfig {
        listen: any(),
        to: sink.local_addr().unwrap(),
        forward: LinkSpec {
            loss: LossSpec::None,
            ..link
        },
        back: link,
        seed: 1,
        max_sources: CAP,
        idle_expiry: EXPIRY,
    })
    .await
    .unwrap();
    (relay, sink)
}

/// Sends one datagram from each of `n` distinct source addresses, starting at loopback
/// address number `first` (127.1.x.y: the whole of 127/8 is loopback on Linux, so every
/// source is distinct even when the kernel reuses port numbers).
async fn from_many_sources(to: std::net::SocketAddr, first: usize, n: usize) {
    for i in first..first + n {
        let ip = std::net::Ipv4Addr::new(127, 1, (i / 250) as u8, (i % 250) as u8 + 1);
        let s = UdpSocket::bind((ip, 0)).await.unwrap();
        s.send_to(b"hello", to).await.unwrap();
    }
}

/// Waits (bounded) until the relay has read `n` datagrams.
async fn until_received(relay: &Relay, n: u64) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while relay.forward.snapshot().received < n {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the relay read every datagram");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_sources_stay_under_the_cap() {
    let (relay, _sink) = flood_relay(DEFAULT_MAX_BYTES, Duration::ZERO).await;
    from_many_sources(relay.local_addr(), 0, 10_000).await;
    // Datagrams the kernel dropped before the relay read them never count; wait for the
    // ones it did read.
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let s = relay.forward.snapshot();
            if s.received > 0 && s.received == s.delivered + s.refused_sources + s.overflow {
                return s;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the relay settled");
    assert!(relay.sources() <= CAP as u64, "{} sources", relay.sources());
    assert_eq!(relay.sources(), CAP as u64);
    assert!(read.received > CAP as u64);
    assert_eq!(read.refused_sources, read.received - CAP as u64, "{read:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_held_stay_under_the_limit_without_a_rate() {
    // A 5 s delay and no rate: everything propagates at once, nothing queues; the byte
    // limit is what bounds the relay's memory.
    // Room for 100 datagrams of 1000 bytes (each is charged 128 bytes of bookkeeping).
    let limit = 100 * 1128;
    let (relay, _sink) = flood_relay(limit, Duration::from_secs(5)).await;
    let s = UdpSocket::bind(any()).await.unwrap();
    let d = vec![7u8; 1000];
    // One at a time, so the kernel's socket buffer never drops any before the relay reads.
    for k in 1..=300 {
        s.send_to(&d, relay.local_addr()).await.unwrap();
        until_received(&relay, k).await;
    }
    // Until the link task has taken the last one from the hand-over queue.
    let accounted = || relay.forward.snapshot().overflow + relay.held_bytes().0 / 1128;
    tokio::time::timeout(Duration::from_secs(10), async {
        while accounted() < 300 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("every datagram admitted or dropped");
    let (held, _) = relay.held_bytes();
    assert_eq!(held, limit as u64, "{held} bytes held");
    // 300 datagrams offered, 100 may be held for the 5 s delay: the rest is dropped.
    assert_eq!(relay.forward.snapshot().overflow, 200);
}

#[tokio::test(start_paused = true)]
async fn idle_sources_expire_and_make_room() {
    let (relay, _sink) = flood_relay(DEFAULT_MAX_BYTES, Duration::ZERO).await;
    from_many_sources(relay.local_addr(), 0, CAP + 10).await;
    until_received(&relay, (CAP + 10) as u64).await;
    assert_eq!(relay.sources(), CAP as u64);
    assert_eq!(relay.forward.snapshot().refused_sources, 10);
    // After the idle expiry (virtual time), a new client finds room.
    tokio::time::advance(EXPIRY + Duration::from_secs(1)).await;
    from_many_sources(relay.local_addr(), CAP + 10, 1).await;
    until_received(&relay, (CAP + 11) as u64).await;
    assert_eq!(relay.sources(), 1);
    assert_eq!(relay.forward.snapshot().refused_sources, 10);
}
