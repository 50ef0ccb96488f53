//! Encryption: the Noise handshake (`Noise_NNpsk0_25519_{AESGCM,ChaChaPoly}_BLAKE2s` with
//! the pre-shared key) and, after it, per-packet AEAD with explicit packet numbers.
//!
//! snow's stateless transport mode takes the nonce from the caller, which is what UDP needs:
//! packets may arrive reordered or lost, so the receiver cannot count nonces itself.
//!
//! The client picks the cipher ([`Cipher::preferred`]) and names it in its Initial: the
//! name is part of the Noise protocol name, which is hashed into the handshake, so a
//! cipher changed on the way makes the handshake fail instead of weakening it.

use crate::key::Psk;
use snow::{HandshakeState, StatelessTransportState};

/// Bytes the AEAD adds to each packet (the tag; 16 for both ciphers).
pub const TAG_LEN: usize = 16;
/// Bound into the handshake hash: both sides must be speaking this protocol version.
const PROLOGUE: &[u8] = b"tcpfec-net/3";

/// The AEAD that seals data packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    /// ChaCha20-Poly1305: fast everywhere in software, constant time without special
    /// instructions.
    ChaChaPoly,
    /// AES-256-GCM: about twice as fast where the CPU has AES and carry-less multiply
    /// instructions (measured on loopback: 6.0–6.5 Gb/s against 3.8–4.2 for ChaCha,
    /// docs/net.md), slow and best avoided where it does not.
    AesGcm,
}

impl Cipher {
    /// The Noise protocol name with this cipher.
    pub fn noise_params(self) -> &'static str {
        match self {
            Cipher::ChaChaPoly => "Noise_NNpsk0_25519_ChaChaPoly_BLAKE2s",
            Cipher::AesGcm => "Noise_NNpsk0_25519_AESGCM_BLAKE2s",
        }
    }

    /// AES-GCM where this CPU has AES instructions, ChaCha20-Poly1305 elsewhere (as TLS
    /// clients choose). `TCPFEC_CIPHER=chacha` or `=aes` overrides it, for comparisons.
    pub fn preferred() -> Cipher {
        match std::env::var("TCPFEC_CIPHER").as_deref() {
            Ok("chacha") => return Cipher::ChaChaPoly,
            Ok("aes") => return Cipher::AesGcm,
            _ => {}
        }
        if aes_in_hardware() {
            Cipher::AesGcm
        } else {
            Cipher::ChaChaPoly
        }
    }
}

/// Whether this CPU computes AES-GCM with dedicated instructions.
fn aes_in_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

fn builder(psk: &Psk, cipher: Cipher) -> snow::Builder<'_> {
    snow::Builder::new(
        cipher
            .noise_params()
            .parse()
            .expect("valid Noise parameters"),
    )
    .prologue(PROLOGUE)
    .psk(0, &psk.0)
}

/// The client's side of the handshake.
pub fn initiator(psk: &Psk, cipher: Cipher) -> HandshakeState {
    builder(psk, cipher).build_initiator().expect("initiator")
}

/// The server's side of the handshake, with the cipher the client named.
pub fn responder(psk: &Psk, cipher: Cipher) -> HandshakeState {
    builder(psk, cipher).build_responder().expect("responder")
}

/// Bytes of the key check in front of Noise message 1.
pub const KEY_CHECK_LEN: usize = 8;
/// Noise's ephemeral public key, the first bytes of message 1.
const EPHEMERAL_LEN: usize = 32;

/// A keyed hash of the client's ephemeral public key under the pre-shared key. Sent in
/// front of Noise message 1, it tells the server whether the key is right before the
/// message's AEAD is checked: a message that fails with the right key was damaged or
/// tampered with (a cipher flag flipped on the way, say), which a wrong key cannot explain.
/// It reveals nothing the AEAD of message 1 does not (both can only be checked by guessing
/// the key), and as the ephemeral key is fresh it links no two handshakes.
fn key_check(psk: &Psk, ephemeral: &[u8]) -> [u8; KEY_CHECK_LEN] {
    let mut h = blake3::Hasher::new_keyed(&psk.0);
    h.update(b"tcpfec key check");
    h.update(ephemeral);
    let mut out = [0u8; KEY_CHECK_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..KEY_CHECK_LEN]);
    out
}

/// The client's first handshake message carrying `params`: the key check followed by Noise
/// message 1, and the state that reads the server's answer.
pub fn first_message(psk: &Psk, cipher: Cipher, params: &[u8]) -> (Vec<u8>, HandshakeState) {
    let mut h = initiator(psk, cipher);
    let mut m = vec![0u8; KEY_CHECK_LEN + 1024];
    let n = h
        .write_message(params, &mut m[KEY_CHECK_LEN..])
        .expect("message 1 fits");
    let check = key_check(psk, &m[KEY_CHECK_LEN..KEY_CHECK_LEN + EPHEMERAL_LEN]);
    m[..KEY_CHECK_LEN].copy_from_slice(&check);
    m.truncate(KEY_CHECK_LEN + n);
    (m, h)
}

