//! Handshake parameters: which scheme each direction uses (carried inside the Noise
//! messages, so they are authenticated and private).
//!
//! Client → server: `send` = the scheme the client sends with, `want` = the scheme it asks
//! the server to send with (empty: the server's choice). Server → client: the server's
//! connection id and the scheme it will send with.

use tcpfec_proto::Scheme;

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
    /// The client's sending scheme.
    pub send: Scheme,
    /// The scheme asked of the server, if any.
    pub want: Option<Scheme>,
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    /// The server's connection id: the client addresses data packets to it.
    pub server_id: u32,
    /// The server's sending scheme.
    pub send: Scheme,
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
        let mut v = Vec::new();
        put_str(&mut v, &self.send.name);
        put_str(&mut v, self.want.as_ref().map_or("", |s| s.name.as_str()));
        v
    }

    /// Decodes; `None` if malformed or a scheme is unknown here.
    pub fn decode(mut b: &[u8]) -> Option<Self> {
        let send = Scheme::parse(take_str(&mut b)?).ok()?;
        let want = match take_str(&mut b)? {
            "" => None,
            s => Some(Scheme::parse(s).ok()?),
        };
        b.is_empty().then_some(ClientParams { send, want })
    }
}

impl ServerParams {
    /// Encodes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = self.server_id.to_be_bytes().to_vec();
        put_str(&mut v, &self.send.name);
        v
    }

    /// Decodes; `None` if malformed or the scheme is unknown here.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let server_id = u32::from_be_bytes(b.get(..4)?.try_into().ok()?);
        let mut rest = &b[4..];
        let send = Scheme::parse(take_str(&mut rest)?).ok()?;
        rest.is_empty().then_some(ServerParams { server_id, send })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c = ClientParams {
            send: Scheme::parse("anker-16-2").unwrap(),
            want: Some(Scheme::parse("sack").unwrap()),
        };
        assert_eq!(ClientParams::decode(&c.encode()), Some(c));
        let s = ServerParams {
            server_id: 77,
            send: Scheme::parse("cubic").unwrap(),
        };
        assert_eq!(ServerParams::decode(&s.encode()), Some(s));
        assert_eq!(ClientParams::decode(&[3, b'f', b'o', b'o', 0]), None);
        assert_eq!(ServerParams::decode(&[0, 0]), None);
    }
}
