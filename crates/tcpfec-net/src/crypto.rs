//! Encryption: the Noise handshake (`Noise_NNpsk0_25519_{AESGCM,ChaChaPoly}_BLAKE2s` with
//! the pre-shared key) and, after it, per-packet AEAD with explicit packet numbers.
//!
//! snow's stateless transport mode takes the nonce from the caller, which is what UDP needs:
//! packets may arrive reordered or lost, so the receiver cannot count nonces itself.
//!
//! The client picks the cipher ([`Cipher::preferred`]) and names it in its Initial: the
//! name is part of the Noise protocol name, which is hashed into the handshake, so a
//! cipher changed on the way makes the handshake fail instead of weakening it.

use crate::identity::{KeyPair, PublicKey};
use crate::key::Psk;
use snow::{HandshakeState, StatelessTransportState};

/// Bytes the AEAD adds to each packet (the tag; 16 for both ciphers).
pub const TAG_LEN: usize = 16;
/// Bound into the handshake hash: both sides must be speaking this protocol version.
const PROLOGUE: &[u8] = b"tcpfec-net/4";

/// The AEAD that seals data packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    /// ChaCha20-Poly1305: fast everywhere in software, constant time without special
    /// instructions.
    ChaChaPoly,
    /// AES-256-GCM: about twice as fast where the CPU has AES and carry-less multiply
    /// instructions (measured on loopback: 6.0–6.5 Gb/s against 3.8–4.2 for ChaCha,
    /// docs/results/network.md), slow and best avoided where it does not.
    AesGcm,
}

impl Cipher {
    /// The Noise name of this cipher.
    fn noise_name(self) -> &'static str {
        match self {
            Cipher::ChaChaPoly => "ChaChaPoly",
            Cipher::AesGcm => "AESGCM",
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

/// What a handshake proves, named by its Noise pattern. The client chooses it (from what
/// it was given) and names it in its Initial's flags; the protocol name, pattern included,
/// is hashed into the handshake, so a pattern changed on the way fails the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// `NNpsk0`: both sides hold the pre-shared key; neither has an identity.
    Psk,
    /// `IK`: the client knows the server's public key before it starts; message 1 carries
    /// the client's public key encrypted to the server's and proves the client holds its
    /// private key, message 2 proves the server holds its own. One round trip.
    Identity,
    /// `IKpsk2`: [`Pattern::Identity`], and both sides hold the pre-shared key as well.
    IdentityPsk,
}

impl Pattern {
    /// The Noise protocol name with `cipher`.
    pub fn noise_params(self, cipher: Cipher) -> String {
        let pattern = match self {
            Pattern::Psk => "NNpsk0",
            Pattern::Identity => "IK",
            Pattern::IdentityPsk => "IKpsk2",
        };
        format!("Noise_{pattern}_25519_{}_BLAKE2s", cipher.noise_name())
    }

    /// True if the pattern mixes in the pre-shared key.
    pub fn uses_psk(self) -> bool {
        self != Pattern::Identity
    }

    /// True if both sides prove a key pair.
    pub fn uses_identities(self) -> bool {
        self != Pattern::Psk
    }
}

/// What one side brings to a handshake.
#[derive(Clone, Copy)]
pub struct Credentials<'a> {
    /// The pre-shared key, if any.
    pub psk: Option<&'a Psk>,
    /// This side's key pair, if any.
    pub own: Option<&'a KeyPair>,
    /// Client: the server's public key, which `IK` needs before the first message.
    pub server: Option<&'a PublicKey>,
}

impl Credentials<'_> {
    /// The pattern a client with these credentials uses: identities when it knows the
    /// server's key, the pre-shared key alone otherwise.
    pub fn client_pattern(&self) -> Pattern {
        match (self.server.is_some(), self.psk.is_some()) {
            (true, true) => Pattern::IdentityPsk,
            (true, false) => Pattern::Identity,
            (false, _) => Pattern::Psk,
        }
    }
}

