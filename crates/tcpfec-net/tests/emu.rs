//! The TUN link emulator measured from outside, with sockets in its two namespaces:
//! round-trip time, rate and loss fraction within 2 % of their settings, and a kernel TCP
//! flow filling a clean link. Needs root (network namespaces, TUN devices); skipped with
//! a message otherwise.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tcpfec_channel::LossSpec;
use tcpfec_net::emu::{self, EmuConfig, Emulator};
use tcpfec_net::link::{LinkSpec, DEFAULT_MAX_BYTES};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// An emulator with the same link each way (loss forward only), or `None` (and a
/// message) where this machine cannot run one.
fn emulator(
    test: &str,
    rate_bps: Option<u64>,
    delay_ms: u64,
    queue: usize,
    loss: f64,
) -> Option<(Emulator, MutexGuard<'static, ()>)> {
    // One at a time: the measurements need the CPU the emulator's threads run on.
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !emu::privileged() {
        eprintln!("SKIPPED {test}: the link emulator needs root (network namespaces, TUN devices)");
        return None;
    }
    let link = LinkSpec {
        rate_bps,
        delay: Duration::from_millis(delay_ms),
        queue,
        max_bytes: DEFAULT_MAX_BYTES,
        loss: LossSpec::None,
    };
    let cfg = EmuConfig {
        name: format!("tfe{}-{test}", std::process::id()),
        forward: LinkSpec {
            loss: if loss > 0.0 {
                LossSpec::bernoulli(loss)
            } else {
                LossSpec::None
            },
            ..link
        },
        back: link,
        seed: 7,
    };
    match Emulator::start(&cfg) {
        Ok(e) => Some((e, turn)),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot start the link emulator here: {e}");
            None
        }
    }
}

fn addr(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddr::from((ip, port))
}

/// A UDP socket bound in namespace `ns` at `at`, with a large receive buffer.
fn udp_in(ns: &emu::Namespace, at: SocketAddr) -> UdpSocket {
    let s = ns.run(move || UdpSocket::bind(at)).unwrap();
    let s2 = socket2::SockRef::from(&s);
    let _ = s2.set_recv_buffer_size(16 << 20);
    s
}

#[test]
fn round_trip_time_is_twice_the_one_way_delay() {
    let Some((e, _turn)) = emulator("rtt", Some(100_000_000), 20, 1000, 0.0) else {
        return;
    };
    let echo = udp_in(&e.b, addr(emu::ADDR_B, 7007));
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let probe = udp_in(&e.a, addr(emu::ADDR_A, 0));
    probe
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut rtts = Vec::new();
    for i in 0..21u8 {
        let t = Instant::now();
        probe.send_to(&[i; 32], addr(emu::ADDR_B, 7007)).unwrap();
        let mut buf = [0u8; 64];
        let (n, _) = probe.recv_from(&mut buf).expect("echo answers");
        assert_eq!(&buf[..n], &[i; 32]);
        rtts.push(t.elapsed().as_secs_f64());
    }
    rtts.sort_by(f64::total_cmp);
    // Two one-way delays; serialising 60 bytes at 100 Mb/s adds 5 µs each way. The
    // smallest of 21 echoes is the path's delay, as ping's minimum is: waking the three
    // threads involved (probe, emulator, echo) only ever adds to it, by up to a
    // millisecond on a 2-core VM (medians 40.6-41.1 ms, smallest 40.48-40.56 ms there).
    let min = rtts[0];
    assert!(
        (min - 0.040).abs() < 0.02 * 0.040,
        "smallest RTT {min} s, want 40 ms ± 2 %"
    );
}

