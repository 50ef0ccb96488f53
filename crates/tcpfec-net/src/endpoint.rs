//! The UDP endpoint: one socket, many connections told apart by connection id, and one
//! driver task that feeds datagrams and timers to the engines and sends what they produce.
//!
//! All connection state sits behind one mutex shared by the driver and the [`Stream`]
//! handles (`crate::shared`); the driver never holds it across an `await`.

use crate::clock::Clock;
use crate::conn::{Conn, Phase, Unvalidated};
use crate::cookie::CookieJar;
use crate::crypto::{self, Sealer};
use crate::envelope::{self, Envelope, RejectReason};
use crate::error::NetError;
use crate::first_message::{self, FirstMessages};
use crate::gro;
use crate::gso;
use crate::params::{ClientParams, Opening, ServerParams};
use crate::shard::{self, Shard};
use crate::shared::{Accepted, Shared, State};
use crate::stats::EndpointStats;
use crate::stream::Stream;
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tcpfec_proto::{Endpoint as Engine, Instant};
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot, Notify};

pub use crate::config::{EndpointConfig, RetryPolicy, DEFAULT_MSS, MAX_RTO, MAX_UNVALIDATED};

/// A tcpfec endpoint: connects out, accepts in (if a server), or both. It has one UDP
/// socket, or, for a server asked for several shards, one per shard on the same port
/// (`shard`), each with its own connections and driver task so that several
/// connections run on several cores.
pub struct Endpoint {
    /// The shards; a client and a one-shard server have exactly one.
    shards: Vec<Arc<Shared>>,
    accept_rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Accepted>>,
    drivers: Vec<tokio::task::JoinHandle<()>>,
}

impl Endpoint {
    /// A client endpoint on an ephemeral port of the unspecified address of `peer_family`.
    pub async fn client(cfg: EndpointConfig) -> io::Result<Endpoint> {
        Self::bind("0.0.0.0:0".parse().expect("address"), cfg, false).await
    }

    /// An endpoint on one socket bound to `addr`; `server` endpoints accept connections.
    pub async fn bind(addr: SocketAddr, cfg: EndpointConfig, server: bool) -> io::Result<Endpoint> {
        Self::bind_sharded(addr, cfg, server, 1).await
    }

    /// A server on `shards` sockets sharing `addr` (at least one). Incoming connections
    /// spread over the shards by the kernel's hash of the client's address; a single
    /// connection uses one of them. Refused, like a plain bind, if `addr` is in use.
    pub async fn server(
        addr: SocketAddr,
        cfg: EndpointConfig,
        shards: usize,
    ) -> io::Result<Endpoint> {
        Self::bind_sharded(addr, cfg, true, shards.max(1)).await
    }

    async fn bind_sharded(
        addr: SocketAddr,
        cfg: EndpointConfig,
        server: bool,
        count: usize,
    ) -> io::Result<Endpoint> {
        let sockets = shard::bind(addr, count).await?;
        let count = sockets.len();
        let (tx, rx) = mpsc::unbounded_channel();
        let first_messages = Arc::new(Mutex::new(FirstMessages::default()));
        let shards: Vec<Arc<Shared>> = sockets
            .into_iter()
            .enumerate()
            .map(|(index, socket)| {
                crate::sockopt::grow_buffers(&socket);
                let gro = gro::enable(&socket);
                let notify = Arc::new(Notify::new());
                Arc::new(Shared {
                    state: Mutex::new(State {
                        conns: HashMap::new(),
                        by_client: HashMap::new(),
                        accept_tx: server.then(|| tx.clone()),
                        jar: CookieJar::new(),
                        stats: EndpointStats::default(),
                        outbox: Vec::new(),
                        accepted: Vec::new(),
                        unvalidated: 0,
                        closing: false,
                    }),
                    notify: notify.clone(),
                    clock: Clock::new(),
                    cfg: cfg.clone(),
                    socket,
                    gro,
                    rounds: AtomicU64::new(0),
                    shard: Arc::new(Shard::new(index, count, notify)),
                    max_unvalidated: MAX_UNVALIDATED.div_ceil(count),
                    first_messages: first_messages.clone(),
                })
            })
            .collect();
        for s in &shards {
            s.shard
                .join(shards.iter().map(|s| Arc::downgrade(&s.shard)).collect());
        }
        let drivers = shards
            .iter()
            .map(|s| tokio::spawn(drive(s.clone())))
            .collect();
        Ok(Endpoint {
            shards,
            accept_rx: tokio::sync::Mutex::new(rx),
            drivers,
        })
    }

