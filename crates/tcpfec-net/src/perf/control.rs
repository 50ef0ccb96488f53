//! Messages of the control connection (one JSON object per line) and the binary header
//! that opens each data connection.

use super::probe::Sample;
use super::timed::{Clock, DelayReport, Pattern};
use serde::{Deserialize, Serialize};
use std::io;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Version of the exchange; a server refuses a client of another version (2: tests of
/// delay, and the clock exchange that reads their stamps; 3: the key challenge of kernel
/// TCP tests).
pub const VERSION: u32 = 3;

/// First bytes of a data connection, so the server tells it from a control connection
/// (which starts with `{`).
pub const DATA_MAGIC: [u8; 4] = *b"TFPD";

/// Longest control line accepted (a garbled or hostile peer cannot make us buffer more).
const MAX_LINE: usize = 1 << 20;

/// The test a client asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Exchange version ([`VERSION`]).
    pub version: u32,
    /// Random id the data connections quote.
    pub test_id: u64,
    /// Server sends, client receives.
    pub reverse: bool,
    /// Seconds to send for (ignored when `bytes` is set).
    pub seconds: f64,
    /// Total bytes to send over all streams, instead of a duration.
    pub bytes: Option<u64>,
    /// Data connections.
    pub streams: u32,
    /// Seconds between progress reports.
    pub interval: f64,
    /// Kernel TCP tests: the congestion control the server's data sockets use (reverse).
    pub congestion: Option<String>,
    /// How the data moves: bulk, a paced stream of timestamped messages, or exchanges.
    #[serde(default)]
    pub pattern: Pattern,
    /// Seconds from the start whose delays are left out (iperf3's `--omit`).
    #[serde(default)]
    pub omit: f64,
}

/// One side's totals for one data stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamEnd {
    /// Bytes written (sender) or read (receiver).
    pub bytes: u64,
    /// Seconds from the test start to the last byte acknowledged (sender) or read
    /// (receiver).
    pub seconds: f64,
    /// Counters at the end.
    pub sample: Sample,
}

/// The delays one interval's (or a whole test's) streams saw, on the side that measures
/// them.
pub type IntervalDelays = DelayReport;

/// Totals of one side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideEnd {
    /// Per data stream, in stream order.
    pub streams: Vec<StreamEnd>,
    /// CPU seconds in user mode during the test.
    pub cpu_user: f64,
    /// CPU seconds in the kernel during the test.
    pub cpu_system: f64,
    /// Wall seconds the CPU times cover.
    pub wall: f64,
    /// The delays this side measured (a paced stream's receiver, an exchange's client).
    #[serde(default)]
    pub delays: Option<DelayReport>,
}

impl SideEnd {
    /// One side's totals: its streams' ends and the CPU and wall time `meter` has seen.
    pub fn measured(streams: Vec<StreamEnd>, meter: &super::cpu::Meter) -> Self {
        let (cpu_user, cpu_system, wall) = meter.read();
        SideEnd {
            streams,
            cpu_user,
            cpu_system,
            wall,
            delays: None,
        }
    }
}

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Client → server: the test.
    Hello(Hello),
    /// Server → client: accepted; open the data connections. `clock_ns`: the server's
    /// wall clock as it accepted (`timed::Clock::from_exchange`).
    Accept {
        /// Nanoseconds since the Unix epoch.
        clock_ns: i64,
    },
    /// Client → server, right after the accept: how the server reads the client's stamps.
    Clock(Clock),
    /// Server → client, for a kernel TCP test on a server with a key: prove you hold it.
    Challenge {
        /// 16 random bytes, hex.
        nonce: String,
    },
    /// Client → server: the answer to a challenge ([`proof`]).
    Proof {
        /// Hex.
        proof: String,
    },
    /// Server → client: refused, with the reason.
    Refuse {
        /// Why.
        reason: String,
    },
    /// Server → client: the server's cumulative counters per stream, `elapsed` seconds
    /// after its start.
    Progress {
        /// Seconds since the server saw every data connection.
        elapsed: f64,
        /// Per stream.
        streams: Vec<Sample>,
        /// The interval's delays, if the server measures them.
        #[serde(default)]
        delays: Option<IntervalDelays>,
    },
    /// Either way, once its data is done: this side's totals.
    Done(SideEnd),
}

