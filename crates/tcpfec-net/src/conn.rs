//! One connection as the driver sees it: the client's handshake in progress, then the
//! engine with its packet protection, replay window, pacer and liveness timers.

use crate::config::EndpointConfig;
use crate::control::{self, Control};
use crate::crypto::Sealer;
use crate::envelope::{self, DATA_HEADER};
use crate::error::NetError;
use crate::pacer::Pacer;
use crate::params::ServerParams;
use crate::replay::ReplayWindow;
use crate::stats::EndpointStats;
use snow::HandshakeState;
use std::net::SocketAddr;
use std::task::Waker;
use std::time::Duration;
use tcpfec_proto::{ConnError, Endpoint as Engine, Instant};
use tokio::sync::oneshot;

/// Most datagrams one connection emits per driver round, so one busy connection cannot
/// starve the receive path (ACKs must keep flowing in).
const SEND_BUDGET: usize = 64;
/// Largest sealed body accepted: bigger datagrams are not ours.
const MAX_BODY: usize = 4096;
/// First retransmission of an unanswered Initial; doubles after each.
const HELLO_RTO: Duration = Duration::from_millis(500);

/// Every Initial goes out twice: the copy this long after the original, unless an answer
/// came first. On a path that loses 5 % of its packets one connection in twenty would
/// otherwise wait out [`HELLO_RTO`] for a lost Initial (measured through `tcpfec emu` at
/// 50 Mb/s, RTT 200 ms: 2 of 12 10 MB tests took 0.5 s longer to start); with the copy,
/// one in four hundred. The server answers each copy it gets, so its answer travels twice
/// as well. Apart, so that one burst of loss rarely takes both; short, so that the copy
/// costs the start nothing.
const INITIAL_COPY_AFTER: Duration = Duration::from_millis(10);

/// Where the connection is.
pub(crate) enum Phase {
    /// Client: waiting for Retry / Handshake.
    Hello {
        /// The Initial to (re)send.
        initial: Vec<u8>,
        /// Its payload (Noise message 1 or plain parameters), to resend with a token.
        payload: Vec<u8>,
        /// The handshake pattern message 1 was made with (flagged in the Initial).
        pattern: crate::crypto::Pattern,
        /// When the latest Initial left (with `tries == 1`, the answer is an RTT sample).
        sent: Instant,
        /// When the first Initial with the current token left: with more tries, the time
        /// since is an upper bound on the round trip.
        first_sent: Instant,
        /// Initials sent with the current token.
        tries: u32,
        /// When to resend.
        next: Instant,
        /// When to send the copy of the latest Initial, if it is still due.
        copy_at: Option<Instant>,
        /// When to give up.
        deadline: Instant,
        /// A Retry arrived: the server exists.
        cookie_seen: bool,
        /// The Noise initiator after message 1 was written.
        hs: Option<Box<HandshakeState>>,
    },
    /// The engine runs.
    Open,
    /// The handshake failed; the connect call has been told.
    Failed,
}

/// Per-connection driver state.
pub(crate) struct Conn {
    pub(crate) peer: SocketAddr,
    /// The address the connection was opened from (the server's key for repeated
    /// Initials), kept when the connection moves.
    pub(crate) origin: SocketAddr,
    /// The peer's connection id (0 until the client learns the server's).
    pub(crate) peer_id: u32,
    pub(crate) phase: Phase,
    pub(crate) engine: Option<Engine>,
    sealer: Option<Sealer>,
    next_pn: u64,
    replay: ReplayWindow,
    pacer: Pacer,
    last_recv: Instant,
    last_send: Instant,
    pub(crate) read_waker: Option<Waker>,
    pub(crate) write_waker: Option<Waker>,
    pub(crate) error: Option<NetError>,
    /// The stream handle was dropped: discard what arrives, finish, then go.
    pub(crate) detached: bool,
    /// Server: digest of the client's Initial and our answer, to repeat it.
    pub(crate) hello: Option<(blake3::Hash, Vec<u8>)>,
    pub(crate) connect_tx: Option<oneshot::Sender<Result<(), NetError>>>,
    /// Packets received and sent by this connection (datagrams, all kinds).
    pub(crate) packets_in: u64,
    pub(crate) packets_out: u64,
    /// A close this side wants to send: it goes out on the next poll, then the
    /// connection ends here.
    pub(crate) close: Option<Control>,
    /// A new peer address being validated.
    path_probe: Option<PathProbe>,
    /// Server: the client's address is not proven yet (no token, no authentic packet).
    pub(crate) unvalidated: Option<Unvalidated>,
    /// Client: send an authentic packet at once, even with no data, so the server can
    /// validate our address and hand out its stream.
    announce: bool,
    /// Server: the client's public key, when it proved a key pair.
    pub(crate) peer_key: Option<crate::identity::PublicKey>,
    /// Server: the client's name (from the authorized keys, or the key's fingerprint).
    pub(crate) peer_name: Option<String>,
    /// The qlog trace (`EndpointConfig::qlog_dir`), and when the connection opened.
    tracer: Option<(tcpfec_qlog::ConnTracer, Instant)>,
}

