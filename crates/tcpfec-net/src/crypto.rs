//! Encryption: the Noise handshake (`Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s` with the
//! pre-shared key) and, after it, per-packet AEAD with explicit packet numbers.
//!
//! snow's stateless transport mode takes the nonce from the caller, which is what UDP needs:
//! packets may arrive reordered or lost, so the receiver cannot count nonces itself.

use crate::key::Psk;
use snow::{HandshakeState, StatelessTransportState};

/// The Noise protocol name.
pub const NOISE_PARAMS: &str = "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s";
/// Bytes the AEAD adds to each packet (the Poly1305 tag).
pub const TAG_LEN: usize = 16;
/// Bound into the handshake hash: both sides must be speaking this protocol version.
const PROLOGUE: &[u8] = b"tcpfec-net/1";

fn builder(psk: &Psk) -> snow::Builder<'_> {
    snow::Builder::new(NOISE_PARAMS.parse().expect("valid Noise parameters"))
        .prologue(PROLOGUE)
        .psk(0, &psk.0)
}

/// The client's side of the handshake.
pub fn initiator(psk: &Psk) -> HandshakeState {
    builder(psk).build_initiator().expect("initiator")
}

/// The server's side of the handshake.
pub fn responder(psk: &Psk) -> HandshakeState {
    builder(psk).build_responder().expect("responder")
}

/// Seals and opens data packets of one connection; `None` inside means `--insecure`.
pub struct Sealer(Option<StatelessTransportState>);

impl Sealer {
    /// No encryption: bodies travel in the clear, unauthenticated.
    pub fn insecure() -> Self {
        Sealer(None)
    }

    /// The transport keys of a finished handshake.
    pub fn from_handshake(hs: HandshakeState) -> Result<Self, snow::Error> {
        Ok(Sealer(Some(hs.into_stateless_transport_mode()?)))
    }

    /// Bytes added per packet.
    pub fn overhead(&self) -> usize {
        if self.0.is_some() {
            TAG_LEN
        } else {
            0
        }
    }

    /// Writes the sealed `plain` into `out`; returns its length.
    pub fn seal(&self, pn: u64, plain: &[u8], out: &mut [u8]) -> usize {
        match &self.0 {
            Some(t) => t
                .write_message(pn, plain, out)
                .expect("output buffer sized for the tag"),
            None => {
                out[..plain.len()].copy_from_slice(plain);
                plain.len()
            }
        }
    }

    /// Opens a sealed body into `out`; `None` if it does not authenticate.
    pub fn open(&self, pn: u64, body: &[u8], out: &mut [u8]) -> Option<usize> {
        match &self.0 {
            Some(t) => t.read_message(pn, body, out).ok(),
            None => {
                let dst = out.get_mut(..body.len())?;
                dst.copy_from_slice(body);
                Some(body.len())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: &Psk, b: &Psk) -> Option<(Sealer, Sealer)> {
        let mut i = initiator(a);
        let mut r = responder(b);
        let mut m1 = [0u8; 256];
        let mut m2 = [0u8; 256];
        let mut p = [0u8; 256];
        let n1 = i.write_message(b"hi", &mut m1).unwrap();
        r.read_message(&m1[..n1], &mut p).ok()?;
        let n2 = r.write_message(b"yo", &mut m2).unwrap();
        i.read_message(&m2[..n2], &mut p).ok()?;
        Some((
            Sealer::from_handshake(i).unwrap(),
            Sealer::from_handshake(r).unwrap(),
        ))
    }

    #[test]
    fn seal_open_with_explicit_nonces_in_any_order() {
        let k = Psk::generate();
        let (c, s) = pair(&k, &k).unwrap();
        let mut a = [0u8; 64];
        let mut b = [0u8; 64];
        let n5 = c.seal(5, b"five", &mut a);
        let n2 = c.seal(2, b"two", &mut b);
        let mut out = [0u8; 64];
        assert_eq!(s.open(2, &b[..n2], &mut out), Some(3));
        assert_eq!(s.open(5, &a[..n5], &mut out), Some(4));
        assert_eq!(&out[..4], b"five");
        assert_eq!(s.open(4, &a[..n5], &mut out), None, "wrong nonce");
        a[3] ^= 1;
        assert_eq!(s.open(5, &a[..n5], &mut out), None, "tampered");
    }

    #[test]
    fn wrong_psk_fails_at_the_first_message() {
        assert!(pair(&Psk::generate(), &Psk::generate()).is_none());
    }
}