/// The answer to a challenge: a keyed hash of the nonce and the test id under the
/// pre-shared key (hex). Kernel TCP carries the control connection in the clear, so this
/// proves the client holds the key without revealing it; the test id binds the proof to
/// this test.
pub fn proof(key: &crate::Psk, nonce: &str, test_id: u64) -> String {
    let mut h = blake3::Hasher::new_keyed(&key.0);
    h.update(b"tcpfec perf challenge");
    h.update(nonce.as_bytes());
    h.update(&test_id.to_be_bytes());
    h.finalize().as_bytes()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes one message as a JSON line.
pub async fn send<W: AsyncWrite + Unpin>(w: &mut W, m: &Message) -> io::Result<()> {
    let mut line = serde_json::to_vec(m).expect("messages serialize");
    line.push(b'\n');
    w.write_all(&line).await?;
    w.flush().await
}

/// Reads control messages, one JSON line each.
pub struct Reader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads from `r`.
    pub fn new(r: R) -> Self {
        Reader {
            inner: BufReader::new(r),
            line: Vec::new(),
        }
    }

    /// The next message; `Ok(None)` at the end of the stream.
    pub async fn next(&mut self) -> io::Result<Option<Message>> {
        self.line.clear();
        let n = (&mut self.inner)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut self.line)
            .await?;
        if n == 0 {
            return Ok(None);
        }
        if self.line.last() != Some(&b'\n') {
            return Err(invalid("control line too long or cut short"));
        }
        serde_json::from_slice(&self.line)
            .map(Some)
            .map_err(|e| invalid(&format!("bad control message: {e}")))
    }
}

/// A malformed or unexpected message from the peer.
pub(super) fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// What opens a data connection: which test and which of its streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// The test's [`Hello::test_id`].
    pub test_id: u64,
    /// Stream index, 0-based.
    pub index: u32,
}

impl DataHeader {
    /// Encoded length.
    pub const LEN: usize = 16;

    /// `TFPD`, test id, index (big-endian).
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&DATA_MAGIC);
        b[4..12].copy_from_slice(&self.test_id.to_be_bytes());
        b[12..].copy_from_slice(&self.index.to_be_bytes());
        b
    }

    /// Decodes a header whose magic was checked.
    pub fn decode(b: &[u8; Self::LEN]) -> Option<Self> {
        (b[..4] == DATA_MAGIC).then(|| DataHeader {
            test_id: u64::from_be_bytes(b[4..12].try_into().expect("8 bytes")),
            index: u32::from_be_bytes(b[12..].try_into().expect("4 bytes")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_as_lines() {
        let hello = Message::Hello(Hello {
            version: VERSION,
            test_id: 7,
            reverse: true,
            seconds: 3.0,
            bytes: Some(10),
            streams: 2,
            interval: 1.0,
            congestion: Some("bbr".into()),
            pattern: Pattern::Paced {
                bitrate: 4e6,
                length: 1000,
            },
            omit: 2.0,
        });
        let mut buf = Vec::new();
        send(&mut buf, &hello).await.unwrap();
        let accept = Message::Accept { clock_ns: -5 };
        send(&mut buf, &accept).await.unwrap();
        let mut r = Reader::new(&buf[..]);
        assert_eq!(r.next().await.unwrap(), Some(hello));
        assert_eq!(r.next().await.unwrap(), Some(accept));
        assert_eq!(r.next().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_line_without_end_is_refused() {
        let mut r = Reader::new(&b"{\"type\":\"accept\",\"clock_ns\":0}"[..]);
        assert!(r.next().await.is_err());
    }

    #[test]
    fn data_header_round_trips_and_needs_its_magic() {
        let h = DataHeader {
            test_id: 0x0102_0304_0506_0708,
            index: 3,
        };
        assert_eq!(DataHeader::decode(&h.encode()), Some(h));
        let mut b = h.encode();
        b[0] = b'{';
        assert_eq!(DataHeader::decode(&b), None);
    }
}
