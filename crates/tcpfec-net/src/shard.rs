//! Sharding a server over several sockets on one port, so several connections use
//! several cores.
//!
//! Each shard is a complete endpoint (socket, connection table, driver task) bound to the
//! same address with `SO_REUSEPORT`; the kernel hands each datagram to one of them by a
//! hash of its source and destination addresses, so all datagrams of a client that keeps
//! its address reach the same shard. A client whose address changes (NAT rebinding) may
//! hash to another shard: server connection ids carry their shard's index (`id mod
//! count`), and a shard that receives data for another shard's connection forwards it
//! there, as QUIC load balancers route by connection id.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tokio::net::UdpSocket;
use tokio::sync::Notify;

/// Binds `count` sockets to `addr`. One socket is bound plainly; several share the port
/// with `SO_REUSEPORT`. The address is first bound without the option, so an address in
/// use is refused as before instead of silently sharing its datagrams with another
/// program (a port given as 0 becomes one free port for every shard).
pub(crate) async fn bind(addr: SocketAddr, count: usize) -> io::Result<Vec<UdpSocket>> {
    if count <= 1 {
        return Ok(vec![UdpSocket::bind(addr).await?]);
    }
    let addr = {
        let probe = std::net::UdpSocket::bind(addr)?;
        probe.local_addr()?
    };
    (0..count)
        .map(|_| {
            use socket2::{Domain, Protocol, Socket, Type};
            let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
            s.set_reuse_port(true)?;
            s.set_nonblocking(true)?;
            s.bind(&addr.into())?;
            UdpSocket::from_std(s.into())
        })
        .collect()
}

/// One shard's place among its endpoint's shards, and its inbox for datagrams the
/// others received on its behalf.
pub(crate) struct Shard {
    index: u32,
    count: u32,
    /// Datagrams another shard received for one of this shard's connections.
    inbox: Mutex<Vec<(SocketAddr, Vec<u8>)>>,
    /// Wakes this shard's driver task when a datagram lands in its inbox.
    wake: Arc<Notify>,
    /// Every shard of the endpoint, by index (weak: the endpoint owns them).
    siblings: OnceLock<Vec<Weak<Shard>>>,
}

impl Shard {
    /// Shard `index` of `count`, whose driver task waits on `wake`.
    pub(crate) fn new(index: usize, count: usize, wake: Arc<Notify>) -> Self {
        Shard {
            index: index as u32,
            count: count as u32,
            inbox: Mutex::new(Vec::new()),
            wake,
            siblings: OnceLock::new(),
        }
    }

    /// Tells the shard where its siblings are (once, after all are built).
    pub(crate) fn join(&self, all: Vec<Weak<Shard>>) {
        let _ = self.siblings.set(all);
    }

    /// Turns a random number into a connection id this shard owns, or `None` if that
    /// would overflow (draw again).
    pub(crate) fn claim(&self, random: u32) -> Option<u32> {
        (random - random % self.count).checked_add(self.index)
    }

    /// Whether connection `id` belongs to this shard.
    pub(crate) fn owns(&self, id: u32) -> bool {
        id % self.count == self.index
    }

    /// Hands a datagram for connection `id` to the shard that owns it; false if there is
    /// none (this shard owns it, or the endpoint is going away).
    pub(crate) fn forward(&self, id: u32, from: SocketAddr, datagram: &[u8]) -> bool {
        if self.owns(id) {
            return false;
        }
        let owner = self
            .siblings
            .get()
            .and_then(|all| all.get((id % self.count) as usize))
            .and_then(Weak::upgrade);
        let Some(owner) = owner else {
            return false;
        };
        owner
            .inbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((from, datagram.to_vec()));
        owner.wake.notify_one();
        true
    }

    /// The datagrams forwarded to this shard since the last call.
    pub(crate) fn take_inbox(&self) -> Vec<(SocketAddr, Vec<u8>)> {
        std::mem::take(&mut *self.inbox.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claimed_ids_belong_to_their_shard_and_only_to_it() {
        let shards: Vec<Shard> = (0..3)
            .map(|i| Shard::new(i, 3, Arc::new(Notify::new())))
            .collect();
        for random in [0u32, 1, 2, 3, 1000, 0xffff_fffd, 0xffff_fffe, u32::MAX] {
            for (i, s) in shards.iter().enumerate() {
                if let Some(id) = s.claim(random) {
                    assert!(s.owns(id), "shard {i} claimed {id} from {random}");
                    let owners = shards.iter().filter(|o| o.owns(id)).count();
                    assert_eq!(owners, 1, "{id} has {owners} owners");
                }
            }
        }
        // The last partial block cannot hold every shard's id: those draws are refused.
        assert_eq!(shards[2].claim(u32::MAX), None);
    }

    #[test]
    fn one_shard_owns_every_id_unchanged() {
        let s = Shard::new(0, 1, Arc::new(Notify::new()));
        for random in [0u32, 7, u32::MAX] {
            assert_eq!(s.claim(random), Some(random));
            assert!(s.owns(random));
        }
    }
}
