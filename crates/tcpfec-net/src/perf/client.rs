//! The client of a test: opens the control and data connections, moves data (or receives
//! it with `reverse`), reports every interval and collects both sides' totals.

use super::control::{self, DataHeader, Hello, IntervalDelays, Message, SideEnd};
use super::cpu::Meter;
use super::movers::{ticker, Budget, Movers};
use super::probe::{Probe, Sample};
use super::timed::{wall_ns, Clock, Delays, Pattern};
use super::{kernel_tcp, BoxStream, Transport};
use crate::Endpoint;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// What the client asks for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Send for this long (unless `bytes`).
    pub seconds: f64,
    /// Send exactly this many bytes over all streams.
    pub bytes: Option<u64>,
    /// Data connections.
    pub streams: u32,
    /// The server sends.
    pub reverse: bool,
    /// Seconds between interval reports.
    pub interval: f64,
    /// How the data moves (bulk, a paced stream, exchanges).
    pub pattern: Pattern,
    /// Seconds from the start whose delays are left out.
    pub omit: f64,
    /// The pre-shared key, for a kernel TCP test's challenge (`None`: `--insecure`).
    pub key: Option<crate::Psk>,
}

/// How the client opens connections.
pub enum Connector<'a> {
    /// tcpfec connections from these endpoints (their config names the schemes): the
    /// control connection and data stream 0 from the first, data stream `i` from
    /// endpoint `i` modulo their number. Several endpoints have several source ports,
    /// which a sharded server spreads over its cores.
    Tcpfec(&'a [Endpoint], String),
    /// Kernel TCP with this congestion control (`None`: the system default).
    Tcp(Option<String>),
}

impl Connector<'_> {
    /// The transport, for reports.
    pub fn transport(&self) -> Transport {
        match self {
            Connector::Tcpfec(_, scheme) => Transport::Tcpfec {
                scheme: scheme.clone(),
            },
            Connector::Tcp(cc) => Transport::Tcp {
                congestion: cc.clone(),
            },
        }
    }

    /// Opens connection number `slot` (0 for the control connection, the stream index
    /// for data).
    async fn open(&self, addr: SocketAddr, slot: u32) -> io::Result<(BoxStream, Probe)> {
        match self {
            Connector::Tcpfec(eps, _) => {
                let ep = &eps[slot as usize % eps.len()];
                let s = ep.connect(addr).await.map_err(io::Error::from)?;
                let probe = Probe::Tcpfec(s.watch());
                Ok((Box::new(s), probe))
            }
            Connector::Tcp(cc) => {
                let s = kernel_tcp::connect(addr, cc.as_deref()).await?;
                let probe = kernel_tcp::probe(&s);
                Ok((Box::new(s), probe))
            }
        }
    }
}

/// One stream's share of an interval, both sides' view joined: the sender's counters
/// and window, the receiver's FEC recoveries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IntervalStream {
    /// Bytes delivered in the interval: acknowledged (client sends) or read (client
    /// receives).
    pub bytes: u64,
    /// Retransmissions in the interval.
    pub retransmits: u64,
    /// Repair packets sent in the interval.
    pub repairs_sent: u64,
    /// Segments rebuilt by FEC in the interval (as last reported by the receiver).
    pub recovered: u64,
    /// Smoothed RTT at the interval's end, microseconds.
    pub rtt_us: Option<u64>,
    /// Congestion window at the interval's end, bytes.
    pub cwnd_bytes: Option<u64>,
    /// Pacing rate at the interval's end, bits per second.
    pub pacing_bps: Option<f64>,
}

/// One interval of the test.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    /// Seconds since the start.
    pub start: f64,
    /// Seconds since the start.
    pub end: f64,
    /// Per stream.
    pub streams: Vec<IntervalStream>,
    /// The delays measured in the interval (paced streams: at the receiver; exchanges:
    /// round trips at the client).
    pub delays: Option<IntervalDelays>,
}

