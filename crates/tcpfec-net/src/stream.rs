//! [`Stream`]: one tcpfec connection as a tokio byte stream, usable wherever a `TcpStream`
//! is (`AsyncRead` + `AsyncWrite`, `tokio::io::copy`, `split`, …).

use crate::error::NetError;
use crate::shared::Shared;
use bytes::Bytes;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tcpfec_proto::Stats;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A reliable, ordered byte stream over one tcpfec connection.
///
/// Dropping it finishes the stream (like closing a socket): queued bytes are still
/// delivered while the endpoint lives.
pub struct Stream {
    shared: Arc<Shared>,
    id: u32,
    peer: SocketAddr,
}

impl Stream {
    pub(crate) fn new(shared: Arc<Shared>, id: u32, peer: SocketAddr) -> Self {
        Stream { shared, id, peer }
    }

    /// The peer's UDP address (its current one, if the connection moved).
    pub fn peer_addr(&self) -> SocketAddr {
        let st = self.shared.lock();
        st.conns.get(&self.id).map_or(self.peer, |c| c.peer)
    }

    /// Server: the peer's name, when it proved a key pair: its name in the authorized keys,
    /// or its key's fingerprint where any key pair is accepted.
    pub fn peer_name(&self) -> Option<String> {
        let st = self.shared.lock();
        st.conns.get(&self.id).and_then(|c| c.peer_name.clone())
    }

    /// Server: the peer's public key, when it proved a key pair.
    pub fn peer_key(&self) -> Option<crate::identity::PublicKey> {
        let st = self.shared.lock();
        st.conns.get(&self.id).and_then(|c| c.peer_key)
    }

    /// The engine's counters for this connection (sent, retransmitted, repairs, recovered…).
    pub fn stats(&self) -> Stats {
        self.watch().stats()
    }

    /// A handle that reads this connection's counters while the stream is busy elsewhere
    /// (for progress displays).
    pub fn watch(&self) -> Watch {
        Watch {
            shared: self.shared.clone(),
            id: self.id,
        }
    }

    /// The error the connection ended with, if any.
    pub fn error(&self) -> Option<NetError> {
        let st = self.shared.lock();
        st.conns.get(&self.id).and_then(|c| c.error.clone())
    }

    /// The name of the scheme this side sends with.
    pub fn scheme(&self) -> String {
        let st = self.shared.lock();
        st.conns
            .get(&self.id)
            .and_then(|c| c.engine.as_ref())
            .map(|e| e.config().scheme.name.clone())
            .unwrap_or_default()
    }

    /// True when the connection moves whole blocks (FECTCP) rather than a byte stream:
    /// what is written reaches the peer only after `shutdown`, all at once.
    pub fn moves_blocks(&self) -> bool {
        let st = self.shared.lock();
        st.conns
            .get(&self.id)
            .and_then(|c| c.engine.as_ref())
            .is_some_and(|e| e.moves_blocks())
    }

    /// Closes the connection at once with a reason the peer reports (a sealed close
    /// message, then a reset). Unsent and unread bytes are discarded.
    pub fn close_with(&self, code: crate::control::CloseCode, reason: &str) {
        let mut st = self.shared.lock();
        if let Some(c) = st.conns.get_mut(&self.id) {
            if c.engine.is_some() {
                c.close = Some(crate::control::Control::Close {
                    code,
                    reason: reason.to_string(),
                });
            }
        }
        drop(st);
        self.shared.notify.notify_one();
    }

    /// Aborts the connection: the peer gets a reset.
    pub fn abort(&self) {
        let mut st = self.shared.lock();
        if let Some(e) = st.conns.get_mut(&self.id).and_then(|c| c.engine.as_mut()) {
            e.abort();
        }
        drop(st);
        self.shared.notify.notify_one();
    }
}

/// Reads one connection's counters from outside its [`Stream`].
#[derive(Clone)]
pub struct Watch {
    shared: Arc<Shared>,
    id: u32,
}

impl Watch {
    /// The engine's counters (zero once the connection is gone).
    pub fn stats(&self) -> Stats {
        let st = self.shared.lock();
        st.conns
            .get(&self.id)
            .and_then(|c| c.engine.as_ref())
            .map(|e| e.stats())
            .unwrap_or_default()
    }

    /// The engine's counters together with the sending side's congestion window
    /// (segments), pacing rate (payload bytes per second; `None` for window-only
    /// schemes) and segment size, read at one instant; zeros and no window once the
    /// connection is gone.
    pub fn stats_and_window(&self) -> (Stats, Option<f64>, Option<f64>, u16) {
        let st = self.shared.lock();
        match st.conns.get(&self.id).and_then(|c| c.engine.as_ref()) {
            Some(e) => (e.stats(), Some(e.cwnd()), e.pacing_rate(), e.config().mss),
            None => (Stats::default(), None, None, 0),
        }
    }

    /// Endpoint-wide counters (drops by reason).
    pub fn endpoint(&self) -> crate::stats::EndpointStats {
        self.shared.lock().stats
    }
}

fn gone() -> io::Error {
    NetError::EndpointClosed.into()
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut st = self.shared.lock();
        let Some(c) = st.conns.get_mut(&self.id) else {
            return Poll::Ready(Err(gone()));
        };
        let Some(engine) = c.engine.as_mut() else {
            return Poll::Ready(Err(gone()));
        };
        let n = engine.read(buf.initialize_unfilled());
        if n > 0 {
            buf.advance(n);
            drop(st);
            // Reading opens the receive window: let the driver advertise it.
            self.shared.notify.notify_one();
            return Poll::Ready(Ok(()));
        }
        if engine.peer_finished() {
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = &c.error {
            return Poll::Ready(Err(e.clone().into()));
        }
        if engine.is_closed() {
            return Poll::Ready(Err(NetError::Reset.into()));
        }
        c.read_waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut st = self.shared.lock();
        let Some(c) = st.conns.get_mut(&self.id) else {
            return Poll::Ready(Err(gone()));
        };
        if let Some(e) = &c.error {
            return Poll::Ready(Err(e.clone().into()));
        }
        let Some(engine) = c.engine.as_mut() else {
            return Poll::Ready(Err(gone()));
        };
        if engine.is_closed() {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let cap = engine.write_capacity().min(buf.len());
        if let (0, Some(limit)) = (cap, engine.full_block()) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "FECTCP moves each direction as one block, at most {limit} bytes here (the receiver's window): this stream is longer"
                ),
            )));
        }
        if cap == 0 {
            c.write_waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = engine.write(Bytes::copy_from_slice(&buf[..cap]));
        drop(st);
        self.shared.notify.notify_one();
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Bytes accepted by `write` are the engine's to deliver; nothing is held here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut st = self.shared.lock();
        if let Some(e) = st.conns.get_mut(&self.id).and_then(|c| c.engine.as_mut()) {
            e.finish();
        }
        drop(st);
        self.shared.notify.notify_one();
        Poll::Ready(Ok(()))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(c) = st.conns.get_mut(&self.id) {
            c.detached = true;
            c.read_waker = None;
            c.write_waker = None;
            if let Some(e) = c.engine.as_mut() {
                e.finish();
            }
        }
        drop(st);
        self.shared.notify.notify_one();
    }
}
