//! Handshake parameters: which scheme each direction uses (carried inside the Noise
//! messages, so they are authenticated and private).
//!
//! Client → server: `send` = the scheme the client sends with, `want` = the scheme it asks
//! the server to send with (empty: the server's choice). Server → client: the server's
//! connection id and the scheme it will send with. Both also carry what the engine's SYN
//! would (MSS, receive window, SACK), so the engines start established.

use tcpfec_proto::{PeerOpening, Scheme};

/// The scheme this side's engine runs: its own, unless the peer sends with FECTCP, whose
/// symbols and ACKs only a FECTCP engine understands (FECTCP then runs both ways).
pub fn engine_scheme<'a>(own: &'a Scheme, peer: &'a Scheme) -> &'a Scheme {
    if own.fountain.is_none() && peer.fountain.is_some() {
        peer
    } else {
        own
    }
}

/// What the client proposes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientParams {
    /// The client's wall-clock time when it wrote the message, in milliseconds since the
    /// Unix epoch: the server refuses old copies of a first message by it
    /// ([`crate::first_message`]).
    pub sent_at_ms: u64,
    /// The client's sending scheme.
    pub send: Scheme,
    /// The scheme asked of the server, if any.
    pub want: Option<Scheme>,
    /// The client engine's opening (MSS, window, SACK).
    pub opening: Opening,
}

/// What an engine's SYN would announce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    /// Largest payload accepted.
    pub mss: u16,
    /// Receive window in bytes.
    pub window: u32,
    /// The engine uses SACK.
    pub sack: bool,
}

impl Opening {
    /// What an engine with `cfg` announces.
    pub fn of(cfg: &tcpfec_proto::Config) -> Self {
        Opening {
            mss: cfg.mss,
            // FECTCP's receiver decodes a block as large as its whole buffer.
            window: if cfg.scheme.fountain.is_some() {
                cfg.recv_window
            } else {
                cfg.initial_recv_window()
            },
            sack: cfg.scheme.uses_sack(),
        }
    }

    /// The engine's view of it, with the handshake's RTT sample if there is one.
    pub fn to_peer(self, rtt: Option<std::time::Duration>) -> PeerOpening {
        PeerOpening {
            mss: Some(self.mss),
            window: self.window,
            sack: self.sack,
            rtt,
        }
    }

    fn put(&self, v: &mut Vec<u8>) {
        v.extend_from_slice(&self.mss.to_be_bytes());
        v.extend_from_slice(&self.window.to_be_bytes());
        v.push(self.sack as u8);
    }

    fn take(b: &mut &[u8]) -> Option<Self> {
        let f = b.get(..7)?;
        let o = Opening {
            mss: u16::from_be_bytes([f[0], f[1]]),
            window: u32::from_be_bytes([f[2], f[3], f[4], f[5]]),
            sack: match f[6] {
                0 => false,
                1 => true,
                _ => return None,
            },
        };
        *b = &b[7..];
        // An MSS too small to carry a byte after the options is no engine's.
        (o.mss >= 64).then_some(o)
    }
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    /// The server's connection id: the client addresses data packets to it.
    pub server_id: u32,
    /// The server's sending scheme.
    pub send: Scheme,
    /// The server engine's opening (MSS, window, SACK).
    pub opening: Opening,
}

fn put_str(v: &mut Vec<u8>, s: &str) {
    v.push(s.len().min(255) as u8);
    v.extend_from_slice(&s.as_bytes()[..s.len().min(255)]);
}

fn take_str<'a>(b: &mut &'a [u8]) -> Option<&'a str> {
    let (&len, rest) = b.split_first()?;
    let s = rest.get(..len as usize)?;
    *b = &rest[len as usize..];
    std::str::from_utf8(s).ok()
}

impl ClientParams {
    /// Encodes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = self.sent_at_ms.to_be_bytes().to_vec();
        put_str(&mut v, &self.send.name);
        put_str(&mut v, self.want.as_ref().map_or("", |s| s.name.as_str()));
        self.opening.put(&mut v);
        v
    }

    /// Decodes; `None` if malformed or a scheme is unknown here.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let sent_at_ms = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
        let mut b = &b[8..];
        let send = Scheme::parse(take_str(&mut b)?).ok()?;
        let want = match take_str(&mut b)? {
            "" => None,
            s => Some(Scheme::parse(s).ok()?),
        };
        let opening = Opening::take(&mut b)?;
        b.is_empty().then_some(ClientParams {
            sent_at_ms,
            send,
            want,
            opening,
        })
    }
}

impl ServerParams {
    /// Encodes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = self.server_id.to_be_bytes().to_vec();
        put_str(&mut v, &self.send.name);
        self.opening.put(&mut v);
        v
    }

    /// Decodes; `None` if malformed or the scheme is unknown here.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let server_id = u32::from_be_bytes(b.get(..4)?.try_into().ok()?);
        let mut rest = &b[4..];
        let send = Scheme::parse(take_str(&mut rest)?).ok()?;
        let opening = Opening::take(&mut rest)?;
        rest.is_empty().then_some(ServerParams {
            server_id,
            send,
            opening,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let opening = Opening {
            mss: 1316,
            window: 64 << 20,
            sack: true,
        };
        let c = ClientParams {
            sent_at_ms: 1_800_000_000_123,
            send: Scheme::parse("anker-16-2").unwrap(),
            want: Some(Scheme::parse("sack").unwrap()),
            opening,
        };
        assert_eq!(ClientParams::decode(&c.encode()), Some(c.clone()));
        let s = ServerParams {
            server_id: 77,
            send: Scheme::parse("cubic").unwrap(),
            opening,
        };
        assert_eq!(ServerParams::decode(&s.encode()), Some(s.clone()));
        // Truncated, a bad SACK flag, an absurd MSS, trailing bytes: refused.
        let e = c.encode();
        assert_eq!(ClientParams::decode(&e[..e.len() - 1]), None);
        let mut bad = e.clone();
        *bad.last_mut().unwrap() = 2;
        assert_eq!(ClientParams::decode(&bad), None);
        let mut tiny = s.encode();
        let at = tiny.len() - 7;
        tiny[at..at + 2].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(ServerParams::decode(&tiny), None);
        let mut long = s.encode();
        long.push(0);
        assert_eq!(ServerParams::decode(&long), None);
        assert_eq!(ClientParams::decode(&[3, b'f', b'o', b'o', 0]), None);
        assert_eq!(ClientParams::decode(&e[..7]), None, "no room for the time");
        assert_eq!(ServerParams::decode(&[0, 0]), None);
    }
}