/// A server connection opened without a token, until the client proves it receives at
/// its address (RFC 9000 §8.1): only the handshake answer goes there, and never more than
/// three times the bytes received from it.
pub(crate) struct Unvalidated {
    /// Bytes received from the address (its Initials).
    pub(crate) received: u64,
    /// Bytes sent to it.
    pub(crate) sent: u64,
    /// When the connection is dropped if the address is still unproven.
    pub(crate) deadline: Instant,
}

/// The anti-amplification factor before an address is validated (RFC 9000 §8.1).
pub(crate) const AMPLIFICATION_LIMIT: u64 = 3;

impl Unvalidated {
    /// True if `len` more bytes may go to the address.
    pub(crate) fn may_send(&self, len: usize) -> bool {
        self.sent + len as u64 <= AMPLIFICATION_LIMIT * self.received
    }
}

/// A challenge sent to a candidate peer address.
struct PathProbe {
    addr: SocketAddr,
    nonce: [u8; 8],
    sent: Instant,
}

/// Least time between two challenges to the same address.
const PATH_PROBE_INTERVAL: Duration = Duration::from_millis(100);

/// Copies of a close message sent back to back, so one random loss does not leave the
/// peer waiting for its idle timeout.
const CLOSE_COPIES: usize = 3;

impl Conn {
    pub(crate) fn new(peer: SocketAddr, peer_id: u32, now: Instant) -> Self {
        Conn {
            peer,
            origin: peer,
            peer_id,
            phase: Phase::Open,
            engine: None,
            sealer: None,
            next_pn: 0,
            replay: ReplayWindow::default(),
            pacer: Pacer::new(16 * 1500),
            last_recv: now,
            last_send: now,
            read_waker: None,
            write_waker: None,
            error: None,
            detached: false,
            hello: None,
            connect_tx: None,
            packets_in: 0,
            packets_out: 0,
            close: None,
            path_probe: None,
            unvalidated: None,
            announce: false,
            peer_key: None,
            peer_name: None,
            tracer: None,
        }
    }

    /// Saves what the connection learnt about its path, for the next connection to the
    /// same peer (a client with a path cache; see [`crate::path_cache`]).
    pub(crate) fn save_path(&self, cfg: &EndpointConfig) {
        let (Some(cache), Some(engine)) = (cfg.path_cache.as_ref(), self.engine.as_ref()) else {
            return;
        };
        if let Some(path) = engine.path_observation() {
            // A cache that cannot be written only costs the next connection its head start.
            let _ = cache.store(self.origin.ip(), path);
        }
    }

    /// Starts the data phase.
    pub(crate) fn open(&mut self, engine: Engine, sealer: Sealer) {
        self.engine = Some(engine);
        self.sealer = Some(sealer);
        self.phase = Phase::Open;
    }

    /// Starts this connection's qlog trace if the endpoint writes them: one file per
    /// connection, `SIDE-UNIXMS-PEER-ID.sqlog`. A file that cannot be created is said
    /// once on stderr; the connection goes on untraced.
    pub(crate) fn start_trace(
        &mut self,
        cfg: &EndpointConfig,
        now: Instant,
        server: bool,
        id: u32,
    ) {
        let (Some(dir), Some(engine)) = (&cfg.qlog_dir, self.engine.as_mut()) else {
            return;
        };
        let side = if server { "server" } else { "client" };
        let peer = self.peer.to_string().replace([':', '[', ']'], "_");
        let ms = crate::first_message::wall_clock_ms();
        let path = dir.join(format!("{side}-{ms}-{peer}-{id}.sqlog"));
        let title = format!(
            "tcpfec {side}, peer {}, {}",
            self.peer,
            engine.config().scheme.name
        );
        let q_side = if server {
            tcpfec_qlog::Side::Server
        } else {
            tcpfec_qlog::Side::Client
        };
        match tcpfec_qlog::QlogWriter::create(
            &path,
            q_side,
            &title,
            tcpfec_qlog::DEFAULT_FILE_LIMIT,
        ) {
            Ok(w) => {
                engine.set_trace(true);
                let mss = engine.config().mss;
                let sink = Box::new(tcpfec_qlog::Background::start(w));
                self.tracer = Some((tcpfec_qlog::ConnTracer::new(sink, mss), now));
            }
            Err(e) => eprintln!("warning: no qlog trace: {}: {e}", path.display()),
        }
    }

