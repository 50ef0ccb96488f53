//! A client and a server engine joined by an adversarial channel that drops, duplicates,
//! reorders, delays and corrupts datagrams as a byte string (the *schedule*) dictates.
//!
//! One byte of schedule decides the fate of each datagram; when the schedule runs out the
//! channel turns clean (every datagram delivered after the same delay, in order), so a
//! correct engine always finishes. The oracle:
//!
//! * at every moment, the bytes each receiver has delivered are an exact prefix of what
//!   its peer wrote (no wrong, repeated or reordered byte, ever);
//! * after the clean drain every written byte has arrived and the peer's end of stream
//!   (FIN, or FECTCP's rebuilt block) has been seen.
//!
//! Corruption models the UDP runtime: every datagram there is sealed with an AEAD, so a
//! corrupted one is refused before the engine sees it. The corrupted bytes still go
//! through the wire parser (it must survive them), then are dropped. With
//! [`Setup::insecure`] (the runtime's `--insecure` mode, no AEAD) a corrupted datagram
//! that still parses reaches the engine; the engine cannot tell a flipped payload bit, so
//! the data oracle is off and only "no panic, no hang" is checked.

use crate::input::Input;
use bytes::Bytes;
use core::time::Duration;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tcpfec_proto::{Config, Endpoint, Instant, Packet, Scheme};

/// One instance of every scheme family `tcpfec schemes` lists (a test checks the list
/// covers them), plus a few variants of the families with options.
pub const SCHEMES: &[&str] = &[
    "tahoe",
    "reno",
    "newreno",
    "sack",
    "cubic",
    "fec-cwnd",
    "fec-cwnd-o0",
    "fec-static-4",
    "fec-fmax-10",
    "fec-dup-fmax-6",
    "anker-8-1",
    "anker-16-2",
    "anker-4-3-tahoe",
    "anker-6-2-newreno",
    "anker-5-1-reno",
    "anker-10-2-cubic",
    "tcp-ir",
    "tcp-ir-4",
    "dfec",
    "afec",
    "afec-raw100",
    "tfec",
    "fectcp",
    "fec-il-g3-l10-r0.7",
    "fec-il-g2-l0-r1",
    "bbr",
    "bbr1",
    "auto",
    "auto-cubic",
];

/// Most bytes one side writes.
pub const MAX_BYTES: usize = 16 * 1024;
/// Most bytes one side writes unless both "large" flag bits are set: most fuzz inputs
/// then run a few dozen segments, several times faster (a quarter still go up to
/// [`MAX_BYTES`], where windows grow and FEC blocks fill).
pub const SMALL_BYTES: usize = 2 * 1024;
/// The two flag bits that together allow [`MAX_BYTES`].
const LARGE: u8 = 0x60;
/// The two flag bits that together ask for [`Setup::long_rto`]: a quarter of the inputs,
/// as such runs take up to a million events.
const LONG_RTO: u8 = 0x90;
/// Segment sizes the setup byte chooses from.
pub const MSS_CHOICES: [u16; 4] = [100, 256, 536, 1200];
/// Application write sizes the setup byte chooses from (0: everything at once).
pub const WRITE_CHOICES: [usize; 5] = [1, 100, 1000, 7000, 0];
/// Bytes of setup in front of the schedule in a pair input.
pub const SETUP_LEN: usize = 10;