impl Interval {
    /// All streams together (gauges: RTT averaged, window and pacing summed).
    pub fn sum(&self) -> IntervalStream {
        sum_streams(&self.streams)
    }
}

/// Adds streams' intervals (RTT averaged over the streams that have one).
pub fn sum_streams(v: &[IntervalStream]) -> IntervalStream {
    let rtts: Vec<u64> = v.iter().filter_map(|s| s.rtt_us).collect();
    let some_sum = |f: &dyn Fn(&IntervalStream) -> Option<u64>| {
        let xs: Vec<u64> = v.iter().filter_map(f).collect();
        (!xs.is_empty()).then(|| xs.iter().sum())
    };
    let pacing: Vec<f64> = v.iter().filter_map(|s| s.pacing_bps).collect();
    IntervalStream {
        bytes: v.iter().map(|s| s.bytes).sum(),
        retransmits: v.iter().map(|s| s.retransmits).sum(),
        repairs_sent: v.iter().map(|s| s.repairs_sent).sum(),
        recovered: v.iter().map(|s| s.recovered).sum(),
        rtt_us: (!rtts.is_empty()).then(|| rtts.iter().sum::<u64>() / rtts.len() as u64),
        cwnd_bytes: some_sum(&|s| s.cwnd_bytes),
        pacing_bps: (!pacing.is_empty()).then(|| pacing.iter().sum()),
    }
}

/// The outcome of a test.
#[derive(Debug, Clone)]
pub struct Report {
    /// What ran.
    pub transport: Transport,
    /// The test as asked.
    pub hello: Hello,
    /// The server's address.
    pub server: SocketAddr,
    /// Every interval.
    pub intervals: Vec<Interval>,
    /// The sending side's totals.
    pub sender: SideEnd,
    /// The receiving side's totals.
    pub receiver: SideEnd,
    /// True if the client was the sender.
    pub client_sent: bool,
}

impl Report {
    /// The delays of the whole test, from the side that measured them.
    pub fn delays(&self) -> Option<&IntervalDelays> {
        self.sender
            .delays
            .as_ref()
            .or(self.receiver.delays.as_ref())
    }
}

impl Report {
    /// The client's own totals.
    pub fn local(&self) -> &SideEnd {
        if self.client_sent {
            &self.sender
        } else {
            &self.receiver
        }
    }

    /// The server's totals.
    pub fn remote(&self) -> &SideEnd {
        if self.client_sent {
            &self.receiver
        } else {
            &self.sender
        }
    }
}

/// Seconds without any byte moving after which a test is abandoned.
pub const STALL: Duration = Duration::from_secs(30);

