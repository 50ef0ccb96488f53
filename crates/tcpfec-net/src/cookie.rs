//! Stateless address validation (like TCP SYN cookies or a QUIC Retry): the server answers a
//! first Initial with a token it can check later without having stored anything.
//!
//! token = issue time (8 bytes, seconds) ‖ first 16 bytes of keyed BLAKE3(secret, address ‖
//! client id ‖ issue time). Only a client that receives packets at its source address can
//! echo it, so a spoofed source never makes the server hold state.

use std::net::SocketAddr;

/// Length of a token in bytes.
pub const TOKEN_LEN: usize = 24;
/// How long a token stays valid, seconds.
pub const TOKEN_LIFETIME: u64 = 10;

/// The server's token key, random per process.
pub struct CookieJar {
    secret: [u8; 32],
}

impl CookieJar {
    /// A jar with a fresh random secret.
    pub fn new() -> Self {
        let mut secret = [0u8; 32];
        getrandom::getrandom(&mut secret).expect("OS random source");
        CookieJar { secret }
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
}