/// One-way delay of the clean channel (and the base of the adversarial delays).
const BASE_DELAY: Duration = Duration::from_millis(10);
/// Channel events handled once the schedule has run out before the run counts as hung.
/// A clean drain of 16 KiB each way in 100-byte segments takes about a thousand events,
/// plus a few thousand when a backed-off RTO (60 s at most) is pending and a scheme
/// runs a per-RTT timer meanwhile.
const DRAIN_EVENTS: u64 = 50_000;
/// The same with [`Setup::insecure`]: corrupted headers may have wrecked the connection
/// for good, which is no finding there, so the run just stops sooner: after this many
/// events or [`INSECURE_DRAIN_DATAGRAMS`] datagrams (a FECTCP sender whose receiver took
/// corrupted block parameters streams symbols without end).
const INSECURE_DRAIN_EVENTS: u64 = 2_000;
/// See [`INSECURE_DRAIN_EVENTS`].
const INSECURE_DRAIN_DATAGRAMS: u64 = 10_000;
/// Longest simulated time without a single datagram while data or a FIN is still
/// owed: backed-off RTOs and handshake retries are capped near a minute, so an engine
/// silent for this long has stalled even if some timer keeps firing.
const SILENCE: u64 = 600_000_000_000;
/// The RTO cap unless [`Setup::long_rto`]: the same backoff logic in far fewer events.
const SHORT_MAX_RTO: Duration = Duration::from_secs(1);
/// Rounds at one instant before a run counts as spinning (each round handles every
/// datagram due and every timer due, so a correct engine needs one or two).
const SPIN: u32 = 1000;
/// Events in all before a run counts as hung. The longest schedule a fuzzer writes
/// (4 KiB) spans at most a few million events.
const MAX_EVENTS: u64 = 20_000_000;
/// Events with nothing in flight (only timers firing) before a run stops without a
/// verdict. A scheme with a per-RTT timer (AFEC) fires it through every backed-off
/// silence, thousands of times each, and a schedule of drops can chain thousands of
/// silences: such inputs took seconds each and held the fuzzer below a thousand runs a
/// second while adding nothing the first few silences had not shown. A genuine stall is
/// still caught first by `SILENCE`, and a spin at one instant by `SPIN`.
pub const MAX_TIMER_EVENTS: u64 = 200_000;

/// What the pair input's first bytes choose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Index into [`SCHEMES`] of the client's sending scheme.
    pub client_scheme: usize,
    /// Index into [`SCHEMES`] of the server's sending scheme (schemes are per direction).
    pub server_scheme: usize,
    /// Bytes the client writes.
    pub client_bytes: usize,
    /// Bytes the server writes back.
    pub server_bytes: usize,
    /// Largest payload per segment, both sides.
    pub mss: u16,
    /// Largest application write (0: all at once).
    pub write_chunk: usize,
    /// Delayed ACKs on both sides.
    pub delayed_ack: bool,
    /// A send buffer of 4 KiB instead of the default (the writer then waits on ACKs).
    pub small_send_buffer: bool,
    /// Corrupted datagrams that still parse reach the engine (no AEAD).
    pub insecure: bool,
    /// The RTO backs off to the default 60 s cap rather than 2 s: long silences, and
    /// simulated times past the 32-bit microsecond timestamps' wrap (71 minutes). Slow:
    /// a scheme with a per-RTT timer (AFEC) handles millions of events in such a run.
    pub long_rto: bool,
    /// Varies the bytes written.
    pub data_seed: u8,
}

impl Setup {
    /// Reads a setup from the first [`SETUP_LEN`] bytes of `input`.
    pub fn read(input: &mut Input) -> Setup {
        let n = SCHEMES.len();
        let client_scheme = input.u8() as usize % n;
        let s = input.u8();
        let server_scheme = if s & 0x80 == 0 {
            client_scheme
        } else {
            (s & 0x7f) as usize % n
        };
        let flags = input.u8();
        let most = if flags & LARGE == LARGE {
            MAX_BYTES
        } else {
            SMALL_BYTES
        };
        let client_bytes = input.u16() as usize % (most + 1);
        let server_bytes = if flags & 1 == 1 {
            input.u16() as usize % (most + 1)
        } else {
            input.u16();
            0
        };
        Setup {
            client_scheme,
            server_scheme,
            client_bytes,
            server_bytes,
            mss: *input.pick(&MSS_CHOICES),
            write_chunk: *input.pick(&WRITE_CHOICES),
            delayed_ack: flags & 2 != 0,
            small_send_buffer: flags & 4 != 0,
            insecure: flags & 8 != 0,
            long_rto: flags & LONG_RTO == LONG_RTO,
            data_seed: input.u8(),
        }
    }

    /// The bytes [`Setup::read`] reads back as this setup.
    pub fn encode(&self) -> [u8; SETUP_LEN] {
        let pos = |v: &[u16], x: u16| v.iter().position(|&y| y == x).unwrap_or(0) as u8;
        let flags = (self.server_bytes > 0) as u8
            | (self.delayed_ack as u8) << 1
            | (self.small_send_buffer as u8) << 2
            | (self.insecure as u8) << 3
            | if self.long_rto { LONG_RTO } else { 0 }
            | if self.client_bytes.max(self.server_bytes) > SMALL_BYTES {
                LARGE
            } else {
                0
            };
        let server = if self.server_scheme == self.client_scheme {
            0
        } else {
            0x80 | self.server_scheme as u8
        };
        let c = (self.client_bytes as u16).to_be_bytes();
        let s = (self.server_bytes as u16).to_be_bytes();
        let chunk = WRITE_CHOICES
            .iter()
            .position(|&w| w == self.write_chunk)
            .unwrap_or(0) as u8;
        [
            self.client_scheme as u8,
            server,
            flags,
            c[0],
            c[1],
            s[0],
            s[1],
            pos(&MSS_CHOICES, self.mss),
            chunk,
            self.data_seed,
        ]
    }

