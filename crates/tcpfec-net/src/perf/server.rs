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
/// Largest byte count a test may ask for (1 TiB: 88 s at 100 Gb/s; longer tests are
/// asked for by time).
pub const MAX_BYTES: u64 = 1 << 40;
/// How long a test waits for its data connections.
const GATHER: Duration = Duration::from_secs(10);

/// What a server accepts.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Kernel TCP tests must prove they hold this key (a challenge on the control line:
    /// their connections are not encrypted); `None` (`--insecure`) accepts any client.
    /// tcpfec tests prove it by their handshake.
    pub key: Option<crate::Psk>,
    /// Longest test, seconds.
    pub max_seconds: f64,
    /// Most data connections per test.
    pub max_streams: u32,
    /// Largest byte count per test.
    pub max_bytes: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            key: None,
            max_seconds: MAX_SECONDS,
            max_streams: MAX_STREAMS,
            max_bytes: MAX_BYTES,
        }
    }
}

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
    policy: Policy,
    log: Arc<dyn Fn(Event) + Send + Sync>,
) {
    let pending = Arc::new(Pending::default());
    let policy = Arc::new(policy);
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
        let (pending, log, policy) = (pending.clone(), log.clone(), policy.clone());
        tokio::spawn(async move {
            let r = on_connection(stream, probe, peer, transport, &pending, &policy, &log).await;
            if let Err(e) = r {
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
    policy: &Policy,
    log: &Arc<dyn Fn(Event) + Send + Sync>,
) -> io::Result<()> {
    let mut r = BufReader::new(stream);
    let first = tokio::time::timeout(GATHER, r.fill_buf())
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "nothing sent"))??
        .first()
        .copied();
    match first {
        Some(b'{') => control_connection(Box::new(r), peer, transport, pending, policy, log).await,
        Some(b) if b == control::DATA_MAGIC[0] => {
            // A partial header is timed out like a silent connection.
            let mut h = [0u8; DataHeader::LEN];
            tokio::time::timeout(GATHER, r.read_exact(&mut h))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "partial data header"))??;
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
    policy: &Policy,
    log: &Arc<dyn Fn(Event) + Send + Sync>,
) -> io::Result<()> {
    let (ctl_r, mut ctl_w) = tokio::io::split(ctl);
    let mut ctl_r = control::Reader::new(ctl_r);
    // A partial control line is timed out like a silent connection.
    let hello = match tokio::time::timeout(GATHER, ctl_r.next()).await {
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete hello within 10 s",
            ))
        }
        Ok(read) => match read? {
            Some(Message::Hello(h)) => h,
            _ => return Err(control::invalid("expected hello")),
        },
    };
    if let (Some(key), "TCP") = (&policy.key, transport) {
        // Kernel TCP is not encrypted: the client proves it holds the key.
        let nonce = random_nonce();
        control::send(
            &mut ctl_w,
            &Message::Challenge {
                nonce: nonce.clone(),
            },
        )
        .await?;
        let proof = match tokio::time::timeout(GATHER, ctl_r.next()).await {
            Ok(Ok(Some(Message::Proof { proof }))) => proof,
            Ok(Err(e)) => return Err(e),
            _ => {
                let reason = "no answer to the key challenge".to_string();
                return Err(refuse(&mut ctl_w, io::ErrorKind::PermissionDenied, reason).await);
            }
        };
        if proof != control::proof(key, &nonce, hello.test_id) {
            let reason = "wrong key (kernel TCP tests need the server's --key-file)".to_string();
            return Err(refuse(&mut ctl_w, io::ErrorKind::PermissionDenied, reason).await);
        }
    }
    if let Err(reason) = check(&hello, policy) {
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

/// 16 random bytes, hex.
fn random_nonce() -> String {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).expect("OS random source");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check(h: &Hello, policy: &Policy) -> Result<(), String> {
    if h.version != control::VERSION {
        return Err(format!(
            "perf protocol version {} (this server speaks {})",
            h.version,
            control::VERSION
        ));
    }
    let Policy {
        max_streams,
        max_bytes,
        max_seconds,
        ..
    } = *policy;
    if h.streams == 0 || h.streams > max_streams {
        return Err(format!("streams must be 1 to {max_streams} on this server"));
    }
    if h.bytes.is_some_and(|b| b == 0 || b > max_bytes) {
        return Err(format!("bytes must be 1 to {max_bytes} on this server"));
    }
    if h.bytes.is_none() && !(h.seconds > 0.0 && h.seconds <= max_seconds) {
        return Err(format!(
            "seconds must be above 0 and at most {max_seconds} on this server"
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Connections that start a data header or a control line and stop are closed after
    /// the same wait as silent ones, not held until the client goes. Time is paused: the
    /// waits pass as soon as nothing else can happen.
    #[tokio::test(start_paused = true)]
    async fn partial_headers_and_control_lines_time_out_like_silent_connections() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let failures = Arc::new(Mutex::new(Vec::new()));
        let f = failures.clone();
        let log: Arc<dyn Fn(Event) + Send + Sync> = Arc::new(move |e| {
            if let Event::Failed { error, .. } = e {
                f.lock().unwrap().push(error);
            }
        });
        tokio::spawn(serve(None, Some(listener), Policy::default(), log));
        let start = tokio::time::Instant::now();
        let mut held = Vec::new();
        for opening in [&control::DATA_MAGIC[..1], b"{\"hello\":".as_slice(), b""] {
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(opening).await.unwrap();
            held.push(c);
        }
        for mut c in held {
            let mut b = [0u8; 64];
            // The server's close reads as the end of the stream (or a reset).
            let closed = tokio::time::timeout(GATHER + Duration::from_secs(1), c.read(&mut b))
                .await
                .expect("closed within the wait");
            assert_eq!(closed.unwrap_or(0), 0);
        }
        assert!(start.elapsed() <= GATHER + Duration::from_secs(1));
        let mut errors = failures.lock().unwrap().clone();
        errors.sort();
        assert_eq!(
            errors,
            [
                "no complete hello within 10 s",
                "nothing sent",
                "partial data header"
            ]
        );
    }

    #[test]
    fn byte_counts_are_capped_like_durations() {
        let mut h = Hello {
            version: control::VERSION,
            test_id: 7,
            reverse: false,
            seconds: 3.0,
            bytes: None,
            streams: 2,
            interval: 1.0,
            congestion: None,
            pattern: Pattern::Bulk,
            omit: 0.0,
        };
        let p = Policy::default();
        assert_eq!(check(&h, &p), Ok(()));
        h.bytes = Some(u64::MAX);
        assert!(check(&h, &p)
            .unwrap_err()
            .contains("bytes must be 1 to 1099511627776"));
        h.bytes = Some(0);
        assert!(check(&h, &p).is_err());
        h.bytes = Some(MAX_BYTES);
        assert_eq!(check(&h, &p), Ok(()));
        // A server configured smaller refuses more.
        let small = Policy {
            max_bytes: 1000,
            ..Policy::default()
        };
        assert!(check(&h, &small)
            .unwrap_err()
            .contains("bytes must be 1 to 1000"));
        h.bytes = Some(1000);
        assert_eq!(check(&h, &small), Ok(()));
        let one_stream = Policy {
            max_streams: 1,
            ..small
        };
        assert!(check(&h, &one_stream)
            .unwrap_err()
            .contains("streams must be 1 to 1 on this server"));
    }
}