/// Runs one test against `server`, calling `on_interval` as each interval ends.
pub async fn run(
    connector: &Connector<'_>,
    server: SocketAddr,
    opts: &Options,
    on_interval: &mut (dyn FnMut(&Interval) + Send),
) -> io::Result<Report> {
    let hello = Hello {
        version: control::VERSION,
        test_id: random_id(),
        reverse: opts.reverse,
        seconds: opts.seconds,
        bytes: opts.bytes,
        streams: opts.streams,
        interval: opts.interval,
        congestion: match connector {
            Connector::Tcp(cc) => cc.clone(),
            Connector::Tcpfec(..) => None,
        },
        pattern: opts.pattern,
        omit: opts.omit,
    };
    let (ctl, _) = connector.open(server, 0).await?;
    let (ctl_r, mut ctl_w) = tokio::io::split(ctl);
    let mut ctl_r = control::Reader::new(ctl_r);
    let hello_sent = wall_ns();
    control::send(&mut ctl_w, &Message::Hello(hello.clone())).await?;
    let mut answer = ctl_r.next().await?;
    if let Some(Message::Challenge { nonce }) = &answer {
        let Some(key) = &opts.key else {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the server asks kernel TCP clients for its key: give --key-file",
            ));
        };
        let proof = control::proof(key, nonce, hello.test_id);
        control::send(&mut ctl_w, &Message::Proof { proof }).await?;
        answer = ctl_r.next().await?;
    }
    let clock = match answer {
        Some(Message::Accept { clock_ns }) => {
            let back = wall_ns();
            // How the server reads this side's stamps, and how this side reads its.
            let theirs = Clock::from_exchange(hello_sent, back, clock_ns, true);
            control::send(&mut ctl_w, &Message::Clock(theirs)).await?;
            Clock::from_exchange(hello_sent, back, clock_ns, false)
        }
        Some(Message::Refuse { reason }) => {
            return Err(io::Error::other(format!("the server refused: {reason}")))
        }
        other => return Err(protocol(&format!("expected accept, got {other:?}"))),
    };
    let mut streams = Vec::new();
    let mut probes = Vec::new();
    for index in 0..opts.streams {
        let (mut s, p) = connector.open(server, index).await?;
        s.write_all(
            &DataHeader {
                test_id: hello.test_id,
                index,
            }
            .encode(),
        )
        .await?;
        streams.push(s);
        probes.push(p);
    }
    let meter = Meter::start();
    let start = Instant::now();
    let n = opts.streams as usize;
    let from = start + Duration::from_secs_f64(opts.omit);
    let movers = if opts.reverse {
        let delays =
            matches!(opts.pattern, Pattern::Paced { .. }).then(|| Delays::new(n, clock, from));
        Movers::receive(streams, probes, start, opts.pattern, delays)
    } else {
        let budgets = Budget::split(opts.seconds, opts.bytes, opts.streams);
        // Round trips are read on this side's own clock.
        let delays = matches!(opts.pattern, Pattern::Exchange { .. })
            .then(|| Delays::new(n, Clock::Shared, from));
        Movers::send(streams, probes, budgets, start, opts.pattern, delays)
    };

    // The server's reports arrive on the control connection while data flows.
    let remote: Arc<Mutex<(Vec<Sample>, Option<IntervalDelays>)>> =
        Arc::new(Mutex::new((Vec::new(), None)));
    let remote_end: Arc<Mutex<Option<SideEnd>>> = Arc::new(Mutex::new(None));
    let listener = {
        let (remote, remote_end) = (remote.clone(), remote_end.clone());
        tokio::spawn(async move {
            loop {
                match ctl_r.next().await? {
                    Some(Message::Progress {
                        streams, delays, ..
                    }) => *remote.lock().expect("not poisoned") = (streams, delays),
                    Some(Message::Done(end)) => {
                        *remote_end.lock().expect("not poisoned") = Some(end);
                        return Ok(());
                    }
                    Some(Message::Refuse { reason }) => {
                        return Err(io::Error::other(format!(
                            "the server stopped the test: {reason}"
                        )))
                    }
                    Some(other) => return Err(protocol(&format!("unexpected {other:?}"))),
                    None => return Err(protocol("the server closed the control connection")),
                }
            }
        })
    };

    let mut intervals = Vec::new();
    let mut prev = Prev::new(opts.streams as usize);
    let mut tick = ticker(opts.interval);
    let mut last_progress = (Instant::now(), 0u64);
    let mut t0 = 0.0;
    loop {
        let done = movers.tick_or_done(&mut tick).await;
        let t1 = start.elapsed().as_secs_f64();
        let iv = prev.interval(t0, t1, &movers, &remote, opts.reverse);
        on_interval(&iv);
        intervals.push(iv);
        t0 = t1;
        // Progress is delivery, not writing: a sender may have written everything and
        // still wait for the receiver.
        let total: u64 = prev.bytes.iter().sum();
        if total != last_progress.1 {
            last_progress = (Instant::now(), total);
        } else if last_progress.0.elapsed() > STALL {
            movers.abort();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no data moved for {} s", STALL.as_secs()),
            ));
        }
        if done {
            break;
        }
    }
    let delays = movers.delays.as_ref().map(|d| d.report());
    let local = SideEnd {
        delays,
        ..SideEnd::measured(movers.join().await?, &meter)
    };
    control::send(&mut ctl_w, &Message::Done(local.clone())).await?;
    tokio::time::timeout(Duration::from_secs(30), listener)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no totals from the server"))?
        .map_err(io::Error::other)??;
    let remote_end = remote_end
        .lock()
        .expect("not poisoned")
        .take()
        .expect("set before the listener returned");
    let _ = ctl_w.shutdown().await;
    let (sender, receiver) = if opts.reverse {
        (remote_end, local)
    } else {
        (local, remote_end)
    };
    Ok(Report {
        transport: connector.transport(),
        hello,
        server,
        intervals,
        sender,
        receiver,
        client_sent: !opts.reverse,
    })
}