fn builder<'a>(params: &'a str, pattern: Pattern, c: &Credentials<'a>) -> snow::Builder<'a> {
    let mut b =
        snow::Builder::new(params.parse().expect("valid Noise parameters")).prologue(PROLOGUE);
    if let Some(own) = c.own.filter(|_| pattern.uses_identities()) {
        b = b.local_private_key(&own.private);
    }
    if let Some(server) = c.server.filter(|_| pattern.uses_identities()) {
        b = b.remote_public_key(&server.0);
    }
    match (pattern, c.psk) {
        (Pattern::Psk, Some(k)) => b.psk(0, &k.0),
        (Pattern::IdentityPsk, Some(k)) => b.psk(2, &k.0),
        _ => b,
    }
}

/// Bytes of one key check in front of Noise message 1.
pub const KEY_CHECK_LEN: usize = 8;
/// Noise's ephemeral public key, the first bytes of message 1.
const EPHEMERAL_LEN: usize = 32;

/// A keyed hash of the client's ephemeral public key. Under the pre-shared key it tells the
/// server whether the key is right before the message's AEAD is checked: a message that
/// fails with the right key was damaged or tampered with (a cipher flag flipped on the
/// way, say), which a wrong key cannot explain. Under the server's public key it tells the
/// server the client pinned another server's key (the server then names its own, which is
/// public). It reveals nothing the AEAD of message 1 does not (both can only be checked by
/// knowing the key), and as the ephemeral key is fresh it links no two handshakes.
fn key_check(key: &[u8; 32], ephemeral: &[u8]) -> [u8; KEY_CHECK_LEN] {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"tcpfec key check");
    h.update(ephemeral);
    let mut out = [0u8; KEY_CHECK_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..KEY_CHECK_LEN]);
    out
}

/// The keys the checks in front of message 1 are made with, in order: the server's public
/// key (with identities), then the pre-shared key (if the pattern uses it).
fn check_keys<'a>(
    pattern: Pattern,
    psk: Option<&'a Psk>,
    server: Option<&'a PublicKey>,
) -> Vec<&'a [u8; 32]> {
    let mut keys = Vec::with_capacity(2);
    if pattern.uses_identities() {
        keys.extend(server.map(|k| &k.0));
    }
    if pattern.uses_psk() {
        keys.extend(psk.map(|k| &k.0));
    }
    keys
}

/// The client's first handshake message carrying `params`: the key checks followed by
/// Noise message 1, the state that reads the server's answer, and the pattern used.
pub fn first_message(
    c: &Credentials<'_>,
    cipher: Cipher,
    params: &[u8],
) -> (Vec<u8>, HandshakeState, Pattern) {
    let pattern = c.client_pattern();
    let name = pattern.noise_params(cipher);
    let mut h = builder(&name, pattern, c)
        .build_initiator()
        .expect("initiator");
    let keys = check_keys(pattern, c.psk, c.server);
    let front = KEY_CHECK_LEN * keys.len();
    let mut m = vec![0u8; front + 1024];
    let n = h
        .write_message(params, &mut m[front..])
        .expect("message 1 fits");
    let ephemeral = m[front..front + EPHEMERAL_LEN].to_vec();
    for (i, k) in keys.iter().enumerate() {
        m[i * KEY_CHECK_LEN..(i + 1) * KEY_CHECK_LEN].copy_from_slice(&key_check(k, &ephemeral));
    }
    m.truncate(front + n);
    (m, h, pattern)
}

/// Why a first handshake message could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstMessageError {
    /// The pre-shared key check fails: the client holds another key (or the message is
    /// too damaged to tell).
    WrongKey,
    /// The client encrypted to another server's public key.
    WrongServerKey,
    /// The keys are right but the message does not authenticate: damaged or tampered
    /// with.
    Damaged,
}

