//! The outer datagram envelope (docs/reference/wire.md): one type byte, connection ids, and for data
//! packets an explicit 64-bit packet number. The engine's packet travels sealed inside.
//!
//! Every parser here checks lengths and returns `None` for anything malformed.

use crate::crypto::{Cipher, Pattern};
use crate::identity::PublicKey;

/// Protocol version carried in Initial packets (2: one-round-trip start, cipher flag; 3:
/// a key check before Noise message 1 and the client's time in its parameters; 4: key
/// pairs, the pattern flags and the Reject reasons that come with them).
pub const VERSION: u8 = 4;
/// Initial packets are padded to at least this size, so the server's answers (Retry,
/// Handshake, Reject) are always smaller than what it received: no amplification.
pub const MIN_INITIAL: usize = 1200;
/// Bytes before a data packet's sealed body: type, destination id, packet number.
pub const DATA_HEADER: usize = 13;

/// Envelope packet types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Client → server: opens a connection (with a cookie token on the second try).
    Initial = 1,
    /// Server → client: the stateless cookie to echo.
    Retry = 2,
    /// Server → client: the handshake answer (Noise message 2 or plain parameters).
    Handshake = 3,
    /// Either way: a sealed engine datagram.
    Data = 4,
    /// Server → client, after a valid cookie: the handshake could not be accepted.
    Reject = 5,
}

/// Why a server refused a handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RejectReason {
    /// The Noise message did not authenticate: the keys differ.
    BadKey = 1,
    /// One side runs `--insecure` and the other does not.
    ModeMismatch = 2,
    /// The parameters (scheme, version) were not acceptable.
    BadParams = 3,
    /// The key is right but the message did not authenticate: damaged or tampered with.
    Damaged = 4,
    /// The client's clock is further from the server's than the handshake allows
    /// ([`crate::first_message::CLOCK_TOLERANCE`]).
    ClockSkew = 5,
    /// The client encrypted to another server's public key; the Reject carries the
    /// server's own (public, as any server's key is).
    WrongServerKey = 6,
    /// The client's public key is not among the server's authorized keys.
    UnknownPeer = 7,
    /// The server accepts listed key pairs only, and the client brought none.
    IdentityRequired = 8,
    /// The client asked for key pairs, and the server has none.
    NoServerIdentity = 9,
}

impl RejectReason {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(RejectReason::BadKey),
            2 => Some(RejectReason::ModeMismatch),
            3 => Some(RejectReason::BadParams),
            4 => Some(RejectReason::Damaged),
            5 => Some(RejectReason::ClockSkew),
            6 => Some(RejectReason::WrongServerKey),
            7 => Some(RejectReason::UnknownPeer),
            8 => Some(RejectReason::IdentityRequired),
            9 => Some(RejectReason::NoServerIdentity),
            _ => None,
        }
    }
}