/// Counters at the previous interval's end, to turn cumulative counters into deltas.
struct Prev {
    bytes: Vec<u64>,
    sender: Vec<Sample>,
    receiver: Vec<Sample>,
}

impl Prev {
    fn new(n: usize) -> Self {
        Prev {
            bytes: vec![0; n],
            sender: vec![Sample::default(); n],
            receiver: vec![Sample::default(); n],
        }
    }

    fn interval(
        &mut self,
        t0: f64,
        t1: f64,
        movers: &Movers,
        remote: &Mutex<(Vec<Sample>, Option<IntervalDelays>)>,
        reverse: bool,
    ) -> Interval {
        let (remote, remote_delays) = {
            let mut r = remote.lock().expect("not poisoned");
            (r.0.clone(), r.1.take())
        };
        // The delays are this side's if it measures them, else the server's last report.
        let delays = match &movers.delays {
            Some(d) => Some(d.take_interval()),
            None => remote_delays,
        };
        let mut streams = Vec::new();
        for i in 0..self.bytes.len() {
            let local = movers.probes[i].sample();
            let theirs = remote.get(i).copied().unwrap_or_default();
            let (snd, rcv) = if reverse {
                (theirs, local)
            } else {
                (local, theirs)
            };
            // Delivered bytes: what the receiver read (client receives), or what the
            // receiver acknowledged (client sends; bytes written if the transport cannot
            // say, as for kernel TCP off Linux).
            let moved = movers.moved[i].load(std::sync::atomic::Ordering::Relaxed);
            // A finished connection reads as zeros: all it moved was delivered.
            let delivered = match (&movers.probes[i], reverse) {
                (_, true) | (Probe::None, false) => moved,
                (_, false) if snd == Sample::default() => moved,
                (_, false) => snd.bytes_acked.min(moved),
            };
            let p_snd = self.sender[i];
            let p_rcv = self.receiver[i];
            streams.push(IntervalStream {
                bytes: delivered.saturating_sub(self.bytes[i]),
                retransmits: snd.retransmits.saturating_sub(p_snd.retransmits),
                repairs_sent: snd.repairs_sent.saturating_sub(p_snd.repairs_sent),
                recovered: rcv.recovered.saturating_sub(p_rcv.recovered),
                rtt_us: snd.rtt_us,
                cwnd_bytes: snd.cwnd_bytes,
                pacing_bps: snd.pacing_bps,
            });
            self.bytes[i] = delivered.max(self.bytes[i]);
            // A connection that is gone reads as zeros: keep the last real counters.
            if snd != Sample::default() {
                self.sender[i] = snd;
            }
            if rcv != Sample::default() {
                self.receiver[i] = rcv;
            }
        }
        Interval {
            start: t0,
            end: t1,
            streams,
            delays,
        }
    }
}

fn random_id() -> u64 {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).expect("OS random source");
    u64::from_be_bytes(b)
}

fn protocol(what: &str) -> io::Error {
    control::invalid(&format!("perf: {what}"))
}
