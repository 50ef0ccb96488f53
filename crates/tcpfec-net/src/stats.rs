//! Endpoint-wide counters: what arrived, what was sent, and every reason a datagram was
//! dropped without an answer.

/// Counters of one endpoint (all connections together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams received.
    pub datagrams_in: u64,
    /// Bytes received (UDP payload).
    pub bytes_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Bytes sent (UDP payload).
    pub bytes_out: u64,
    /// Not a well-formed envelope (random bytes, truncated packets).
    pub malformed: u64,
    /// Failed authentication: forged or corrupted data packets, bad handshakes.
    pub auth_failed: u64,
    /// Data packets whose packet number was already seen or is too old (replays).
    pub replayed: u64,
    /// Data packets for a connection id this endpoint does not have.
    pub unknown_conn: u64,
    /// Data packets for a known connection from another address that could not move it
    /// there (`--insecure`: nothing proves they come from the peer).
    pub wrong_source: u64,
    /// Authenticated packets the engine could not parse.
    pub bad_inner: u64,
    /// Handshake packets that fit no connection attempt in progress.
    pub unexpected: u64,
    /// Initials carrying an invalid or expired cookie token.
    pub bad_token: u64,
    /// Initials whose valid token already opened a connection (replays).
    pub token_reused: u64,
    /// Authentic first handshake messages accepted before (recorded copies): dropped
    /// unanswered ([`crate::first_message`]).
    pub initial_replayed: u64,
    /// First handshake messages whose time is too far from this clock (old copies, or a
    /// client with a wrong clock): refused.
    pub initial_stale: u64,
    /// Authentic handshakes from a key pair the authorized keys do not list: refused.
    pub unknown_peer: u64,
    /// Connections closed because a reload removed their peer's key.
    pub revoked: u64,
    /// Retry (cookie) packets sent.
    pub retries_sent: u64,
    /// Server connections opened without a token whose client never proved its address
    /// (no authentic packet before the idle timeout): dropped.
    pub unvalidated_expired: u64,
    /// Handshakes refused with a Reject.
    pub rejects_sent: u64,
    /// Handshakes completed (server side).
    pub handshakes_accepted: u64,
    /// Keep-alive packets sent on idle connections.
    pub keepalives_sent: u64,
    /// Challenges sent to validate a peer's new address.
    pub path_challenges_sent: u64,
    /// Connections moved to a validated new peer address (NAT rebinding, relay restart).
    pub migrations: u64,
    /// Data packets a server shard received for another shard's connection (a client
    /// whose address changed) and handed to that shard.
    pub forwarded: u64,
}

impl EndpointStats {
    /// Every reason a datagram is dropped, with its count, in one list so that text and
    /// JSON reports cannot leave one out. Names are the JSON keys.
    pub fn drop_reasons(&self) -> [(&'static str, u64); 10] {
        [
            ("malformed", self.malformed),
            ("auth_failed", self.auth_failed),
            ("replayed", self.replayed),
            ("unknown_conn", self.unknown_conn),
            ("wrong_source", self.wrong_source),
            ("bad_inner", self.bad_inner),
            ("unexpected", self.unexpected),
            ("bad_token", self.bad_token),
            ("token_reused", self.token_reused),
            ("initial_replayed", self.initial_replayed),
        ]
    }

    /// Datagrams dropped without effect, all reasons together.
    pub fn dropped(&self) -> u64 {
        self.drop_reasons().iter().map(|(_, n)| n).sum()
    }
}

/// Counters of several endpoints (a server's shards) together.
impl std::ops::Add for EndpointStats {
    type Output = EndpointStats;

    fn add(self, other: EndpointStats) -> EndpointStats {
        // No `..` here: a counter added to the struct must be added up too, or this
        // does not compile.
        let EndpointStats {
            datagrams_in,
            bytes_in,
            datagrams_out,
            bytes_out,
            malformed,
            auth_failed,
            replayed,
            unknown_conn,
            wrong_source,
            bad_inner,
            unexpected,
            bad_token,
            token_reused,
            initial_replayed,
            initial_stale,
            unknown_peer,
            revoked,
            retries_sent,
            unvalidated_expired,
            rejects_sent,
            handshakes_accepted,
            keepalives_sent,
            path_challenges_sent,
            migrations,
            forwarded,
        } = other;
        EndpointStats {
            datagrams_in: self.datagrams_in + datagrams_in,
            bytes_in: self.bytes_in + bytes_in,
            datagrams_out: self.datagrams_out + datagrams_out,
            bytes_out: self.bytes_out + bytes_out,
            malformed: self.malformed + malformed,
            auth_failed: self.auth_failed + auth_failed,
            replayed: self.replayed + replayed,
            unknown_conn: self.unknown_conn + unknown_conn,
            wrong_source: self.wrong_source + wrong_source,
            bad_inner: self.bad_inner + bad_inner,
            unexpected: self.unexpected + unexpected,
            bad_token: self.bad_token + bad_token,
            token_reused: self.token_reused + token_reused,
            initial_replayed: self.initial_replayed + initial_replayed,
            initial_stale: self.initial_stale + initial_stale,
            unknown_peer: self.unknown_peer + unknown_peer,
            revoked: self.revoked + revoked,
            retries_sent: self.retries_sent + retries_sent,
            unvalidated_expired: self.unvalidated_expired + unvalidated_expired,
            rejects_sent: self.rejects_sent + rejects_sent,
            handshakes_accepted: self.handshakes_accepted + handshakes_accepted,
            keepalives_sent: self.keepalives_sent + keepalives_sent,
            path_challenges_sent: self.path_challenges_sent + path_challenges_sent,
            migrations: self.migrations + migrations,
            forwarded: self.forwarded + forwarded,
        }
    }
}
