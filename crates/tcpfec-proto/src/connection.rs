//! The sans-IO connection: handshake, teardown, and the glue between sender and receiver.
//!
//! Drive it from outside: feed packets with [`Connection::handle_packet`] (or raw bytes with
//! [`Connection::handle_datagram`]), drain [`Connection::poll_packet`] until it returns
//! `None`, and call [`Connection::handle_timeout`] at [`Connection::poll_timeout`].

use crate::config::{Config, Scheme};
use crate::fec::channel::ChannelEstimate;
use crate::fec::sizing::CodeSize;
use crate::fec::FecConfig;
use crate::receiver::Receiver;
use crate::sender::{AckInfo, Outgoing, Sender};
use crate::stats::Stats;
use crate::time::Instant;
use crate::wire::{Flags, Packet, WindowInfo, WireError};
use bytes::Bytes;

/// Most doublings of the linger for copies of the peer's FIN: the wait for the next copy
/// is at most 64 RTOs.
const MAX_LINGER_DOUBLINGS: u32 = 5;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Waiting for a SYN (server side).
    Listen,
    /// SYN sent, waiting for SYN-ACK (client side).
    SynSent,
    /// SYN received and SYN-ACK sent, waiting for the final ACK (server side).
    SynReceived,
    /// Data may flow (including while either side is closing).
    Established,
    /// Finished, reset, or failed; see [`Connection::error`].
    Closed,
}

/// Why a connection ended abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnError {
    /// The peer sent RST, or this side aborted.
    Reset,
    /// No answer to the handshake after the configured number of attempts.
    HandshakeTimeout,
    /// FECTCP: the receiver refused the block's parameters (a block larger than its
    /// receive window, symbols too small to decode within it, or parameters it cannot
    /// read) and reset the transfer.
    BlockRefused,
}

impl core::fmt::Display for ConnError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConnError::Reset => write!(f, "connection reset"),
            ConnError::HandshakeTimeout => write!(f, "handshake timed out: no answer from peer"),
            ConnError::BlockRefused => write!(
                f,
                "the receiver refused the FECTCP block: it cannot decode it within its receive window"
            ),
        }
    }
}

impl std::error::Error for ConnError {}

/// Data packets in a row that may leave out the FEC feedback for want of room before a
/// pure ACK carries it (`Connection::fit`): the peer's `auto` re-sizes its code every 64
/// measured packets, so a report at most this many packets old is fresh enough.
const FEEDBACK_WITHHELD_MAX: u32 = 16;

/// One end of a tcpfec connection.
#[derive(Debug)]
pub struct Connection {
    cfg: Config,
    state: State,
    sender: Sender,
    receiver: Receiver,
    peer_conn_id: u32,
    send_syn: bool,
    send_rst: bool,
    handshake_deadline: Option<Instant>,
    handshake_tries: u32,
    peer_syn_ts: u32,
    /// The peer's latest timestamp. Echoed on every packet with receive-window
    /// auto-tuning (RFC 7323 echoes it from any segment), so that the peer measures its
    /// receive-side round trip on our data even when it sends nothing but ACKs; without,
    /// only by a sender that has received no data segment yet, whose echo would
    /// otherwise be empty: `auto`'s receiver reads from it how far its clock gains on
    /// ours (`loss_runs`). An endpoint that has received data echoes the timestamp of
    /// its latest in-order segment, as the papers' engine does, and its peer's round
    /// trips are measured as before.
    peer_ts_latest: Option<u32>,
    linger_deadline: Option<Instant>,
    /// Copies of the peer's FIN that arrived while lingering (each doubles the linger).
    linger_restarts: u32,
    error: Option<ConnError>,
    partial_read: Option<Bytes>,
    acks_sent: u64,
    peer_fec: Option<Option<FecConfig>>,
    /// FEC feedback left out of full data packets (`fit`) since a packet last carried it.
    feedback_withheld: u32,
}

/// What a handshake outside the engine learnt about the peer, in place of its SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerOpening {
    /// The largest payload the peer accepts.
    pub mss: Option<u16>,
    /// The peer's receive window in bytes.
    pub window: u32,
    /// The peer's engine uses SACK (its SYN would carry SACK-permitted).
    pub sack: bool,
    /// A round-trip time measured by that handshake, if any (seeds the RTO).
    pub rtt: Option<core::time::Duration>,
}

