//! Helpers shared by the real-socket tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tcpfec_channel::LossSpec;
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig};
pub use tcpfec_net::Endpoint;
use tcpfec_net::{EndpointConfig, Psk};
use tcpfec_proto::Scheme;
use tokio::net::UdpSocket;

/// Deterministic pseudo-random bytes (xorshift), cheap to make in bulk.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = 0x9e3779b97f4a7c15u64 ^ seed;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Loopback address with an ephemeral port.
pub fn any() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A config with the given key and scheme.
pub fn config(key: Option<Psk>, scheme: &str) -> EndpointConfig {
    EndpointConfig::new(key, Scheme::parse(scheme).unwrap())
}

/// A server endpoint on loopback.
pub async fn server(cfg: EndpointConfig) -> Endpoint {
    Endpoint::bind(any(), cfg, true).await.unwrap()
}

/// A client endpoint on loopback.
pub async fn client(cfg: EndpointConfig) -> Endpoint {
    Endpoint::bind(any(), cfg, false).await.unwrap()
}

/// A relay in front of `to`: `rate` each way, `one_way` delay each way, a queue of one
/// bandwidth-delay product, and `loss` on the forward (data) direction.
pub async fn relay(to: SocketAddr, rate_bps: u64, one_way: Duration, loss: LossSpec) -> Relay {
    relay_on(any(), to, rate_bps, one_way, loss).await
}

/// [`relay`] listening on `listen` (to restart one on the same address).
pub async fn relay_on(
    listen: SocketAddr,
    to: SocketAddr,
    rate_bps: u64,
    one_way: Duration,
    loss: LossSpec,
) -> Relay {
    let bdp = (rate_bps as f64 * one_way.as_secs_f64() * 2.0 / 8.0 / 1500.0) as usize;
    let link = LinkSpec {
        rate_bps: Some(rate_bps),
        delay: one_way,
        queue: bdp.max(64),
        max_bytes: tcpfec_net::relay::DEFAULT_MAX_BYTES,
        loss: LossSpec::None,
    };
    Relay::start(RelayConfig {
        listen,
        to,
        forward: LinkSpec { loss, ..link },
        back: link,
        seed: 7,
        max_sources: tcpfec_net::relay::DEFAULT_MAX_SOURCES,
        idle_expiry: tcpfec_net::relay::DEFAULT_IDLE_EXPIRY,
    })
    .await
    .unwrap()
}

/// A UDP proxy in front of `server` on loopback: each datagram from the client goes to
/// `forward` first, which says whether to pass it on; the server's datagrams all go back
/// to the latest client address. Returns the address clients use and the socket that
/// talks to the server (to inject datagrams as the proxy).
pub async fn proxy(
    server: SocketAddr,
    forward: impl FnMut(&[u8]) -> bool + Send + 'static,
) -> (SocketAddr, Arc<UdpSocket>) {
    proxy_both(server, forward, |_| true).await
}

/// [`proxy`] that also asks `backward` whether to pass on each of the server's datagrams.
pub async fn proxy_both(
    server: SocketAddr,
    mut forward: impl FnMut(&[u8]) -> bool + Send + 'static,
    mut backward: impl FnMut(&[u8]) -> bool + Send + 'static,
) -> (SocketAddr, Arc<UdpSocket>) {
    let front = Arc::new(UdpSocket::bind(any()).await.unwrap());
    let back = Arc::new(UdpSocket::bind(any()).await.unwrap());
    back.connect(server).await.unwrap();
    let addr = front.local_addr().unwrap();
    let client = Arc::new(Mutex::new(None::<SocketAddr>));
    let (f, b, c) = (front.clone(), back.clone(), client.clone());
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let (n, from) = f.recv_from(&mut buf).await.unwrap();
            *c.lock().unwrap() = Some(from);
            if forward(&buf[..n]) {
                let _ = b.send(&buf[..n]).await;
            }
        }
    });
    let b = back.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let Ok(n) = b.recv(&mut buf).await else {
                continue;
            };
            let to = *client.lock().unwrap();
            if let (Some(to), true) = (to, backward(&buf[..n])) {
                let _ = front.send_to(&buf[..n], to).await;
            }
        }
    });
    (addr, back)
}