    /// Hands a packet the engine sent (`len` bytes) and what the engine did to the trace,
    /// if there is one.
    fn trace_sent(&mut self, now: Instant, p: &tcpfec_proto::Packet, len: usize) {
        if let (Some((t, start)), Some(engine)) = (self.tracer.as_mut(), self.engine.as_mut()) {
            let at = now.saturating_since(*start);
            t.sent(at, p, len);
            t.after(at, engine);
        }
    }

    /// Ends a client's handshake with an error for the connect call.
    pub(crate) fn fail_hello(&mut self, e: NetError) {
        if matches!(self.phase, Phase::Hello { .. }) {
            self.phase = Phase::Failed;
            if let Some(tx) = self.connect_tx.take() {
                let _ = tx.send(Err(e));
            }
        }
    }

    /// Client: the server's cookie. Only the first Retry counts: answering a second one
    /// (provoked by our own repeated Initial) would start a second handshake the server
    /// does not know.
    pub(crate) fn on_retry(
        &mut self,
        cfg: &EndpointConfig,
        now: Instant,
        own_id: u32,
        token: &[u8],
    ) {
        let Phase::Hello {
            initial,
            payload,
            pattern,
            tries,
            next,
            copy_at,
            cookie_seen,
            ..
        } = &mut self.phase
        else {
            return;
        };
        // The cookie answers the Initial: its copy is not needed any more.
        *copy_at = None;
        if *cookie_seen {
            return;
        }
        *cookie_seen = true;
        // The same message 1 again, now with the token: the Noise state stays as it is.
        *initial = envelope::initial(cfg.secure(), cfg.cipher, *pattern, own_id, token, payload);
        *tries = 0;
        *next = now;
    }

    /// Client: the server's handshake answer. Returns false if it did not authenticate.
    pub(crate) fn on_handshake(
        &mut self,
        cfg: &EndpointConfig,
        now: Instant,
        payload: &[u8],
    ) -> bool {
        let Phase::Hello {
            hs,
            tries,
            sent,
            first_sent,
            ..
        } = &mut self.phase
        else {
            return true; // a repeated answer after we opened: harmless
        };
        // Karn's rule: only an answer to the one Initial sent is an RTT sample. After
        // several, the time since the first is an upper bound on the round trip, and it
        // seeds the engine's RTT: a path slower than the Initials' 0.5 s repeat (a
        // satellite hop) would otherwise start from the 1 s initial RTO and retransmit
        // its first flight before the first ACK could return (RFC 6298 §5.7 raises the
        // RTO to 3 s for the same reason). An overestimate only makes the first timeouts
        // late until real samples arrive, one round trip later.
        let rtt = Some(if *tries == 1 {
            now.saturating_since(*sent)
        } else {
            now.saturating_since(*first_sent)
        });
        let mut plain = [0u8; 1024];
        let (params, sealer) = match hs.take() {
            Some(mut h) => match h.read_message(payload, &mut plain) {
                Ok(n) => (
                    ServerParams::decode(&plain[..n]),
                    Sealer::from_handshake(*h).expect("handshake finished"),
                ),
                Err(_) => {
                    *hs = Some(h);
                    return false;
                }
            },
            None if !cfg.secure() => (ServerParams::decode(payload), Sealer::insecure()),
            None => return false, // an answer before we sent message 1
        };
        let Some(params) = params else {
            self.fail_hello(NetError::BadParams);
            return true;
        };
        let scheme = crate::params::engine_scheme(&cfg.scheme, &params.send);
        let peer = params.opening.to_peer(rtt);
        let mut engine_cfg = cfg.engine_config(scheme);
        engine_cfg.resume = cfg
            .path_cache
            .as_ref()
            .and_then(|c| c.lookup(self.origin.ip()));
        let mut engine = Engine::established(engine_cfg, &params.send, &peer);
        engine.set_peer_conn_id(params.server_id);
        self.peer_id = params.server_id;
        self.last_recv = now;
        self.announce = true;
        self.open(engine, sealer);
        self.start_trace(cfg, now, false, params.server_id);
        if let Some(tx) = self.connect_tx.take() {
            let _ = tx.send(Ok(()));
        }
        true
    }

