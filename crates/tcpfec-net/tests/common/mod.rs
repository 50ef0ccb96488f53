//! Helpers shared by the real-socket tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;
use tcpfec_channel::LossSpec;
use tcpfec_net::relay::{LinkSpec, Relay, RelayConfig};
pub use tcpfec_net::Endpoint;
use tcpfec_net::{EndpointConfig, Psk};
use tcpfec_proto::Scheme;

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