    /// The socket's local address (all shards share it).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.shards[0].socket.local_addr()
    }

    /// How many shards (sockets and driver tasks) this endpoint has.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Endpoint-wide counters (dropped packets by reason, datagrams in and out), summed
    /// over the shards.
    pub fn stats(&self) -> EndpointStats {
        self.shards
            .iter()
            .map(|s| s.lock().stats)
            .fold(EndpointStats::default(), |a, b| a + b)
    }

    /// Connections this endpoint holds now, in any phase (handshake, open, closing).
    pub fn connection_count(&self) -> usize {
        self.shards.iter().map(|s| s.lock().conns.len()).sum()
    }

    /// Each shard's own counters, in shard order.
    pub fn shard_stats(&self) -> Vec<EndpointStats> {
        self.shards.iter().map(|s| s.lock().stats).collect()
    }

    /// Waits for the next incoming connection (servers only; `None` otherwise).
    pub async fn accept(&self) -> Option<Stream> {
        let (shared, id, peer) = self.accept_rx.lock().await.recv().await?;
        Some(Stream::new(shared, id, peer))
    }

    /// Opens a connection to `peer`: the handshake (after a cookie round trip if the
    /// server asks for one), then a stream on which data may flow at once.
    pub async fn connect(&self, peer: SocketAddr) -> Result<Stream, NetError> {
        let shared = &self.shards[0];
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut st = shared.lock();
            let id = st.fresh_id(&shared.shard);
            let now = shared.clock.now();
            let (payload, hs, pattern) = hello_payload(&shared.cfg);
            let initial = envelope::initial(
                shared.cfg.secure(),
                shared.cfg.cipher,
                pattern,
                id,
                &[],
                &payload,
            );
            let mut c = Conn::new(peer, 0, now);
            c.phase = Phase::Hello {
                initial,
                payload,
                pattern,
                sent: now,
                first_sent: now,
                tries: 0,
                next: now,
                copy_at: None,
                deadline: now + shared.cfg.handshake_timeout,
                cookie_seen: false,
                hs,
            };
            c.connect_tx = Some(tx);
            st.conns.insert(id, c);
            id
        };
        shared.notify.notify_one();
        match rx.await {
            Ok(Ok(())) => Ok(Stream::new(shared.clone(), id, peer)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(NetError::EndpointClosed),
        }
    }

    /// Marks every open connection to close with `code`, at once: from here on they send
    /// no data, and a stream dropped afterwards sends no FIN (its peer would read the end
    /// of a stream, not the reason). [`Endpoint::close_all`] waits for the messages.
    pub fn begin_close_all(&self, code: crate::control::CloseCode, reason: &str) {
        self.begin_close_where(|_| true, code, reason, |_, _| {});
    }

    /// [`Endpoint::begin_close_all`] for the connections `which` picks; returns how many.
    /// `tally` gets each shard's count while its lock is still held: once the lock is
    /// released the shard's driver may send the close and forget it.
    fn begin_close_where(
        &self,
        which: impl Fn(&Conn) -> bool,
        code: crate::control::CloseCode,
        reason: &str,
        tally: impl Fn(&mut crate::shared::State, usize),
    ) -> usize {
        let mut closed = 0;
        for shared in &self.shards {
            {
                let mut st = shared.lock();
                let mut n = 0;
                for c in st.conns.values_mut() {
                    if c.engine.is_some() && c.error.is_none() && c.close.is_none() && which(c) {
                        c.close = Some(crate::control::Control::Close {
                            code,
                            reason: reason.to_string(),
                        });
                        n += 1;
                    }
                }
                tally(&mut st, n);
                closed += n;
            }
            shared.notify.notify_one();
        }
        closed
    }

    /// Server: replaces the authorized keys (a reload, on SIGHUP) for every shard. The live
    /// connections of peers no longer listed are closed with [`CloseCode::Revoked`]; the
    /// others go on, under their new names if those changed. Returns how many were closed,
    /// or an error if this endpoint was not started with an authorized-keys list.
    ///
    /// [`CloseCode::Revoked`]: crate::control::CloseCode::Revoked
    pub fn reload_authorized_keys(&self, keys: crate::AuthorizedKeys) -> Result<usize, String> {
        let cfg = &self.shards[0].cfg;
        let Some(list) = cfg.identity.as_ref().and_then(|i| i.authorized.as_ref()) else {
            return Err("this endpoint accepts no authorized-keys list".into());
        };
        *list.write().unwrap_or_else(|p| p.into_inner()) = keys.clone();
        let revoked = |c: &Conn| c.peer_key.is_some_and(|k| keys.name_of(&k).is_none());
        let closed = self.begin_close_where(
            revoked,
            crate::control::CloseCode::Revoked,
            "the server no longer accepts this key",
            |st, n| st.stats.revoked += n as u64,
        );
        for shared in &self.shards {
            let mut st = shared.lock();
            for c in st.conns.values_mut() {
                if let Some(name) = c.peer_key.and_then(|k| keys.name_of(&k)) {
                    c.peer_name = Some(name.to_string());
                }
            }
        }
        Ok(closed)
    }

    /// Closes every open connection with `code` (the peers report the reason at once
    /// instead of waiting for their idle timeout) and waits, at most `limit`, until the
    /// close messages have been handed to the socket.
    pub async fn close_all(&self, code: crate::control::CloseCode, reason: &str, limit: Duration) {
        self.begin_close_all(code, reason);
        // Once no close is pending and the outbox is empty, every close is in a batch.
        self.flushed_after(limit, |st| {
            st.conns.values().all(|c| c.close.is_none()) && st.outbox.is_empty()
        })
        .await;
    }

    /// Waits, at most `limit`, until every connection is done both ways — its own data
    /// and end acknowledged, its peer's end read — and the acknowledgement of that end
    /// has been handed to the socket; true if they all are. Call after the streams have
    /// finished. Unlike [`Endpoint::wait_idle`] it does not wait out the engines' linger
    /// (two RTOs, there to answer a peer whose last acknowledgement was lost), so a
    /// command can exit as soon as its work is confirmed.
    pub async fn wait_done(&self, limit: Duration) -> bool {
        // The acknowledgement of the peer's end is made by the engine poll that follows.
        self.flushed_after(limit, |st| {
            st.conns.values().all(|c| match &c.engine {
                Some(e) => e.is_closed() || (e.all_acked() && e.peer_finished()),
                None => true,
            })
        })
        .await
    }

    /// Waits, at most `limit` in all, until `ready` holds on every shard and then until
    /// that shard's driver has finished one more round, so what the state asked for by
    /// then (a close, an acknowledgement) has been handed to the socket; true if every
    /// shard got there.
    async fn flushed_after(&self, limit: Duration, ready: impl Fn(&State) -> bool) -> bool {
        let end = tokio::time::Instant::now() + limit;
        for shared in &self.shards {
            if !flushed_after(shared, end, &ready).await {
                return false;
            }
        }
        true
    }

    /// Waits until every connection has closed, at most `limit`; true if they all did.
    /// Call after dropping the streams so final ACKs and FINs still go out.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        let end = tokio::time::Instant::now() + limit;
        loop {
            if self.shards.iter().all(|s| s.lock().conns.is_empty()) {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            // Polling is acceptable here: this runs once at exit, not on the data path.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// One shard's part of [`Endpoint::flushed_after`], waiting until `end` at most.
async fn flushed_after(
    shared: &Shared,
    end: tokio::time::Instant,
    ready: &impl Fn(&State) -> bool,
) -> bool {
    let mut round = None;
    loop {
        let sent = shared.rounds.load(Ordering::Acquire);
        match round {
            // `ready` held while round `r` was current: the next engine poll and batch
            // happen in a later round, finished once the count passes `r`.
            Some(r) if sent > r => return true,
            Some(_) => {}
            None => {
                if ready(&shared.lock()) {
                    round = Some(sent);
                    shared.notify.notify_one();
                }
            }
        }
        if tokio::time::Instant::now() >= end {
            return false;
        }
        // Polling is acceptable here: this runs once at exit, not on the data path.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for (shared, driver) in self.shards.iter().zip(&self.drivers) {
            let mut st = shared.lock();
            // Connections still open when the endpoint goes (a command exiting once its
            // work is confirmed) have learnt their path too.
            for c in st.conns.values() {
                c.save_path(&shared.cfg);
            }
            st.closing = true;
            st.accept_tx = None;
            drop(st);
            shared.notify.notify_one();
            if shared.lock().conns.is_empty() {
                driver.abort();
            }
        }
    }
}

/// The client's first handshake message: Noise message 1 carrying its parameters (or the
/// plain parameters when insecure), and the Noise state that reads the answer.
fn hello_payload(
    cfg: &EndpointConfig,
) -> (Vec<u8>, Option<Box<snow::HandshakeState>>, crypto::Pattern) {
    let engine = cfg.engine_config(&cfg.scheme);
    let params = ClientParams {
        sent_at_ms: first_message::wall_clock_ms(),
        send: cfg.scheme.clone(),
        want: cfg.peer_scheme.clone(),
        opening: Opening::of(&engine),
    }
    .encode();
    if cfg.secure() {
        let (m, h, pattern) = crypto::first_message(&cfg.credentials(), cfg.cipher, &params);
        (m, Some(Box::new(h)), pattern)
    } else {
        (params, None, crypto::Pattern::Psk)
    }
}

/// The driver task: runs until the endpoint is dropped and its connections are done.
async fn drive(shared: Arc<Shared>) {
    let mut buf = vec![0u8; 65_536];
    let mut batch: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    loop {
        let (deadline, done, accepted, accept_tx) = {
            let forwarded = shared.shard.take_inbox();
            let mut st = shared.lock();
            let now = shared.clock.now();
            for (from, d) in &forwarded {
                handle_datagram(&shared, &mut st, now, *from, d);
            }
            let next = poll_all(&shared, &mut st, now);
            std::mem::swap(&mut batch, &mut st.outbox);
            let accepted = std::mem::take(&mut st.accepted);
            let tx = (!accepted.is_empty())
                .then(|| st.accept_tx.clone())
                .flatten();
            (next, st.closing && st.conns.is_empty(), accepted, tx)
        };
        for (id, peer) in accepted {
            if let Some(tx) = &accept_tx {
                let _ = tx.send((shared.clone(), id, peer));
            }
        }
        send_batch(&shared.socket, &batch).await;
        batch.clear();
        shared.rounds.fetch_add(1, Ordering::Release);
        if done {
            return;
        }
        let sleep_to = deadline
            .map(|d| shared.clock.to_tokio(d))
            .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            biased;
            r = gro::recv(&shared.socket, &mut buf, shared.gro) => {
                let mut st = shared.lock();
                let mut next = r;
                // Drain what is already queued before running the engines again. Each run
                // is stamped when it was read: the receiver's loss-run meter takes the
                // smallest one-way delay it sees as the path's, and a run that arrived
                // while this thread was descheduled mid-drain, stamped with the drain's
                // start, read up to 9 ms below the path's delay on a busy 2-core host.
                // Every later packet then looked queued, every loss congestion, and
                // `auto` fell from 41 to 10 Mb/s (50 Mb/s, RTT 20 ms, 5 % loss).
                for _ in 0..256 {
                    let Ok(run) = next else { break };
                    let now = shared.clock.now();
                    for d in run.datagrams(&buf) {
                        on_datagram(&shared, &mut st, now, run.from, d);
                    }
                    next = gro::try_recv(&shared.socket, &mut buf, shared.gro);
                }
            }
            _ = tokio::time::sleep_until(sleep_to) => {}
            _ = shared.notify.notified() => {}
        }
    }
}

