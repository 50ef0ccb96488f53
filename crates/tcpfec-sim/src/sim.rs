//! The simulator: drives one engine ([`tcpfec_proto::Endpoint`]) per endpoint over the built network in
//! virtual time and collects the metrics of a [`Scenario`].

use crate::clock::HostClock;
use crate::delivery::WriteLog;
use crate::event::{EventKind, EventQueue};
use crate::link::Offer;
use crate::metrics::{jain, FlowResult, RunResult};
use crate::rng::Rng;
use crate::scenario::{App, Scenario, Start, APP_TICK_NS, HEADER_BYTES};
use crate::topology::Network;
use bytes::Bytes;
use core::time::Duration;
use std::sync::OnceLock;
use tcpfec_channel::DelayHistogram;
use tcpfec_proto::ResumeStatus;
use tcpfec_proto::{Endpoint as Engine, Packet, Stats};

/// Period of the byte pattern applications send: a prime, so that no whole number of
/// segments maps a byte onto the same pattern position and misordering shows up. Small
/// enough to stay in the processor's cache: repairs are coded from it and every delivered
/// byte is checked against it, and a 1 MB pattern, read from memory, made the encoder's
/// XOR a tenth of a simulated `auto` flow.
const PATTERN_LEN: usize = 131_071;
/// Bulk senders top their buffer up in chunks of this size.
const WRITE_CHUNK: usize = 64 * 1024;
/// Random stream of the flows' start times.
const START_STREAM: u64 = 1;

/// The pattern, followed by its first [`WRITE_CHUNK`] bytes again, so that a write of up
/// to a chunk from any position is one slice: a write cut short where the pattern ends
/// would leave less queued than the application asked for.
fn pattern() -> &'static Bytes {
    static P: OnceLock<Bytes> = OnceLock::new();
    P.get_or_init(|| {
        let mut v = vec![0u8; PATTERN_LEN];
        Rng::new(0x7c9f_ec00, 0).fill(&mut v);
        v.extend_from_within(..WRITE_CHUNK);
        // Static, not shared: every segment, repair member and decoder copy of a payload
        // is a clone of a slice of it, and a shared buffer's clone and drop are atomic
        // reference-count updates (5 % of a simulated `auto` flow's time).
        Bytes::from_static(Box::leak(v.into_boxed_slice()))
    })
}

/// The application bytes at stream offset `offset`, at most `len` (and at most
/// [`WRITE_CHUNK`]) of them (zero-copy).
fn stream_bytes(offset: u64, len: usize) -> Bytes {
    let at = (offset % PATTERN_LEN as u64) as usize;
    pattern().slice(at..at + len.min(WRITE_CHUNK))
}

/// Runs a scenario to completion and returns its metrics.
pub fn run(sc: &Scenario) -> RunResult {
    Simulator::new(sc).run()
}

/// What [`run_traced`] writes, and where.
#[derive(Debug, Clone, Default)]
pub struct TraceFiles {
    /// qlog traces of both ends of every flow: `NAME-flowF-client.sqlog` and
    /// `NAME-flowF-server.sqlog` in this directory (it must exist).
    pub qlog_dir: Option<std::path::PathBuf>,
    /// A pcapng capture per flow, as the client's host sees it: `NAME-flowF.pcapng`.
    pub pcap_dir: Option<std::path::PathBuf>,
    /// Names this run's files.
    pub name: String,
    /// Most bytes per file; a qlog trace that reaches it ends with a note, a capture
    /// stops.
    pub limit: u64,
}

/// [`run`], writing the traces `files` asks for. Tracing changes nothing the run
/// computes: the metrics are the same as without it.
pub fn run_traced(sc: &Scenario, files: &TraceFiles) -> std::io::Result<RunResult> {
    let mut sim = Simulator::new(sc);
    for (i, e) in sim.endpoints.iter_mut().enumerate() {
        let client = i % 2 == 0;
        let (side, end) = if client {
            (tcpfec_qlog::Side::Client, "client")
        } else {
            (tcpfec_qlog::Side::Server, "server")
        };
        if let Some(dir) = &files.qlog_dir {
            let file = dir.join(format!("{}-flow{}-{end}.sqlog", files.name, e.flow));
            let title = format!("{} flow {} ({})", files.name, e.flow, sc.scheme.name);
            let w = tcpfec_qlog::QlogWriter::create(&file, side, &title, files.limit)?;
            e.conn.set_trace(true);
            e.tracer = Some(tcpfec_qlog::ConnTracer::new(
                Box::new(w),
                e.conn.config().mss,
            ));
        }
        if let (Some(dir), true) = (&files.pcap_dir, client) {
            let file = dir.join(format!("{}-flow{}.pcapng", files.name, e.flow));
            e.pcap = Some(tcpfec_qlog::PcapWriter::create(&file, files.limit)?);
        }
    }
    let result = sim.run_keeping();
    for e in &mut sim.endpoints {
        if let Some(t) = &mut e.tracer {
            t.flush()?;
        }
        if let Some(p) = &mut e.pcap {
            p.flush()?;
        }
    }
    Ok(result)
}

