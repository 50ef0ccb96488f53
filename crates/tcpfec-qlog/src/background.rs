//! The network's traces are written by one thread per process: a connection's driver
//! only collects a small [`Record`] per event (no formatting, no I/O on the packet path)
//! and appends them in batches to a shared queue. Appending wakes nobody: the writer
//! thread looks at the queue every [`TICK`] while a trace is open, so a traced transfer
//! pays for no futex wake-up or context switch per batch. The queue is bounded; when it
//! is full a batch is dropped and counted, and the file ends with a note saying how many
//! events were lost. Once a file is cut at its size limit, its connection stops
//! collecting.

use crate::record::Record;
use crate::writer::{QlogWriter, Sink};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// Records queued at most, over all connections (a few tens of milliseconds of a
/// loopback transfer's events, about 20 MB).
const QUEUE: usize = 1 << 18;
/// Most records a connection collects before it appends them as one batch (it also
/// appends them at the end of each driver round, [`Sink::flush`]).
const BATCH: usize = 256;
/// How often the writer thread takes what is queued while a trace is open.
const TICK: Duration = Duration::from_millis(10);

enum Msg {
    Open(u64, Box<QlogWriter>, Arc<AtomicBool>),
    Events(u64, Vec<(Duration, Record)>),
    /// The connection ended: flush and close its file; `dropped` events were lost.
    Close(u64, Duration, u64, mpsc::SyncSender<()>),
    /// Flush every open file, then answer.
    Flush(mpsc::SyncSender<()>),
}

/// What the drivers have queued for the writer thread, in order.
#[derive(Default)]
struct Pending {
    msgs: Vec<Msg>,
    /// Records in `msgs`.
    records: usize,
    /// A message that must not wait for the next tick (open, close, flush) is queued.
    urgent: bool,
}

struct Queue {
    pending: Mutex<Pending>,
    wake: Condvar,
}

impl Queue {
    /// Queues `m`; an urgent one wakes the writer. False if the queue is full (only
    /// events are refused).
    fn put(&self, m: Msg) -> bool {
        let urgent = !matches!(m, Msg::Events(..));
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Msg::Events(_, batch) = &m {
            if p.records + batch.len() > QUEUE {
                return false;
            }
            p.records += batch.len();
        }
        p.msgs.push(m);
        if urgent {
            p.urgent = true;
            drop(p);
            self.wake.notify_one();
        }
        true
    }

    /// Waits for something to write: at most a tick while files are open, otherwise
    /// until an urgent message comes.
    fn take(&self, files_open: bool) -> Vec<Msg> {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if !p.urgent {
            p = if files_open {
                self.wake
                    .wait_timeout(p, TICK)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            } else {
                self.wake
                    .wait_while(p, |p| !p.urgent)
                    .unwrap_or_else(|e| e.into_inner())
            };
        }
        p.urgent = false;
        p.records = 0;
        std::mem::take(&mut p.msgs)
    }
}

static QUEUE_ONCE: OnceLock<Arc<Queue>> = OnceLock::new();

fn queue() -> &'static Queue {
    QUEUE_ONCE.get_or_init(|| {
        let q = Arc::new(Queue {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
        });
        let served = Arc::clone(&q);
        std::thread::Builder::new()
            .name("qlog writer".into())
            .spawn(move || serve(&served))
            .expect("start the qlog writer thread");
        q
    })
}

/// A file being written, and the flag that tells its connection to stop collecting.
struct Open {
    writer: Box<QlogWriter>,
    collecting: Arc<AtomicBool>,
}

/// Lets the writer thread run only on a core nothing else wants (Linux's `SCHED_IDLE`), so
/// that formatting and writing a trace never takes a core from the transfer it traces.
fn yield_to_transfers() {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler with pid 0 changes this thread's policy only, and reads
    // the parameter struct it is given.
    unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p);
    }
}