/// Sends a batch of datagrams, joining runs of equal-sized ones for the same peer into
/// segmented sends where the OS offers them. A send error (unreachable host, full buffer)
/// is a lost packet to the engine, not an error of the endpoint.
async fn send_batch(socket: &UdpSocket, batch: &[(SocketAddr, Vec<u8>)]) {
    let mut i = 0;
    while i < batch.len() {
        let (to, first) = (&batch[i].0, &batch[i].1);
        let seg = first.len();
        let mut j = i + 1;
        let mut total = seg;
        if gso::enabled() {
            while j < batch.len()
                && j - i < gso::MAX_SEGMENTS
                && batch[j].0 == *to
                && batch[j].1.len() <= seg
                && total + batch[j].1.len() <= gso::MAX_TOTAL
            {
                let short = batch[j].1.len() < seg;
                total += batch[j].1.len();
                j += 1;
                if short {
                    break; // only the last segment of a run may be shorter
                }
            }
        }
        if j - i == 1 {
            let _ = socket.send_to(first, *to).await;
        } else {
            // On the stack: this runs for every batch, and a run is at most 64 datagrams.
            let mut parts = [IoSlice::new(&[]); gso::MAX_SEGMENTS];
            for (p, (_, d)) in parts.iter_mut().zip(&batch[i..j]) {
                *p = IoSlice::new(d);
            }
            let _ = gso::send_run(socket, *to, &parts[..j - i], seg).await;
        }
        i = j;
    }
}