/// A parsed envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Envelope<'a> {
    /// See [`Kind::Initial`].
    Initial {
        /// True if the client encrypts (Noise); false for `--insecure`.
        secure: bool,
        /// The client's AEAD (flag bit 1; ChaCha20-Poly1305 when insecure).
        cipher: Cipher,
        /// The handshake pattern (flag bits 2 and 3; [`Pattern::Psk`] when insecure).
        pattern: Pattern,
        /// The id the client wants the server to address it with.
        client_id: u32,
        /// Cookie token from a Retry (empty on the first try).
        token: &'a [u8],
        /// Noise message 1, or plain parameters when insecure.
        payload: &'a [u8],
    },
    /// See [`Kind::Retry`].
    Retry {
        /// The client's id, echoed.
        client_id: u32,
        /// The token to send back.
        token: &'a [u8],
    },
    /// See [`Kind::Handshake`].
    Handshake {
        /// The client's id, echoed.
        client_id: u32,
        /// Noise message 2, or plain parameters when insecure.
        payload: &'a [u8],
    },
    /// See [`Kind::Data`].
    Data {
        /// The id of the receiving side.
        dst_id: u32,
        /// Packet number (the AEAD nonce).
        pn: u64,
        /// Sealed (or, insecure, plain) engine datagram.
        body: &'a [u8],
    },
    /// See [`Kind::Reject`].
    Reject {
        /// The client's id, echoed.
        client_id: u32,
        /// Why.
        reason: RejectReason,
        /// With [`RejectReason::WrongServerKey`]: the server's public key.
        server_key: Option<PublicKey>,
    },
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Parses a datagram; `None` if it is not a well-formed envelope.
pub fn parse(b: &[u8]) -> Option<Envelope<'_>> {
    match *b.first()? {
        1 => {
            // type, version, flags, client id, token len, token, payload len, payload, padding
            if b.len() < MIN_INITIAL || *b.get(1)? != VERSION {
                return None;
            }
            // Flags: bit 0 secure; with it, bit 1 AES-GCM, bit 2 key pairs (IK), bit 3 the
            // pre-shared key as well (IKpsk2, only with bit 2).
            let flags = *b.get(2)?;
            if flags & !15 != 0 || (flags & 1 == 0 && flags != 0) || flags & 12 == 8 {
                return None;
            }
            let pattern = match flags & 12 {
                0 => Pattern::Psk,
                4 => Pattern::Identity,
                _ => Pattern::IdentityPsk,
            };
            let client_id = u32_at(b, 3)?;
            let tlen = u16_at(b, 7)? as usize;
            let token = b.get(9..9 + tlen)?;
            let plen = u16_at(b, 9 + tlen)? as usize;
            let payload = b.get(11 + tlen..11 + tlen + plen)?;
            Some(Envelope::Initial {
                secure: flags & 1 == 1,
                cipher: if flags & 2 != 0 {
                    Cipher::AesGcm
                } else {
                    Cipher::ChaChaPoly
                },
                pattern,
                client_id,
                token,
                payload,
            })
        }
        2 => {
            let client_id = u32_at(b, 1)?;
            let tlen = u16_at(b, 5)? as usize;
            let token = b.get(7..7 + tlen)?;
            (b.len() == 7 + tlen).then_some(Envelope::Retry { client_id, token })
        }
        3 => {
            let client_id = u32_at(b, 1)?;
            let plen = u16_at(b, 5)? as usize;
            let payload = b.get(7..7 + plen)?;
            (b.len() == 7 + plen).then_some(Envelope::Handshake { client_id, payload })
        }
        4 => Some(Envelope::Data {
            dst_id: u32_at(b, 1)?,
            pn: u64_at(b, 5)?,
            body: b.get(DATA_HEADER..)?,
        }),
        5 => {
            let reason = RejectReason::from_u8(*b.get(5)?)?;
            let server_key = match reason {
                RejectReason::WrongServerKey => Some(PublicKey(b.get(6..)?.try_into().ok()?)),
                _ if b.len() == 6 => None,
                _ => return None,
            };
            Some(Envelope::Reject {
                client_id: u32_at(b, 1)?,
                reason,
                server_key,
            })
        }
        _ => None,
    }
}

/// Writes an Initial, padded to [`MIN_INITIAL`]; `cipher` and `pattern` count only when
/// `secure`.
pub fn initial(
    secure: bool,
    cipher: Cipher,
    pattern: Pattern,
    client_id: u32,
    token: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let mut v = Vec::with_capacity(MIN_INITIAL.max(11 + token.len() + payload.len()));
    v.push(Kind::Initial as u8);
    v.push(VERSION);
    let aes = secure && cipher == Cipher::AesGcm;
    let pattern_bits = match pattern {
        _ if !secure => 0,
        Pattern::Psk => 0,
        Pattern::Identity => 4,
        Pattern::IdentityPsk => 12,
    };
    v.push(secure as u8 | (aes as u8) << 1 | pattern_bits);
    v.extend_from_slice(&client_id.to_be_bytes());
    v.extend_from_slice(&(token.len() as u16).to_be_bytes());
    v.extend_from_slice(token);
    v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    if v.len() < MIN_INITIAL {
        v.resize(MIN_INITIAL, 0);
    }
    v
}

/// Writes a Retry.
pub fn retry(client_id: u32, token: &[u8]) -> Vec<u8> {
    let mut v = vec![Kind::Retry as u8];
    v.extend_from_slice(&client_id.to_be_bytes());
    v.extend_from_slice(&(token.len() as u16).to_be_bytes());
    v.extend_from_slice(token);
    v
}

