//! Refusing replayed first handshake messages.
//!
//! A client's first Noise message is authenticated by the pre-shared key, but nothing in it
//! is tied to a moment or an address: whoever records one can send it again from any
//! address, answer the Retry with the fresh token, and the server would open a connection
//! for each copy (the attacker cannot read the answers, but each connection holds memory
//! and sends keep-alives until the idle timeout). Two checks close that, as QUIC's 0-RTT
//! strike registers and WireGuard's handshake timestamps do:
//!
//! - the client writes its wall-clock time into the authenticated parameters, and the
//!   server refuses a message whose time is more than [`CLOCK_TOLERANCE`] from its own;
//! - the server remembers every first message it accepted for twice that tolerance, the
//!   whole time a copy could still pass the first check, and refuses a second copy.
//!
//! The memory is bounded ([`CAPACITY`] messages, about 40 bytes each). When it is full the
//! oldest entry is forgotten and its timestamp becomes a floor: a message not newer than
//! the floor is refused, so a forgotten message still cannot be replayed. Only under a
//! sustained rate above `CAPACITY / (2·CLOCK_TOLERANCE)` handshakes per second (about 100)
//! would a genuine client whose clock is behind the others' be refused as well.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far a client's clock may be from the server's.
pub const CLOCK_TOLERANCE: Duration = Duration::from_secs(300);
/// First messages remembered at most.
pub const CAPACITY: usize = 1 << 16;

/// Milliseconds since the Unix epoch on this machine's clock (the value a client sends).
pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Why a first message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The same message was accepted before: a copy. `owner` is the connection it
    /// opened (its id), if still remembered.
    Replayed {
        /// The server connection id the original opened.
        owner: Option<u32>,
    },
    /// Its time is further than the tolerance from the server's: an old copy, or a client
    /// whose clock is wrong. `skew_ms` is the client's time minus the server's.
    Stale {
        /// Client time minus server time, in milliseconds.
        skew_ms: i64,
    },
}

/// One accepted first message.
struct Seen {
    digest: [u8; 16],
    client_ms: u64,
    server_ms: u64,
}

/// The first messages a server accepted recently (shared by all of its shards, so a copy
/// sent from an address that hashes to another shard is refused too).
pub struct FirstMessages {
    tolerance_ms: u64,
    capacity: usize,
    /// Digest → the connection id the message opened.
    digests: HashMap<[u8; 16], u32>,
    /// In order of acceptance.
    order: VecDeque<Seen>,
    /// Messages with a client time at or below this were forgotten early (memory full).
    floor_ms: u64,
}

impl Default for FirstMessages {
    fn default() -> Self {
        Self::new(CLOCK_TOLERANCE, CAPACITY)
    }
}

impl FirstMessages {
    /// A register with the given clock tolerance and capacity.
    pub fn new(tolerance: Duration, capacity: usize) -> Self {
        FirstMessages {
            tolerance_ms: tolerance.as_millis() as u64,
            capacity: capacity.max(1),
            digests: HashMap::new(),
            order: VecDeque::new(),
            floor_ms: 0,
        }
    }

    /// Accepts the first message `digest` sent at the client's `client_ms`, received at the
    /// server's `server_ms`, for connection `owner`, unless it is a copy or too old (or too
    /// far ahead).
    pub fn admit(
        &mut self,
        digest: [u8; 16],
        client_ms: u64,
        server_ms: u64,
        owner: u32,
    ) -> Result<(), Refusal> {
        let skew_ms = client_ms as i64 - server_ms as i64;
        if skew_ms.unsigned_abs() > self.tolerance_ms {
            return Err(Refusal::Stale { skew_ms });
        }
        // A copy passes the time check until its client time is `tolerance` behind the
        // server's, which is at most `2·tolerance` after the original was accepted.
        while let Some(old) = self.order.front() {
            if server_ms.saturating_sub(old.server_ms) <= 2 * self.tolerance_ms {
                break;
            }
            self.forget_oldest(false);
        }
        if let Some(&owner) = self.digests.get(&digest) {
            return Err(Refusal::Replayed { owner: Some(owner) });
        }
        if client_ms <= self.floor_ms {
            return Err(Refusal::Replayed { owner: None });
        }
        if self.order.len() >= self.capacity {
            self.forget_oldest(true);
        }
        self.digests.insert(digest, owner);
        self.order.push_back(Seen {
            digest,
            client_ms,
            server_ms,
        });
        Ok(())
    }

    /// Messages remembered now.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn forget_oldest(&mut self, early: bool) {
        if let Some(old) = self.order.pop_front() {
            self.digests.remove(&old.digest);
            if early {
                self.floor_ms = self.floor_ms.max(old.client_ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(300);
    const NOW: u64 = 1_800_000_000_000;

    fn d(i: u32) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&i.to_be_bytes());
        b
    }

    #[test]
    fn a_copy_is_refused_for_as_long_as_its_time_would_pass() {
        let mut r = FirstMessages::new(T, 100);
        assert_eq!(r.admit(d(1), NOW, NOW, 7), Ok(()));
        assert_eq!(
            r.admit(d(1), NOW, NOW + 1, 7),
            Err(Refusal::Replayed { owner: Some(7) })
        );
        // Just inside the tolerance, still remembered.
        let late = NOW + 300_000;
        assert_eq!(
            r.admit(d(1), NOW, late, 7),
            Err(Refusal::Replayed { owner: Some(7) })
        );
        // Beyond it the time check refuses it, and the register has let it go.
        assert_eq!(
            r.admit(d(1), NOW, late + 1, 7),
            Err(Refusal::Stale { skew_ms: -300_001 })
        );
        assert_eq!(r.admit(d(2), late + 1, NOW + 600_001, 7), Ok(()));
        assert_eq!(
            r.len(),
            1,
            "the first message was forgotten after 2·tolerance"
        );
    }

    #[test]
    fn a_client_clock_far_ahead_or_behind_is_refused() {
        let mut r = FirstMessages::new(T, 100);
        assert_eq!(
            r.admit(d(1), NOW + 300_001, NOW, 7),
            Err(Refusal::Stale { skew_ms: 300_001 })
        );
        assert_eq!(r.admit(d(1), NOW + 299_999, NOW, 7), Ok(()));
        assert!(r.admit(d(2), NOW - 299_999, NOW, 7).is_ok());
    }

    #[test]
    fn memory_is_bounded_and_a_forgotten_message_still_cannot_come_back() {
        let mut r = FirstMessages::new(T, 8);
        for i in 0..20u32 {
            assert_eq!(r.admit(d(i), NOW + i as u64, NOW + i as u64, 7), Ok(()));
            assert!(r.len() <= 8);
        }
        // Message 0 was forgotten early; its copy is refused by the floor.
        assert_eq!(
            r.admit(d(0), NOW, NOW + 30, 7),
            Err(Refusal::Replayed { owner: None })
        );
        // A new message with a later time is accepted.
        assert_eq!(r.admit(d(99), NOW + 30, NOW + 30, 7), Ok(()));
    }
}
