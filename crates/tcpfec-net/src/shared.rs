//! The state one shard's driver task shares with the stream handles: its connections,
//! socket and counters behind one mutex. The driver never holds the lock across an
//! `await`.

use crate::clock::Clock;
use crate::config::EndpointConfig;
use crate::conn::Conn;
use crate::cookie::CookieJar;
use crate::shard::Shard;
use crate::stats::EndpointStats;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, Notify};

/// A connection a server accepted, on its way to [`crate::Endpoint::accept`], which wraps
/// it in a [`crate::Stream`]: the shard that holds it, its id and its client's address.
pub(crate) type Accepted = (Arc<Shared>, u32, SocketAddr);

/// State shared by the driver task and the stream handles.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) notify: Arc<Notify>,
    pub(crate) clock: Clock,
    pub(crate) cfg: EndpointConfig,
    pub(crate) socket: UdpSocket,
    /// The kernel coalesces received datagrams on `socket` ([`crate::gro`]).
    pub(crate) gro: bool,
    /// Driver rounds whose datagrams have all been handed to the socket.
    pub(crate) rounds: AtomicU64,
    /// This endpoint's place among the server's shards ([`crate::shard`]).
    pub(crate) shard: Arc<Shard>,
    /// Server connections without a proven client address beyond which new clients get a
    /// Retry: this shard's part of [`crate::config::MAX_UNVALIDATED`].
    pub(crate) max_unvalidated: usize,
    /// First handshake messages accepted recently, shared by every shard of the endpoint:
    /// a recorded copy opens no second connection ([`crate::first_message`]).
    pub(crate) first_messages: Arc<Mutex<crate::first_message::FirstMessages>>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Everything behind the mutex.
pub(crate) struct State {
    pub(crate) conns: HashMap<u32, Conn>,
    /// Server: (client address, client id) → local id, to answer repeated Initials.
    pub(crate) by_client: HashMap<(SocketAddr, u32), u32>,
    pub(crate) accept_tx: Option<mpsc::UnboundedSender<Accepted>>,
    pub(crate) jar: CookieJar,
    pub(crate) stats: EndpointStats,
    /// Datagrams waiting to be sent.
    pub(crate) outbox: Vec<(SocketAddr, Vec<u8>)>,
    /// Server: connections accepted whose streams are handed out once the lock is released
    /// (a stream dropped under the lock would deadlock in its `Drop`).
    pub(crate) accepted: Vec<(u32, SocketAddr)>,
    /// Server connections whose client's address is not proven yet.
    pub(crate) unvalidated: usize,
    pub(crate) closing: bool,
}

impl State {
    /// An unused connection id that belongs to `shard`.
    pub(crate) fn fresh_id(&self, shard: &Shard) -> u32 {
        loop {
            let mut b = [0u8; 4];
            getrandom::getrandom(&mut b).expect("OS random source");
            let Some(id) = shard.claim(u32::from_be_bytes(b)) else {
                continue;
            };
            if id != 0 && !self.conns.contains_key(&id) {
                return id;
            }
        }
    }

    pub(crate) fn push(&mut self, to: SocketAddr, d: Vec<u8>) {
        self.stats.datagrams_out += 1;
        self.stats.bytes_out += d.len() as u64;
        self.outbox.push((to, d));
    }
}
