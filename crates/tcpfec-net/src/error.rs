//! Errors a connection can end with, worded for the person at the terminal.

use std::net::SocketAddr;
use std::time::Duration;

/// Why a connection could not be opened or did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    /// Nothing came back from the peer during the handshake.
    NoAnswer {
        /// The address tried.
        peer: SocketAddr,
        /// How long we waited.
        waited: Duration,
        /// True if the server answered the cookie round (so it is there) but never the
        /// handshake.
        cookie_seen: bool,
    },
    /// The server could not authenticate our handshake: the keys differ.
    WrongKey,
    /// One side runs `--insecure` and the other does not.
    ModeMismatch,
    /// The server refused the proposed scheme or version.
    BadParams,
    /// The server holds our key but our handshake did not authenticate: it was damaged or
    /// altered on the way.
    Damaged,
    /// The server refused the handshake because the two machines' clocks differ by more
    /// than it allows.
    ClockSkew,
    /// The server holds another key pair than the one pinned for it.
    ServerKeyMismatch {
        /// The public key the server says it has (unauthenticated: it answered a
        /// handshake it could not read).
        offered: crate::identity::PublicKey,
    },
    /// The server does not list our public key.
    UnknownPeer,
    /// The server accepts listed key pairs only, and we came with a pre-shared key alone.
    IdentityRequired,
    /// We came with key pairs, and the server has none.
    NoServerIdentity,
    /// The peer stopped answering an open connection.
    PeerTimeout(Duration),
    /// The peer reset (aborted) the connection.
    Reset,
    /// FECTCP: the receiver refused the block (larger than its receive window).
    BlockRefused,
    /// The peer closed the connection with a reason (a control message).
    PeerClosed {
        /// Why.
        code: crate::control::CloseCode,
        /// The peer's details (its own text: printed escaped).
        reason: String,
    },
    /// This side closed the connection with a reason.
    ClosedHere(crate::control::CloseCode),
    /// The endpoint was shut down.
    EndpointClosed,
}

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetError::NoAnswer {
                peer,
                waited,
                cookie_seen: false,
            } => write!(
                f,
                "no answer from {peer} within {:.1} s: is a tcpfec server listening there, and is the UDP port reachable?",
                waited.as_secs_f64()
            ),
            NetError::NoAnswer { peer, waited, .. } => write!(
                f,
                "{peer} answered the address check but not the handshake within {:.1} s",
                waited.as_secs_f64()
            ),
            NetError::WrongKey => write!(
                f,
                "the server rejected the handshake: wrong key (both sides need the same --key-file)"
            ),
            NetError::ModeMismatch => write!(
                f,
                "the server rejected the handshake: one side runs --insecure and the other does not"
            ),
            NetError::BadParams => write!(
                f,
                "the server rejected the handshake: it does not accept the proposed scheme or version"
            ),
            NetError::Damaged => write!(
                f,
                "the server rejected the handshake: the key is right but the message arrived damaged or altered (something on the path changes packets)"
            ),
            NetError::ClockSkew => write!(
                f,
                "the server rejected the handshake: the clocks of the two machines differ by more than {} s (set both by NTP)",
                crate::first_message::CLOCK_TOLERANCE.as_secs()
            ),
            NetError::ServerKeyMismatch { offered } => write!(
                f,
                "the server's key is not the one pinned for it: it offers {offered} ({}). If the server was re-keyed, pin the new key (--server-key, or edit known_servers); otherwise someone else answers at that address",
                offered.fingerprint()
            ),
            NetError::UnknownPeer => write!(
                f,
                "the server rejected the handshake: our public key is not in its authorized keys (send it the .pub file of --identity)"
            ),
            NetError::IdentityRequired => write!(
                f,
                "the server rejected the handshake: it accepts listed key pairs only (give --identity and the server's key with --server-key)"
            ),
            NetError::NoServerIdentity => write!(
                f,
                "the server rejected the handshake: it has no key pair (drop --server-key, or start the server with --identity)"
            ),
            NetError::PeerTimeout(d) => write!(
                f,
                "the peer stopped answering: nothing authentic received for {:.1} s (peer gone or path down)",
                d.as_secs_f64()
            ),
            NetError::Reset => write!(f, "the peer reset the connection"),
            NetError::BlockRefused => write!(
                f,
                "the receiver refused the FECTCP block: FECTCP moves each direction as one block, which must fit the receiver's {} MiB receive window",
                tcpfec_proto::Config::default().recv_window >> 20
            ),
            NetError::PeerClosed { code, reason } => {
                use crate::control::CloseCode as C;
                let reason = crate::printable::printable(reason);
                match code {
                    C::Interrupted => write!(f, "the peer stopped: its operator interrupted it"),
                    C::TargetUnreachable => {
                        write!(f, "the tunnel server could not reach its target: {reason}")
                    }
                    C::TargetReset => write!(f, "the far end reset the forwarded connection: {reason}"),
                    C::Application => write!(f, "the peer closed the connection: {reason}"),
                    C::Revoked => write!(f, "the server revoked our key: {reason}"),
                }
            }
            NetError::ClosedHere(code) => write!(f, "this side closed the connection ({code:?})"),
            NetError::EndpointClosed => write!(f, "the endpoint was shut down"),
        }
    }
}

impl std::error::Error for NetError {}

impl From<NetError> for std::io::Error {
    fn from(e: NetError) -> Self {
        use std::io::ErrorKind as K;
        let kind = match e {
            NetError::NoAnswer { .. } | NetError::PeerTimeout(_) => K::TimedOut,
            NetError::WrongKey
            | NetError::ModeMismatch
            | NetError::ServerKeyMismatch { .. }
            | NetError::UnknownPeer
            | NetError::IdentityRequired
            | NetError::NoServerIdentity => K::PermissionDenied,
            NetError::BadParams => K::InvalidInput,
            NetError::Damaged => K::InvalidData,
            NetError::ClockSkew => K::PermissionDenied,
            NetError::Reset | NetError::PeerClosed { .. } => K::ConnectionReset,
            NetError::BlockRefused => K::InvalidInput,
            NetError::ClosedHere(_) => K::ConnectionAborted,
            NetError::EndpointClosed => K::NotConnected,
        };
        std::io::Error::new(kind, e)
    }
}

/// The [`NetError`] inside an I/O error, if that is what it carries.
pub fn net_error(e: &std::io::Error) -> Option<&NetError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<NetError>())
}