/// Writes `packet` into flow `flow`'s capture: sent by its client (`from_client`) or to it.
fn capture(
    pcap: &mut tcpfec_qlog::PcapWriter,
    now: u64,
    nodes: (u32, u32),
    flow: u32,
    from_client: bool,
    packet: &Packet,
) {
    let client = tcpfec_qlog::pcap::sim_addr(nodes.0, 40_000u16.wrapping_add(flow as u16));
    let server = tcpfec_qlog::pcap::sim_addr(nodes.1, tcpfec_qlog::pcap::SIM_SERVER_PORT);
    let (src, dst) = if from_client {
        (client, server)
    } else {
        (server, client)
    };
    if let Ok(bytes) = packet.to_vec() {
        // A capture that cannot be written loses packets, not the run.
        let _ = pcap.udp(Duration::from_nanos(now), src, dst, &bytes);
    }
}

/// What the network needs to know of a packet in flight. It is kept apart from the
/// packet itself (256 bytes), which only its receiver reads: links and routers touch
/// these 20 bytes, and the packet is copied once into the store and once out.
#[derive(Clone, Copy)]
struct PacketMeta {
    size: u32,
    dst_node: u32,
    dst_endpoint: u32,
    flow: u32,
    data: bool,
}

struct Endpoint {
    conn: Engine,
    node: u32,
    flow: u32,
    sender: bool,
    /// The host's clock, through which the engine reads the time.
    clock: HostClock,
    /// True time of the timer event queued for this endpoint, if any.
    timer_at: Option<u64>,
    closed_own_side: bool,
    /// The qlog trace, with `run_traced`.
    tracer: Option<tcpfec_qlog::ConnTracer>,
    /// The flow's capture (client endpoints only), with `run_traced`.
    pcap: Option<tcpfec_qlog::PcapWriter>,
}

#[derive(Default, Clone, Copy)]
struct Snapshot {
    /// The sender's counters.
    stats: Stats,
    /// The receiver's counters (FEC recoveries happen there).
    rx: Stats,
    data_dropped: u64,
}

#[derive(Default)]
struct FlowState {
    start_ns: u64,
    started: bool,
    written: u64,
    finished_writing: bool,
    read: u64,
    delivered_in_window: u64,
    wire_bytes_in_window: u64,
    data_dropped: u64,
    done_ns: Option<u64>,
    corrupt_bytes: u64,
    at_window_start: Snapshot,
    at_window_end: Option<Snapshot>,
    cwnd: Vec<(f64, f64)>,
    group_size: Vec<(f64, f64)>,
    /// (seconds, `auto`'s loss rate, mean burst, K, M), sampled with the cwnd.
    auto: Vec<(f64, [f64; 4])>,
    /// A background flow: bulk Reno, outside the run's metrics.
    background: bool,
    /// (seconds, application bytes read so far), sampled with the cwnd.
    delivered: Vec<(f64, f64)>,
    /// (seconds, FEC redundancy (K + k)/K), sampled with the cwnd.
    redundancy: Vec<(f64, f64)>,
    /// (seconds, latest delivery-rate sample in Mb/s), sampled with the cwnd.
    delivery_rate: Vec<(f64, f64)>,
    /// Delivery gaps inside the measurement window: count, sum and sum of squares (ns).
    gaps: (u64, f64, f64),
    last_delivery_ns: Option<u64>,
    /// When each byte not yet read was written.
    writes: WriteLog,
    /// Delivery delays inside the measurement window, weighted by bytes (a
    /// request/response flow: one per exchange), within 1 %.
    delay: DelayHistogram,
    /// The return stream of a request/response flow.
    exchange: Exchange,
}