/// Why a first handshake message could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstMessageError {
    /// The key check fails: the client holds another key (or the message is too damaged
    /// to tell).
    WrongKey,
    /// The key is right but the message does not authenticate: damaged or tampered with.
    Damaged,
}

/// The server's reading of a first message: the handshake state that writes the answer,
/// and the client's parameters (in `plain`, their length returned).
pub fn read_first_message(
    psk: &Psk,
    cipher: Cipher,
    message: &[u8],
    plain: &mut [u8],
) -> Result<(HandshakeState, usize), FirstMessageError> {
    let Some(ephemeral) = message.get(KEY_CHECK_LEN..KEY_CHECK_LEN + EPHEMERAL_LEN) else {
        return Err(FirstMessageError::WrongKey);
    };
    // A plain comparison: timing could reveal the check of an ephemeral key the prober
    // chose, which is worth nothing without the key.
    if key_check(psk, ephemeral) != message[..KEY_CHECK_LEN] {
        return Err(FirstMessageError::WrongKey);
    }
    let mut h = responder(psk, cipher);
    match h.read_message(&message[KEY_CHECK_LEN..], plain) {
        Ok(n) => Ok((h, n)),
        Err(_) => Err(FirstMessageError::Damaged),
    }
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

    const BOTH: [Cipher; 2] = [Cipher::ChaChaPoly, Cipher::AesGcm];

    /// A handshake between a client using `ci` and a server told `cr`.
    fn pair(a: &Psk, b: &Psk, ci: Cipher, cr: Cipher) -> Option<(Sealer, Sealer)> {
        let mut i = initiator(a, ci);
        let mut r = responder(b, cr);
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
        for cipher in BOTH {
            let k = Psk::generate();
            let (c, s) = pair(&k, &k, cipher, cipher).unwrap();
            let mut a = [0u8; 64];
            let mut b = [0u8; 64];
            let n5 = c.seal(5, b"five", &mut a);
            let n2 = c.seal(2, b"two", &mut b);
            assert_eq!(n5, 4 + TAG_LEN);
            let mut out = [0u8; 64];
            assert_eq!(s.open(2, &b[..n2], &mut out), Some(3));
            assert_eq!(s.open(5, &a[..n5], &mut out), Some(4));
            assert_eq!(&out[..4], b"five");
            assert_eq!(s.open(4, &a[..n5], &mut out), None, "wrong nonce");
            a[3] ^= 1;
            assert_eq!(s.open(5, &a[..n5], &mut out), None, "tampered");
        }
    }

    #[test]
    fn wrong_psk_fails_at_the_first_message() {
        for cipher in BOTH {
            assert!(pair(&Psk::generate(), &Psk::generate(), cipher, cipher).is_none());
        }
    }

    #[test]
    fn the_first_message_tells_a_wrong_key_from_damage() {
        let k = Psk::generate();
        let mut plain = [0u8; 64];
        for cipher in BOTH {
            let (m, _) = first_message(&k, cipher, b"params");
            let (_, n) = read_first_message(&k, cipher, &m, &mut plain).unwrap();
            assert_eq!(&plain[..n], b"params");
            let other = Psk::generate();
            assert_eq!(
                read_first_message(&other, cipher, &m, &mut plain).err(),
                Some(FirstMessageError::WrongKey)
            );
            // The cipher flag flipped on the way: right key, message does not authenticate.
            let flipped = match cipher {
                Cipher::AesGcm => Cipher::ChaChaPoly,
                Cipher::ChaChaPoly => Cipher::AesGcm,
            };
            assert_eq!(
                read_first_message(&k, flipped, &m, &mut plain).err(),
                Some(FirstMessageError::Damaged)
            );
            let mut bad = m.clone();
            *bad.last_mut().unwrap() ^= 1;
            assert_eq!(
                read_first_message(&k, cipher, &bad, &mut plain).err(),
                Some(FirstMessageError::Damaged)
            );
            assert_eq!(
                read_first_message(&k, cipher, &m[..20], &mut plain).err(),
                Some(FirstMessageError::WrongKey),
                "too short to check"
            );
        }
    }

    #[test]
    fn a_cipher_changed_on_the_way_fails_the_handshake() {
        let k = Psk::generate();
        assert!(pair(&k, &k, Cipher::AesGcm, Cipher::ChaChaPoly).is_none());
        assert!(pair(&k, &k, Cipher::ChaChaPoly, Cipher::AesGcm).is_none());
    }
}
