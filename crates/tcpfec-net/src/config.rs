//! How an endpoint behaves: [`EndpointConfig`] and the limits that come with it. Kept
//! apart from the endpoint so that connections read their settings without depending on
//! the endpoint that owns them.

use crate::crypto::{Cipher, Credentials, Pattern};
use crate::envelope::RejectReason;
use crate::identity::{AuthorizedKeys, KeyPair, PublicKey};
use crate::key::Psk;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tcpfec_proto::{Config, Scheme};

/// Largest UDP payload: a 1452-byte datagram is one 1500-byte packet over IPv6 (8 bytes
/// of UDP and 40 of IP on top), and leaves 20 bytes to spare over IPv4.
pub const MAX_DATAGRAM: usize = 1452;

/// Longest engine packet: a datagram less the 13-byte envelope and the 16-byte tag.
pub const MAX_ENGINE_PACKET: usize =
    MAX_DATAGRAM - crate::envelope::DATA_HEADER - crate::crypto::TAG_LEN;

/// Largest engine payload per datagram. What a packet carrying a full segment adds to it
/// is bounded by a repair packet: the 40-byte engine header, the FEC group option (19 for
/// a group of retransmissions), the repair option (6), the transmission number (6), and
/// the 2 bytes of length parity a Reed-Solomon repair's payload carries beyond the
/// longest member, 73 bytes (no scheme today combines all of them: Sato's retransmission
/// groups take 65, `auto`'s repairs 59, its repairs of the sliding-window code 54); 1350 +
/// 73 = 1423 = [`MAX_ENGINE_PACKET`]. The
/// SACK blocks and FEC feedback a data packet may piggyback get no room of their own:
/// the engine leaves out what does not fit and a pure ACK carries it
/// (`Config::max_packet_len`). With room reserved for four SACK blocks and IPv4 only, as
/// before, the MSS was 1316.
pub const DEFAULT_MSS: u16 = 1350;

/// The receive window a connection starts with, bytes (it auto-tunes up to the engine's
/// `recv_window`).
pub const RECV_WINDOW_INITIAL: u32 = 2 << 20;

/// Longest retransmission timeout over real networks (see `EndpointConfig::new`).
pub const MAX_RTO: Duration = Duration::from_secs(3);

/// How an endpoint behaves.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The pre-shared key; `None` with no [`EndpointConfig::identity`] either runs without
    /// encryption or authentication.
    pub key: Option<Psk>,
    /// Key pairs: this side's, the server's pinned key (client), the peers accepted
    /// (server). `None`: the pre-shared key alone authenticates.
    pub identity: Option<IdentityConfig>,
    /// The scheme this side sends with.
    pub scheme: Scheme,
    /// Client: the AEAD to ask for (a server uses the one each client names).
    pub cipher: Cipher,
    /// Client only: the scheme to ask the server to send with (`None`: the server's choice).
    pub peer_scheme: Option<Scheme>,
    /// An open connection fails when nothing authentic arrives for this long.
    pub idle_timeout: Duration,
    /// A connect attempt fails when the handshake has not completed after this long.
    pub handshake_timeout: Duration,
    /// Server: when to answer a first Initial with a Retry (address validation by cookie)
    /// instead of the handshake.
    pub retry: RetryPolicy,
    /// Engine settings (the scheme and MSS fields are overridden from this struct).
    pub engine: Config,
    /// Client: where connections save what they learnt about their path, and resume
    /// from it the next time (Careful Resume); `None` starts every connection afresh.
    pub path_cache: Option<std::sync::Arc<crate::path_cache::PathCache>>,
    /// Write a qlog trace of every connection into this directory (`None`: no tracing,
    /// and nothing on the packet path changes).
    pub qlog_dir: Option<std::path::PathBuf>,
}