#[test]
fn a_saturated_link_delivers_its_rate() {
    let rate = 20_000_000u64;
    let Some((e, _turn)) = emulator("rate", Some(rate), 5, 200, 0.0) else {
        return;
    };
    let rx = udp_in(&e.b, addr(emu::ADDR_B, 7008));
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let tx = udp_in(&e.a, addr(emu::ADDR_A, 0));
    let seconds = 2.0;
    // 1472 bytes of payload: 1500-byte IP packets, sent at 1.25 times the link rate.
    let sender = std::thread::spawn(move || {
        let per_ms = (rate as f64 * 1.25 / 8.0 / 1500.0 / 1000.0).ceil() as u32;
        let start = Instant::now();
        let mut ms = 0u32;
        while start.elapsed().as_secs_f64() < seconds {
            for _ in 0..per_ms {
                let _ = tx.send_to(&[0u8; 1472], addr(emu::ADDR_B, 7008));
            }
            ms += 1;
            let next = start + Duration::from_millis(ms as u64);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    });
    let mut buf = [0u8; 2048];
    let mut first = None;
    let mut last = Instant::now();
    let mut packets = 0u64;
    while let Ok(n) = rx.recv(&mut buf) {
        assert_eq!(n, 1472);
        last = Instant::now();
        first.get_or_insert(last);
        packets += 1;
    }
    sender.join().unwrap();
    // Packets after the first, over the time they took: the link's own pace.
    let measured = (packets - 1) as f64 * 1500.0 * 8.0 / (last - first.unwrap()).as_secs_f64();
    let (f, _) = e.counts();
    assert!(
        f.overflow > 0,
        "the queue must have overflowed, or the link was not saturated"
    );
    assert!(
        (measured - rate as f64).abs() < 0.02 * rate as f64,
        "measured {measured:.0} b/s, want {rate} ± 2 %"
    );
}

#[test]
fn random_loss_drops_its_fraction_and_nothing_else() {
    let p = 0.10;
    let Some((e, _turn)) = emulator("loss", None, 1, usize::MAX, p) else {
        return;
    };
    let rx = udp_in(&e.b, addr(emu::ADDR_B, 7009));
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let tx = udp_in(&e.a, addr(emu::ADDR_A, 0));
    // 200 000 packets: the binomial spread of the count is 0.67 % of the mean, so 2 % is
    // three standard deviations.
    let n = 200_000u64;
    let sender = std::thread::spawn(move || {
        let start = Instant::now();
        for i in 0..n {
            let _ = tx.send_to(&i.to_be_bytes(), addr(emu::ADDR_B, 7009));
            // 50 000 packets per second: far below what the emulator moves.
            if i % 250 == 249 {
                let next = start + Duration::from_micros(20 * (i + 1));
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        }
    });
    let mut got = 0u64;
    let mut buf = [0u8; 64];
    while rx.recv(&mut buf).is_ok() {
        got += 1;
    }
    sender.join().unwrap();
    let (f, _) = e.counts();
    let measured = (n - got) as f64 / n as f64;
    assert!(
        (measured - p).abs() < 0.02 * p,
        "measured loss {measured}, want {p} ± 2 %"
    );
    // Every missing packet is one the loss model dropped: none vanished elsewhere.
    assert_eq!(
        f.received, n,
        "packets other than the test's crossed the link"
    );
    assert_eq!(n - got, f.lost, "drops outside the loss model");
}

#[test]
fn kernel_tcp_fills_a_clean_link() {
    let rate = 20_000_000u64;
    // 20 ms RTT: the BDP is 33 packets; a queue of 2 BDP lets CUBIC keep the link busy.
    let Some((e, _turn)) = emulator("tcp", Some(rate), 10, 66, 0.0) else {
        return;
    };
    let listener =
        e.b.run(move || TcpListener::bind(addr(emu::ADDR_B, 7010)))
            .unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0u64;
        let mut first: Option<Instant> = None;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            first.get_or_insert_with(Instant::now);
            got += n as u64;
        }
        (got, first.unwrap().elapsed().as_secs_f64())
    });
    let mut s =
        e.a.run(move || TcpStream::connect(addr(emu::ADDR_B, 7010)))
            .unwrap();
    let block = vec![7u8; 1 << 16];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(4) {
        s.write_all(&block).unwrap();
    }
    drop(s);
    let (got, secs) = receiver.join().unwrap();
    let goodput = got as f64 * 8.0 / secs;
    // A full-size segment carries 1448 bytes in a 1500-byte packet (TCP timestamps on).
    let capacity = rate as f64 * 1448.0 / 1500.0;
    assert!(
        goodput > 0.9 * capacity && goodput < 1.01 * capacity,
        "TCP moved {goodput:.0} b/s over a link that carries {capacity:.0} b/s of payload"
    );
}