/// The state of a request/response flow ([`App::RequestResponse`]) beyond its request
/// stream: the responses, and the exchange in progress.
#[derive(Default)]
struct Exchange {
    /// When the request now answered was written; `None` between exchanges.
    request_at: Option<u64>,
    /// Request bytes still to write.
    request_unwritten: u64,
    /// Request bytes the receiver has read beyond the last whole request.
    request_bytes_read: u64,
    /// Response bytes owed (whole requests read, their responses not yet written).
    response_owed: u64,
    /// Response bytes written and read, over the whole run (the return stream's offsets).
    response_written: u64,
    response_read: u64,
    /// Requests written (or being written), over the whole run.
    requests: u64,
}

impl Exchange {
    /// Response bytes read once every request written so far is answered.
    fn responses_due(&self, response: u64) -> u64 {
        self.requests * response
    }
}

struct Simulator<'a> {
    sc: &'a Scenario,
    now: u64,
    end: u64,
    window: (u64, u64),
    queue: EventQueue,
    net: Network,
    /// Packets in flight by slot, with their [`PacketMeta`] at the same index.
    packets: Vec<Option<Packet>>,
    meta: Vec<PacketMeta>,
    free_slots: Vec<u32>,
    endpoints: Vec<Endpoint>,
    flows: Vec<FlowState>,
    events: u64,
    packets_total: u64,
    /// Every measured flow's delivery delays, within 0.1 %.
    delay: DelayHistogram,
}

impl<'a> Simulator<'a> {
    fn new(sc: &'a Scenario) -> Self {
        let net = Network::build(sc);
        let cfg = sc.config();
        let bg_cfg = sc.background_config();
        let mut endpoints = Vec::new();
        let mut flows = Vec::new();
        let mut queue = EventQueue::default();
        let mut start_rng = Rng::new(sc.seed, START_STREAM);
        for (i, &(s, d)) in net.flow_hosts.iter().enumerate() {
            let flow = i as u32;
            let background = flow >= sc.flows;
            let mut cfg = if background { &bg_cfg } else { &cfg }.clone();
            // Each flow's controller draws its own random numbers, repeatably.
            cfg.cc_seed = sc.seed ^ (u64::from(flow) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            endpoints.push(Endpoint {
                conn: Engine::client(cfg.clone()),
                node: s,
                flow,
                sender: true,
                clock: HostClock::default(),
                timer_at: None,
                closed_own_side: false,
                tracer: None,
                pcap: None,
            });
            endpoints.push(Endpoint {
                conn: Engine::server(cfg.clone()),
                node: d,
                flow,
                sender: false,
                clock: HostClock::with_skew_ppm(sc.clock_skew_ppm),
                timer_at: None,
                closed_own_side: false,
                tracer: None,
                pcap: None,
            });
            let start = match sc.start {
                Start::Fixed { at } => at,
                Start::Uniform { from, to } => from + (to - from).mul_f64(start_rng.uniform()),
            };
            let start_ns = start.as_nanos() as u64;
            queue.push(start_ns, EventKind::Start { flow });
            flows.push(FlowState {
                start_ns,
                background,
                delay: DelayHistogram::coarse(),
                ..FlowState::default()
            });
        }
        let window = (sc.window.0.as_nanos() as u64, sc.window.1.as_nanos() as u64);
        queue.push(window.0, EventKind::WindowStart);
        queue.push(window.1, EventKind::WindowEnd);
        if let Some(iv) = sc.cwnd_sample {
            if !iv.is_zero() {
                queue.push(0, EventKind::Sample);
            }
        }
        Simulator {
            sc,
            now: 0,
            end: sc.duration.as_nanos() as u64,
            window,
            queue,
            net,
            packets: Vec::new(),
            meta: Vec::new(),
            free_slots: Vec::new(),
            endpoints,
            flows,
            events: 0,
            packets_total: 0,
            delay: DelayHistogram::new(),
        }
    }

    fn run(mut self) -> RunResult {
        self.run_keeping()
    }

    /// [`Simulator::run`], leaving the simulator in place (its traces still to flush).
    fn run_keeping(&mut self) -> RunResult {
        while let Some((t, kind)) = self.queue.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            match kind {
                EventKind::Arrive { node, packet } => self.on_arrive(node, packet),
                EventKind::Timer { endpoint } => self.on_timer(endpoint),
                EventKind::Start { flow } => {
                    self.flows[flow as usize].started = true;
                    self.service(2 * flow);
                    if matches!(self.sc.app, App::Rate { .. }) {
                        self.queue
                            .push(self.now + APP_TICK_NS, EventKind::AppTick { flow });
                    }
                }
                EventKind::AppTick { flow } => {
                    self.service(2 * flow);
                    self.queue
                        .push(self.now + APP_TICK_NS, EventKind::AppTick { flow });
                }
                EventKind::Sample => self.on_sample(),
                EventKind::WindowStart => {
                    for f in 0..self.flows.len() {
                        self.flows[f].at_window_start = self.snapshot(f);
                    }
                }
                EventKind::WindowEnd => {
                    for f in 0..self.flows.len() {
                        self.flows[f].at_window_end = Some(self.snapshot(f));
                    }
                }
            }
        }
        self.results()
    }