    /// A data packet for this connection, arriving from `from`. Returns true if it carried
    /// data that did not advance the in-order stream (a gap: the answer is a duplicate ACK
    /// or a SACK update, which must go out before the next datagram is read).
    ///
    /// An authentic packet from an address other than the peer's is processed like any
    /// other (only the peer holds the key), and if it is the newest packet so far it
    /// starts a validation of that address: the connection moves there once the address
    /// echoes a challenge (NAT rebinding, a restarted relay). Until then nothing but the
    /// challenge is sent to it.
    pub(crate) fn on_data(
        &mut self,
        now: Instant,
        from: SocketAddr,
        pn: u64,
        body: &[u8],
        stats: &mut EndpointStats,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) -> bool {
        let (Phase::Open, true, Some(sealer)) =
            (&self.phase, self.engine.is_some(), self.sealer.as_ref())
        else {
            stats.unexpected += 1;
            return false;
        };
        if body.len() > MAX_BODY {
            stats.malformed += 1;
            return false;
        }
        if !self.replay.check(pn) {
            stats.replayed += 1;
            return false;
        }
        let mut plain = [0u8; MAX_BODY];
        let Some(n) = sealer.open(pn, body, &mut plain) else {
            stats.auth_failed += 1;
            return false;
        };
        let newest = self.replay.is_newest(pn);
        self.replay.mark(pn);
        self.last_recv = now;
        // Only a client that received our handshake answer can seal: its address is
        // proven, the engine's held output may go, and the answer need not be repeated
        // (a copy of the Initial from now on is somebody else's).
        self.unvalidated = None;
        self.hello = None;
        self.packets_in += 1;
        // Control first: a path response must be checked against the challenge it
        // answers, before this same packet could prompt another challenge.
        let control = n > 0 && plain[0] == control::MARKER;
        if control {
            self.on_control(from, &plain[..n], stats, out);
        }
        if from != self.peer && newest {
            self.challenge_path(now, from, stats, out);
        }
        if control {
            return false;
        }
        let engine = self.engine.as_mut().expect("checked above");
        let before = engine.readable();
        match (n > 0, self.tracer.as_mut()) {
            (false, _) => {}
            // Traced: parsed once, for the trace and the engine.
            (true, Some((t, start))) => match tcpfec_proto::Packet::parse(&plain[..n]) {
                Ok(p) => {
                    let at = now.saturating_since(*start);
                    t.received(at, &p, n);
                    engine.handle_packet(now, p);
                    t.after(at, engine);
                }
                Err(_) => stats.bad_inner += 1,
            },
            (true, None) => {
                if engine.handle_datagram(now, &plain[..n]).is_err() {
                    stats.bad_inner += 1;
                }
            }
        }
        let engine = self.engine.as_mut().expect("checked above");
        n > crate::pacer::UNPACED_MAX && engine.readable() == before
    }

    /// A sealed control message from `from`.
    fn on_control(
        &mut self,
        from: SocketAddr,
        msg: &[u8],
        stats: &mut EndpointStats,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        match Control::parse(msg) {
            Some(Control::Close { code, reason }) => {
                if self.error.is_none() {
                    self.error = Some(NetError::PeerClosed { code, reason });
                }
                if let Some(e) = self.engine.as_mut() {
                    e.abort();
                }
            }
            // Answer to where the challenge came from: that is the path being tested.
            Some(Control::PathChallenge(nonce)) => {
                let d = self.seal(&Control::PathResponse(nonce).encode());
                self.push(from, d, stats, out);
            }
            Some(Control::PathResponse(nonce)) => {
                if self
                    .path_probe
                    .as_ref()
                    .is_some_and(|p| p.addr == from && p.nonce == nonce)
                {
                    self.path_probe = None;
                    self.peer = from;
                    stats.migrations += 1;
                }
            }
            None => stats.bad_inner += 1,
        }
    }