impl Connection {
    fn new(cfg: Config, state: State) -> Self {
        let mut receiver = Receiver::new(
            cfg.initial_recv_window(),
            cfg.delayed_ack,
            cfg.delayed_ack_timeout,
        )
        .with_window_growth(cfg.recv_window);
        receiver.trace = crate::trace::TraceLog::new(cfg.trace);
        Connection {
            sender: Sender::new(&cfg),
            receiver,
            cfg,
            state,
            peer_conn_id: 0,
            send_syn: false,
            send_rst: false,
            handshake_deadline: None,
            handshake_tries: 0,
            peer_syn_ts: 0,
            peer_ts_latest: None,
            linger_deadline: None,
            linger_restarts: 0,
            error: None,
            partial_read: None,
            acks_sent: 0,
            peer_fec: None,
            feedback_withheld: 0,
        }
    }

    /// A client that opens the connection with a SYN on its first poll.
    pub fn client(cfg: Config) -> Self {
        let mut c = Self::new(cfg, State::SynSent);
        c.send_syn = true;
        c
    }

    /// A server waiting for the peer's SYN.
    pub fn server(cfg: Config) -> Self {
        Self::new(cfg, State::Listen)
    }

    /// A connection opened by a handshake outside the engine (the UDP driver's
    /// authenticated exchange), which settled what the SYNs would have: it starts
    /// established, and data may flow at once. Either side may call it.
    pub fn established(cfg: Config, peer_scheme: &Scheme, peer: &PeerOpening) -> Self {
        let mut c = Self::new(cfg, State::Established);
        c.peer_fec = Some(peer_scheme.fec);
        c.open_with(peer.mss, peer.window, peer.sack);
        if let Some(rtt) = peer.rtt {
            c.sender.rtt.on_sample(rtt);
        }
        c
    }

    /// Sets the connection id written into every outgoing packet (chosen by the peer).
    pub fn set_peer_conn_id(&mut self, id: u32) {
        self.peer_conn_id = id;
    }

    /// Sets the scheme the peer sends with, when a handshake outside the engine negotiated
    /// it per direction: the receiver then decodes (and suppresses duplicate ACKs) for the
    /// peer's FEC rather than for this side's own scheme. Call before the SYN exchange.
    pub fn set_peer_scheme(&mut self, scheme: &Scheme) {
        self.peer_fec = Some(scheme.fec);
    }

    /// Current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The reason the connection closed abnormally, if it did.
    pub fn error(&self) -> Option<ConnError> {
        self.error
    }

    /// True when the connection is finished (normally or not) and may be dropped.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// The configuration this connection runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- application side -----

    /// Bytes `write` would accept now.
    pub fn write_capacity(&self) -> usize {
        if self.state == State::Closed {
            0
        } else {
            self.sender.write_capacity()
        }
    }

    /// Queues bytes for sending; returns how many were accepted (0 when the buffer is full).
    pub fn write(&mut self, data: Bytes) -> usize {
        if self.state == State::Closed {
            return 0;
        }
        self.sender.write(data)
    }

    /// Ends this side's byte stream once the queued bytes are sent.
    pub fn finish(&mut self) {
        self.sender.finish();
    }

    /// Aborts the connection: an RST goes out on the next poll.
    pub fn abort(&mut self) {
        if self.state != State::Closed {
            self.send_rst = true;
            self.state = State::Closed;
            self.error = Some(ConnError::Reset);
        }
    }

    /// Sets ECN-Echo on outgoing ACKs until the peer answers with CWR (RFC 3168): the
    /// receiver-side hook through which an ACK policy signals congestion.
    pub fn echo_congestion(&mut self) {
        self.receiver.latch_ece();
    }

    /// Takes the next chunk of received bytes, in order.
    pub fn read_chunk(&mut self) -> Option<Bytes> {
        self.partial_read
            .take()
            .or_else(|| self.receiver.read_chunk())
    }

