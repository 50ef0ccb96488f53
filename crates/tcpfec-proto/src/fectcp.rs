//! FECTCP (Botos et al., seed 002; SPEC B1–B2): block transfers carried by a fountain code,
//! with no retransmissions at all.
//!
//! The application hands over a block (everything written before [`Fectcp::finish`], up to
//! 4 GiB). The sender emits RaptorQ symbols numbered 0, 1, 2, … as its window allows; a
//! lost symbol is never re-sent, the next one replaces it. The receiver acknowledges every
//! symbol with the highest symbol number seen so far (+1), which covers every earlier
//! symbol, received or not. Each symbol has a timer of (1 + β)(sRTT + σ_RTT); only a timer
//! expiry is a congestion signal: W_th = max(⌈W/2⌉, 2), W = max(⌈W/2⌉, 1). An isolated loss
//! never expires — the next symbol's ACK covers it. Once the receiver has rebuilt the
//! block it answers BACK until the sender stops.
//!
//! Like [`crate::Connection`] this is sans-IO: packets, time and application data are
//! handed in and out by the driver; [`crate::Endpoint`] adds the byte-level entry points.

use crate::config::{Config, FectcpParams};
use crate::connection::ConnError;
use crate::fec::fountain::{
    max_block, parameters, FountainDecoder, FountainEncoder, PAYLOAD_ID_LEN,
};
use crate::rtt::RttEstimator;
use crate::stats::Stats;
use crate::time::Instant;
use crate::wire::{Flags, Packet, TransferInfo};
use bytes::Bytes;
use core::time::Duration;
use std::collections::VecDeque;

/// The shortest symbol timeout (see `Fectcp::symbol_timeout`).
const MIN_SYMBOL_TIMEOUT: Duration = Duration::from_millis(1);

/// The smallest symbol a full-size block may use, bytes: bounds the decoder's symbol
/// count by the receive window (see `Fectcp::decoder_for`).
const MIN_SYMBOL_BYTES: u64 = 256;
/// Most source symbols in one block, whatever the window: RaptorQ's encoder and decoder
/// take about 2 kB per symbol besides the data (a 64 MiB block of 96-byte symbols took
/// 1.4 GB to encode).
const MAX_BLOCK_SYMBOLS: u64 = 1 << 16;

/// Source symbols a block may have under a receive window of `window` bytes: both ends
/// apply it, the sender to the blocks it fills, the receiver to those it decodes.
fn max_symbols(window: u32) -> u64 {
    (u64::from(window) / MIN_SYMBOL_BYTES).clamp(1024, MAX_BLOCK_SYMBOLS)
}

/// The sending half: the block being transferred and the window.
#[derive(Debug)]
struct Sending {
    id: u32,
    /// `None` for the empty block that ends an empty stream (one FIN packet at a time).
    encoder: Option<FountainEncoder>,
    next_symbol: u64,
    /// Symbols sent and not yet covered by an ACK: (number, send time), in send order.
    in_flight: VecDeque<(u64, Instant)>,
    /// The receiver has rebuilt the block.
    done: bool,
}

/// The receiving half: the decoder of the current transfer.
#[derive(Debug)]
struct Receiving {
    id: u32,
    decoder: Option<FountainDecoder>,
    highest: u64,
    decoded: bool,
}