/// A first message the server could read.
pub struct FirstMessage {
    /// The state that writes the answer.
    pub state: HandshakeState,
    /// Length of the client's parameters (in the buffer given).
    pub len: usize,
    /// The client's public key, with identities.
    pub client_key: Option<PublicKey>,
}

/// The server's reading of a first message made with `pattern` (the caller has checked
/// the server holds what the pattern needs): the client's parameters go into `plain`.
pub fn read_first_message(
    c: &Credentials<'_>,
    pattern: Pattern,
    cipher: Cipher,
    message: &[u8],
    plain: &mut [u8],
) -> Result<FirstMessage, FirstMessageError> {
    let own_public = c.own.map(|k| k.public);
    let keys = check_keys(pattern, c.psk, own_public.as_ref());
    let front = KEY_CHECK_LEN * keys.len();
    let Some(ephemeral) = message.get(front..front + EPHEMERAL_LEN) else {
        return Err(FirstMessageError::WrongKey);
    };
    // A plain comparison: timing could reveal the check of an ephemeral key the prober
    // chose, which is worth nothing without the key.
    for (i, k) in keys.iter().enumerate() {
        if key_check(k, ephemeral) != message[i * KEY_CHECK_LEN..(i + 1) * KEY_CHECK_LEN] {
            let server_key_check = pattern.uses_identities() && i == 0;
            return Err(if server_key_check {
                FirstMessageError::WrongServerKey
            } else {
                FirstMessageError::WrongKey
            });
        }
    }
    let name = pattern.noise_params(cipher);
    let server_side = Credentials { server: None, ..*c };
    let mut h = builder(&name, pattern, &server_side)
        .build_responder()
        .expect("responder");
    match h.read_message(&message[front..], plain) {
        Ok(len) => {
            let client_key = h
                .get_remote_static()
                .and_then(|k| <[u8; 32]>::try_from(k).ok())
                .map(PublicKey);
            Ok(FirstMessage {
                state: h,
                len,
                client_key,
            })
        }
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

    fn psk_only(k: &Psk) -> Credentials<'_> {
        Credentials {
            psk: Some(k),
            own: None,
            server: None,
        }
    }

    /// Both messages of a handshake between a client using `ci` and a server told `cr`:
    /// the two sealers and the client key the server learnt, or why it failed (`None`
    /// inside: message 2 did not authenticate at the client).
    fn handshake(
        client: &Credentials<'_>,
        server: &Credentials<'_>,
        ci: Cipher,
        cr: Cipher,
    ) -> Result<(Sealer, Sealer, Option<PublicKey>), Option<FirstMessageError>> {
        let (m1, mut i, pattern) = first_message(client, ci, b"hi");
        let mut p = [0u8; 256];
        let mut r = read_first_message(server, pattern, cr, &m1, &mut p).map_err(Some)?;
        assert_eq!(&p[..r.len], b"hi");
        let mut m2 = [0u8; 256];
        let n2 = r.state.write_message(b"yo", &mut m2).unwrap();
        i.read_message(&m2[..n2], &mut p).map_err(|_| None)?;
        Ok((
            Sealer::from_handshake(i).unwrap(),
            Sealer::from_handshake(r.state).unwrap(),
            r.client_key,
        ))
    }

    #[test]
    fn seal_open_with_explicit_nonces_in_any_order() {
        for cipher in BOTH {
            let k = Psk::generate();
            let (c, s, _) = handshake(&psk_only(&k), &psk_only(&k), cipher, cipher).unwrap();
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
    fn the_first_message_tells_a_wrong_key_from_damage() {
        let k = Psk::generate();
        let mut plain = [0u8; 64];
        for cipher in BOTH {
            let (m, _, pattern) = first_message(&psk_only(&k), cipher, b"params");
            assert_eq!(pattern, Pattern::Psk);
            let r = read_first_message(&psk_only(&k), pattern, cipher, &m, &mut plain).unwrap();
            assert_eq!(&plain[..r.len], b"params");
            assert_eq!(r.client_key, None);
            let other = Psk::generate();
            let read = |c: &Credentials<'_>, cipher: Cipher, m: &[u8], plain: &mut [u8]| {
                read_first_message(c, pattern, cipher, m, plain).err()
            };
            assert_eq!(
                read(&psk_only(&other), cipher, &m, &mut plain),
                Some(FirstMessageError::WrongKey)
            );
            // The cipher flag flipped on the way: right key, message does not authenticate.
            let flipped = match cipher {
                Cipher::AesGcm => Cipher::ChaChaPoly,
                Cipher::ChaChaPoly => Cipher::AesGcm,
            };
            assert_eq!(
                read(&psk_only(&k), flipped, &m, &mut plain),
                Some(FirstMessageError::Damaged)
            );
            let mut bad = m.clone();
            *bad.last_mut().unwrap() ^= 1;
            assert_eq!(
                read(&psk_only(&k), cipher, &bad, &mut plain),
                Some(FirstMessageError::Damaged)
            );
            assert_eq!(
                read(&psk_only(&k), cipher, &m[..20], &mut plain),
                Some(FirstMessageError::WrongKey),
                "too short to check"
            );
        }
    }

    #[test]
    fn a_cipher_changed_on_the_way_fails_the_handshake() {
        let k = Psk::generate();
        let (c, s) = (psk_only(&k), psk_only(&k));
        assert!(handshake(&c, &s, Cipher::AesGcm, Cipher::ChaChaPoly).is_err());
        assert!(handshake(&c, &s, Cipher::ChaChaPoly, Cipher::AesGcm).is_err());
        assert!(handshake(
            &c,
            &psk_only(&Psk::generate()),
            Cipher::AesGcm,
            Cipher::AesGcm
        )
        .is_err());
    }

    #[test]
    fn identities_prove_both_keys_and_name_the_client() {
        let (alice, server) = (KeyPair::generate(), KeyPair::generate());
        let k = Psk::generate();
        for psk in [None, Some(&k)] {
            let client = Credentials {
                psk,
                own: Some(&alice),
                server: Some(&server.public),
            };
            let at_server = Credentials {
                psk,
                own: Some(&server),
                server: None,
            };
            let want = if psk.is_some() {
                Pattern::IdentityPsk
            } else {
                Pattern::Identity
            };
            assert_eq!(client.client_pattern(), want);
            for cipher in BOTH {
                let (c, s, who) = handshake(&client, &at_server, cipher, cipher).unwrap();
                assert_eq!(
                    who,
                    Some(alice.public),
                    "the server learns the client's key"
                );
                let mut a = [0u8; 64];
                let n = c.seal(1, b"data", &mut a);
                let mut out = [0u8; 64];
                assert_eq!(s.open(1, &a[..n], &mut out), Some(4));
            }
        }
    }

    #[test]
    fn a_client_pinned_to_another_key_is_told_before_anything_decrypts() {
        let (alice, server, impostor) = (
            KeyPair::generate(),
            KeyPair::generate(),
            KeyPair::generate(),
        );
        let client = Credentials {
            psk: None,
            own: Some(&alice),
            server: Some(&server.public),
        };
        let at_impostor = Credentials {
            psk: None,
            own: Some(&impostor),
            server: None,
        };
        assert_eq!(
            handshake(&client, &at_impostor, Cipher::AesGcm, Cipher::AesGcm).err(),
            Some(Some(FirstMessageError::WrongServerKey))
        );
        // With the pre-shared key as well, a wrong one is told apart from a wrong server.
        let (k, other) = (Psk::generate(), Psk::generate());
        let client = Credentials {
            psk: Some(&k),
            ..client
        };
        let at_server = Credentials {
            psk: Some(&other),
            own: Some(&server),
            server: None,
        };
        assert_eq!(
            handshake(&client, &at_server, Cipher::AesGcm, Cipher::AesGcm).err(),
            Some(Some(FirstMessageError::WrongKey))
        );
    }
}
