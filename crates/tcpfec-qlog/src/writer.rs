//! The JSON-SEQ file: its header record, then the events ([`crate::record`]) within a
//! size limit.

use crate::record::{format, Record};
use serde_json::json;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

/// The qlog version the files declare.
pub const QLOG_VERSION: &str = "0.3";
/// Most bytes per trace file unless the caller says otherwise: about 2 million events.
pub const DEFAULT_FILE_LIMIT: u64 = 256 << 20;

/// Which end of the connection wrote the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The side that opened the connection.
    Client,
    /// The side that accepted it.
    Server,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// Where a connection's events go: straight into its file ([`QlogWriter`], the
/// simulator's choice: one thread, a deterministic file), or to a writer thread
/// ([`crate::Background`], the network's: off the packet path).
pub trait Sink: Send {
    /// Records `r` at time `t` since the connection began.
    fn push(&mut self, t: Duration, r: Record);
    /// Writes what is buffered; the first write error, if any.
    fn flush(&mut self) -> io::Result<()>;
    /// False once the trace takes no more events (cut at its size limit, or a write
    /// failed): a driver then stops collecting them.
    fn is_open(&self) -> bool {
        true
    }
}

/// One trace file being written.
pub struct QlogWriter {
    out: BufWriter<Box<dyn Write + Send>>,
    buf: Vec<u8>,
    events: u64,
    bytes: u64,
    /// Once the file would pass this many bytes nothing more is written (a note says so).
    limit: u64,
    cut: bool,
    error: Option<io::Error>,
}

impl QlogWriter {
    /// Starts a trace at `path` (the file is created; an existing one is replaced).
    pub fn create(path: &Path, side: Side, title: &str, limit: u64) -> io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Self::to_writer(Box::new(file), side, title, limit)
    }

    /// Starts a trace written to `w`.
    pub fn to_writer(
        w: Box<dyn Write + Send>,
        side: Side,
        title: &str,
        limit: u64,
    ) -> io::Result<Self> {
        let header = json!({
            "qlog_version": QLOG_VERSION,
            "qlog_format": "JSON-SEQ",
            "title": title,
            "trace": {
                "vantage_point": {"name": format!("tcpfec {}", side.name()), "type": side.name()},
                "common_fields": {"protocol_type": ["TCPFEC"], "time_format": "relative", "reference_time": 0.0},
            },
        });
        let mut out = BufWriter::with_capacity(1 << 16, w);
        let mut first = vec![0x1e];
        serde_json::to_writer(&mut first, &header)?;
        first.push(b'\n');
        out.write_all(&first)?;
        Ok(QlogWriter {
            out,
            buf: Vec::with_capacity(1024),
            events: 0,
            bytes: first.len() as u64,
            limit,
            cut: false,
            error: None,
        })
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Writes `text` (whole records) unless that would pass the limit; then a note ends
    /// the file.
    fn write_records(&mut self, t: Duration, n: u64) {
        if self.cut || self.error.is_some() {
            return;
        }
        if self.bytes + self.buf.len() as u64 > self.limit {
            // The note that ends the file goes in whatever the limit says.
            self.cut = true;
            self.buf.clear();
            format(&mut self.buf, t, &Record::TraceCut { limit: self.limit });
            if let Err(e) = self.out.write_all(&self.buf) {
                self.error = Some(e);
            }
            return;
        }
        self.bytes += self.buf.len() as u64;
        self.events += n;
        if let Err(e) = self.out.write_all(&self.buf) {
            self.error = Some(e);
        }
    }

    /// Ends the file with a note that `n` events could not be written (the writer thread
    /// fell behind).
    pub(crate) fn note_dropped(&mut self, t: Duration, n: u64) {
        self.push(t, Record::EventsDropped(n));
    }
}

impl Sink for QlogWriter {
    fn push(&mut self, t: Duration, r: Record) {
        if self.cut || self.error.is_some() {
            return;
        }
        self.buf.clear();
        let n = format(&mut self.buf, t, &r);
        self.write_records(t, n);
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }

    fn is_open(&self) -> bool {
        !self.cut && self.error.is_none()
    }
}

impl Drop for QlogWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}
