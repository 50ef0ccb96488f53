//! Delivery delay (the time from the application's write of a byte to its in-order read)
//! against schedules computed by hand.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, Scenario};

/// A clean 100 Mb/s path, 1 + 10 + 1 ms of propagation, 1500-byte packets.
fn clean_path(app: App) -> Scenario {
    Scenario {
        scheme: Scheme::parse("sack").unwrap(),
        bottleneck_bps: 100_000_000,
        access_bps: 100_000_000,
        delay: Duration::from_millis(10),
        buffer: 100,
        initial_window: 10,
        loss: LossSpec::bernoulli(0.0),
        app,
        duration: Duration::from_secs(10),
        // The handshake and the first writes, which wait for it, are left out.
        window: (Duration::from_secs(1), Duration::from_secs(10)),
        verify_data: true,
        seed: 1,
        ..Scenario::default()
    }
}

/// `got` is `want` or at most 0.1 % above it (the histogram's resolution).
fn close(got: f64, want: f64) -> bool {
    got >= want - 1e-9 && got <= want * 1.001
}

#[test]
fn a_stream_on_a_clean_path_is_delayed_by_the_path_alone() {
    // 1 Mb/s of 1460-byte segments: one every 11.68 ms, written at the simulator's 1 ms
    // ticks, each sent at once (no queue anywhere). Each byte takes the propagation
    // (12 ms) and three serialisations of a 1500-byte packet (3 × 0.12 ms): 12.36 ms.
    let r = run(&clean_path(App::Rate { bps: 1_000_000 }));
    assert_eq!(r.corrupt_bytes, 0);
    assert_eq!(r.one_way_delay_ms, 12.0);
    let d = r.delay.expect("bytes were read");
    for (name, v) in [
        ("p50", d.p50_ms),
        ("p99", d.p99_ms),
        ("p99.9", d.p999_ms),
        ("max", d.max_ms),
    ] {
        assert!(close(v, 12.36), "{name} {v} ms");
    }
    // Weighted by bytes: 9 s at 1 Mb/s, whole segments.
    assert!(
        (d.weight as f64 - 9.0 * 125_000.0).abs() < 2.0 * 1460.0,
        "{}",
        d.weight
    );
    // The flow's own percentiles are kept within 1 %.
    let flow = r.flows[0].delay.unwrap();
    assert!(
        (12.36..=12.36 * 1.01).contains(&flow.p99_ms),
        "{}",
        flow.p99_ms
    );
}

#[test]
fn an_exchange_takes_one_round_trip_of_two_small_packets() {
    // 100-byte requests and responses: 140-byte packets, 11.2 µs per hop each way. An
    // exchange is the request's way (12 ms + 3 × 11.2 µs) and the response's, back to
    // back: 24.0672 ms, one per round trip.
    let r = run(&clean_path(App::RequestResponse {
        request: 100,
        response: 100,
    }));
    assert_eq!(r.corrupt_bytes, 0);
    let d = r.delay.expect("exchanges completed");
    assert!(close(d.p50_ms, 24.0672), "p50 {}", d.p50_ms);
    assert!(close(d.max_ms, 24.0672), "max {}", d.max_ms);
    // Weighted by exchanges: 9 s of them.
    let expected = 9.0 / 0.0240672;
    assert!(
        (d.weight as f64 - expected).abs() <= 1.0,
        "{} exchanges",
        d.weight
    );
    // Both directions' bytes count as delivered.
    let bytes = d.weight as f64 * 200.0;
    assert!((r.goodput_mbps - bytes * 8.0 / 9.0 / 1e6).abs() < 0.001);
}

#[test]
fn a_loss_delays_what_follows_it_until_the_retransmission() {
    // The same stream with 1 % loss and no FEC: a lost segment waits for three later
    // segments to show it missing and a round trip for its retransmission, and every
    // segment behind it waits with it. The delays spread far above the path's.
    let mut sc = clean_path(App::Rate { bps: 1_000_000 });
    sc.loss = LossSpec::bernoulli(0.01);
    let r = run(&sc);
    let d = r.delay.unwrap();
    assert!(close(d.p50_ms, 12.36), "p50 {}", d.p50_ms);
    // Three segments (35 ms) plus a round trip (24 ms) at least.
    assert!(d.max_ms > 12.36 + 35.0 + 24.0, "max {}", d.max_ms);
}