/// One FECTCP endpoint (either end; a connection may carry blocks both ways).
#[derive(Debug)]
pub struct Fectcp {
    cfg: Config,
    params: FectcpParams,
    conn_id: u32,
    // --- sender ---
    pending: Vec<u8>,
    finish_requested: bool,
    next_id: u32,
    sending: Option<Sending>,
    cwnd: f64,
    ssthresh: f64,
    /// Symbols numbered below this were sent before the last window reduction.
    reduced_before: u64,
    /// Mean RTT and RTT variation (RFC 6298's estimator, as TCP uses it).
    rtt: RttEstimator,
    /// sRTT ← α·sRTT + (1 − α)·mean RTT, seconds.
    srtt: Option<f64>,
    // --- receiver ---
    receiving: Option<Receiving>,
    delivered: VecDeque<Bytes>,
    ack_due: bool,
    /// Transfers completed in each direction.
    blocks_delivered: u64,
    /// Symbols the last rebuilt block took.
    last_block_symbols: Option<u64>,
    /// `finish` has been called: this side's blocks are all handed over.
    finished: bool,
    /// Both directions are done: keep answering (BACK) until then, then close.
    linger_until: Option<Instant>,
    closed: bool,
    /// Why the transfer failed, if it did.
    error: Option<ConnError>,
    /// The receiver refused the current block's parameters: answer its symbols with RST.
    refuse_due: bool,
    /// The peer's receive window (from the handshake): blocks are no larger.
    peer_window: Option<u32>,
    stats: Stats,
}

impl Fectcp {
    /// An endpoint with `cfg` (its scheme's FECTCP parameters are used).
    pub fn new(cfg: Config) -> Self {
        let params = cfg.scheme.fountain.unwrap_or_default();
        let iw = cfg.initial_window.max(1) as f64;
        let rtt = RttEstimator::new(
            cfg.initial_rto,
            cfg.min_rto,
            cfg.max_rto,
            cfg.clock_granularity,
        );
        Fectcp {
            cfg,
            params,
            conn_id: 0,
            pending: Vec::new(),
            finish_requested: false,
            next_id: 1,
            sending: None,
            cwnd: iw,
            ssthresh: f64::INFINITY,
            reduced_before: 0,
            rtt,
            srtt: None,
            receiving: None,
            delivered: VecDeque::new(),
            ack_due: false,
            blocks_delivered: 0,
            last_block_symbols: None,
            finished: false,
            linger_until: None,
            closed: false,
            error: None,
            refuse_due: false,
            peer_window: None,
            stats: Stats::default(),
        }
    }

    /// Sets the connection id written into outgoing packets.
    pub fn set_peer_conn_id(&mut self, id: u32) {
        self.conn_id = id;
    }

    // ----- application side -----

    /// The peer's receive window, from the handshake: a block is no larger, as the
    /// receiver refuses one that is.
    pub fn set_peer_window(&mut self, window: u32) {
        self.peer_window = Some(window);
    }

    /// Why the transfer failed, if it did.
    pub fn error(&self) -> Option<ConnError> {
        self.error
    }

    /// Bytes the application may still add to the next block.
    pub fn write_capacity(&self) -> usize {
        if self.finish_requested || self.closed {
            return 0;
        }
        (self.block_limit() as usize).saturating_sub(self.pending.len())
    }

    /// The largest block, bytes: what its symbols can carry (small segments hold small
    /// symbols, and so a smaller block, see `max_block`) and the peer's window allows
    /// (without a handshake that told it, this side's own, which peers share). Encoding
    /// takes two to three times the block in memory: a block of a gigabyte of 96-byte
    /// symbols took the `engine` fuzz target past 2 GB.
    pub fn block_limit(&self) -> u64 {
        let window = self.peer_window.unwrap_or(self.cfg.recv_window);
        let symbol = (self.cfg.mss as usize)
            .saturating_sub(PAYLOAD_ID_LEN)
            .max(1) as u64;
        max_block(self.cfg.mss as usize)
            .min(u64::from(window))
            .min(max_symbols(window) * symbol)
    }

    /// True when the block being written has reached [`Fectcp::block_limit`]: this
    /// direction, one block, can take no more bytes (a writer waiting for room would
    /// wait forever).
    pub fn block_full(&self) -> bool {
        !self.finish_requested && !self.closed && self.write_capacity() == 0
    }

    /// Adds bytes to the next block; returns how many were taken.
    pub fn write(&mut self, data: Bytes) -> usize {
        let n = data.len().min(self.write_capacity());
        self.pending.extend_from_slice(&data[..n]);
        n
    }

    /// Ends the block: its transfer starts (once the previous one is done). A stream
    /// that ends without a byte still sends an (empty) block, so the peer sees its end.
    pub fn finish(&mut self) {
        let nothing_sent = self.sending.is_none();
        self.finished = true;
        if !self.pending.is_empty() || nothing_sent {
            self.finish_requested = true;
        }
    }