    fn config(&self, own: &Scheme, peer: &Scheme) -> Config {
        Config {
            // The runtime's rule: FECTCP runs both ways when either side sends with it.
            scheme: tcpfec_net::params::engine_scheme(own, peer).clone(),
            mss: self.mss,
            delayed_ack: self.delayed_ack,
            send_buffer: if self.small_send_buffer {
                4096
            } else {
                Config::default().send_buffer
            },
            // The adversary may drop any number of SYNs; the oracle wants the connection
            // to come up once the channel is clean, not a handshake timeout.
            syn_retries: u32::MAX,
            max_rto: if self.long_rto {
                Config::default().max_rto
            } else {
                SHORT_MAX_RTO
            },
            ..Config::default()
        }
    }

    /// Bytes each side writes. A FECTCP block must hold a byte (an empty one is never
    /// sent), and a FECTCP side only closes once it has received a block, so with FECTCP
    /// (either direction: it then runs both ways) both directions carry at least one byte.
    fn lengths(&self, client: &Scheme, server: &Scheme) -> (usize, usize) {
        if client.fountain.is_some() || server.fountain.is_some() {
            (self.client_bytes.max(1), self.server_bytes.max(1))
        } else {
            (self.client_bytes, self.server_bytes)
        }
    }
}

/// A scheme of [`SCHEMES`], parsed once.
pub fn scheme(i: usize) -> Scheme {
    thread_local! {
        static PARSED: Vec<Scheme> = SCHEMES
            .iter()
            .map(|s| Scheme::parse(s).expect("built-in scheme name"))
            .collect();
    }
    PARSED.with(|p| p[i % p.len()].clone())
}

/// The bytes a side writes: a hash of the position, so any shift, repeat or swap shows.
pub fn data(len: usize, seed: u8, side: u8) -> Vec<u8> {
    (0..len as u32)
        .map(|i| {
            let h = (i ^ (side as u32) << 24).wrapping_mul(0x9E37_79B1);
            (h >> 24) as u8 ^ seed
        })
        .collect()
}

/// What the schedule does to one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Arrives after this delay.
    Deliver(Duration),
    /// Never arrives.
    Drop,
    /// Dropped with the next `n` datagrams of the same direction.
    DropBurst(u8),
    /// Two copies arrive, after each delay.
    Duplicate(Duration, Duration),
    /// Byte `at` (modulo the length) is XORed with `mask` (never 0) on the way.
    Corrupt {
        /// Position (modulo the datagram's length).
        at: u8,
        /// Bits flipped.
        mask: u8,
        /// Delay.
        delay: Duration,
    },
}

impl Fate {
    /// Reads the fate of the next datagram; `None` once the schedule is over.
    pub fn read(input: &mut Input) -> Option<Fate> {
        let a = input.take()?;
        let p = (a & 31) as u64;
        let ms = Duration::from_millis;
        Some(match a >> 5 {
            // Three eighths of the byte values: delivered with up to 62 ms of jitter.
            0..=2 => Fate::Deliver(BASE_DELAY + ms(2 * p)),
            // Held back 0.1-1.65 s: overtaken by much later datagrams, often past an RTO.
            3 => Fate::Deliver(ms(100 + 50 * p)),
            4 => Fate::Drop,
            5 => Fate::DropBurst((p & 15) as u8),
            6 => Fate::Duplicate(BASE_DELAY + ms(5 * (p & 7)), ms(2 * input.u8() as u64)),
            _ => Fate::Corrupt {
                at: input.u8(),
                mask: input.u8().max(1),
                delay: BASE_DELAY + ms(p),
            },
        })
    }