    /// Copies received bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let Some(mut chunk) = self.read_chunk() else {
                break;
            };
            let take = chunk.len().min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&chunk.split_to(take));
            n += take;
            if !chunk.is_empty() {
                self.partial_read = Some(chunk);
            }
        }
        n
    }

    /// The receive buffer in use, bytes: the most this side holds for the application
    /// (grows with `Config::recv_window_initial`'s auto-tuning).
    pub fn receive_buffer(&self) -> u32 {
        self.receiver.window_limit()
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.receiver.readable() + self.partial_read.as_ref().map_or(0, |b| b.len())
    }

    /// True once the peer has finished its stream and every byte of it has been read.
    pub fn peer_finished(&self) -> bool {
        self.receiver.fin_delivered() && self.readable() == 0
    }

    /// True once everything written (and the FIN, if `finish` was called) is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.sender.all_acked()
    }

    // ----- driver side -----

    /// Parses raw bytes and handles the packet.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), WireError> {
        let p = Packet::parse(bytes)?;
        self.handle_packet(now, p);
        Ok(())
    }

    /// Writes the next packet to send into `buf`; returns its length.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<Result<usize, WireError>> {
        self.poll_packet(now).map(|p| p.emit(buf))
    }

    /// Handles an arriving packet.
    pub fn handle_packet(&mut self, now: Instant, p: Packet) {
        if p.flags.contains(Flags::RST) {
            if !matches!(self.state, State::Listen | State::Closed) {
                self.state = State::Closed;
                self.error = Some(ConnError::Reset);
            }
            return;
        }
        let syn = p.flags.contains(Flags::SYN);
        let ack = p.flags.contains(Flags::ACK);
        match self.state {
            State::Closed => {}
            State::Listen => {
                if syn && !ack {
                    self.negotiate(&p);
                    self.peer_syn_ts = p.ts_val;
                    self.state = State::SynReceived;
                    self.send_syn = true;
                }
            }
            State::SynSent => {
                if syn && ack {
                    self.negotiate(&p);
                    if p.ts_ecr != 0 {
                        let rtt = now.timestamp_micros().wrapping_sub(p.ts_ecr);
                        self.sender
                            .rtt
                            .on_sample(core::time::Duration::from_micros(rtt as u64));
                    }
                    self.state = State::Established;
                    self.handshake_deadline = None;
                    self.receiver.request_ack();
                }
            }
            State::SynReceived => {
                if syn && !ack {
                    self.send_syn = true; // our SYN-ACK was lost: send it again
                } else if ack && !syn {
                    self.state = State::Established;
                    self.handshake_deadline = None;
                    self.on_established_packet(now, p);
                }
            }
            State::Established => {
                if syn {
                    self.receiver.request_ack(); // duplicate SYN-ACK: our ACK was lost
                } else {
                    self.on_established_packet(now, p);
                }
            }
        }
    }

    fn negotiate(&mut self, p: &Packet) {
        self.open_with(p.mss, p.window, p.flags.contains(Flags::SACK_PERMITTED));
    }

    /// Applies what the peer's opening announced: its MSS, window and SACK support.
    fn open_with(&mut self, peer_mss: Option<u16>, peer_window: u32, peer_sack: bool) {
        let sack = self.cfg.scheme.uses_sack() && peer_sack;
        self.sender.configure(peer_mss, peer_window, sack);
        if sack {
            self.receiver.enable_sack(self.cfg.max_sack_blocks);
        }
        if let Some(f) = self.peer_fec.unwrap_or(self.cfg.scheme.fec) {
            self.receiver.enable_fec(f);
        }
    }

    fn on_established_packet(&mut self, now: Instant, p: Packet) {
        if p.ts_val != 0 {
            self.peer_ts_latest = Some(p.ts_val);
        }
        if let Some(n) = p.number {
            self.receiver.on_numbered(now, n, p.ts_val, p.ts_ecr);
        }
        if let (Some(info), Some(group)) = (p.repair, p.fec) {
            self.receiver.on_repair(group, info, p.payload);
            return;
        }
        if let Some(w) = p.window_repair {
            self.receiver.on_window_repair(p.seg, w, &p.payload);
            return;
        }
        let occupies = p.occupies_segment();
        let lingering = self.linger_deadline.is_some();
        if p.flags.contains(Flags::ACK) {
            self.sender.on_ack(
                now,
                &AckInfo {
                    ack: p.ack,
                    window: p.window,
                    ts_ecr: p.ts_ecr,
                    sack: p.sack.as_slice(),
                    ece: p.flags.contains(Flags::ECE),
                    pure: !occupies,
                    fec_feedback: p.fec_feedback,
                },
            );
        }
        if occupies {
            let fin = p.flags.contains(Flags::FIN);
            let cwr = p.flags.contains(Flags::CWR);
            if !p.payload.is_empty() {
                self.receiver.on_echo(now, p.ts_ecr);
            }
            self.receiver
                .on_segment(now, p.seg, p.payload, fin, p.ts_val, cwr, p.fec);
        }
        if self.linger_deadline.is_none()
            && self.receiver.fin_delivered()
            && self.sender.fin_acked()
        {
            // Both streams are done. Linger so a retransmitted FIN still gets its ACK.
            // The peer's first copy may come after its initial RTO (1 s, RFC 6298) rather
            // than after one like ours: a peer that sent nothing but its FIN has no round
            // trip measured. Two of our RTOs alone (400 ms on a short path) end before
            // that copy comes, and the peer would resend its FIN to nobody.
            self.linger_deadline = Some(now + self.linger_rto() * 2);
        } else if lingering && occupies && p.flags.contains(Flags::FIN) {
            // The peer sent its FIN again: our ACK of it was lost. The receiver ACKs this
            // copy; stay for the next one, which the peer's doubled timeout puts twice as
            // far off (TCP restarts TIME-WAIT on such a copy, RFC 9293 section 3.10.7.4).
            self.linger_restarts = (self.linger_restarts + 1).min(MAX_LINGER_DOUBLINGS);
            self.linger_deadline = Some(now + self.linger_rto() * (2 << self.linger_restarts));
        }
    }

    /// The longest the peer may wait before it sends its FIN again: its RTO, which is
    /// ours on the same path, or its initial one if it measured none.
    fn linger_rto(&self) -> core::time::Duration {
        self.sender.rtt.rto().max(self.cfg.initial_rto)
    }

    /// The next packet to send, if any. Call until it returns `None`.
    pub fn poll_packet(&mut self, now: Instant) -> Option<Packet> {
        let p = self.next_packet(now)?;
        if p.fec_feedback.is_some() {
            self.feedback_withheld = 0;
        }
        Some(p)
    }

    fn next_packet(&mut self, now: Instant) -> Option<Packet> {
        if self.send_rst {
            self.send_rst = false;
            return Some(self.packet(now, Flags::RST, self.sender.nxt(), Bytes::new()));
        }
        match self.state {
            State::Closed | State::Listen => None,
            State::SynSent | State::SynReceived => self.poll_handshake(now),
            State::Established => {
                match self.sender.poll(now) {
                    Some(Outgoing::Segment(s)) => {
                        let mut flags = Flags::empty();
                        if s.fin {
                            flags.insert(Flags::FIN);
                        }
                        if s.cwr {
                            flags.insert(Flags::CWR);
                        }
                        // Whether the receiver owed an ACK that this packet now carries
                        // (asked only where `fit` may need it).
                        let owed =
                            self.cfg.max_packet_len.is_some() && self.receiver.wants_ack(now);
                        let mut p = self.packet(now, flags, s.seg, s.payload);
                        p.fec = s.fec;
                        p.number = self.sender.take_number();
                        self.fit(&mut p, owed);
                        return Some(p);
                    }
                    Some(Outgoing::Repair(r)) => {
                        // Repairs carry no acknowledgement state of their own: a pending
                        // ACK still goes out on the next data or pure ACK packet.
                        return Some(Packet {
                            conn_id: self.peer_conn_id,
                            seg: r.group.first,
                            ts_val: timestamp(now),
                            fec: Some(r.group),
                            repair: Some(r.info),
                            number: self.sender.take_number(),
                            payload: r.payload,
                            ..Packet::default()
                        });
                    }
                    Some(Outgoing::WindowRepair(r)) => {
                        return Some(Packet {
                            conn_id: self.peer_conn_id,
                            seg: r.first,
                            ts_val: timestamp(now),
                            window_repair: Some(WindowInfo {
                                count: r.count,
                                key: r.key,
                            }),
                            number: self.sender.take_number(),
                            payload: r.payload,
                            ..Packet::default()
                        });
                    }
                    None => {}
                }
                if self.receiver.wants_ack(now) {
                    self.acks_sent += 1;
                    return Some(self.packet(now, Flags::empty(), self.sender.nxt(), Bytes::new()));
                }
                None
            }
        }
    }

    fn poll_handshake(&mut self, now: Instant) -> Option<Packet> {
        if !self.send_syn {
            return None;
        }
        self.send_syn = false;
        self.handshake_tries += 1;
        let backoff = 1u32 << (self.handshake_tries - 1).min(6);
        self.handshake_deadline = Some(now + self.cfg.initial_rto * backoff);
        let mut flags = Flags::SYN;
        if self.cfg.scheme.uses_sack() {
            flags.insert(Flags::SACK_PERMITTED);
        }
        let server = self.state == State::SynReceived;
        if server {
            flags.insert(Flags::ACK);
        }
        Some(Packet {
            conn_id: self.peer_conn_id,
            flags,
            seg: 0,
            ack: 0,
            window: self.cfg.initial_recv_window(),
            ts_val: timestamp(now),
            ts_ecr: if server { self.peer_syn_ts } else { 0 },
            mss: Some(self.cfg.mss),
            ..Packet::default()
        })
    }

    fn packet(&mut self, now: Instant, mut flags: Flags, seg: u64, payload: Bytes) -> Packet {
        let a = self.receiver.take_ack();
        flags.insert(Flags::ACK);
        if a.ece {
            flags.insert(Flags::ECE);
        }
        Packet {
            conn_id: self.peer_conn_id,
            flags,
            seg,
            ack: a.ack,
            window: a.window,
            ts_val: timestamp(now),
            ts_ecr: if self.cfg.recv_window_initial.is_some() || a.ts_ecr == 0 {
                self.peer_ts_latest.unwrap_or(a.ts_ecr)
            } else {
                a.ts_ecr
            },
            mss: None,
            sack: a.sack,
            fec: None,
            repair: None,
            window_repair: None,
            fec_feedback: a.fec_feedback,
            transfer: None,
            number: None,
            payload,
        }
    }

    /// Keeps a data packet within [`Config::max_packet_len`]: the piggybacked SACK blocks
    /// (oldest first) and then the FEC feedback that do not fit are left out. Both are
    /// rebuilt from the receiver's state for every packet, so leaving them out of one loses
    /// nothing; what matters is when a pure ACK carries them. Only where the receiver owed
    /// an ACK anyway (`owed`: the ACK this data packet took the place of), so that a pure
    /// ACK goes out exactly when it would without data to ride on: the peer counts pure
    /// ACKs at an unmoved cumulative ACK as duplicates, and the receiver withholds those
    /// while FEC can still repair its holes (forcing one ACK per trimmed packet let three
    /// trimmed packets start a needless fast recovery). And, with no hole to SACK, once
    /// the feedback has been left out of [`FEEDBACK_WITHHELD_MAX`] packets in a row, so
    /// the peer's `auto` keeps measuring. A pure ACK per trimmed packet tripled the pure
    /// ACKs of a transfer both ways under `auto` (156 where piggybacking needed 52, beside
    /// about 370 data packets, `tests/established.rs`).
    fn fit(&mut self, p: &mut Packet, owed: bool) {
        let Some(max) = self.cfg.max_packet_len else {
            return;
        };
        let holes = !p.sack.is_empty();
        let mut left_out = false;
        while p.encoded_len() > max && !p.sack.is_empty() {
            let n = p.sack.len() - 1;
            self.receiver.unreport(p.sack.as_slice()[n]);
            p.sack.truncate(n);
            left_out = true;
        }
        if p.encoded_len() > max && p.fec_feedback.take().is_some() {
            self.feedback_withheld = self.feedback_withheld.saturating_add(1);
            left_out = true;
        }
        let stale = !holes && self.feedback_withheld >= FEEDBACK_WITHHELD_MAX;
        if (left_out && owed) || stale {
            self.receiver.request_ack();
        }
    }

    /// When [`Connection::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut consider = |d: Option<Instant>| {
            if let Some(d) = d {
                t = Some(t.map_or(d, |x| x.min(d)));
            }
        };
        match self.state {
            State::SynSent | State::SynReceived => consider(self.handshake_deadline),
            State::Established => {
                consider(self.sender.timeout());
                consider(self.receiver.timeout());
                consider(self.linger_deadline);
            }
            _ => {}
        }
        t
    }

    /// Handles every timer that is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived
                if self.handshake_deadline.is_some_and(|d| d <= now) =>
            {
                self.handshake_deadline = None;
                if self.handshake_tries > self.cfg.syn_retries {
                    self.state = State::Closed;
                    self.error = Some(ConnError::HandshakeTimeout);
                } else {
                    self.send_syn = true;
                }
            }
            State::Established => {
                self.sender.on_timer(now);
                if self.linger_deadline.is_some_and(|d| d <= now) {
                    self.state = State::Closed;
                }
            }
            _ => {}
        }
    }

    // ----- observation -----

    /// Congestion window in segments.
    pub fn cwnd(&self) -> f64 {
        self.sender.cc.cwnd()
    }

    /// Slow-start threshold in segments.
    pub fn ssthresh(&self) -> f64 {
        self.sender.cc.ssthresh()
    }

    /// Redundancy of the next FEC group, (K + k)/K (1 without FEC).
    pub fn fec_redundancy(&self) -> f64 {
        self.sender.fec_redundancy()
    }

    /// The `auto` scheme's channel estimate and code in force (None for other schemes).
    pub fn auto_state(&self) -> Option<(ChannelEstimate, CodeSize)> {
        self.sender.auto_control().map(|a| (a.estimate(), a.code()))
    }

    /// Size of the FEC groups being formed now (0 without FEC).
    pub fn fec_group_size(&self) -> u16 {
        self.sender.fec_group_size()
    }

    /// Latest delivery-rate sample in payload bytes per second (see [`crate::rate`]).
    pub fn delivery_rate(&self) -> Option<f64> {
        self.sender.delivery_rate()
    }

    /// The controller's pacing rate in payload bytes per second; `None` for window-only
    /// schemes, which send as the window opens.
    pub fn pacing_rate(&self) -> Option<f64> {
        self.sender.cc.pacing_rate()
    }

    /// Segments believed in flight.
    pub fn pipe(&self) -> usize {
        self.sender.pipe()
    }

    /// The smallest RTT the sender has measured.
    pub fn min_rtt(&self) -> Option<core::time::Duration> {
        self.sender.rtt.min_rtt()
    }

    /// The sender's congestion state, for traces: `recovery` during fast recovery, else the
    /// controller's (`slow_start`, `congestion_avoidance`, or BBR's state).
    pub fn congestion_state(&self) -> &'static str {
        if self.sender.in_recovery {
            "recovery"
        } else {
            self.sender.cc.state_name()
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let s = &self.sender;
        let r = &self.receiver;
        let fec = r.fec_counts();
        Stats {
            data_packets_sent: s.data_packets_sent,
            retransmissions: s.retransmissions,
            payload_bytes_sent: s.payload_bytes_sent,
            bytes_acked: s.bytes_acked,
            acks_sent: self.acks_sent,
            fast_recoveries: s.fast_recoveries,
            timeouts: s.timeouts,
            tail_loss_probes: s.tail_loss_probes(),
            ecn_reductions: s.ecn_reductions,
            dup_acks_received: s.dup_acks_received,
            segments_received: r.segments_received,
            duplicate_segments: r.duplicate_segments,
            repairs_sent: s.repairs_sent,
            repairs_received: fec.0,
            repairs_unneeded: fec.1,
            recovered: fec.2,
            unrecoverable_groups: fec.3,
            dupacks_suppressed: fec.4,
            bytes_delivered: r.bytes_delivered,
            srtt: s.rtt.srtt(),
            mean_rtt: s.rtt.mean(),
            rto: s.rtt.rto(),
            delivery_rate: s.delivery_rate(),
            resume: s.resume_status(),
        }
    }

    /// Turns the collection of [`crate::TraceEvent`]s on or off.
    pub fn set_trace(&mut self, on: bool) {
        self.cfg.trace = on;
        self.sender.trace = crate::trace::TraceLog::new(on);
        self.receiver.trace = crate::trace::TraceLog::new(on);
    }

    /// Moves the [`crate::TraceEvent`]s recorded since the last call into `out` (nothing
    /// unless `Config::trace` is on).
    pub fn drain_trace(&mut self, out: &mut Vec<crate::TraceEvent>) {
        self.sender.trace.drain_into(out);
        self.receiver.trace.drain_into(out);
    }

    /// The path as this connection's sender saw it, to resume the next connection to the
    /// same peer from (`Config::resume`); `None` if it learnt too little.
    pub fn path_observation(&self) -> Option<crate::resume::SavedPath> {
        self.sender.path_observation(self.cfg.initial_window)
    }
}

fn timestamp(now: Instant) -> u32 {
    // Zero means "no timestamp" in ts_ecr, so never send it.
    now.timestamp_micros().max(1)
}
