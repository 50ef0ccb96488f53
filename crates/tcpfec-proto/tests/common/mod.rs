//! A client and a server joined by a wire in virtual time, for tests that drive two
//! engines directly: the test decides when (and whether) each server packet arrives.

use bytes::Bytes;
use tcpfec_proto::{Config, Connection, Instant, Packet};

/// Two connections and the packets on the wire between them.
pub struct Pair {
    pub client: Connection,
    pub server: Connection,
    /// Virtual time, nanoseconds.
    pub now: u64,
    /// (arrival, to the server?, packet).
    wire: Vec<(u64, bool, Packet)>,
}

impl Pair {
    /// A client and a server with the same configuration, at time 0.
    pub fn new(cfg: Config) -> Self {
        Pair {
            client: Connection::client(cfg.clone()),
            server: Connection::server(cfg),
            now: 0,
            wire: Vec::new(),
        }
    }

    /// Puts on the wire everything both ends send now: the client's packets arrive after
    /// `client_delay` ns; `route` gives each server packet's arrival time (`None` drops it).
    #[allow(dead_code)] // not every test binary that includes this module uses it
    pub fn send(&mut self, client_delay: u64, route: impl FnMut(u64, &Packet) -> Option<u64>) {
        self.send_routed(|now, _| Some(now + client_delay), route);
    }

    /// [`Pair::send`] with a route for each direction: `to_server` for the client's
    /// packets, `to_client` for the server's.
    #[allow(dead_code)] // not every test binary that includes this module routes both ways
    pub fn send_routed(
        &mut self,
        mut to_server: impl FnMut(u64, &Packet) -> Option<u64>,
        mut to_client: impl FnMut(u64, &Packet) -> Option<u64>,
    ) {
        let t = Instant(self.now);
        while let Some(p) = self.client.poll_packet(t) {
            if let Some(at) = to_server(self.now, &p) {
                self.wire.push((at, true, p));
            }
        }
        while let Some(p) = self.server.poll_packet(t) {
            if let Some(at) = to_client(self.now, &p) {
                self.wire.push((at, false, p));
            }
        }
    }

    /// Moves to the next arrival or timer and delivers or fires what is due there;
    /// false when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.step_until(u64::MAX)
    }

    /// [`Pair::step`], but no later than `limit` (an application's next write): at
    /// `limit` it delivers or fires what is due, if anything. False when nothing is
    /// pending and the limit is unbounded.
    pub fn step_until(&mut self, limit: u64) -> bool {
        let next = self
            .wire
            .iter()
            .map(|w| w.0)
            .chain(self.client.poll_timeout().map(|i| i.0))
            .chain(self.server.poll_timeout().map(|i| i.0))
            .chain((limit != u64::MAX).then_some(limit))
            .min();
        let Some(next) = next else { return false };
        self.now = self.now.max(next);
        let t = Instant(self.now);
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.wire)
            .into_iter()
            .partition(|w| w.0 <= now);
        self.wire = later;
        for (_, to_server, p) in due {
            if to_server {
                self.server.handle_packet(t, p);
            } else {
                self.client.handle_packet(t, p);
            }
        }
        for c in [&mut self.client, &mut self.server] {
            if c.poll_timeout().is_some_and(|d| d <= t) {
                c.handle_timeout(t);
            }
        }
        true
    }
}

/// Sends `data` from client to server over a wire `one_way` ns long each way that loses
/// the client packets `lose` picks, until nothing is pending; returns the pair for its
/// counters. Panics unless the stream arrives intact.
#[allow(dead_code)] // not every test binary that includes this module uploads
pub fn upload(
    cfg: Config,
    data: &[u8],
    one_way: u64,
    mut lose: impl FnMut(&Packet) -> bool,
) -> Pair {
    let mut p = Pair::new(cfg);
    p.client.write(Bytes::copy_from_slice(data));
    p.client.finish();
    let mut got = Vec::new();
    for _ in 0..1_000_000 {
        p.send_routed(
            |now, pk| (!lose(pk)).then_some(now + one_way),
            |now, _| Some(now + one_way),
        );
        while let Some(b) = p.server.read_chunk() {
            got.extend_from_slice(&b);
        }
        if !p.step() {
            break;
        }
    }
    assert!(got == data, "the stream arrived intact");
    p
}