    fn snapshot(&self, flow: usize) -> Snapshot {
        let (stats, rx) = (
            self.endpoints[2 * flow].conn.stats(),
            self.endpoints[2 * flow + 1].conn.stats(),
        );
        let data_dropped = self.flows[flow].data_dropped;
        if matches!(self.sc.app, App::RequestResponse { .. }) && !self.flows[flow].background {
            // Both ends send data: the counters cover both directions.
            let both = both_directions(&stats, &rx);
            return Snapshot {
                stats: both,
                rx: both,
                data_dropped,
            };
        }
        Snapshot {
            stats,
            rx,
            data_dropped,
        }
    }

    fn in_window(&self) -> bool {
        self.now >= self.window.0 && self.now < self.window.1
    }

    fn on_arrive(&mut self, node: u32, slot: u32) {
        let m = self.meta[slot as usize];
        if self.net.is_host(node) {
            let packet = self.packets[slot as usize].take().expect("live packet");
            self.free_slots.push(slot);
            if m.data && self.in_window() {
                self.flows[m.flow as usize].wire_bytes_in_window += m.size as u64;
            }
            let ep = m.dst_endpoint;
            let peer_node = self.endpoints[ep as usize ^ 1].node;
            let e = &mut self.endpoints[ep as usize];
            if let Some(t) = &mut e.tracer {
                t.received(Duration::from_nanos(self.now), &packet, m.size as usize);
            }
            if let Some(pcap) = &mut e.pcap {
                capture(pcap, self.now, (e.node, peer_node), e.flow, false, &packet);
            }
            e.conn.handle_packet(e.clock.local(self.now), packet);
            self.service(ep);
        } else {
            let link = self.net.route(node, m.dst_node);
            self.offer(link, slot);
        }
    }

    fn on_timer(&mut self, ep: u32) {
        let e = &mut self.endpoints[ep as usize];
        let now = e.clock.local(self.now);
        if e.timer_at == Some(self.now) {
            e.timer_at = None;
        }
        if e.conn.poll_timeout().is_some_and(|t| t <= now) {
            e.conn.handle_timeout(now);
        }
        self.service(ep);
    }

    fn on_sample(&mut self) {
        let t = self.now as f64 * 1e-9;
        for f in 0..self.flows.len() {
            let conn = &self.endpoints[2 * f].conn;
            let (w, g) = (conn.cwnd(), conn.fec_group_size() as f64);
            self.flows[f].cwnd.push((t, w));
            self.flows[f].group_size.push((t, g));
            let auto = conn.auto_state().map_or([0.0; 4], |(e, c)| {
                [e.loss_rate, e.mean_burst, c.k as f64, c.m as f64]
            });
            self.flows[f].auto.push((t, auto));
            let read = self.flows[f].read as f64;
            self.flows[f].delivered.push((t, read));
            let red = self.endpoints[2 * f].conn.fec_redundancy();
            self.flows[f].redundancy.push((t, red));
            let rate = self.endpoints[2 * f].conn.delivery_rate().unwrap_or(0.0);
            self.flows[f].delivery_rate.push((t, rate * 8e-6));
        }
        let iv = self.sc.cwnd_sample.expect("sampling enabled").as_nanos() as u64;
        if self.now + iv <= self.end {
            self.queue.push(self.now + iv, EventKind::Sample);
        }
    }