impl EndpointConfig {
    /// Settings for real networks with the given key and sending scheme.
    pub fn new(key: Option<Psk>, scheme: Scheme) -> Self {
        EndpointConfig {
            key,
            identity: None,
            scheme,
            cipher: Cipher::preferred(),
            peer_scheme: None,
            idle_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(5),
            retry: RetryPolicy::WhenBusy,
            engine: Config {
                mss: DEFAULT_MSS,
                // RFC 6928's initial window: a real path is worth probing faster than the
                // papers' 2 segments.
                initial_window: 10,
                // RFC 6298's RTO is SRTT + max(G, 4·RTTVAR). On a steady path RTTVAR decays
                // to almost nothing, and a real host delays ACKs by milliseconds (a busy
                // CPU, batching): with G = 1 ms every such hiccup fires a spurious timeout.
                // A 200 ms floor on the variance term is what Linux effectively applies
                // (its minimum RTO bounds the RTTVAR term, not the sum).
                clock_granularity: Duration::from_millis(200),
                // Back off no further than 3 s (or the RTO the path's RTT asks for, if
                // longer): after an outage (a blackout, a relay restart) the next
                // retransmission, and with it the transfer, resumes within 3 s of the
                // path's return instead of up to a minute later. Liveness is the idle
                // timeout's job, not the RTO's.
                max_rto: MAX_RTO,
                // An outage costs one reduction, not one per backed-off timeout: the flow
                // regrows towards its old window once the path is back (RFC 5681 §3.1).
                hold_on_repeated_timeout: true,
                max_packet_len: Some(MAX_ENGINE_PACKET),
                // The receive window starts at 2 MiB and grows with what the application
                // reads per round trip, up to the 64 MiB buffer: a fast path gets the
                // whole buffer within a few round trips, and a reader that stops (a
                // tunnel target that does not read) holds 2 MiB, not 64.
                recv_window_initial: Some(RECV_WINDOW_INITIAL),
                // Slow start ends before it overflows the queue: CUBIC by Linux's
                // HyStart (ACK trains, rising delay), every window rule's first slow
                // start by HyStart++ (RFC 9406). With plain slow start `cubic` lost
                // 1 600-2 200 packets of a 10 MB transfer into a 1-BDP queue at RTT
                // 100-200 ms (docs/design/fast-start.md, first contact).
                hystart: true,
                // The pacer (`pacer.rs`) spreads every window rule's packets.
                paced_windows: true,
                hystart_pp: true,
                ..Config::default()
            },
            path_cache: None,
            qlog_dir: None,
        }
    }

    /// True if connections are encrypted and authenticated (a pre-shared key, key pairs,
    /// or both).
    pub fn secure(&self) -> bool {
        self.key.is_some() || self.identity.is_some()
    }

    /// What this side brings to a handshake.
    pub fn credentials(&self) -> Credentials<'_> {
        let id = self.identity.as_ref();
        Credentials {
            psk: self.key.as_ref(),
            own: id.map(|i| &i.own),
            server: id.and_then(|i| i.server_key.as_ref()),
        }
    }

    /// Server: why a client's handshake `pattern` cannot be accepted here, if it cannot.
    pub(crate) fn refuses_pattern(&self, pattern: Pattern) -> Option<RejectReason> {
        let listed = self
            .identity
            .as_ref()
            .is_some_and(|i| i.authorized.is_some());
        match pattern {
            Pattern::Psk if self.key.is_none() || listed => Some(RejectReason::IdentityRequired),
            Pattern::Identity | Pattern::IdentityPsk if self.identity.is_none() => {
                Some(RejectReason::NoServerIdentity)
            }
            // The pre-shared key is wanted by one side and not the other.
            Pattern::Identity if self.key.is_some() => Some(RejectReason::BadKey),
            Pattern::IdentityPsk if self.key.is_none() => Some(RejectReason::BadKey),
            _ => None,
        }
    }

    pub(crate) fn engine_config(&self, scheme: &Scheme) -> Config {
        Config {
            scheme: scheme.clone(),
            ..self.engine.clone()
        }
    }
}

/// Key pairs in the handshake (Noise `IK`, see [`crate::crypto::Pattern`]).
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    /// This side's key pair. A client given only the server's key uses a fresh pair of its
    /// own per run (the server then sees a key it has not listed).
    pub own: KeyPair,
    /// Client: the server's public key, pinned; a server holding another key is refused
    /// before anything is sent to it.
    pub server_key: Option<PublicKey>,
    /// Server: the peers accepted, by key. `None` accepts any key pair, each named by its
    /// fingerprint. Shared by the shards, so that a reload
    /// ([`crate::Endpoint::reload_authorized_keys`]) reaches all of them.
    pub authorized: Option<Arc<RwLock<AuthorizedKeys>>>,
}

impl IdentityConfig {
    /// The name `key` goes by here: its name in the authorized keys, its fingerprint where
    /// any key is accepted; `None` if the list does not hold it.
    pub fn name_of(&self, key: &PublicKey) -> Option<String> {
        match &self.authorized {
            Some(list) => list
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .name_of(key)
                .map(str::to_string),
            None => Some(key.fingerprint()),
        }
    }
}

/// When a server asks a client to prove its address with a cookie round trip (Retry)
/// before the handshake, as QUIC servers do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryPolicy {
    /// Only while [`MAX_UNVALIDATED`] connections wait for their clients' first authentic
    /// packet: a flood of spoofed Initials then costs the server no more state, and real
    /// clients one round trip more.
    WhenBusy,
    /// For every connection (one more round trip each).
    Always,
}

/// Server connections opened without a token whose client has not yet proven its
/// address; beyond this, new clients get a Retry first.
pub const MAX_UNVALIDATED: usize = 64;