    /// The schedule byte(s) that [`Fate::read`] reads as this fate (for generated
    /// schedules). Delays are rounded to what the encoding can say.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let ms = |d: Duration| d.as_millis() as u64;
        match *self {
            Fate::Deliver(d) if d >= Duration::from_millis(100) => {
                out.push(3 << 5 | ((ms(d) - 100) / 50).min(31) as u8)
            }
            Fate::Deliver(d) => out.push((ms(d).saturating_sub(10) / 2).min(31) as u8),
            Fate::Drop => out.push(4 << 5),
            Fate::DropBurst(n) => out.push(5 << 5 | n.min(15)),
            Fate::Duplicate(a, b) => {
                out.push(6 << 5 | (ms(a).saturating_sub(10) / 5).min(7) as u8);
                out.push((ms(b) / 2).min(255) as u8);
            }
            Fate::Corrupt { at, mask, delay } => {
                out.push(7 << 5 | ms(delay).saturating_sub(10).min(31) as u8);
                out.push(at);
                out.push(mask.max(1));
            }
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Bytes written by (client, server).
    pub written: [usize; 2],
    /// Bytes delivered to (server, client), i.e. of the (client, server) stream.
    pub delivered: [usize; 2],
    /// Delivered bytes that differ from what was written at that position, or lie past
    /// its end.
    pub wrong: usize,
    /// Written bytes not delivered when the run ended.
    pub missing: usize,
    /// Datagrams the endpoints sent.
    pub datagrams: u64,
    /// Rounds of the event loop (datagram arrivals and timer expiries).
    pub events: u64,
    /// Simulated time at the end.
    pub sim_time: Duration,
    /// Why the run failed, if it did (wrong or missing bytes, a stall, a hang).
    pub failure: Option<String>,
}

/// A datagram on its way: (arrival, sequence, to the server?, bytes), ordered for a
/// min-heap on arrival then sequence.
type InFlight = Reverse<(u64, u64, bool, Vec<u8>)>;

/// The channel: the datagrams in flight and, per direction, the burst being dropped.
#[derive(Default)]
struct Channel {
    in_flight: BinaryHeap<InFlight>,
    seq: u64,
    burst: [u8; 2],
    datagrams: u64,
}

impl Channel {
    fn push(&mut self, at: u64, to_server: bool, bytes: Vec<u8>) {
        self.seq += 1;
        self.in_flight
            .push(Reverse((at, self.seq, to_server, bytes)));
    }

    /// Sends one datagram through the fate the schedule gives it.
    fn send(&mut self, now: u64, to_server: bool, p: &Packet, sched: &mut Input, insecure: bool) {
        self.datagrams += 1;
        let bytes = p.to_vec().expect("the engine emits valid packets");
        let dir = to_server as usize;
        if self.burst[dir] > 0 {
            self.burst[dir] -= 1;
            return;
        }
        let at = |d: Duration| now + d.as_nanos() as u64;
        let fate = Fate::read(sched).unwrap_or(Fate::Deliver(BASE_DELAY));
        match fate {
            Fate::Deliver(d) => self.push(at(d), to_server, bytes),
            Fate::Drop => {}
            Fate::DropBurst(n) => self.burst[dir] = n,
            Fate::Duplicate(a, b) => {
                self.push(at(a), to_server, bytes.clone());
                self.push(at(b), to_server, bytes);
            }
            Fate::Corrupt { at: i, mask, delay } => {
                let mut bad = bytes;
                let i = i as usize % bad.len();
                bad[i] ^= mask;
                // The parser must survive it whether or not it is delivered.
                let parses = Packet::parse(&bad).is_ok();
                if insecure && parses {
                    self.push(at(delay), to_server, bad);
                }
            }
        }
    }
}

/// One side's application: what it writes and what it has read of the peer's stream.
struct App {
    out: Bytes,
    written: usize,
    finished: bool,
    expect: Vec<u8>,
    got: usize,
    wrong: usize,
}

impl App {
    fn new(out: Vec<u8>, expect: Vec<u8>) -> Self {
        App {
            out: Bytes::from(out),
            written: 0,
            finished: false,
            expect,
            got: 0,
            wrong: 0,
        }
    }

    /// Writes what the engine takes, in the setup's chunks; finishes when all is in.
    fn write(&mut self, e: &mut Endpoint, chunk: usize) {
        while self.written < self.out.len() {
            let room = e.write_capacity();
            if room == 0 {
                break;
            }
            let end = match chunk {
                0 => self.out.len(),
                c => self.written + c,
            }
            .min(self.written + room)
            .min(self.out.len());
            // A slice of the shared buffer: no copy per write.
            self.written += e.write(self.out.slice(self.written..end));
        }
        if self.written == self.out.len() && !self.finished {
            e.finish();
            self.finished = true;
        }
    }