    /// Lets endpoint `ep`'s application and connection act after anything touched it.
    fn service(&mut self, ep: u32) {
        let now = self.endpoints[ep as usize].clock.local(self.now);
        let flow = self.endpoints[ep as usize].flow as usize;
        if !self.flows[flow].started {
            return;
        }
        if matches!(self.sc.app, App::RequestResponse { .. }) && !self.flows[flow].background {
            self.exchange(ep as usize, flow);
        } else if self.endpoints[ep as usize].sender {
            self.feed_sender(ep as usize, flow);
        } else {
            self.drain_receiver(ep as usize, flow);
        }
        let node = self.endpoints[ep as usize].node;
        let peer = ep ^ 1;
        let peer_node = self.endpoints[peer as usize].node;
        while let Some(packet) = self.endpoints[ep as usize].conn.poll_packet(now) {
            self.packets_total += 1;
            let data = packet.occupies_segment();
            let size = wire_size(&packet) + self.sc.encapsulation;
            let e = &mut self.endpoints[ep as usize];
            if let Some(t) = &mut e.tracer {
                t.sent(Duration::from_nanos(self.now), &packet, size as usize);
            }
            if let Some(pcap) = &mut e.pcap {
                capture(
                    pcap,
                    self.now,
                    (node, peer_node),
                    flow as u32,
                    true,
                    &packet,
                );
            }
            let slot = self.alloc(
                packet,
                PacketMeta {
                    size,
                    dst_node: peer_node,
                    dst_endpoint: peer,
                    flow: flow as u32,
                    data,
                },
            );
            let link = self.net.route(node, peer_node);
            self.offer(link, slot);
        }
        let e = &mut self.endpoints[ep as usize];
        if let Some(t) = &mut e.tracer {
            t.after(Duration::from_nanos(self.now), &mut e.conn);
        }
        if let Some(t) = e.conn.poll_timeout() {
            let t = e.clock.true_time(t).max(self.now);
            if e.timer_at.is_none_or(|x| t < x) {
                e.timer_at = Some(t);
                self.queue.push(t, EventKind::Timer { endpoint: ep });
            }
        }
    }

    fn feed_sender(&mut self, ep: usize, flow: usize) {
        let conn = &mut self.endpoints[ep].conn;
        let f = &mut self.flows[flow];
        let app = if f.background { App::Bulk } else { self.sc.app };
        match app {
            App::Bulk => {
                while conn.write_capacity() >= WRITE_CHUNK {
                    f.written += conn.write(stream_bytes(f.written, WRITE_CHUNK)) as u64;
                }
            }
            App::RequestResponse { .. } => unreachable!("served by `exchange`"),
            App::Rate { bps } => {
                // Whole segments only, so the stream is not cut into runt packets.
                let mss = self.sc.mss() as u128;
                let offered = (self.now - f.start_ns) as u128 * bps as u128 / 8_000_000_000;
                let offered = offered / mss * mss;
                while (f.written as u128) < offered && conn.write_capacity() > 0 {
                    let want = (offered - f.written as u128).min(WRITE_CHUNK as u128) as usize;
                    let n = conn.write(stream_bytes(f.written, want));
                    if n == 0 {
                        break;
                    }
                    f.written += n as u64;
                }
            }
            App::Transfer { bytes } => {
                while f.written < bytes && conn.write_capacity() > 0 {
                    let want = (bytes - f.written).min(WRITE_CHUNK as u64) as usize;
                    let n = conn.write(stream_bytes(f.written, want));
                    if n == 0 {
                        break;
                    }
                    f.written += n as u64;
                }
                if f.written == bytes && !f.finished_writing {
                    f.finished_writing = true;
                    conn.finish();
                }
            }
        }
        f.writes.on_write(f.written, self.now);
    }

    fn drain_receiver(&mut self, ep: usize, flow: usize) {
        let in_window = self.in_window();
        let verify = self.sc.verify_data;
        let e = &mut self.endpoints[ep];
        let f = &mut self.flows[flow];
        let now = self.now;
        let mut run_delay = (!f.background).then_some(&mut self.delay);
        while let Some(chunk) = e.conn.read_chunk() {
            if verify {
                f.corrupt_bytes += corrupt_bytes(f.read, &chunk);
            }
            f.read += chunk.len() as u64;
            let delay = &mut f.delay;
            let run = &mut run_delay;
            f.writes.on_read(chunk.len() as u64, now, |ns, bytes| {
                if in_window {
                    delay.record(Duration::from_nanos(ns), bytes);
                    if let Some(r) = run.as_deref_mut() {
                        r.record(Duration::from_nanos(ns), bytes);
                    }
                }
            });
            if in_window {
                f.delivered_in_window += chunk.len() as u64;
                // Delay jitter (Teshima, Tables 2-4): the gaps between successive
                // deliveries to the application.
                if let Some(last) = f.last_delivery_ns {
                    let gap = (self.now - last) as f64;
                    f.gaps.0 += 1;
                    f.gaps.1 += gap;
                    f.gaps.2 += gap * gap;
                }
                f.last_delivery_ns = Some(self.now);
            }
        }
        if let App::Transfer { bytes } = self.sc.app {
            if f.done_ns.is_none() && f.read >= bytes {
                f.done_ns = Some(self.now);
            }
        }
        if e.conn.peer_finished() && !e.closed_own_side {
            e.closed_own_side = true;
            e.conn.finish();
        }
    }

