//! The network's traces are written by one thread per process: a connection's driver
//! only collects a small [`Record`] per event (no formatting, no I/O on the packet path)
//! and hands them over in batches. The queue is bounded; when it is full a batch is
//! dropped and counted, and the file ends with a note saying how many events were lost.

use crate::record::Record;
use crate::writer::{QlogWriter, Sink};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::OnceLock;
use std::time::Duration;

/// Batches queued at most, over all connections.
const QUEUE: usize = 1 << 10;
/// Most records a connection collects before it hands them over as one batch (it also
/// hands them over at the end of each driver round, [`Sink::flush`]): one channel
/// message, and at most one wake-up of the writer, per batch instead of per event.
const BATCH: usize = 256;

enum Msg {
    Open(u64, Box<QlogWriter>),
    Events(u64, Vec<(Duration, Record)>),
    /// The connection ended: flush and close its file; `dropped` events were lost.
    Close(u64, Duration, u64, SyncSender<()>),
    /// Flush every open file, then answer.
    Flush(SyncSender<()>),
}

static TX: OnceLock<SyncSender<Msg>> = OnceLock::new();

fn queue() -> &'static SyncSender<Msg> {
    TX.get_or_init(|| {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        std::thread::Builder::new()
            .name("qlog writer".into())
            .spawn(move || serve(rx))
            .expect("start the qlog writer thread");
        tx
    })
}

fn serve(rx: Receiver<Msg>) {
    let mut files: HashMap<u64, Box<QlogWriter>> = HashMap::new();
    while let Ok(m) = rx.recv() {
        match m {
            Msg::Open(id, w) => {
                files.insert(id, w);
            }
            Msg::Events(id, batch) => {
                if let Some(w) = files.get_mut(&id) {
                    for (t, r) in batch {
                        w.push(t, r);
                    }
                }
            }
            Msg::Close(id, t, dropped, done) => {
                if let Some(mut w) = files.remove(&id) {
                    if dropped > 0 {
                        w.note_dropped(t, dropped);
                    }
                    let _ = w.flush();
                }
                let _ = done.send(());
            }
            Msg::Flush(done) => {
                for w in files.values_mut() {
                    let _ = w.flush();
                }
                let _ = done.send(());
            }
        }
    }
}

/// A connection's trace written by the process's writer thread.
pub struct Background {
    id: u64,
    last: Duration,
    dropped: u64,
    batch: Vec<(Duration, Record)>,
}

impl Background {
    /// Hands `w` to the writer thread.
    pub fn start(w: QlogWriter) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let _ = queue().send(Msg::Open(id, Box::new(w)));
        Background {
            id,
            last: Duration::ZERO,
            dropped: 0,
            batch: Vec::with_capacity(BATCH),
        }
    }

    /// Hands the records collected so far to the writer thread, or counts them as
    /// dropped if its queue is full.
    fn send_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let n = batch.len() as u64;
        match queue().try_send(Msg::Events(self.id, batch)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => self.dropped += n,
        }
    }
}

impl Sink for Background {
    fn push(&mut self, t: Duration, r: Record) {
        self.last = t;
        self.batch.push((t, r));
        if self.batch.len() >= BATCH {
            self.send_batch();
        }
    }

    /// Hands the records over (the driver calls it once per round); the file itself is
    /// written by the thread.
    fn flush(&mut self) -> io::Result<()> {
        self.send_batch();
        Ok(())
    }
}

impl Drop for Background {
    /// Closes the file once the thread has written everything queued before.
    fn drop(&mut self) {
        self.send_batch();
        let (tx, rx) = mpsc::sync_channel(1);
        if queue()
            .send(Msg::Close(self.id, self.last, self.dropped, tx))
            .is_ok()
        {
            let _ = rx.recv_timeout(Duration::from_secs(2));
        }
    }
}

/// Waits until the writer thread has written and flushed everything queued so far, so a
/// process can exit without losing the end of its traces (at most `limit`). Returns at
/// once where nothing was traced.
pub fn flush_all(limit: Duration) {
    let Some(q) = TX.get() else {
        return;
    };
    let (tx, rx) = mpsc::sync_channel(1);
    if q.send(Msg::Flush(tx)).is_ok() {
        let _ = rx.recv_timeout(limit);
    }
}
