//! `tcpfec perf`: an iperf3-like throughput test between a client and a server, over
//! tcpfec connections or, for comparison, kernel TCP connections to the same server.
//!
//! A test is one control connection plus `streams` data connections, as in iperf3. The
//! client opens the control connection and sends a [`control::Hello`] describing the test;
//! the data connections each start with a [`control::DataHeader`] naming the test, then
//! carry bytes in one direction (client → server, or server → client with `reverse`).
//! While data flows, the server reports its counters on the control connection every
//! interval, so both sides' view (the sender's retransmissions and window, the receiver's
//! FEC recoveries) reach the client's report. At the end each side sends its per-stream
//! totals and CPU time. `docs/design/network.md` describes the exchange.

pub mod client;
pub mod control;
pub mod cpu;
pub mod kernel_tcp;
pub mod movers;
pub mod probe;
pub mod server;
pub mod timed;

use tokio::io::{AsyncRead, AsyncWrite};

/// Any byte stream a test runs over: a tcpfec [`crate::Stream`] or a kernel TCP stream.
pub trait ByteStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ByteStream for T {}

/// A boxed [`ByteStream`].
pub type BoxStream = Box<dyn ByteStream>;

/// Size of each write of test data.
pub const BLOCK: usize = 128 * 1024;

/// The transport a test runs over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// tcpfec over UDP, with the scheme named (for the data direction).
    Tcpfec {
        /// The data direction's scheme.
        scheme: String,
    },
    /// Kernel TCP, with this congestion control (`None`: the system default).
    Tcp {
        /// `TCP_CONGESTION` of the data sockets.
        congestion: Option<String>,
    },
}

impl Transport {
    /// "tcpfec auto", "TCP bbr", … for reports.
    pub fn label(&self) -> String {
        match self {
            Transport::Tcpfec { scheme } => format!("tcpfec {scheme}"),
            Transport::Tcp { congestion } => {
                format!(
                    "TCP {}",
                    congestion.as_deref().unwrap_or("(system default)")
                )
            }
        }
    }
}
