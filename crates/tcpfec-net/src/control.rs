//! Control messages of the driver, carried sealed like engine packets: the first byte of
//! a sealed body tells them apart (an engine packet starts with its wire version, 1; a
//! control message with [`MARKER`]; an empty body is a keep-alive).
//!
//! ```text
//! close:          0xC0 | 0x01 | code u8 | reason_len u8 | reason (UTF-8, at most 200 bytes)
//! path challenge: 0xC0 | 0x02 | nonce (8 bytes)
//! path response:  0xC0 | 0x03 | nonce (8 bytes)
//! ```
//!
//! A close ends the connection at once with a reason the peer can report, instead of a
//! bare reset or an idle timeout. A challenge and its response validate a new peer
//! address before the connection moves to it (as QUIC's PATH_CHALLENGE/PATH_RESPONSE).

/// First byte of every control message.
pub const MARKER: u8 = 0xC0;
const TYPE_CLOSE: u8 = 1;
const TYPE_PATH_CHALLENGE: u8 = 2;
const TYPE_PATH_RESPONSE: u8 = 3;
/// Longest reason text a close carries.
pub const MAX_REASON: usize = 200;

/// Why a connection was closed by its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CloseCode {
    /// The program on the other side was stopped by its operator (SIGINT, SIGTERM).
    Interrupted = 1,
    /// A tunnel server could not connect to its target.
    TargetUnreachable = 2,
    /// A tunnel's target (or local client) reset its TCP connection.
    TargetReset = 3,
    /// The other side's application failed for another reason.
    Application = 4,
    /// The server no longer accepts this peer's key (its authorized keys were reloaded
    /// without it).
    Revoked = 5,
}

impl CloseCode {
    fn from_u8(b: u8) -> CloseCode {
        match b {
            1 => CloseCode::Interrupted,
            2 => CloseCode::TargetUnreachable,
            3 => CloseCode::TargetReset,
            5 => CloseCode::Revoked,
            // Unknown codes from a newer peer still close the connection.
            _ => CloseCode::Application,
        }
    }
}

/// A parsed control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// The peer closed the connection.
    Close {
        /// Why.
        code: CloseCode,
        /// Details for the log (peer-chosen text: print it escaped).
        reason: String,
    },
    /// Sent to a new peer address: answer with [`Control::PathResponse`] if it reaches you.
    PathChallenge([u8; 8]),
    /// The echo of a challenge's nonce, proving the address receives.
    PathResponse([u8; 8]),
}

impl Control {
    /// Parses a sealed body that starts with [`MARKER`]; `None` if malformed.
    pub fn parse(b: &[u8]) -> Option<Control> {
        match b {
            [MARKER, TYPE_CLOSE, code, len, rest @ ..] if rest.len() == *len as usize => {
                Some(Control::Close {
                    code: CloseCode::from_u8(*code),
                    reason: String::from_utf8_lossy(rest).into_owned(),
                })
            }
            [MARKER, TYPE_PATH_CHALLENGE, rest @ ..] => {
                Some(Control::PathChallenge(rest.try_into().ok()?))
            }
            [MARKER, TYPE_PATH_RESPONSE, rest @ ..] => {
                Some(Control::PathResponse(rest.try_into().ok()?))
            }
            _ => None,
        }
    }

    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Control::Close { code, reason } => {
                let mut end = reason.len().min(MAX_REASON);
                while !reason.is_char_boundary(end) {
                    end -= 1;
                }
                let mut v = vec![MARKER, TYPE_CLOSE, *code as u8, end as u8];
                v.extend_from_slice(&reason.as_bytes()[..end]);
                v
            }
            Control::PathChallenge(n) => [&[MARKER, TYPE_PATH_CHALLENGE][..], n].concat(),
            Control::PathResponse(n) => [&[MARKER, TYPE_PATH_RESPONSE][..], n].concat(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_round_trips_and_bad_bytes_do_not_parse() {
        let c = Control::Close {
            code: CloseCode::TargetUnreachable,
            reason: "connection refused".into(),
        };
        assert_eq!(Control::parse(&c.encode()), Some(c));
        let long = Control::Close {
            code: CloseCode::Interrupted,
            reason: "é".repeat(150),
        };
        let b = long.encode();
        assert!(b.len() <= 4 + MAX_REASON);
        assert!(matches!(Control::parse(&b), Some(Control::Close { .. })));
        for c in [
            Control::PathChallenge([1, 2, 3, 4, 5, 6, 7, 8]),
            Control::PathResponse([9; 8]),
        ] {
            assert_eq!(Control::parse(&c.encode()), Some(c));
        }
        assert_eq!(Control::parse(&[MARKER, 2, 1, 2, 3]), None, "short nonce");
        assert_eq!(
            Control::parse(&[MARKER, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            None,
            "long"
        );
        assert_eq!(Control::parse(&[MARKER]), None);
        assert_eq!(Control::parse(&[MARKER, 1, 1, 5, b'x']), None);
        assert_eq!(Control::parse(&[MARKER, 9, 1, 0]), None);
        assert_eq!(
            Control::parse(&[MARKER, 1, 77, 0]),
            Some(Control::Close {
                code: CloseCode::Application,
                reason: String::new()
            })
        );
    }
}