    /// Stops at once, sending nothing more.
    pub fn abort(&mut self) {
        self.closed = true;
    }

    /// True once both directions are done (after a short linger) or after `abort`.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The receive buffer, bytes (FECTCP does not auto-tune it).
    pub fn receive_buffer(&self) -> u32 {
        self.cfg.recv_window
    }

    /// Bytes of rebuilt blocks not read yet.
    pub fn readable(&self) -> usize {
        self.delivered.iter().map(|b| b.len()).sum()
    }

    /// Copies rebuilt bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let Some(front) = self.delivered.front_mut() else {
                break;
            };
            let k = front.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&front.split_to(k));
            n += k;
            if front.is_empty() {
                self.delivered.pop_front();
            }
        }
        n
    }

    /// The slow-start threshold, in symbols.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Starts the linger once this side's blocks are acknowledged and the peer's are read:
    /// the peer may still need a BACK for a late symbol.
    fn check_done(&mut self, now: Instant) {
        let own =
            self.finished && !self.finish_requested && self.sending.as_ref().is_none_or(|s| s.done);
        if own && self.peer_finished() && self.linger_until.is_none() {
            let srtt = self.srtt.unwrap_or(1.0);
            self.linger_until = Some(now + Duration::from_secs_f64((4.0 * srtt).max(1.0)));
        }
    }

    /// The next piece of a rebuilt block, if any.
    pub fn read_chunk(&mut self) -> Option<Bytes> {
        self.delivered.pop_front()
    }

    /// True once a whole block has been received and handed to the application.
    pub fn peer_finished(&self) -> bool {
        self.blocks_delivered > 0 && self.delivered.is_empty()
    }

    /// True when every block handed over has been acknowledged by BACK.
    pub fn all_acked(&self) -> bool {
        !self.finish_requested && self.sending.as_ref().is_none_or(|s| s.done)
    }

    /// Symbols the last rebuilt block took (its code overhead is this over its source
    /// symbol count).
    pub fn last_block_symbols(&self) -> Option<u64> {
        self.last_block_symbols
    }

    /// Congestion window in symbols.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Counters in the same form as a TCP connection's.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.srtt = self.srtt.map(Duration::from_secs_f64);
        s.mean_rtt = self.rtt.mean();
        s.rto = self.symbol_timeout();
        s
    }

    // ----- driver side -----

    /// Handles an arriving symbol or ACK.
    pub fn handle_packet(&mut self, now: Instant, p: Packet) {
        if self.closed {
            return;
        }
        if p.flags.contains(Flags::RST) {
            // The receiver refused our block: stop sending it.
            if self.sending.as_ref().is_some_and(|s| !s.done) {
                self.error = Some(ConnError::BlockRefused);
                self.closed = true;
            }
            return;
        }
        if p.flags.contains(Flags::ACK) {
            self.on_ack(now, &p);
        }
        if !p.payload.is_empty() {
            self.on_symbol(&p);
        } else if p.flags.contains(Flags::FIN) {
            self.on_empty_block(&p);
        }
        self.check_done(now);
    }

    /// The next packet to send: an ACK if one is due, else a symbol if the window allows.
    pub fn poll_packet(&mut self, now: Instant) -> Option<Packet> {
        if self.closed {
            return None;
        }
        self.check_done(now);
        if self.refuse_due {
            self.refuse_due = false;
            self.ack_due = false;
            return Some(Packet {
                conn_id: self.conn_id,
                flags: Flags::RST,
                ts_val: now.timestamp_micros().max(1),
                ..Packet::default()
            });
        }
        if self.ack_due {
            self.ack_due = false;
            return Some(self.ack_packet(now));
        }
        self.start_transfer_if_ready();
        // The receive window bounds the flight as in TCP (choice: the paper's header is
        // modelled on TCP's but its text names no window; without a bound, drop-tail
        // overflow that the next symbol's ACK covers never slows the sender down).
        let rwnd = (self.cfg.recv_window as usize / self.cfg.mss.max(1) as usize).max(1);
        let window = (self.cwnd.floor().max(1.0) as usize).min(rwnd);
        let conn_id = self.conn_id;
        let s = self.sending.as_mut()?;
        if s.done || s.in_flight.len() >= window {
            return None;
        }
        let Some(encoder) = s.encoder.as_ref() else {
            // The empty block: one FIN at a time until the receiver answers with BACK.
            if !s.in_flight.is_empty() {
                return None;
            }
            let n = s.next_symbol;
            s.next_symbol += 1;
            s.in_flight.push_back((n, now));
            return Some(Packet {
                conn_id,
                flags: Flags::BSYN | Flags::FIN,
                seg: n,
                ts_val: now.timestamp_micros().max(1),
                transfer: Some(TransferInfo {
                    id: s.id,
                    oti: [0; 12],
                }),
                ..Packet::default()
            });
        };
        let n = s.next_symbol;
        s.next_symbol += 1;
        s.in_flight.push_back((n, now));
        let payload = Bytes::from(encoder.symbol(n));
        self.stats.data_packets_sent += 1;
        self.stats.payload_bytes_sent += payload.len() as u64;
        let mut flags = Flags::empty();
        if n == 0 {
            flags.insert(Flags::BSYN);
        }
        Some(Packet {
            conn_id,
            flags,
            seg: n,
            ts_val: now.timestamp_micros().max(1),
            transfer: Some(TransferInfo {
                id: s.id,
                oti: encoder.oti(),
            }),
            payload,
            ..Packet::default()
        })
    }

    /// When [`Fectcp::handle_timeout`] must next be called: the oldest symbol's timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        let symbol = self.sending.as_ref().and_then(|s| {
            if s.done {
                None
            } else {
                s.in_flight.front().map(|&(_, t)| t + self.symbol_timeout())
            }
        });
        [symbol, self.linger_until].into_iter().flatten().min()
    }

    /// Expires the symbol timers that are due: one window reduction per round trip.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.linger_until.is_some_and(|t| t <= now) {
            self.closed = true;
            return;
        }
        let timeout = self.symbol_timeout();
        let Some(s) = self.sending.as_mut() else {
            return;
        };
        let mut reduce = false;
        while let Some(&(n, t)) = s.in_flight.front() {
            if t + timeout > now {
                break;
            }
            s.in_flight.pop_front();
            // Symbols sent before the last reduction belong to the window that was
            // already halved (choice: the paper halves per expiry; a burst would then
            // collapse the window to one symbol).
            reduce |= n >= self.reduced_before;
        }
        if reduce {
            let next = s.next_symbol;
            self.stats.timeouts += 1;
            let half = (self.cwnd / 2.0).ceil();
            self.ssthresh = half.max(2.0);
            self.cwnd = half.max(1.0);
            self.reduced_before = next;
        }
    }

    // ----- internals -----

    /// (1 + β)(sRTT + σ_RTT); the initial RTO before the first sample.
    fn symbol_timeout(&self) -> Duration {
        match self.srtt {
            // At least a millisecond: round trips measured as zero (a channel that
            // delivers at once) left a symbol's timer due again the moment its resend
            // armed it, and a driver sleeping until the next deadline spun.
            Some(srtt) => Duration::from_secs_f64(
                (1.0 + self.params.beta) * (srtt + self.rtt.rttvar().as_secs_f64()),
            )
            .max(MIN_SYMBOL_TIMEOUT),
            None => self.cfg.initial_rto,
        }
    }

    fn start_transfer_if_ready(&mut self) {
        let busy = self.sending.as_ref().is_some_and(|s| !s.done);
        if busy || !self.finish_requested {
            return;
        }
        let data = std::mem::take(&mut self.pending);
        self.finish_requested = false;
        let oti = parameters(data.len() as u64, self.cfg.mss as usize);
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.sending = Some(Sending {
            id,
            encoder: (!data.is_empty()).then(|| FountainEncoder::new(data, oti)),
            next_symbol: 0,
            in_flight: VecDeque::new(),
            done: false,
        });
        self.reduced_before = 0;
    }

    fn on_ack(&mut self, now: Instant, p: &Packet) {
        let Some(s) = self.sending.as_mut() else {
            return;
        };
        if s.done {
            return;
        }
        if p.flags.contains(Flags::BACK) && p.transfer.is_some_and(|t| t.id == s.id) {
            s.done = true;
            s.in_flight.clear();
            return;
        }
        if p.ack > s.next_symbol {
            return; // acknowledges symbols never sent
        }
        // The window slides past every symbol the ACK covers, received or lost; it grows
        // once per ACK, that is per symbol that reached the receiver (growing per covered
        // symbol would count lost ones and double the window whatever the loss).
        let mut sample = None;
        let mut covered = false;
        while let Some(&(n, t)) = s.in_flight.front() {
            if n >= p.ack {
                break;
            }
            s.in_flight.pop_front();
            covered = true;
            if n + 1 == p.ack {
                sample = Some(now.saturating_since(t));
            }
        }
        if covered {
            if self.cwnd < self.ssthresh {
                self.cwnd += 1.0;
            } else {
                self.cwnd += 1.0 / self.cwnd;
            }
        }
        if let Some(r) = sample {
            self.on_rtt_sample(r);
        }
    }

    fn on_rtt_sample(&mut self, r: Duration) {
        self.rtt.on_sample(r);
        let mean = self.rtt.srtt().expect("just sampled").as_secs_f64();
        let a = self.params.alpha;
        self.srtt = Some(match self.srtt {
            None => mean,
            Some(s) => a * s + (1.0 - a) * mean,
        });
    }

    /// The sender's stream ended without a byte: its one (empty) block is delivered.
    fn on_empty_block(&mut self, p: &Packet) {
        let Some(t) = p.transfer else {
            return;
        };
        self.ack_due = true;
        if self.receiving.as_ref().is_some_and(|r| r.id == t.id) {
            return; // a repeat: the BACK is sent again
        }
        self.receiving = Some(Receiving {
            id: t.id,
            decoder: None,
            highest: p.seg,
            decoded: true,
        });
        self.blocks_delivered += 1;
    }

    fn on_symbol(&mut self, p: &Packet) {
        let Some(t) = p.transfer else {
            return;
        };
        self.stats.segments_received += 1;
        self.ack_due = true;
        let fresh = self.receiving.as_ref().is_none_or(|r| r.id != t.id);
        if fresh {
            // A new transfer (its BSYN may have been lost: the id tells). Old ids are not
            // tracked beyond the last one, as transfers run one after the other.
            if self
                .receiving
                .as_ref()
                .is_some_and(|r| r.decoded && t.id < r.id)
            {
                return;
            }
            self.receiving = Some(Receiving {
                id: t.id,
                decoder: self.decoder_for(&t.oti),
                highest: p.seg,
                decoded: false,
            });
        }
        let r = self.receiving.as_mut().expect("just set");
        if r.decoder.is_none() && !r.decoded {
            // Parameters we cannot decode: the sender would stream symbols forever.
            self.refuse_due = true;
            return;
        }
        r.highest = r.highest.max(p.seg);
        if r.decoded {
            return;
        }
        let Some(dec) = r.decoder.as_mut() else {
            return;
        };
        if let Some(block) = dec.add(&p.payload) {
            self.last_block_symbols = Some(dec.symbols_received);
            r.decoded = true;
            r.decoder = None;
            self.stats.bytes_delivered += block.len() as u64;
            self.blocks_delivered += 1;
            self.delivered.push_back(Bytes::from(block));
        }
    }

    /// A decoder for a block with these parameters, if it can be decoded within this
    /// side's limits: the block fits the receive window, and its symbols are not so small
    /// that their count (and the decoder's memory per symbol) grows past
    /// [`max_symbols`]. A FECTCP block with 1-byte symbols would otherwise make the
    /// decoder take some 345 MB.
    fn decoder_for(&self, oti: &[u8; 12]) -> Option<FountainDecoder> {
        let params = raptorq::ObjectTransmissionInformation::deserialize(oti);
        let (len, symbol) = (params.transfer_length(), params.symbol_size().max(1) as u64);
        let window = self.cfg.recv_window;
        if len > u64::from(window) || len.div_ceil(symbol) > max_symbols(window) {
            return None;
        }
        FountainDecoder::new(oti, self.cfg.mss as usize).ok()
    }

    fn ack_packet(&mut self, now: Instant) -> Packet {
        self.stats.acks_sent += 1;
        let (ack, decoded, transfer) = match &self.receiving {
            Some(r) => (
                // Saturating: a symbol number off the wire may be the last one (found by
                // the engine fuzz target); such an ACK covers more than was ever sent and
                // the sender ignores it.
                r.highest.saturating_add(1),
                r.decoded,
                Some(TransferInfo {
                    id: r.id,
                    oti: [0; 12],
                }),
            ),
            None => (0, false, None),
        };
        let mut flags = Flags::ACK;
        if decoded {
            flags.insert(Flags::BACK);
        }
        Packet {
            conn_id: self.conn_id,
            flags,
            ack,
            ts_val: now.timestamp_micros().max(1),
            transfer,
            ..Packet::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Scheme;

    fn cfg() -> Config {
        Config {
            scheme: Scheme::parse("fectcp").unwrap(),
            ..Config::default()
        }
    }

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000_000)
    }

    /// Moves packets between two endpoints with a fixed delay, dropping symbols whose
    /// number `drop` selects; returns the sender and the symbols the receiver had taken
    /// when it rebuilt the block.
    fn transfer(len: usize, drop: impl Fn(u64) -> bool) -> (Fectcp, u64) {
        let data: Vec<u8> = (0..len).map(|i| (i * 13 + i / 5) as u8).collect();
        let (mut a, mut b) = (Fectcp::new(cfg()), Fectcp::new(cfg()));
        a.write(Bytes::from(data.clone()));
        a.finish();
        let mut wire = Vec::new();
        let mut got = Vec::new();
        let mut needed = 0;
        for t in 0..200_000u64 {
            step(&mut wire, t, &mut a, &mut b, &drop);
            while let Some(c) = b.read_chunk() {
                needed = b.last_block_symbols().expect("a block was rebuilt");
                got.extend_from_slice(&c);
            }
            if a.all_acked() && !got.is_empty() {
                assert_eq!(got, data);
                return (a, needed);
            }
        }
        panic!("transfer did not finish");
    }

    /// Packets on a 20 ms wire: (arrival ms, to `b`?, packet).
    type Wire = Vec<(u64, bool, Packet)>;

    /// Millisecond `t` of the wire between `a` and `b`: delivers what is due, fires the
    /// timers that are due, and sends what each has (`a`'s symbols that `drop` picks are
    /// lost).
    fn step(wire: &mut Wire, t: u64, a: &mut Fectcp, b: &mut Fectcp, drop: &impl Fn(u64) -> bool) {
        let now = ms(t);
        let (arrive, rest): (Wire, Wire) = std::mem::take(wire).into_iter().partition(|w| w.0 <= t);
        *wire = rest;
        for (_, to_b, p) in arrive {
            if to_b {
                b.handle_packet(now, p);
            } else {
                a.handle_packet(now, p);
            }
        }
        for e in [&mut *a, &mut *b] {
            if e.poll_timeout().is_some_and(|d| d <= now) {
                e.handle_timeout(now);
            }
        }
        while let Some(p) = a.poll_packet(now) {
            if !drop(p.seg) {
                wire.push((t + 20, true, p));
            }
        }
        while let Some(p) = b.poll_packet(now) {
            wire.push((t + 20, false, p));
        }
    }

    /// Runs `a` against `b` over the wire for `ms_total` milliseconds, nothing lost.
    fn exchange(a: &mut Fectcp, b: &mut Fectcp, ms_total: u64) {
        let mut wire = Vec::new();
        for t in 0..ms_total {
            step(&mut wire, t, a, b, &|_| false);
        }
    }

    /// A stream that ends without a byte still ends: the peer sees it finished, and the
    /// sender is acknowledged (before, `finish` on an empty stream sent nothing).
    #[test]
    fn an_empty_stream_ends_cleanly() {
        let (mut a, mut b) = (Fectcp::new(cfg()), Fectcp::new(cfg()));
        a.finish();
        exchange(&mut a, &mut b, 500);
        assert!(b.peer_finished(), "the receiver saw the end");
        assert_eq!(b.read_chunk(), None, "and no byte");
        assert!(a.all_acked() && a.error().is_none());
    }

    /// Block parameters the receiver cannot decode within its window (here: a block
    /// larger than it) are refused: the receiver resets the transfer, the sender stops
    /// with `BlockRefused` instead of sending symbols forever, and no decoder is built.
    #[test]
    fn a_block_the_receiver_cannot_hold_is_refused_and_the_sender_stops() {
        let mut a = Fectcp::new(cfg());
        let mut b = Fectcp::new(Config {
            recv_window: 100_000,
            ..cfg()
        });
        a.write(Bytes::from(vec![5u8; 300_000]));
        a.finish();
        exchange(&mut a, &mut b, 2000);
        assert_eq!(a.error(), Some(ConnError::BlockRefused));
        assert!(a.is_closed());
        let sent = a.stats().data_packets_sent;
        assert!(
            sent < 100,
            "{sent} symbols sent to a receiver that refused them"
        );
        assert!(b.receiving.as_ref().is_some_and(|r| r.decoder.is_none()));
        // Symbols of 1 byte for a 100 kB block would take 100 000 symbols, far over the
        // 1024 this window allows: refused before any decoder is built.
        let tiny = parameters(100_000, 5).serialize();
        assert!(b.decoder_for(&tiny).is_none());
        assert!(b
            .decoder_for(&parameters(90_000, 1350).serialize())
            .is_some());
        // A sender told the peer's window writes no larger block, and says so.
        let mut c = Fectcp::new(cfg());
        c.set_peer_window(1000);
        assert_eq!(c.write(Bytes::from(vec![0u8; 5000])), 1000);
        assert!(c.block_full());
    }

    #[test]
    fn a_block_crosses_a_lossy_path_without_retransmissions() {
        let (a, needed) = transfer(200_000, |n| n % 7 == 3);
        assert_eq!(a.stats().retransmissions, 0);
        // 200 000 bytes are 138 source symbols; RaptorQ needs at most a couple more.
        assert!(
            (138..=140).contains(&needed),
            "decoded after {needed} symbols"
        );
    }

    #[test]
    fn isolated_losses_are_rarely_a_congestion_signal_but_a_lost_flight_is() {
        // 1 in 10 symbols lost, ~50 losses: only those ending a slow-start flight, whose
        // cover comes with the next flight, can outlive their timer.
        let (a, _) = transfer(300_000, |n| n % 10 == 5);
        assert!(a.stats().timeouts <= 5, "{} timeouts", a.stats().timeouts);
        // A run of 300 consecutive symbols lost: a whole window's timers expire.
        let (a, _) = transfer(1_000_000, |n| (100..400).contains(&n));
        assert!(a.stats().timeouts >= 1);
    }

    #[test]
    fn the_last_symbol_number_is_acknowledged_without_wrapping() {
        let mut b = Fectcp::new(cfg());
        let oti = parameters(1000, 1460).serialize();
        b.handle_packet(
            ms(0),
            Packet {
                seg: u64::MAX,
                transfer: Some(TransferInfo { id: 1, oti }),
                payload: Bytes::from_static(&[0; 8]),
                ..Packet::default()
            },
        );
        // Wrapping gave 0: an ACK that covered nothing, as if no symbol had arrived.
        assert_eq!(b.poll_packet(ms(1)).map(|a| a.ack), Some(u64::MAX));
    }
}