fn serve(q: &Queue) {
    yield_to_transfers();
    let mut files: HashMap<u64, Open> = HashMap::new();
    loop {
        for m in q.take(!files.is_empty()) {
            match m {
                Msg::Open(id, writer, collecting) => {
                    files.insert(id, Open { writer, collecting });
                }
                Msg::Events(id, batch) => {
                    if let Some(f) = files.get_mut(&id) {
                        for (t, r) in batch {
                            f.writer.push(t, r);
                        }
                        if !f.writer.is_open() {
                            f.collecting.store(false, Ordering::Relaxed);
                        }
                    }
                }
                Msg::Close(id, t, dropped, done) => {
                    if let Some(mut f) = files.remove(&id) {
                        if dropped > 0 {
                            f.writer.note_dropped(t, dropped);
                        }
                        let _ = f.writer.flush();
                    }
                    let _ = done.send(());
                }
                Msg::Flush(done) => {
                    for f in files.values_mut() {
                        let _ = f.writer.flush();
                    }
                    let _ = done.send(());
                }
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
    /// Cleared by the writer once the file takes no more events (cut at its limit, or a
    /// write failed).
    collecting: Arc<AtomicBool>,
}

impl Background {
    /// Hands `w` to the writer thread.
    pub fn start(w: QlogWriter) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let collecting = Arc::new(AtomicBool::new(true));
        queue().put(Msg::Open(id, Box::new(w), Arc::clone(&collecting)));
        Background {
            id,
            last: Duration::ZERO,
            dropped: 0,
            batch: Vec::with_capacity(BATCH),
            collecting,
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
        if !queue().put(Msg::Events(self.id, batch)) {
            self.dropped += n;
        }
    }
}

impl Sink for Background {
    fn push(&mut self, t: Duration, r: Record) {
        if !self.is_open() {
            return;
        }
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

    fn is_open(&self) -> bool {
        self.collecting.load(Ordering::Relaxed)
    }
}

impl Drop for Background {
    /// Closes the file once the thread has written everything queued before.
    fn drop(&mut self) {
        self.send_batch();
        let (tx, rx) = mpsc::sync_channel(1);
        queue().put(Msg::Close(self.id, self.last, self.dropped, tx));
        let _ = rx.recv_timeout(Duration::from_secs(2));
    }
}

/// Waits until the writer thread has written and flushed everything queued so far, so a
/// process can exit without losing the end of its traces (at most `limit`). Returns at
/// once where nothing was traced.
pub fn flush_all(limit: Duration) {
    let Some(q) = QUEUE_ONCE.get() else {
        return;
    };
    let (tx, rx) = mpsc::sync_channel(1);
    q.put(Msg::Flush(tx));
    let _ = rx.recv_timeout(limit);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::Side;

    /// A file in memory that the test can read while the writer thread owns the writer.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_connection_stops_collecting_once_its_file_is_cut_and_the_file_ends_with_the_note() {
        let file = Shared::default();
        let w = QlogWriter::to_writer(Box::new(file.clone()), Side::Client, "t", 4096).unwrap();
        let mut bg = Background::start(w);
        let mut pushed = 0;
        while bg.is_open() && pushed < 100_000 {
            bg.push(Duration::from_millis(pushed), Record::GroupsFailed(1));
            pushed += 1;
            if pushed % 64 == 0 {
                bg.flush().unwrap();
                flush_all(Duration::from_secs(10));
            }
        }
        assert!(!bg.is_open(), "still collecting after {pushed} events");
        // Whatever is pushed from now on is not even queued.
        bg.push(Duration::from_secs(1000), Record::GroupsFailed(1));
        assert!(bg.batch.is_empty());
        drop(bg);
        let text = String::from_utf8(file.0.lock().unwrap().clone()).unwrap();
        assert!(text.len() <= 4096 + 200, "{} bytes", text.len());
        let last = text.lines().last().unwrap();
        assert!(last.contains("tcpfec:trace_cut"), "{last}");
        assert_eq!(text.matches("trace_cut").count(), 1);
    }
}
