//! The server of `tcpfec perf`: accepts tests on a tcpfec endpoint and, for comparison
//! runs, on a kernel TCP listener at the same port; runs any number of tests at once.

use super::control::{self, DataHeader, Hello, Message, SideEnd};
use super::cpu::Meter;
use super::movers::{ticker, Budget, Movers};
use super::probe::Probe;
use super::timed::{wall_ns, Delays, Pattern, HEADER, MAX_MESSAGE};
use super::{kernel_tcp, BoxStream};
use crate::Endpoint;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Most data connections one test may ask for.
pub const MAX_STREAMS: u32 = 128;
/// Longest test, seconds.
pub const MAX_SECONDS: f64 = 86_400.0;
/// How long a test waits for its data connections.
const GATHER: Duration = Duration::from_secs(10);

/// What the server tells its operator.
#[derive(Debug, Clone)]
pub enum Event {
    /// A test began.
    Started {
        /// The client's address.
        peer: SocketAddr,
        /// "tcpfec" or "TCP".
        transport: &'static str,
        /// The test.
        hello: Hello,
    },
    /// A test ended: this side's and the client's totals.
    Finished {
        /// The client's address.
        peer: SocketAddr,
        /// "tcpfec" or "TCP".
        transport: &'static str,
        /// The test.
        hello: Hello,
        /// The server's totals.
        server: Box<SideEnd>,
        /// The client's totals (if it sent them).
        client: Option<Box<SideEnd>>,
    },
    /// A test failed.
    Failed {
        /// The client's address.
        peer: SocketAddr,
        /// What went wrong.
        error: String,
    },
}

/// Tests waiting for their data connections.
#[derive(Default)]
struct Pending {
    tests: Mutex<HashMap<u64, Slot>>,
}

struct Slot {
    streams: Vec<Option<(BoxStream, Probe)>>,
    ready: Arc<Notify>,
}

/// Serves tests until the endpoint and listener are gone; `log` hears every event.
pub async fn serve(
    endpoint: Option<Arc<Endpoint>>,
    tcp: Option<TcpListener>,
    log: Arc<dyn Fn(Event) + Send + Sync>,
) {
    let pending = Arc::new(Pending::default());
    loop {
        let (stream, probe, peer, transport): (BoxStream, Probe, SocketAddr, &'static str) = tokio::select! {
            s = async { endpoint.as_ref()?.accept().await }, if endpoint.is_some() => {
                let Some(s) = s else { return };
                let peer = s.peer_addr();
                let probe = Probe::Tcpfec(s.watch());
                (Box::new(s), probe, peer, "tcpfec")
            }
            s = async { tcp.as_ref().expect("guarded").accept().await }, if tcp.is_some() => {
                let Ok((s, peer)) = s else { continue };
                let _ = s.set_nodelay(true);
                let probe = kernel_tcp::probe(&s);
                (Box::new(s), probe, peer, "TCP")
            }
        };
        let (pending, log) = (pending.clone(), log.clone());
        tokio::spawn(async move {
            if let Err(e) = on_connection(stream, probe, peer, transport, &pending, &log).await {
                log(Event::Failed {
                    peer,
                    error: e.to_string(),
                });
            }
        });
    }
}

/// Tells a control connection (starts with `{`) from a data connection (starts with
/// the data magic) and handles it.
async fn on_connection(
    stream: BoxStream,
    probe: Probe,
    peer: SocketAddr,
    transport: &'static str,
    pending: &Pending,
    log: &Arc<dyn Fn(Event) + Send + Sync>,
) -> io::Result<()> {
    let mut r = BufReader::new(stream);
    let first = tokio::time::timeout(GATHER, r.fill_buf())
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "nothing sent"))??
        .first()
        .copied();
    match first {
        Some(b'{') => control_connection(Box::new(r), peer, transport, pending, log).await,
        Some(b) if b == control::DATA_MAGIC[0] => {
            let mut h = [0u8; DataHeader::LEN];
            r.read_exact(&mut h).await?;
            let h = DataHeader::decode(&h).ok_or_else(|| control::invalid("bad data header"))?;
            let mut tests = pending.tests.lock().expect("not poisoned");
            let slot = tests
                .get_mut(&h.test_id)
                .ok_or_else(|| control::invalid("data for an unknown test"))?;
            let place = slot
                .streams
                .get_mut(h.index as usize)
                .filter(|p| p.is_none())
                .ok_or_else(|| control::invalid("bad or repeated stream index"))?;
            *place = Some((Box::new(r), probe));
            if slot.streams.iter().all(Option::is_some) {
                slot.ready.notify_one();
            }
            Ok(())
        }
        Some(_) => Err(control::invalid("not a perf client")),
        None => Ok(()),
    }
}