    /// A request/response flow ([`App::RequestResponse`]) at endpoint `ep`: the sender
    /// reads responses, and writes the next request once the last one is answered; the
    /// receiver reads requests and answers each whole one.
    fn exchange(&mut self, ep: usize, flow: usize) {
        let App::RequestResponse { request, response } = self.sc.app else {
            unreachable!("a request/response flow")
        };
        let (request, response) = (u64::from(request), u64::from(response));
        let (now, in_window, verify) = (self.now, self.in_window(), self.sc.verify_data);
        let e = &mut self.endpoints[ep];
        let f = &mut self.flows[flow];
        let x = &mut f.exchange;
        if e.sender {
            while let Some(chunk) = e.conn.read_chunk() {
                if verify {
                    f.corrupt_bytes += corrupt_bytes(x.response_read, &chunk);
                }
                x.response_read += chunk.len() as u64;
                if in_window {
                    f.delivered_in_window += chunk.len() as u64;
                }
            }
            let answered = x.response_read >= x.responses_due(response);
            if let (Some(at), true) = (x.request_at, answered) {
                if in_window {
                    f.delay.record(Duration::from_nanos(now - at), 1);
                    self.delay.record(Duration::from_nanos(now - at), 1);
                }
                x.request_at = None;
            }
            if x.request_at.is_none() {
                x.request_at = Some(now);
                x.request_unwritten = request;
                x.requests += 1;
            }
            while x.request_unwritten > 0 && e.conn.write_capacity() > 0 {
                let want = x.request_unwritten.min(WRITE_CHUNK as u64) as usize;
                let n = e.conn.write(stream_bytes(f.written, want)) as u64;
                if n == 0 {
                    break;
                }
                f.written += n;
                x.request_unwritten -= n;
            }
        } else {
            while let Some(chunk) = e.conn.read_chunk() {
                if verify {
                    f.corrupt_bytes += corrupt_bytes(f.read, &chunk);
                }
                f.read += chunk.len() as u64;
                if in_window {
                    f.delivered_in_window += chunk.len() as u64;
                }
                x.request_bytes_read += chunk.len() as u64;
                let whole = x.request_bytes_read / request;
                x.request_bytes_read -= whole * request;
                x.response_owed += whole * response;
            }
            while x.response_owed > 0 && e.conn.write_capacity() > 0 {
                let want = x.response_owed.min(WRITE_CHUNK as u64) as usize;
                let n = e.conn.write(stream_bytes(x.response_written, want)) as u64;
                if n == 0 {
                    break;
                }
                x.response_written += n;
                x.response_owed -= n;
            }
        }
    }

    /// Stores a packet in flight; returns its slot.
    fn alloc(&mut self, packet: Packet, meta: PacketMeta) -> u32 {
        match self.free_slots.pop() {
            Some(s) => {
                self.packets[s as usize] = Some(packet);
                self.meta[s as usize] = meta;
                s
            }
            None => {
                self.packets.push(Some(packet));
                self.meta.push(meta);
                (self.packets.len() - 1) as u32
            }
        }
    }

    fn offer(&mut self, link: u32, slot: u32) {
        let l = &mut self.net.links[link as usize];
        let m = self.meta[slot as usize];
        match l.offer(self.now, m.size) {
            Offer::Arrives(t) => {
                let node = l.to;
                self.queue.push_arrival(link, t, node, slot);
            }
            Offer::QueueDrop | Offer::Lost => {
                if m.data {
                    self.flows[m.flow as usize].data_dropped += 1;
                }
                self.packets[slot as usize] = None;
                self.free_slots.push(slot);
            }
        }
    }

