//! Receive-window auto-tuning (`Config::recv_window_initial`): the window grows to the
//! receive buffer while the application keeps up, so a transfer runs as fast as with the
//! whole buffer from the start, and stays where it is when the application stops reading,
//! so a stalled reader holds the small starting window, not the whole buffer.

mod common;

use bytes::Bytes;
use common::Pair;
use tcpfec_proto::{Config, Scheme};

const ONE_WAY: u64 = 50_000_000; // 50 ms
const RATE_BPS: u64 = 100_000_000;
const START: u32 = 256 << 10;
const MAX: u32 = 16 << 20;

fn config(scheme: &str, tuned: bool) -> Config {
    Config {
        scheme: Scheme::parse(scheme).unwrap(),
        initial_window: 10,
        recv_window: MAX,
        recv_window_initial: tuned.then_some(START),
        ..Config::default()
    }
}

/// Uploads `len` bytes over a lossless 100 Mb/s link, RTT 100 ms, the server reading
/// whenever `read` says so; returns the pair and the bytes read.
fn upload(cfg: Config, len: usize, mut read: impl FnMut(u64) -> bool) -> (Pair, usize) {
    let mut p = Pair::new(cfg);
    let chunk = Bytes::from(vec![7u8; 1 << 20]);
    let mut written = 0;
    let mut got = 0;
    let mut link_free = 0u64;
    for _ in 0..2_000_000 {
        // The application writes as the send buffer makes room.
        while written < len && p.client.write_capacity() > 0 {
            let n = p
                .client
                .write(chunk.slice(..chunk.len().min(len - written)));
            written += n;
            if written == len {
                p.client.finish();
            }
        }
        // A 100 Mb/s link (its queue unbounded) from client to server.
        p.send_routed(
            |now, pk| {
                let bits = (pk.payload.len() as u64 + 40) * 8;
                link_free = link_free.max(now) + bits * 1_000_000_000 / RATE_BPS;
                Some(link_free + ONE_WAY)
            },
            |now, _| Some(now + ONE_WAY),
        );
        if read(p.now) {
            while let Some(b) = p.server.read_chunk() {
                got += b.len();
            }
        }
        if !p.step() {
            break;
        }
    }
    (p, got)
}

#[test]
fn the_window_grows_to_the_buffer_and_the_transfer_is_as_fast_as_without_tuning() {
    for scheme in ["sack", "bbr", "auto"] {
        let len = 32 << 20;
        let (fixed, got) = upload(config(scheme, false), len, |_| true);
        assert_eq!(got, len);
        let (tuned, got) = upload(config(scheme, true), len, |_| true);
        assert_eq!(got, len);
        // The path holds 1.25 MB (100 Mb/s × 100 ms); the sender's queue more.
        let grown = tuned.server.receive_buffer();
        assert!(
            grown >= 4 << 20,
            "{scheme}: the window grew to only {grown}"
        );
        let (a, b) = (fixed.now as f64 / 1e9, tuned.now as f64 / 1e9);
        eprintln!("{scheme}: {b:.2} s tuned ({grown} bytes), {a:.2} s with the whole buffer");
        // The window keeps ahead of slow start: at most one round trip lost.
        assert!(
            b <= a + 2.0 * ONE_WAY as f64 / 1e9,
            "{scheme}: {b:.2} s tuned against {a:.2} s with the whole buffer"
        );
    }
}

#[test]
fn a_reader_that_stops_holds_the_small_window_not_the_buffer() {
    for scheme in ["sack", "bbr", "auto"] {
        // The application reads for the first 200 ms, then never again.
        let (p, got) = upload(config(scheme, true), 64 << 20, |now| now < 200_000_000);
        let held = p.server.readable();
        assert!(got < 64 << 20, "{scheme}: everything was read");
        assert!(
            p.server.receive_buffer() <= 2 * START,
            "{scheme}: the window grew to {} while the reader stalled",
            p.server.receive_buffer()
        );
        assert!(held <= 2 * START as usize, "{scheme}: {held} bytes held");
        // Without tuning the stalled reader holds the whole buffer.
        let (p, _) = upload(config(scheme, false), 64 << 20, |now| now < 200_000_000);
        assert!(p.server.readable() > MAX as usize / 2, "{scheme}");
    }
}