/// Runs timers and collects transmissions of every connection; returns the next deadline.
fn poll_all(shared: &Shared, st: &mut State, now: Instant) -> Option<Instant> {
    let mut next: Option<Instant> = None;
    let mut dead = Vec::new();
    let State {
        conns,
        outbox,
        stats,
        ..
    } = st;
    for (&id, c) in conns.iter_mut() {
        let (t, remove) = c.poll(&shared.cfg, now, outbox, stats);
        if let Some(t) = t {
            next = Some(next.map_or(t, |n: Instant| n.min(t)));
        }
        if remove {
            dead.push(id);
        }
    }
    let closed = !dead.is_empty();
    for id in dead {
        if let Some(c) = st.conns.remove(&id) {
            c.save_path(&shared.cfg);
            st.by_client.remove(&(c.origin, c.peer_id));
            if c.unvalidated.is_some() {
                st.unvalidated -= 1;
            }
        }
    }
    if closed {
        crate::memory::release_freed(now);
    }
    next
}

/// Handles one datagram received on this shard's socket.
fn on_datagram(shared: &Shared, st: &mut State, now: Instant, from: SocketAddr, b: &[u8]) {
    st.stats.datagrams_in += 1;
    st.stats.bytes_in += b.len() as u64;
    handle_datagram(shared, st, now, from, b);
}

