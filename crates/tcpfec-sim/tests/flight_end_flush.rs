//! Blocks larger than the window: closing the open block when a flight stalls.
//!
//! With duplicate-ACK suppression a receiver that sees a repairable gap stays silent. If the
//! block holding the gap is larger than what the window lets the sender put in flight, its
//! repairs are never sent and every such loss waits for the retransmission timer. The
//! `flush_at_flight_end` option closes the block after half a round trip without ACKs.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, Scenario};

fn scenario(flush: bool, seed: u64) -> Scenario {
    let mut scheme = Scheme::parse("anker-16-2").unwrap();
    scheme.fec.as_mut().unwrap().flush_at_flight_end = flush;
    Scenario {
        scheme,
        bottleneck_bps: 10_000_000,
        access_bps: 10_000_000,
        delay: Duration::from_millis(50),
        buffer: 100,
        // A window of 10 packets never holds a whole (16,2) block.
        max_window: Some(10),
        loss: LossSpec::bernoulli(0.02),
        app: App::Transfer { bytes: 1460 * 1000 },
        duration: Duration::from_secs(2_000),
        window: (Duration::ZERO, Duration::from_secs(2_000)),
        verify_data: true,
        seed,
        ..Scenario::default()
    }
}

#[test]
fn stalled_blocks_are_closed_instead_of_timing_out() {
    let (mut rto_on, mut rto_off, mut t_on, mut t_off, mut rebuilt_on) = (0, 0, 0.0, 0.0, 0);
    for seed in 1..=3 {
        let on = run(&scenario(true, seed));
        let off = run(&scenario(false, seed));
        for r in [&on, &off] {
            assert_eq!(r.incomplete_flows, 0);
            assert_eq!(r.corrupt_bytes, 0);
        }
        rto_on += on.timeouts;
        rto_off += off.timeouts;
        rebuilt_on += on.recovered_packets;
        t_on += on.completion_time_s.unwrap();
        t_off += off.completion_time_s.unwrap();
    }
    eprintln!("flush on: {rto_on} RTOs, {t_on:.1} s, {rebuilt_on} rebuilt; off: {rto_off} RTOs, {t_off:.1} s");
    // About 60 losses over the three runs; without the flush most of them wait for the
    // timer. With it, a timeout needs a lost retransmission or a block with three losses.
    assert!(
        rto_on * 3 < rto_off,
        "RTOs: {rto_on} with flush, {rto_off} without"
    );
    assert!(
        t_on < t_off,
        "completion: {t_on:.1} s with flush, {t_off:.1} s without"
    );
    assert!(rebuilt_on > 30, "only {rebuilt_on} segments rebuilt by FEC");
}