    fn results(&mut self) -> RunResult {
        let wlen = (self.window.1 - self.window.0) as f64 * 1e-9;
        let mbps = |bytes: u64| bytes as f64 * 8.0 / wlen / 1e6;
        let mut out = RunResult {
            events: self.events,
            packets_total: self.packets_total,
            ..RunResult::default()
        };
        let (mut sent, mut rexmit, mut dropped) = (0u64, 0u64, 0u64);
        let (mut repairs, mut recovered) = (0u64, 0u64);
        let mut completions = Vec::new();
        let mut gaps = (0u64, 0.0f64, 0.0f64);
        let mut one_way_ms = Vec::new();
        for f in 0..self.flows.len() {
            if self.flows[f].background {
                out.background_goodput_mbps += mbps(self.flows[f].delivered_in_window);
                continue;
            }
            let end_snap = self.flows[f]
                .at_window_end
                .unwrap_or_else(|| self.snapshot(f));
            let fs = &mut self.flows[f];
            let (a, b) = (fs.at_window_start, end_snap);
            let d_sent = b.stats.data_packets_sent - a.stats.data_packets_sent;
            let d_rexmit = b.stats.retransmissions - a.stats.retransmissions;
            let d_drop = b.data_dropped - a.data_dropped;
            sent += d_sent;
            rexmit += d_rexmit;
            dropped += d_drop;
            let ratio = |x: u64| share(x, d_sent);
            let d_repairs = b.stats.repairs_sent - a.stats.repairs_sent;
            let d_recovered = b.rx.recovered - a.rx.recovered;
            repairs += d_repairs;
            recovered += d_recovered;
            let st = self.endpoints[2 * f].conn.stats();
            let (src, dst) = (self.endpoints[2 * f].node, self.endpoints[2 * f + 1].node);
            let one_way = self.net.propagation_ns(src, dst) as f64 * 1e-6;
            one_way_ms.push(one_way);
            let completion = fs.done_ns.map(|d| (d - fs.start_ns) as f64 * 1e-9);
            if let Some(c) = completion {
                completions.push(c);
            } else if matches!(self.sc.app, App::Transfer { .. }) {
                out.incomplete_flows += 1;
            }
            out.corrupt_bytes += fs.corrupt_bytes;
            out.data_packets += st.data_packets_sent;
            out.flows.push(FlowResult {
                goodput_mbps: mbps(fs.delivered_in_window),
                throughput_mbps: mbps(fs.wire_bytes_in_window),
                retransmission_rate: ratio(d_rexmit),
                data_loss_rate: ratio(d_drop),
                fast_recoveries: b.stats.fast_recoveries - a.stats.fast_recoveries,
                timeouts: b.stats.timeouts - a.stats.timeouts,
                data_packets_sent: d_sent,
                bytes_delivered: fs.read,
                completion_time_s: completion,
                mean_rtt_ms: st.mean_rtt.map(|d| d.as_secs_f64() * 1e3),
                final_rto_ms: st.rto.as_secs_f64() * 1e3,
                repairs_sent: d_repairs,
                recovered_packets: d_recovered,
                unrecoverable_groups: b.rx.unrecoverable_groups - a.rx.unrecoverable_groups,
                dupacks_suppressed: b.rx.dupacks_suppressed - a.rx.dupacks_suppressed,
                redundancy_rate: share(d_repairs, d_repairs + d_sent),
                effective_recovery_rate: share(d_recovered, d_repairs),
                jitter_mean_ms: gap_mean_ms(fs.gaps),
                jitter_std_ms: gap_std_ms(fs.gaps),
                delay: fs.delay.summary(),
                one_way_delay_ms: one_way,
                resume: (st.resume != ResumeStatus::Off).then(|| st.resume.as_str()),
            });
            out.delay_cdf.push(fs.delay.cdf());
            gaps.0 += fs.gaps.0;
            gaps.1 += fs.gaps.1;
            gaps.2 += fs.gaps.2;
            out.delivered_series.push(std::mem::take(&mut fs.delivered));
            out.redundancy_series
                .push(std::mem::take(&mut fs.redundancy));
            out.delivery_rate_series
                .push(std::mem::take(&mut fs.delivery_rate));
            out.cwnd_series.push(std::mem::take(&mut fs.cwnd));
            out.group_size_series
                .push(std::mem::take(&mut fs.group_size));
            out.auto_series.push(std::mem::take(&mut fs.auto));
        }
        let ratio = |x: u64| {
            if sent == 0 {
                0.0
            } else {
                x as f64 / sent as f64
            }
        };
        out.goodput_mbps = out.flows.iter().map(|f| f.goodput_mbps).sum();
        out.jitter_mean_ms = gap_mean_ms(gaps);
        out.jitter_std_ms = gap_std_ms(gaps);
        out.delay = self.delay.summary();
        out.one_way_delay_ms = one_way_ms.iter().sum::<f64>() / one_way_ms.len().max(1) as f64;
        out.throughput_mbps = out.flows.iter().map(|f| f.throughput_mbps).sum();
        out.retransmission_rate = ratio(rexmit);
        out.data_loss_rate = ratio(dropped);
        out.redundancy_rate = share(repairs, repairs + sent);
        out.effective_recovery_rate = share(recovered, repairs);
        out.recovered_packets = recovered;
        out.unrecoverable_groups = out.flows.iter().map(|f| f.unrecoverable_groups).sum();
        out.fast_recoveries = out.flows.iter().map(|f| f.fast_recoveries).sum();
        out.timeouts = out.flows.iter().map(|f| f.timeouts).sum();
        out.completion_time_s = (!completions.is_empty())
            .then(|| completions.iter().sum::<f64>() / completions.len() as f64);
        let goodputs: Vec<f64> = out.flows.iter().map(|f| f.goodput_mbps).collect();
        out.jain_fairness = jain(&goodputs);
        out
    }
}