/// Writes a Handshake.
pub fn handshake(client_id: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![Kind::Handshake as u8];
    v.extend_from_slice(&client_id.to_be_bytes());
    v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// Writes a Reject; `server_key` goes with [`RejectReason::WrongServerKey`] only.
pub fn reject(client_id: u32, reason: RejectReason, server_key: Option<&PublicKey>) -> Vec<u8> {
    let mut v = vec![Kind::Reject as u8];
    v.extend_from_slice(&client_id.to_be_bytes());
    v.push(reason as u8);
    if reason == RejectReason::WrongServerKey {
        v.extend_from_slice(
            &server_key
                .expect("the server's key goes with WrongServerKey")
                .0,
        );
    }
    v
}

/// Writes a data packet header into `out[..DATA_HEADER]`.
pub fn data_header(out: &mut [u8], dst_id: u32, pn: u64) {
    out[0] = Kind::Data as u8;
    out[1..5].copy_from_slice(&dst_id.to_be_bytes());
    out[5..13].copy_from_slice(&pn.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let patterns = [Pattern::Psk, Pattern::Identity, Pattern::IdentityPsk];
        for (cipher, pattern) in [Cipher::ChaChaPoly, Cipher::AesGcm]
            .into_iter()
            .flat_map(|c| patterns.map(|p| (c, p)))
        {
            let i = initial(true, cipher, pattern, 7, b"tok", b"hello");
            assert_eq!(i.len(), MIN_INITIAL);
            assert_eq!(
                parse(&i),
                Some(Envelope::Initial {
                    secure: true,
                    cipher,
                    pattern,
                    client_id: 7,
                    token: b"tok",
                    payload: b"hello"
                })
            );
        }
        // Without encryption there is no cipher or pattern to name.
        let plain = initial(false, Cipher::AesGcm, Pattern::Identity, 7, b"", b"p");
        assert_eq!(plain[2], 0);
        assert_eq!(
            parse(&retry(9, b"abc")),
            Some(Envelope::Retry {
                client_id: 9,
                token: b"abc"
            })
        );
        assert_eq!(
            parse(&handshake(9, b"xy")),
            Some(Envelope::Handshake {
                client_id: 9,
                payload: b"xy"
            })
        );
        assert_eq!(
            parse(&reject(3, RejectReason::BadKey, None)),
            Some(Envelope::Reject {
                client_id: 3,
                reason: RejectReason::BadKey,
                server_key: None
            })
        );
        let key = PublicKey([7; 32]);
        assert_eq!(
            parse(&reject(3, RejectReason::WrongServerKey, Some(&key))),
            Some(Envelope::Reject {
                client_id: 3,
                reason: RejectReason::WrongServerKey,
                server_key: Some(key)
            })
        );
        let mut d = vec![0u8; 20];
        data_header(&mut d, 5, 99);
        assert_eq!(
            parse(&d),
            Some(Envelope::Data {
                dst_id: 5,
                pn: 99,
                body: &[0u8; 7]
            })
        );
    }

    #[test]
    fn malformed_is_none_never_panics() {
        let mut i = initial(false, Cipher::ChaChaPoly, Pattern::Psk, 1, b"", b"p");
        assert!(parse(&i[..100]).is_none(), "short Initial");
        i[2] = 2; // AES-GCM without encryption
        assert!(parse(&i).is_none(), "cipher flag without the secure flag");
        i[2] = 4;
        assert!(parse(&i).is_none(), "key pairs without the secure flag");
        i[2] = 1 | 8;
        assert!(
            parse(&i).is_none(),
            "the pre-shared key flag without key pairs"
        );
        i[2] = 16 | 1;
        assert!(parse(&i).is_none(), "unknown flag");
        let r = reject(3, RejectReason::WrongServerKey, Some(&PublicKey([1; 32])));
        assert!(parse(&r[..r.len() - 1]).is_none(), "a server key cut short");
        let mut r = reject(3, RejectReason::BadKey, None);
        r.push(0);
        assert!(parse(&r).is_none(), "a key where none belongs");
        i[2] = 0;
        i[1] = 2;
        assert!(parse(&i).is_none(), "version 2");
        assert!(parse(&[]).is_none());
        assert!(parse(&[9, 1, 2]).is_none());
        assert!(parse(&[4, 0, 0]).is_none());
        let mut seed = 1u64;
        for len in 0..1400 {
            let mut b = vec![0u8; len];
            for x in b.iter_mut() {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                *x = (seed >> 56) as u8;
            }
            if len > 0 {
                b[0] = (len % 6) as u8;
            }
            let _ = parse(&b);
        }
    }
}