    /// Reads everything delivered and compares it with what the peer wrote.
    fn read(&mut self, e: &mut Endpoint) {
        while let Some(c) = e.read_chunk() {
            let want = self.expect.get(self.got..).unwrap_or(&[]);
            let same = c.iter().zip(want).filter(|(a, b)| a == b).count();
            self.wrong += c.len() - same;
            self.got += c.len();
        }
    }

    fn complete(&self, e: &Endpoint) -> bool {
        self.got >= self.expect.len() && e.peer_finished()
    }
}

/// Runs a client and a server with the setup's schemes over the schedule. Never panics
/// on its own: failures are reported in the outcome (the fuzz target turns them into
/// panics).
pub fn run(setup: &Setup, schedule: &[u8]) -> Outcome {
    let (c, s) = (scheme(setup.client_scheme), scheme(setup.server_scheme));
    run_schemes(setup, &c, &s, schedule)
}

/// As [`run`], with the client sending with `client` and the server with `server`
/// (the setup's scheme indices are not used).
pub fn run_schemes(setup: &Setup, client: &Scheme, server: &Scheme, schedule: &[u8]) -> Outcome {
    run_traced(setup, client, server, schedule, |_| {})
}

/// A datagram as it reached an endpoint.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Simulated time of arrival.
    pub at: Duration,
    /// True if the server received it.
    pub to_server: bool,
    /// The datagram.
    pub bytes: Vec<u8>,
}

