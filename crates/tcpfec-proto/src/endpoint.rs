//! One type for whatever a scheme runs on: a TCP-like [`Connection`] or a FECTCP block
//! transfer ([`Fectcp`]). Drivers (the simulator, the UDP runtime) hold an `Endpoint` and
//! never need to know which.

use crate::config::{Config, Scheme};
use crate::connection::{ConnError, Connection, PeerOpening};
use crate::fec::channel::ChannelEstimate;
use crate::fec::sizing::CodeSize;
use crate::fectcp::Fectcp;
use crate::stats::Stats;
use crate::time::Instant;
use crate::wire::{Packet, WireError};
use bytes::Bytes;

/// A protocol endpoint chosen by the configuration's scheme.
#[derive(Debug)]
pub enum Endpoint {
    /// The TCP-like byte stream (every scheme but FECTCP).
    Stream(Box<Connection>),
    /// FECTCP block transfers.
    Blocks(Box<Fectcp>),
}

macro_rules! both {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            Endpoint::Stream($e) => $body,
            Endpoint::Blocks($e) => $body,
        }
    };
}

impl Endpoint {
    /// The end that opens the connection.
    pub fn client(cfg: Config) -> Self {
        Self::for_scheme(cfg, Connection::client)
    }

    /// The end that waits for the opening.
    pub fn server(cfg: Config) -> Self {
        Self::for_scheme(cfg, Connection::server)
    }

    /// An end opened by a handshake outside the engine ([`Connection::established`]):
    /// established at once. FECTCP has no connection handshake of its own (each block
    /// transfer opens with its own BSYN), so it is the same as `client`/`server` there.
    pub fn established(cfg: Config, peer_scheme: &Scheme, peer: &PeerOpening) -> Self {
        let mut e = Self::for_scheme(cfg, |cfg| Connection::established(cfg, peer_scheme, peer));
        if let Endpoint::Blocks(f) = &mut e {
            f.set_peer_window(peer.window);
        }
        e
    }

    /// FECTCP: the size of the one block this direction carries, if the application has
    /// filled it (more would never be taken).
    pub fn full_block(&self) -> Option<u64> {
        match self {
            Endpoint::Blocks(f) if f.block_full() => Some(f.block_limit()),
            _ => None,
        }
    }

    /// FECTCP for a fountain scheme (it opens each block transfer itself, so every role
    /// starts the same), else the byte stream `stream` builds.
    fn for_scheme(cfg: Config, stream: impl FnOnce(Config) -> Connection) -> Self {
        if cfg.scheme.fountain.is_some() {
            Endpoint::Blocks(Box::new(Fectcp::new(cfg)))
        } else {
            Endpoint::Stream(Box::new(stream(cfg)))
        }
    }

    /// Bytes the application may write now.
    pub fn write_capacity(&self) -> usize {
        both!(self, c => c.write_capacity())
    }

    /// Queues application bytes; returns how many were taken.
    pub fn write(&mut self, data: Bytes) -> usize {
        both!(self, c => c.write(data))
    }

    /// Ends the stream (TCP) or the block (FECTCP).
    pub fn finish(&mut self) {
        both!(self, c => c.finish())
    }

    /// The next piece of received application data.
    pub fn read_chunk(&mut self) -> Option<Bytes> {
        both!(self, c => c.read_chunk())
    }

    /// True once the peer's data has all been delivered.
    pub fn peer_finished(&self) -> bool {
        both!(self, c => c.peer_finished())
    }

    /// True once everything written (and the end, if `finish` was called) is
    /// acknowledged.
    pub fn all_acked(&self) -> bool {
        both!(self, c => c.all_acked())
    }

    /// Handles an arriving packet.
    pub fn handle_packet(&mut self, now: Instant, p: Packet) {
        both!(self, c => c.handle_packet(now, p))
    }