/// The counters of a connection's two directions together (a request/response flow
/// sends data both ways): each sent-side counter is `a`'s plus `b`'s, and so is each
/// received-side one.
fn both_directions(a: &Stats, b: &Stats) -> Stats {
    Stats {
        data_packets_sent: a.data_packets_sent + b.data_packets_sent,
        retransmissions: a.retransmissions + b.retransmissions,
        payload_bytes_sent: a.payload_bytes_sent + b.payload_bytes_sent,
        repairs_sent: a.repairs_sent + b.repairs_sent,
        fast_recoveries: a.fast_recoveries + b.fast_recoveries,
        timeouts: a.timeouts + b.timeouts,
        tail_loss_probes: a.tail_loss_probes + b.tail_loss_probes,
        segments_received: a.segments_received + b.segments_received,
        recovered: a.recovered + b.recovered,
        unrecoverable_groups: a.unrecoverable_groups + b.unrecoverable_groups,
        dupacks_suppressed: a.dupacks_suppressed + b.dupacks_suppressed,
        ..*a
    }
}

/// How many bytes of `chunk`, read at stream offset `offset`, differ from what the
/// application wrote there.
fn corrupt_bytes(mut offset: u64, chunk: &[u8]) -> u64 {
    let mut bad = 0;
    let mut rest = chunk;
    while !rest.is_empty() {
        let expect = stream_bytes(offset, rest.len());
        let n = expect.len();
        bad += rest[..n]
            .iter()
            .zip(expect.iter())
            .filter(|(a, b)| a != b)
            .count() as u64;
        rest = &rest[n..];
        offset += n as u64;
    }
    bad
}

/// `part / whole`, or 0 when `whole` is 0.
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Bytes a packet occupies on a simulated link: 40 bytes of IP + TCP header, the payload
/// (the coded payload of a repair packet), and a TCP SACK option (2 + 8 per block, padded
/// to 4) when blocks are present. FEC group fields are not counted (see
/// `docs/design/simulator.md`).
pub fn wire_size(p: &Packet) -> u32 {
    let sack = if p.sack.is_empty() {
        0
    } else {
        (2 + 8 * p.sack.len() as u32).div_ceil(4) * 4
    };
    HEADER_BYTES + sack + p.payload.len() as u32
}

/// Mean of the delivery gaps (count, sum, sum of squares in ns), in ms; 0 without gaps.
fn gap_mean_ms(g: (u64, f64, f64)) -> f64 {
    if g.0 == 0 {
        return 0.0;
    }
    g.1 / g.0 as f64 * 1e-6
}

/// Standard deviation of the delivery gaps, in ms (population form).
fn gap_std_ms(g: (u64, f64, f64)) -> f64 {
    if g.0 == 0 {
        return 0.0;
    }
    let n = g.0 as f64;
    let mean = g.1 / n;
    (g.2 / n - mean * mean).max(0.0).sqrt() * 1e-6
}
