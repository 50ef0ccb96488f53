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
            if s.received > 0 && s.received == s.delivered + s.overflow {
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
    // Every new source beyond the cap replaced the one heard from least recently.
    assert_eq!(read.evicted_sources, read.received - CAP as u64, "{read:?}");
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
    from_many_sources(relay.local_addr(), 0, CAP).await;
    until_received(&relay, CAP as u64).await;
    assert_eq!(relay.sources(), CAP as u64);
    // After the idle expiry (virtual time), the next client finds them all expired: no
    // eviction needed.
    tokio::time::advance(EXPIRY + Duration::from_secs(1)).await;
    from_many_sources(relay.local_addr(), CAP, 1).await;
    until_received(&relay, (CAP + 1) as u64).await;
    assert_eq!(relay.sources(), 1);
    assert_eq!(relay.forward.snapshot().evicted_sources, 0);
}

/// A full relay forgets the client heard from least recently, not a live one that just
/// spoke, and never refuses a new client: the one kept speaking keeps its upstream socket
/// (the target sees the same source port for it before and after the newcomers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_relay_evicts_the_least_recently_heard_client() {
    let sink = UdpSocket::bind(any()).await.unwrap();
    let relay = Relay::start(RelayConfig {
        listen: any(),
        to: sink.local_addr().unwrap(),
        forward: LinkSpec::delay_only(Duration::ZERO),
        back: LinkSpec::delay_only(Duration::ZERO),
        seed: 1,
        max_sources: 3,
        idle_expiry: EXPIRY,
    })
    .await
    .unwrap();
    let to = relay.local_addr();
    let socks: Vec<UdpSocket> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(UdpSocket::bind(any()).await.unwrap());
        }
        v
    };
    let mut buf = [0u8; 64];
    let mut seen_as = Vec::new();
    for s in &socks {
        s.send_to(b"hi", to).await.unwrap();
        seen_as.push(sink.recv_from(&mut buf).await.unwrap().1);
    }
    // Client 0 speaks again: now client 1 is the least recently heard.
    socks[0].send_to(b"again", to).await.unwrap();
    assert_eq!(sink.recv_from(&mut buf).await.unwrap().1, seen_as[0]);
    let newcomer = UdpSocket::bind(any()).await.unwrap();
    newcomer.send_to(b"new", to).await.unwrap();
    let (n, _) = sink.recv_from(&mut buf).await.unwrap();
    assert_eq!(&buf[..n], b"new", "the new client was served");
    assert_eq!(relay.forward.snapshot().evicted_sources, 1);
    assert_eq!(relay.sources(), 3);
    // Client 0 and 2 keep their upstream sockets; client 1 comes back on a new one.
    socks[0].send_to(b"x", to).await.unwrap();
    assert_eq!(sink.recv_from(&mut buf).await.unwrap().1, seen_as[0]);
    socks[2].send_to(b"x", to).await.unwrap();
    assert_eq!(sink.recv_from(&mut buf).await.unwrap().1, seen_as[2]);
    socks[1].send_to(b"x", to).await.unwrap();
    assert_ne!(sink.recv_from(&mut buf).await.unwrap().1, seen_as[1]);
}
