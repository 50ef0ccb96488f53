//! A congestion controller of your own, plugged into the engine through
//! `Config::congestion`, and raced against the built-in Reno on the same lossy path in
//! virtual time. The scheme (`sack` here) keeps its loss recovery; only the window rule
//! is replaced. The path is a plain in-memory wire (25 ms each way, one data packet in
//! a hundred lost at random, no bottleneck), driven the way the simulator drives the
//! engine: next event, deliver, poll. Run it with
//! `cargo run --release -p tcpfec-proto --example custom_congestion`.

use bytes::Bytes;
use core::time::Duration;
use tcpfec_proto::cc::{CongestionControl, Window};
use tcpfec_proto::{Config, CongestionFactory, Endpoint, Instant, Packet, Scheme};

/// AIMD with a gentler decrease: +1 segment per round trip, ×7/8 on a loss (where Reno
/// halves). Under random loss that is not congestion it keeps a larger window.
#[derive(Debug)]
struct GentleAimd {
    w: Window,
}

impl CongestionControl for GentleAimd {
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }
    fn on_ack(&mut self, _now: Instant, acked: u64, _srtt: Option<Duration>) {
        let per_segment = if self.w.cwnd < self.w.ssthresh {
            1.0 // slow start
        } else {
            1.0 / self.w.cwnd
        };
        self.w.cwnd += per_segment * acked as f64;
    }
    fn on_congestion_event(&mut self, _now: Instant, flight: u64) {
        self.w.ssthresh = (flight as f64 * 0.875).max(2.0);
        self.w.cwnd = self.w.ssthresh;
    }
    fn on_timeout(&mut self, _now: Instant, flight: u64) {
        self.w.ssthresh = (flight as f64 * 0.875).max(2.0);
        self.w.cwnd = 1.0;
    }
}

/// Moves `bytes` from a client to a server configured by `cfg`; returns the virtual
/// seconds until the server has them all, and the client's retransmissions.
fn transfer(cfg: Config, bytes: usize) -> (f64, u64) {
    const ONE_WAY: u64 = 25_000_000; // ns
    let mut client = Endpoint::client(cfg.clone());
    let mut server = Endpoint::server(cfg);
    let mut wire: Vec<(u64, bool, Packet)> = Vec::new(); // (arrival, to the server?, packet)
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut lose = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng.is_multiple_of(100)
    };
    let data = Bytes::from(vec![1u8; bytes]);
    let (mut written, mut received, mut now) = (0, 0, 0u64);
    while received < bytes {
        if written < bytes {
            written += client.write(data.slice(written..));
        }
        let t = Instant(now);
        while let Some(p) = client.poll_packet(t) {
            if p.payload.is_empty() || !lose() {
                wire.push((now + ONE_WAY, true, p));
            }
        }
        while let Some(p) = server.poll_packet(t) {
            wire.push((now + ONE_WAY, false, p));
        }
        // The next event: an arrival or a timer of either end.
        let next = wire
            .iter()
            .map(|w| w.0)
            .chain(client.poll_timeout().map(|i| i.0))
            .chain(server.poll_timeout().map(|i| i.0))
            .min()
            .expect("something is always pending until the data is in");
        now = now.max(next);
        let t = Instant(now);
        let (due, later): (Vec<_>, Vec<_>) = wire.drain(..).partition(|w| w.0 <= now);
        wire = later;
        for (_, to_server, p) in due {
            if to_server {
                server.handle_packet(t, p);
            } else {
                client.handle_packet(t, p);
            }
        }
        for ep in [&mut client, &mut server] {
            if ep.poll_timeout().is_some_and(|d| d.0 <= now) {
                ep.handle_timeout(t);
            }
        }
        while let Some(chunk) = server.read_chunk() {
            received += chunk.len();
        }
    }
    (now as f64 / 1e9, client.stats().retransmissions)
}

fn main() {
    let base = Config {
        scheme: Scheme::parse("sack").expect("built-in scheme"),
        initial_window: 10,
        ..Config::default()
    };
    let own = Config {
        congestion: Some(CongestionFactory::new(|cfg| {
            Box::new(GentleAimd {
                w: Window::initial(cfg.initial_window),
            })
        })),
        ..base.clone()
    };
    let bytes = 20_000_000;
    for (name, cfg) in [("Reno (sack)", base), ("GentleAimd", own)] {
        let (secs, retx) = transfer(cfg, bytes);
        println!(
            "{name:12} {bytes} bytes in {secs:6.2} s of virtual time ({:5.1} Mb/s), {retx} retransmissions",
            bytes as f64 * 8.0 / secs / 1e6
        );
    }
}