    /// Sends a challenge to `from`, at most once per [`PATH_PROBE_INTERVAL`] per address,
    /// so a burst of packets from the new address draws one challenge, not one each; a
    /// lost challenge is sent again when the next newest packet from there arrives.
    fn challenge_path(
        &mut self,
        now: Instant,
        from: SocketAddr,
        stats: &mut EndpointStats,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        // The same address keeps its nonce (a response to an earlier copy still counts,
        // however long the round trip); only a different address gets a new one.
        let nonce = match &self.path_probe {
            Some(p) if p.addr == from && now < p.sent + PATH_PROBE_INTERVAL => return,
            Some(p) if p.addr == from => p.nonce,
            _ => {
                let mut nonce = [0u8; 8];
                getrandom::getrandom(&mut nonce).expect("OS random source");
                nonce
            }
        };
        let d = self.seal(&Control::PathChallenge(nonce).encode());
        self.push(from, d, stats, out);
        stats.path_challenges_sent += 1;
        self.path_probe = Some(PathProbe {
            addr: from,
            nonce,
            sent: now,
        });
    }

    /// Queues a datagram of this connection for `to`.
    fn push(
        &mut self,
        to: SocketAddr,
        d: Vec<u8>,
        stats: &mut EndpointStats,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
    ) {
        stats.datagrams_out += 1;
        stats.bytes_out += d.len() as u64;
        self.packets_out += 1;
        out.push((to, d));
    }

    fn seal(&mut self, plain: &[u8]) -> Vec<u8> {
        let sealer = self.sealer.as_ref().expect("open connection");
        let pn = self.next_pn;
        self.next_pn += 1;
        let mut d = vec![0u8; DATA_HEADER + plain.len() + sealer.overhead()];
        envelope::data_header(&mut d, self.peer_id, pn);
        let n = sealer.seal(pn, plain, &mut d[DATA_HEADER..]);
        d.truncate(DATA_HEADER + n);
        d
    }

    /// Sends `msg` (a close) a few times and ends the connection on this side.
    fn send_close(
        &mut self,
        msg: &Control,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
        stats: &mut EndpointStats,
    ) {
        let plain = msg.encode();
        for _ in 0..CLOSE_COPIES {
            let d = self.seal(&plain);
            self.push(self.peer, d, stats, out);
        }
        if let (Control::Close { code, .. }, None) = (msg, &self.error) {
            self.error = Some(NetError::ClosedHere(*code));
        }
        if let Some(e) = self.engine.as_mut() {
            e.abort();
        }
    }

