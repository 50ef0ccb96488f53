//! The sans-IO engine driven by hand over a plain `std::net::UdpSocket`, the way the
//! simulator and `tcpfec-net` drive it: the driver owns the socket and the clock, and the
//! engine only sees bytes and instants. A client thread sends 4 MB to a server thread on
//! loopback with the `auto` scheme; the client's driver drops one packet in fifty on its
//! way out, so the counters show repairs rebuilding losses at the server. Unencrypted and
//! unauthenticated: `tcpfec-net` adds the handshake, encryption and connection ids.
//! Run it with `cargo run --release -p tcpfec-proto --example udp_socket`.

use bytes::Bytes;
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;
use tcpfec_proto::{Config, Endpoint, Instant, Scheme};

const BYTES: usize = 4_000_000;

/// The engine's clock: nanoseconds since the driver started.
fn now(start: std::time::Instant) -> Instant {
    Instant(start.elapsed().as_nanos() as u64)
}

/// One driver round: handle due timers, send what the engine has, wait for one datagram
/// until the engine's next timer (at most 10 ms) and hand it over. `drop_every` drops
/// one outgoing packet in that many (0: none), standing in for a lossy path.
fn round(
    ep: &mut Endpoint,
    sock: &UdpSocket,
    peer: SocketAddr,
    start: std::time::Instant,
    drop_every: u64,
    sent: &mut u64,
) -> std::io::Result<()> {
    let t = now(start);
    if ep.poll_timeout().is_some_and(|due| due <= t) {
        ep.handle_timeout(t);
    }
    let mut out = [0u8; 2048];
    while let Some(len) = ep.poll_transmit(t, &mut out) {
        let len = len.map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        *sent += 1;
        if drop_every == 0 || !sent.is_multiple_of(drop_every) {
            sock.send_to(&out[..len], peer)?;
        }
    }
    let wait = ep
        .poll_timeout()
        .map_or(Duration::from_millis(10), |due| {
            Duration::from_nanos(due.0.saturating_sub(now(start).0))
        })
        .clamp(Duration::from_micros(50), Duration::from_millis(10));
    sock.set_read_timeout(Some(wait))?;
    let mut buf = [0u8; 2048];
    match sock.recv_from(&mut buf) {
        // A datagram that does not parse is dropped, as a real driver would.
        Ok((n, _)) => drop(ep.handle_datagram(now(start), &buf[..n])),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

fn config() -> Config {
    Config {
        scheme: Scheme::parse("auto").expect("built-in scheme"),
        mss: 1350,
        initial_window: 10,
        ..Config::default()
    }
}

fn main() -> std::io::Result<()> {
    let server_sock = UdpSocket::bind("127.0.0.1:0")?;
    let client_sock = UdpSocket::bind("127.0.0.1:0")?;
    let (server_addr, client_addr) = (server_sock.local_addr()?, client_sock.local_addr()?);
    let start = std::time::Instant::now();
    let limit = Duration::from_secs(30);

    let server = std::thread::spawn(move || -> std::io::Result<(usize, tcpfec_proto::Stats)> {
        let mut ep = Endpoint::server(config());
        let (mut received, mut sent) = (0, 0);
        while !(ep.peer_finished() && ep.readable() == 0) {
            if start.elapsed() > limit || ep.is_closed() {
                return Err(std::io::Error::other("the server gave up"));
            }
            round(&mut ep, &server_sock, client_addr, start, 0, &mut sent)?;
            while let Some(chunk) = ep.read_chunk() {
                received += chunk.len();
            }
        }
        // All in: close this side too, and stay until the client has acknowledged that
        // (a real driver keeps a closed connection around a little longer for the same
        // reason, as TCP's TIME-WAIT does).
        ep.finish();
        let closing = std::time::Instant::now();
        while !ep.all_acked() && closing.elapsed() < Duration::from_secs(2) {
            round(&mut ep, &server_sock, client_addr, start, 0, &mut sent)?;
        }
        Ok((received, ep.stats()))
    });

    let mut ep = Endpoint::client(config());
    let data = Bytes::from(vec![7u8; BYTES]);
    let (mut written, mut sent) = (0, 0);
    while !(written == BYTES && ep.all_acked()) {
        if start.elapsed() > limit || ep.is_closed() {
            return Err(std::io::Error::other("the client gave up"));
        }
        if written < BYTES {
            written += ep.write(data.slice(written..));
            if written == BYTES {
                ep.finish();
            }
        }
        round(&mut ep, &client_sock, server_addr, start, 50, &mut sent)?;
    }
    let secs = start.elapsed().as_secs_f64();
    let (lossy_sent, dropped) = (sent, sent / 50);
    // Acknowledge the server's close, then stop.
    let closing = std::time::Instant::now();
    while !ep.peer_finished() && closing.elapsed() < Duration::from_secs(2) {
        round(&mut ep, &client_sock, server_addr, start, 0, &mut sent)?;
    }
    round(&mut ep, &client_sock, server_addr, start, 0, &mut sent)?;
    let (received, server_stats) = server.join().expect("server thread")?;
    assert_eq!(received, BYTES);
    let c = ep.stats();
    println!(
        "{BYTES} bytes in {secs:.2} s ({:.0} Mb/s); client sent {lossy_sent} packets, dropped {dropped}",
        BYTES as f64 * 8.0 / secs / 1e6,
    );
    println!(
        "client: {} repairs sent, {} retransmissions; server: {} segments rebuilt from repairs",
        c.repairs_sent, c.retransmissions, server_stats.recovered
    );
    Ok(())
}
