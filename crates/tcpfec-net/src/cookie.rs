//! Stateless address validation (like TCP SYN cookies or a QUIC Retry): the server answers a
//! first Initial with a token it can check later without having stored anything.
//!
//! token = issue time (8 bytes, seconds) ‖ first 16 bytes of keyed BLAKE3(secret, address ‖
//! client id ‖ issue time). Only a client that receives packets at its source address can
//! echo it, so a spoofed source never makes the server hold state.
//!
//! A token opens at most one connection: the server remembers the tokens it has accepted
//! until they expire ([`CookieJar::consume`]), so an Initial captured on the path and
//! replayed from the same address within the token's lifetime cannot open a second one.

use std::collections::HashMap;
use std::net::SocketAddr;

/// Length of a token in bytes.
pub const TOKEN_LEN: usize = 24;
/// How long a token stays valid, seconds.
pub const TOKEN_LIFETIME: u64 = 10;

/// Most accepted tokens remembered at once. Each is remembered for at most
/// [`TOKEN_LIFETIME`] seconds, so this bounds the accepted-handshake rate at which
/// replay protection still holds (6 553 per second); beyond it new handshakes are
/// refused rather than tokens forgotten early.
pub const MAX_USED_TOKENS: usize = 65_536;

/// The server's token key, random per process, and the tokens already used.
pub struct CookieJar {
    secret: [u8; 32],
    /// MAC of each accepted token → its issue time, until it expires.
    used: HashMap<[u8; 16], u64>,
}

impl CookieJar {
    /// A jar with a fresh random secret.
    pub fn new() -> Self {
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).expect("OS random source");
        CookieJar {
            secret,
            used: HashMap::new(),
        }
    }

    fn mac(&self, addr: SocketAddr, client_id: u32, issued: u64) -> [u8; 16] {
        let mut h = blake3::Hasher::new_keyed(&self.secret);
        match addr {
            SocketAddr::V4(a) => h.update(&a.ip().octets()),
            SocketAddr::V6(a) => h.update(&a.ip().octets()),
        };
        h.update(&addr.port().to_be_bytes());
        h.update(&client_id.to_be_bytes());
        h.update(&issued.to_be_bytes());
        let mut out = [0u8; 16];
        out.copy_from_slice(&h.finalize().as_bytes()[..16]);
        out
    }

    /// A token for `addr` and `client_id` issued at `now_secs`.
    pub fn issue(&self, addr: SocketAddr, client_id: u32, now_secs: u64) -> [u8; TOKEN_LEN] {
        let mut t = [0u8; TOKEN_LEN];
        t[..8].copy_from_slice(&now_secs.to_be_bytes());
        t[8..].copy_from_slice(&self.mac(addr, client_id, now_secs));
        t
    }

    /// True if `token` was issued by this jar for `addr` and `client_id` and is still fresh.
    pub fn check(&self, token: &[u8], addr: SocketAddr, client_id: u32, now_secs: u64) -> bool {
        if token.len() != TOKEN_LEN {
            return false;
        }
        let issued = u64::from_be_bytes(token[..8].try_into().expect("8 bytes"));
        if issued > now_secs || now_secs - issued > TOKEN_LIFETIME {
            return false;
        }
        // Constant-time comparison: the MAC must not be guessable byte by byte.
        let want = self.mac(addr, client_id, issued);
        want.iter()
            .zip(&token[8..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

impl CookieJar {
    /// Marks a token that [`CookieJar::check`] accepted as used; false if it was used
    /// before (a replay) or too many live tokens are remembered already.
    pub fn consume(&mut self, token: &[u8], now_secs: u64) -> bool {
        if token.len() != TOKEN_LEN {
            return false;
        }
        let issued = u64::from_be_bytes(token[..8].try_into().expect("8 bytes"));
        let mut mac = [0u8; 16];
        mac.copy_from_slice(&token[8..]);
        if self.used.contains_key(&mac) {
            return false;
        }
        if self.used.len() >= MAX_USED_TOKENS {
            self.used
                .retain(|_, t| now_secs.saturating_sub(*t) <= TOKEN_LIFETIME);
            if self.used.len() >= MAX_USED_TOKENS {
                return false;
            }
        }
        self.used.insert(mac, issued);
        true
    }

    /// Tokens remembered now (for tests and counters).
    pub fn used_tokens(&self) -> usize {
        self.used.len()
    }
}

impl Default for CookieJar {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_binds_address_id_and_time() {
        let jar = CookieJar::new();
        let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:4001".parse().unwrap();
        let t = jar.issue(a, 7, 100);
        assert!(jar.check(&t, a, 7, 105));
        assert!(!jar.check(&t, b, 7, 105), "other address");
        assert!(!jar.check(&t, a, 8, 105), "other id");
        assert!(!jar.check(&t, a, 7, 100 + TOKEN_LIFETIME + 1), "expired");
        assert!(!jar.check(&t[..10], a, 7, 105), "truncated");
        let mut forged = t;
        forged[20] ^= 1;
        assert!(!jar.check(&forged, a, 7, 105));
        assert!(!CookieJar::new().check(&t, a, 7, 105), "other server");
    }

    #[test]
    fn a_token_is_used_once_and_forgotten_after_it_expires() {
        let mut jar = CookieJar::new();
        let a: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let t = jar.issue(a, 7, 195);
        assert!(jar.consume(&t, 196));
        assert!(!jar.consume(&t, 197), "replay");
        let u = jar.issue(a, 7, 196);
        assert!(jar.consume(&u, 196), "a fresh token");
        // Filling the jar forgets only expired tokens.
        for i in 0..(MAX_USED_TOKENS as u32 - 2) {
            let v = jar.issue(a, i + 100, 200);
            assert!(jar.consume(&v, 200));
        }
        assert_eq!(jar.used_tokens(), MAX_USED_TOKENS);
        let late = jar.issue(a, 1, 200);
        assert!(!jar.consume(&late, 200), "full of live tokens");
        // Once they have expired (and check() refuses them anyway) room is made.
        assert!(jar.consume(&late, 200 + TOKEN_LIFETIME + 1));
        assert_eq!(jar.used_tokens(), 1);
    }
}