    /// Runs timers and emits datagrams into `out`. Returns the next deadline and whether
    /// the connection can be forgotten.
    pub(crate) fn poll(
        &mut self,
        cfg: &EndpointConfig,
        now: Instant,
        out: &mut Vec<(SocketAddr, Vec<u8>)>,
        stats: &mut EndpointStats,
    ) -> (Option<Instant>, bool) {
        match &mut self.phase {
            Phase::Failed => return (None, true),
            Phase::Hello {
                initial,
                tries,
                next,
                copy_at,
                deadline,
                cookie_seen,
                sent,
                first_sent,
                ..
            } => {
                if now >= *deadline {
                    let e = NetError::NoAnswer {
                        peer: self.peer,
                        waited: cfg.handshake_timeout,
                        cookie_seen: *cookie_seen,
                    };
                    self.fail_hello(e);
                    return (None, true);
                }
                let send = if now >= *next {
                    *next = now + HELLO_RTO * (1 << (*tries).min(4));
                    if *tries == 0 {
                        *first_sent = now;
                    }
                    *tries += 1;
                    *sent = now;
                    *copy_at = Some(now + INITIAL_COPY_AFTER);
                    true
                } else {
                    // The copy belongs to the same try: an answer to either is still an
                    // RTT sample (within the copy's 10 ms).
                    copy_at.take_if(|t| now >= *t).is_some()
                };
                if send {
                    stats.datagrams_out += 1;
                    stats.bytes_out += initial.len() as u64;
                    out.push((self.peer, initial.clone()));
                }
                let wake = copy_at.map_or(*next, |t| t.min(*next));
                return (Some(wake.min(*deadline)), false);
            }
            Phase::Open => {}
        }
        if let Some(u) = &self.unvalidated {
            if now >= u.deadline {
                stats.unvalidated_expired += 1;
                return (None, true);
            }
            // Nothing but the handshake answer goes to an address not yet proven: the
            // engine's output waits (the client speaks first, at once, see `announce`).
            return (Some(u.deadline), false);
        }
        let idle = cfg.idle_timeout;
        if let Some(msg) = self.close.take() {
            self.send_close(&msg, out, stats);
        }
        let engine = self.engine.as_mut().expect("open connection");
        if engine.poll_timeout().is_some_and(|t| t <= now) {
            engine.handle_timeout(now);
        }
        if self.detached {
            while engine.read_chunk().is_some() {}
        }
        if self.error.is_none()
            && !engine.is_closed()
            && now.saturating_since(self.last_recv) >= idle
        {
            self.error = Some(NetError::PeerTimeout(idle));
            engine.abort();
        }
        match engine.pacing_rate() {
            Some(rate) => self.pacer.set_controller_rate(rate),
            None => {
                let mss = engine.config().mss as f64;
                self.pacer.set_rate(
                    engine.cwnd() * mss,
                    engine.stats().srtt,
                    engine.cwnd() < engine.ssthresh(),
                )
            }
        }

        let mut next: Option<Instant> = None;
        let mut plain = [0u8; MAX_BODY];
        let mut budget = SEND_BUDGET;
        loop {
            if budget == 0 {
                next = Some(now);
                break;
            }
            if let Some(t) = self.pacer.delay(now) {
                next = Some(t);
                break;
            }
            let engine = self.engine.as_mut().expect("open connection");
            let emitted = if self.tracer.is_some() {
                // Traced: the packet itself goes to the trace, not a parse of its bytes.
                engine.poll_packet(now).map(|p| {
                    let r = p.emit(&mut plain);
                    if let Ok(n) = r {
                        self.trace_sent(now, &p, n);
                    }
                    r
                })
            } else {
                engine.poll_transmit(now, &mut plain)
            };
            match emitted {
                None => break,
                Some(Err(_)) => stats.bad_inner += 1,
                Some(Ok(n)) => {
                    let d = self.seal(&plain[..n]);
                    self.pacer.on_sent(d.len());
                    stats.datagrams_out += 1;
                    stats.bytes_out += d.len() as u64;
                    self.packets_out += 1;
                    out.push((self.peer, d));
                    self.last_send = now;
                    budget -= 1;
                }
            }
        }
        if let Some((t, _)) = self.tracer.as_mut() {
            // The round's trace records go to the writer thread together.
            let _ = t.flush();
        }
        let engine = self.engine.as_mut().expect("open connection");
        let closed = engine.is_closed();
        // The client's first authentic packet validates its address at the server; if
        // the engine had nothing to send this round, a keep-alive does it.
        let announce = std::mem::take(&mut self.announce) && self.last_send != now;
        if !closed && (announce || now.saturating_since(self.last_send) >= idle / 4) {
            // Keep-alive: an empty sealed packet proves we are alive without touching the
            // engine, so an idle tunnel is not mistaken for a dead peer.
            let d = self.seal(&[]);
            stats.keepalives_sent += 1;
            stats.datagrams_out += 1;
            stats.bytes_out += d.len() as u64;
            out.push((self.peer, d));
            self.last_send = now;
        }
        let engine = self.engine.as_mut().expect("open connection");
        if closed && self.error.is_none() {
            match engine.error() {
                Some(ConnError::Reset) => self.error = Some(NetError::Reset),
                Some(ConnError::HandshakeTimeout) => self.error = Some(NetError::PeerTimeout(idle)),
                Some(ConnError::BlockRefused) => self.error = Some(NetError::BlockRefused),
                None => {}
            }
        }
        let readable = engine.readable() > 0 || engine.peer_finished() || closed;
        if readable {
            if let Some(w) = self.read_waker.take() {
                w.wake();
            }
        }
        if engine.write_capacity() > 0 || closed {
            if let Some(w) = self.write_waker.take() {
                w.wake();
            }
        }
        if closed {
            return (None, self.detached);
        }
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: Instant| n.min(t)));
            }
        };
        consider(engine.poll_timeout());
        consider(Some(self.last_recv + idle));
        consider(Some(self.last_send + idle / 4));
        (next, false)
    }
}