/// Handles one datagram, received here or forwarded by another shard (counted there).
fn handle_datagram(shared: &Shared, st: &mut State, now: Instant, from: SocketAddr, b: &[u8]) {
    let Some(env) = envelope::parse(b) else {
        st.stats.malformed += 1;
        return;
    };
    match env {
        Envelope::Initial {
            secure,
            cipher,
            pattern,
            client_id,
            token,
            payload,
        } => {
            let hello = Hello {
                secure,
                cipher,
                pattern,
                client_id,
                token,
                payload,
                datagram: b,
            };
            on_initial(shared, st, now, from, hello)
        }
        Envelope::Retry { client_id, token } => {
            let Some(c) = st.conns.get_mut(&client_id).filter(|c| c.peer == from) else {
                st.stats.unexpected += 1;
                return;
            };
            c.on_retry(&shared.cfg, now, client_id, token);
        }
        Envelope::Handshake { client_id, payload } => {
            let Some(c) = st.conns.get_mut(&client_id).filter(|c| c.peer == from) else {
                st.stats.unexpected += 1;
                return;
            };
            if !c.on_handshake(&shared.cfg, now, payload) {
                st.stats.auth_failed += 1;
            }
        }
        Envelope::Reject {
            client_id,
            reason,
            server_key,
        } => {
            let Some(c) = st.conns.get_mut(&client_id).filter(|c| c.peer == from) else {
                st.stats.unexpected += 1;
                return;
            };
            c.fail_hello(match reason {
                RejectReason::BadKey => NetError::WrongKey,
                RejectReason::ModeMismatch => NetError::ModeMismatch,
                RejectReason::BadParams => NetError::BadParams,
                RejectReason::Damaged => NetError::Damaged,
                RejectReason::ClockSkew => NetError::ClockSkew,
                RejectReason::WrongServerKey => NetError::ServerKeyMismatch {
                    offered: server_key.expect("parsed with the key"),
                },
                RejectReason::UnknownPeer => NetError::UnknownPeer,
                RejectReason::IdentityRequired => NetError::IdentityRequired,
                RejectReason::NoServerIdentity => NetError::NoServerIdentity,
            });
        }
        Envelope::Data { dst_id, pn, body } => {
            let State {
                conns,
                stats,
                outbox,
                accepted,
                unvalidated,
                ..
            } = st;
            let Some(c) = conns.get_mut(&dst_id) else {
                // A client whose address changed may reach another shard than the one
                // holding its connection.
                if shared.shard.forward(dst_id, from, b) {
                    stats.forwarded += 1;
                } else {
                    stats.unknown_conn += 1;
                }
                return;
            };
            // Without encryption nothing proves a packet from another address comes from
            // the peer: such a connection cannot move.
            if c.peer != from && !shared.cfg.secure() {
                stats.wrong_source += 1;
                return;
            }
            // In-order data may be acknowledged once per batch of datagrams (a cumulative
            // ACK loses nothing). Data past a gap is answered before the next datagram is
            // read: the sender's loss detection counts duplicate ACKs, and one ACK per
            // batch would hide losses until a timeout.
            let unproven = c.unvalidated.is_some();
            let gap = c.on_data(now, from, pn, body, stats, outbox);
            if unproven && c.unvalidated.is_none() {
                // The client's first authentic packet: its stream is handed out now.
                *unvalidated -= 1;
                accepted.push((dst_id, c.peer));
            }
            if gap {
                let _ = c.poll(&shared.cfg, now, outbox, stats);
            }
        }
    }
}