    /// Parses raw bytes and handles the packet.
    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), WireError> {
        self.handle_packet(now, Packet::parse(bytes)?);
        Ok(())
    }

    /// The next packet to send, if any.
    pub fn poll_packet(&mut self, now: Instant) -> Option<Packet> {
        both!(self, c => c.poll_packet(now))
    }

    /// Writes the next packet into `buf`; returns its length.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<Result<usize, WireError>> {
        self.poll_packet(now).map(|p| p.emit(buf))
    }

    /// When [`Endpoint::handle_timeout`] must next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        both!(self, c => c.poll_timeout())
    }

    /// Handles the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        both!(self, c => c.handle_timeout(now))
    }

    /// Sets the connection id written into outgoing packets.
    pub fn set_peer_conn_id(&mut self, id: u32) {
        both!(self, c => c.set_peer_conn_id(id))
    }

    /// Tells the receiving half which scheme the peer sends with (a stream's FEC
    /// decoder); FECTCP's blocks describe themselves.
    pub fn set_peer_scheme(&mut self, scheme: &Scheme) {
        if let Endpoint::Stream(c) = self {
            c.set_peer_scheme(scheme);
        }
    }

    /// Stops at once.
    pub fn abort(&mut self) {
        both!(self, c => c.abort())
    }

    /// Why the connection failed, if it did.
    pub fn error(&self) -> Option<ConnError> {
        match self {
            Endpoint::Stream(c) => c.error(),
            Endpoint::Blocks(c) => c.error(),
        }
    }

    /// True once nothing more will be sent or received.
    pub fn is_closed(&self) -> bool {
        both!(self, c => c.is_closed())
    }

    /// The receive buffer in use, bytes (see `Connection::receive_buffer`).
    pub fn receive_buffer(&self) -> u32 {
        both!(self, c => c.receive_buffer())
    }

    /// Received bytes ready to read.
    pub fn readable(&self) -> usize {
        both!(self, c => c.readable())
    }

    /// Copies received bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        both!(self, c => c.read(buf))
    }

    /// The slow-start threshold.
    pub fn ssthresh(&self) -> f64 {
        both!(self, c => c.ssthresh())
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        both!(self, c => c.config())
    }

    /// True for FECTCP: data moves as whole blocks, each delivered once rebuilt.
    pub fn moves_blocks(&self) -> bool {
        matches!(self, Endpoint::Blocks(_))
    }

    /// Congestion window, in segments or symbols.
    pub fn cwnd(&self) -> f64 {
        both!(self, c => c.cwnd())
    }

    /// The controller's pacing rate in payload bytes per second, if it paces (BBR);
    /// FECTCP's block transfers never pace.
    pub fn pacing_rate(&self) -> Option<f64> {
        match self {
            Endpoint::Stream(c) => c.pacing_rate(),
            Endpoint::Blocks(_) => None,
        }
    }

    /// Size of the FEC groups being formed (0 for FECTCP and schemes without FEC).
    pub fn fec_group_size(&self) -> u16 {
        match self {
            Endpoint::Stream(c) => c.fec_group_size(),
            Endpoint::Blocks(_) => 0,
        }
    }

    /// The `auto` scheme's channel estimate and code in force (None for other schemes).
    pub fn auto_state(&self) -> Option<(ChannelEstimate, CodeSize)> {
        match self {
            Endpoint::Stream(c) => c.auto_state(),
            Endpoint::Blocks(_) => None,
        }
    }

    /// Redundancy of the next FEC group (1 for FECTCP and schemes without FEC).
    pub fn fec_redundancy(&self) -> f64 {
        match self {
            Endpoint::Stream(c) => c.fec_redundancy(),
            Endpoint::Blocks(_) => 1.0,
        }
    }

    /// Latest delivery-rate sample in payload bytes per second (`None` for FECTCP, which
    /// does not sample it, and before the first sample).
    pub fn delivery_rate(&self) -> Option<f64> {
        match self {
            Endpoint::Stream(c) => c.delivery_rate(),
            Endpoint::Blocks(_) => None,
        }
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        both!(self, c => c.stats())
    }

    /// Turns the collection of [`crate::TraceEvent`]s on or off (`Config::trace` sets it
    /// at creation).
    pub fn set_trace(&mut self, on: bool) {
        if let Endpoint::Stream(c) = self {
            c.set_trace(on);
        }
    }

    /// The smallest RTT the sender has measured (`None` for FECTCP, which keeps none).
    pub fn min_rtt(&self) -> Option<core::time::Duration> {
        match self {
            Endpoint::Stream(c) => c.min_rtt(),
            Endpoint::Blocks(_) => None,
        }
    }

    /// The sender's congestion state for traces (`recovery`, `slow_start`,
    /// `congestion_avoidance`, BBR's states; `block_transfer` for FECTCP).
    pub fn congestion_state(&self) -> &'static str {
        match self {
            Endpoint::Stream(c) => c.congestion_state(),
            Endpoint::Blocks(_) => "block_transfer",
        }
    }

    /// Segments believed in flight (0 for FECTCP, which counts symbols, not segments).
    pub fn pipe(&self) -> usize {
        match self {
            Endpoint::Stream(c) => c.pipe(),
            Endpoint::Blocks(_) => 0,
        }
    }

    /// Moves the [`crate::TraceEvent`]s recorded since the last call into `out` (nothing
    /// unless `Config::trace` is on; FECTCP records none: it neither retransmits nor
    /// rebuilds single segments).
    pub fn drain_trace(&mut self, out: &mut Vec<crate::TraceEvent>) {
        if let Endpoint::Stream(c) = self {
            c.drain_trace(out);
        }
    }

    /// The path as this connection's sender saw it, to resume the next connection to the
    /// same peer from (`Config::resume`); `None` if it learnt too little, and for FECTCP,
    /// which has no window to resume.
    pub fn path_observation(&self) -> Option<crate::resume::SavedPath> {
        match self {
            Endpoint::Stream(c) => c.path_observation(),
            _ => None,
        }
    }
}