/// Runs one test: checks the request, gathers the data connections, moves data, reports
/// progress and totals.
async fn control_connection(
    ctl: BoxStream,
    peer: SocketAddr,
    transport: &'static str,
    pending: &Pending,
    log: &Arc<dyn Fn(Event) + Send + Sync>,
) -> io::Result<()> {
    let (ctl_r, mut ctl_w) = tokio::io::split(ctl);
    let mut ctl_r = control::Reader::new(ctl_r);
    let hello = match ctl_r.next().await? {
        Some(Message::Hello(h)) => h,
        _ => return Err(control::invalid("expected hello")),
    };
    if let Err(reason) = check(&hello) {
        return Err(refuse(&mut ctl_w, io::ErrorKind::InvalidInput, reason).await);
    }
    let ready = Arc::new(Notify::new());
    pending.tests.lock().expect("not poisoned").insert(
        hello.test_id,
        Slot {
            streams: (0..hello.streams).map(|_| None).collect(),
            ready: ready.clone(),
        },
    );
    control::send(
        &mut ctl_w,
        &Message::Accept {
            clock_ns: wall_ns(),
        },
    )
    .await?;
    // How to read the client's stamps: its reply to the accept, sent before its data.
    let clock = match tokio::time::timeout(GATHER, ctl_r.next()).await {
        Ok(Ok(Some(Message::Clock(c)))) => c,
        _ => return Err(control::invalid("expected the clock after the accept")),
    };
    let gathered = tokio::time::timeout(GATHER, ready.notified()).await;
    let slot = pending
        .tests
        .lock()
        .expect("not poisoned")
        .remove(&hello.test_id);
    if gathered.is_err() {
        let reason = "not every data connection arrived within 10 s".to_string();
        return Err(refuse(&mut ctl_w, io::ErrorKind::TimedOut, reason).await);
    }
    let (streams, probes): (Vec<BoxStream>, Vec<Probe>) = slot
        .expect("present until removed here")
        .streams
        .into_iter()
        .map(|s| s.expect("all gathered"))
        .unzip();
    if let (true, Some(cc)) = (hello.reverse, &hello.congestion) {
        for p in &probes {
            #[cfg(target_os = "linux")]
            if let Probe::Kernel(fd) = p {
                kernel_tcp::set_congestion(fd, cc)?;
            }
            let _ = (p, cc);
        }
    }
    log(Event::Started {
        peer,
        transport,
        hello: hello.clone(),
    });
    let meter = Meter::start();
    let start = Instant::now();
    let movers = if hello.reverse {
        let budgets = Budget::split(hello.seconds, hello.bytes, hello.streams);
        Movers::send(streams, probes, budgets, start, hello.pattern, None)
    } else {
        let from = start + Duration::from_secs_f64(hello.omit);
        let delays = matches!(hello.pattern, Pattern::Paced { .. })
            .then(|| Delays::new(hello.streams as usize, clock, from));
        Movers::receive(streams, probes, start, hello.pattern, delays)
    };
    let mut tick = ticker(hello.interval);
    while !movers.tick_or_done(&mut tick).await {
        let streams = movers.probes.iter().map(Probe::sample).collect();
        let elapsed = start.elapsed().as_secs_f64();
        let delays = movers.delays.as_ref().map(|d| d.take_interval());
        let progress = Message::Progress {
            elapsed,
            streams,
            delays,
        };
        if control::send(&mut ctl_w, &progress).await.is_err() {
            movers.abort();
            return Err(io::Error::other("the client closed the control connection"));
        }
    }
    let delays = movers.delays.as_ref().map(|d| d.report());
    let server = SideEnd {
        delays,
        ..SideEnd::measured(movers.join().await?, &meter)
    };
    control::send(&mut ctl_w, &Message::Done(server.clone())).await?;
    let client = match tokio::time::timeout(Duration::from_secs(30), ctl_r.next()).await {
        Ok(Ok(Some(Message::Done(end)))) => Some(Box::new(end)),
        _ => None,
    };
    log(Event::Finished {
        peer,
        transport,
        hello,
        server: Box::new(server),
        client,
    });
    Ok(())
}

/// Why a requested test cannot run, if it cannot.
/// Tells the client why its test is refused; returns the error this side ends with
/// (the refusal's own send error if it could not be sent).
async fn refuse<W: tokio::io::AsyncWrite + Unpin>(
    ctl_w: &mut W,
    kind: io::ErrorKind,
    reason: String,
) -> io::Error {
    let sent = control::send(
        ctl_w,
        &Message::Refuse {
            reason: reason.clone(),
        },
    )
    .await;
    match sent {
        Ok(()) => io::Error::new(kind, reason),
        Err(e) => e,
    }
}

fn check(h: &Hello) -> Result<(), String> {
    if h.version != control::VERSION {
        return Err(format!(
            "perf protocol version {} (this server speaks {})",
            h.version,
            control::VERSION
        ));
    }
    if h.streams == 0 || h.streams > MAX_STREAMS {
        return Err(format!("streams must be 1 to {MAX_STREAMS}"));
    }
    if h.bytes.is_none() && !(h.seconds > 0.0 && h.seconds <= MAX_SECONDS) {
        return Err(format!("seconds must be above 0 and at most {MAX_SECONDS}"));
    }
    if !(h.interval >= 0.1 && h.interval <= 3600.0) {
        return Err("interval must be 0.1 to 3600 seconds".into());
    }
    if !(h.omit >= 0.0 && h.omit <= MAX_SECONDS) {
        return Err("omit must be 0 to a day".into());
    }
    match h.pattern {
        Pattern::Bulk => {}
        Pattern::Paced { bitrate, length } => {
            if !(bitrate.is_finite() && bitrate > 0.0) {
                return Err("the stream's bitrate must be above 0".into());
            }
            if !(HEADER..=MAX_MESSAGE).contains(&length) {
                return Err(format!(
                    "a stream's messages must be {HEADER} to {MAX_MESSAGE} bytes"
                ));
            }
        }
        Pattern::Exchange { length } => {
            if !(1..=MAX_MESSAGE).contains(&length) {
                return Err(format!("exchanges must be 1 to {MAX_MESSAGE} bytes"));
            }
            if h.reverse || h.streams != 1 || h.bytes.is_some() {
                return Err("an exchange test is one stream, client first, for a time".into());
            }
        }
    }
    if let Some(cc) = &h.congestion {
        let known = kernel_tcp::available();
        if !known.is_empty() && !known.iter().any(|k| k == cc) {
            return Err(format!(
                "this kernel has no TCP congestion control '{cc}' (it offers: {})",
                known.join(" ")
            ));
        }
    }
    Ok(())
}