/// A client's Initial as the server reads it.
struct Hello<'a> {
    secure: bool,
    cipher: crypto::Cipher,
    pattern: crypto::Pattern,
    client_id: u32,
    token: &'a [u8],
    payload: &'a [u8],
    /// The whole datagram (its size counts in the anti-amplification budget; another
    /// shard may need it).
    datagram: &'a [u8],
}

/// Server side of the cookie round and the handshake. A connection opened without a
/// token holds its output and its stream until the client proves its address, and at most
/// `MAX_UNVALIDATED` such exist before new clients are asked for a token; every answer is
/// smaller than the Initial it answers.
fn on_initial(shared: &Shared, st: &mut State, now: Instant, from: SocketAddr, hello: Hello<'_>) {
    let Hello {
        secure,
        cipher,
        pattern,
        client_id,
        token,
        payload,
        datagram,
    } = hello;
    let initial_len = datagram.len();
    if st.accept_tx.is_none() {
        st.stats.unexpected += 1;
        return;
    }
    let secs = now.as_nanos() / 1_000_000_000;
    let digest = blake3::hash(payload);
    if let Some(&id) = st.by_client.get(&(from, client_id)) {
        // A repeated Initial: our answer was lost. Send the same answer again, within
        // three times what the address sent if it is not proven yet.
        let c = st.conns.get_mut(&id);
        let again = c.and_then(|c| {
            let (d, a) = c.hello.as_ref()?;
            if *d != digest {
                return None;
            }
            match c.unvalidated.as_mut() {
                Some(u) => {
                    u.received += initial_len as u64;
                    u.may_send(a.len()).then(|| {
                        u.sent += a.len() as u64;
                        a.clone()
                    })
                }
                None => Some(a.clone()),
            }
        });
        match again {
            Some(a) => st.push(from, a),
            None => st.stats.unexpected += 1,
        }
        return;
    }
    // Address validation: a token proves the address; without one the handshake goes on
    // unless the server is busy with unproven clients (or always asks), and the client's
    // first authentic packet proves it later.
    let proven = !token.is_empty();
    let ask_for_token = if proven {
        let valid = st.jar.check(token, from, client_id, secs);
        if !valid {
            st.stats.bad_token += 1;
        }
        !valid
    } else {
        st.unvalidated >= shared.max_unvalidated || shared.cfg.retry == RetryPolicy::Always
    };
    if ask_for_token {
        st.stats.retries_sent += 1;
        let t = st.jar.issue(from, client_id, secs);
        st.push(from, envelope::retry(client_id, &t));
        return;
    }
    let reject = |st: &mut State, why: RejectReason| {
        st.stats.rejects_sent += 1;
        let own = shared.cfg.identity.as_ref().map(|i| &i.own.public);
        st.push(from, envelope::reject(client_id, why, own));
    };
    if secure != shared.cfg.secure() {
        reject(st, RejectReason::ModeMismatch);
        return;
    }
    let mut plain = [0u8; 1024];
    let mut hs = None;
    let mut peer_key = None;
    let params = if secure {
        if let Some(why) = shared.cfg.refuses_pattern(pattern) {
            reject(st, why);
            return;
        }
        let creds = shared.cfg.credentials();
        match crypto::read_first_message(&creds, pattern, cipher, payload, &mut plain) {
            Ok(m) => {
                hs = Some(m.state);
                peer_key = m.client_key;
                ClientParams::decode(&plain[..m.len])
            }
            Err(e) => {
                st.stats.auth_failed += 1;
                reject(
                    st,
                    match e {
                        crypto::FirstMessageError::WrongKey => RejectReason::BadKey,
                        crypto::FirstMessageError::WrongServerKey => RejectReason::WrongServerKey,
                        crypto::FirstMessageError::Damaged => RejectReason::Damaged,
                    },
                );
                return;
            }
        }
    } else {
        ClientParams::decode(payload)
    };
    // A key pair the server does not list is refused here, before anything about the
    // client is stored: no connection, no entry in the replay register.
    let peer_name = match (&peer_key, &shared.cfg.identity) {
        (Some(key), Some(id)) => match id.name_of(key) {
            Some(name) => Some(name),
            None => {
                st.stats.unknown_peer += 1;
                reject(st, RejectReason::UnknownPeer);
                return;
            }
        },
        _ => None,
    };
    let Some(params) = params else {
        reject(st, RejectReason::BadParams);
        return;
    };
    let id = st.fresh_id(&shared.shard);
    // A copy of a first message someone recorded opens nothing: only an authenticated
    // message can get here, so the register holds genuine messages only.
    if hs.is_some() {
        let mut digest16 = [0u8; 16];
        digest16.copy_from_slice(&digest.as_bytes()[..16]);
        let admitted = shared
            .first_messages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .admit(
                digest16,
                params.sent_at_ms,
                first_message::wall_clock_ms(),
                id,
            );
        match admitted {
            Ok(()) => {}
            Err(first_message::Refusal::Replayed { owner }) => {
                // The same client, moved to a new address before it had our answer (a
                // NAT rebinding mid-handshake), repeats its Initial from there: the
                // shard that holds its connection answers it again, to the new address
                // (the answer is smaller than the Initial). A copy sent by anyone else
                // gets the same answer, which only the client can read, and opens
                // nothing; once the client has spoken, copies get nothing.
                if let Some(owner) = owner {
                    if shared.shard.forward(owner, from, datagram) {
                        st.stats.forwarded += 1;
                        return;
                    }
                    let again = st.conns.get(&owner).and_then(|c| {
                        let (d, a) = c.hello.as_ref()?;
                        (*d == digest).then(|| a.clone())
                    });
                    if let Some(a) = again {
                        st.push(from, a);
                        return;
                    }
                }
                st.stats.initial_replayed += 1;
                return;
            }
            Err(first_message::Refusal::Stale { .. }) => {
                st.stats.initial_stale += 1;
                reject(st, RejectReason::ClockSkew);
                return;
            }
        }
    }
    // One connection per token: a captured Initial replayed within the token's lifetime
    // is dropped unanswered (a rejected handshake keeps its token, so the client's
    // repeat still gets the reason).
    if proven && !st.jar.consume(token, secs) {
        st.stats.token_reused += 1;
        return;
    }
    let send = params
        .want
        .clone()
        .unwrap_or_else(|| shared.cfg.scheme.clone());
    let engine_scheme = crate::params::engine_scheme(&send, &params.send);
    let engine_cfg = shared.cfg.engine_config(engine_scheme);
    let answer = ServerParams {
        server_id: id,
        send: send.clone(),
        opening: Opening::of(&engine_cfg),
    }
    .encode();
    let (msg2, sealer) = match hs {
        Some(mut h) => {
            let mut m = vec![0u8; 1024];
            let n = h
                .write_message(&answer, &mut m)
                .expect("handshake message fits");
            m.truncate(n);
            (m, Sealer::from_handshake(h).expect("handshake finished"))
        }
        None => (answer, Sealer::insecure()),
    };
    let reply = envelope::handshake(client_id, &msg2);
    let peer = params.opening.to_peer(None);
    let mut engine = Engine::established(engine_cfg, &params.send, &peer);
    engine.set_peer_conn_id(client_id);
    let mut c = Conn::new(from, client_id, now);
    c.open(engine, sealer);
    c.start_trace(&shared.cfg, now, true, id);
    c.hello = Some((digest, reply.clone()));
    c.peer_key = peer_key;
    c.peer_name = peer_name;
    if !proven {
        c.unvalidated = Some(Unvalidated {
            received: initial_len as u64,
            sent: reply.len() as u64,
            deadline: now + shared.cfg.idle_timeout,
        });
        st.unvalidated += 1;
    }
    st.conns.insert(id, c);
    st.by_client.insert((from, client_id), id);
    st.stats.handshakes_accepted += 1;
    st.push(from, reply);
    // The engines start established: data flows as soon as the client has our answer.
    // The stream is handed out once the client's address is proven.
    if proven {
        st.accepted.push((id, from));
    }
}