/// As [`run_schemes`], calling `trace` with every datagram delivered (the seed corpora
/// are made from such traces).
pub fn run_traced(
    setup: &Setup,
    client: &Scheme,
    server: &Scheme,
    schedule: &[u8],
    mut trace: impl FnMut(Delivery),
) -> Outcome {
    let (client_len, server_len) = setup.lengths(client, server);
    let client_data = data(client_len, setup.data_seed, 0);
    let server_data = data(server_len, setup.data_seed, 1);
    let (client_cfg, server_cfg) = (setup.config(client, server), setup.config(server, client));
    let mut client_end = Endpoint::client(client_cfg);
    let mut server_end = Endpoint::server(server_cfg);
    client_end.set_peer_conn_id(2);
    server_end.set_peer_conn_id(1);
    client_end.set_peer_scheme(server);
    server_end.set_peer_scheme(client);
    let (mut client, mut server) = (client_end, server_end);
    let mut apps = [
        App::new(client_data.clone(), server_data.clone()),
        App::new(server_data, client_data),
    ];
    let mut sched = Input::new(schedule);
    let mut ch = Channel::default();
    let mut now = 0u64;
    let mut drain_events = 0u64;
    let mut drain_from: Option<u64> = None; // datagrams sent when the drain began
    let mut events = 0u64;
    let mut last_sent = (0u64, 0u64); // (datagrams, time of the last one)
    let mut same_instant = 0u32;
    let mut timer_events = 0u64;
    let mut timer_budget_spent = false;
    let failure = loop {
        let t = Instant(now);
        for (app, e) in apps.iter_mut().zip([&mut client, &mut server]) {
            app.write(e, setup.write_chunk);
        }
        while let Some(p) = client.poll_packet(t) {
            ch.send(now, true, &p, &mut sched, setup.insecure);
        }
        while let Some(p) = server.poll_packet(t) {
            ch.send(now, false, &p, &mut sched, setup.insecure);
        }
        apps[0].read(&mut client);
        apps[1].read(&mut server);
        if apps[0].complete(&client) && apps[1].complete(&server) {
            break None;
        }
        if ch.datagrams != last_sent.0 {
            last_sent = (ch.datagrams, now);
        } else if now - last_sent.1 > SILENCE {
            break Some(format!(
                "stalled: silent since {} s",
                last_sent.1 / 1_000_000_000
            ));
        }
        events += 1;
        if events > MAX_EVENTS {
            break Some(format!("hung: {events} events without finishing"));
        }
        if sched.is_empty() {
            drain_events += 1;
            let drain_datagrams = *drain_from.get_or_insert(ch.datagrams);
            if setup.insecure
                && (drain_events > INSECURE_DRAIN_EVENTS
                    || ch.datagrams - drain_datagrams > INSECURE_DRAIN_DATAGRAMS)
            {
                // Judged on "no panic" only: stop (the failure is cleared below).
                break Some("stopped in the insecure drain".into());
            }
            if drain_events > DRAIN_EVENTS {
                break Some(format!(
                    "not finished {DRAIN_EVENTS} events into the clean drain"
                ));
            }
        }
        let next_packet = ch.in_flight.peek().map(|Reverse(x)| x.0);
        let next_timer = [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
            .map(|i| i.0)
            .min();
        let Some(next) = next_packet.into_iter().chain(next_timer).min() else {
            break Some("stalled: nothing in flight and no timer set".into());
        };
        if next_packet.is_none() {
            timer_events += 1;
            if timer_events > MAX_TIMER_EVENTS {
                timer_budget_spent = true;
                break Some("stopped: timer budget spent".into());
            }
        }
        // A timer that is still due once handled (and the packets it asked for sent)
        // would make a driver that sleeps until the next deadline spin.
        if next <= now {
            same_instant += 1;
            if same_instant > SPIN {
                break Some(format!("spinning: a timer stays due at {now} ns"));
            }
        } else {
            same_instant = 0;
        }
        now = now.max(next);
        let t = Instant(now);
        while ch.in_flight.peek().is_some_and(|Reverse(x)| x.0 <= now) {
            let Reverse((_, _, to_server, bytes)) = ch.in_flight.pop().expect("peeked");
            let e = if to_server { &mut server } else { &mut client };
            // Corrupted datagrams may fail to parse; nothing else does.
            let _ = e.handle_datagram(t, &bytes);
            trace(Delivery {
                at: Duration::from_nanos(now),
                to_server,
                bytes,
            });
        }
        for e in [&mut client, &mut server] {
            if e.poll_timeout().is_some_and(|d| d <= t) {
                e.handle_timeout(t);
            }
        }
    };
    let [c, s] = &apps;
    let missing = s.expect.len().saturating_sub(s.got) + c.expect.len().saturating_sub(c.got);
    let wrong = s.wrong + c.wrong;
    let mut out = Outcome {
        written: [client_len, server_len],
        delivered: [s.got, c.got],
        wrong,
        missing,
        datagrams: ch.datagrams,
        events,
        sim_time: Duration::from_nanos(now),
        failure,
    };
    if setup.insecure {
        // Without integrity, flipped payload bits are delivered as data: only a panic or
        // a hang of the engine is a finding.
        out.failure = None;
    } else if timer_budget_spent {
        // Cut short (see MAX_TIMER_EVENTS): what is missing is no verdict, a wrong byte is.
        out.missing = 0;
        out.failure =
            (wrong > 0).then(|| format!("{wrong} wrong bytes when the run was cut short"));
    } else if out.failure.is_none() && (wrong > 0 || missing > 0) {
        out.failure = Some(format!("{wrong} wrong and {missing} missing bytes"));
    } else if let Some(f) = &mut out.failure {
        f.push_str(&format!(" ({wrong} wrong, {missing} missing bytes)"));
    }
    out
}

/// The pair fuzz target's body: setup bytes, then the schedule.
pub fn run_input(bytes: &[u8]) -> Outcome {
    let mut input = Input::new(bytes);
    let setup = Setup::read(&mut input);
    run(&setup, input.remaining())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_encoding_round_trips() {
        let s = Setup {
            client_scheme: 7,
            server_scheme: 3,
            client_bytes: 12_345,
            server_bytes: 99,
            mss: 536,
            write_chunk: 7000,
            delayed_ack: true,
            small_send_buffer: false,
            insecure: false,
            long_rto: true,
            data_seed: 42,
        };
        assert_eq!(Setup::read(&mut Input::new(&s.encode())), s);
    }

    #[test]
    fn fate_encoding_round_trips() {
        let ms = Duration::from_millis;
        for f in [
            Fate::Deliver(ms(10)),
            Fate::Deliver(ms(40)),
            Fate::Deliver(ms(600)),
            Fate::Drop,
            Fate::DropBurst(5),
            Fate::Duplicate(ms(20), ms(300)),
            Fate::Corrupt {
                at: 9,
                mask: 0x40,
                delay: ms(17),
            },
        ] {
            let mut b = Vec::new();
            f.encode(&mut b);
            assert_eq!(Fate::read(&mut Input::new(&b)), Some(f));
        }
    }

    #[test]
    fn data_differs_under_a_shift() {
        let d = data(1000, 0, 0);
        assert!(d[1..].iter().zip(&d[..999]).filter(|(a, b)| a == b).count() < 20);
    }
}
