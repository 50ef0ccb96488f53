//! A block that lost a data packet and its repair at the tail of a transfer.
//!
//! With no later segment to arrive, SACKs can never show the hole lost. The hole waits for
//! its block's repairs; once those have had a round trip and a reordering window to rebuild
//! it, the hole is lost and retransmitted (`Scoreboard::mark_lost_awaiting_repairs`),
//! instead of waiting for the tail loss probe two smoothed RTTs after the last ACK.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, Scenario};

#[test]
fn a_tail_block_that_lost_its_repair_is_retransmitted_after_a_round_trip() {
    // 10 Mb/s, RTT 20 ms, a 17-packet queue (1 BDP): the startup of a 100 KB transfer
    // overflows the queue at its last flight, dropping the last data packets and the
    // repair of their block together (no random loss).
    let r = run(&Scenario {
        scheme: Scheme::parse("auto").unwrap(),
        bottleneck_bps: 10_000_000,
        access_bps: 10_000_000,
        delay: Duration::from_millis(8),
        buffer: 17,
        initial_window: 10,
        loss: LossSpec::bernoulli(0.0),
        app: App::Transfer { bytes: 100_000 },
        duration: Duration::from_secs(10),
        window: (Duration::ZERO, Duration::from_secs(10)),
        verify_data: true,
        seed: 1,
        ..Scenario::default()
    });
    assert_eq!((r.incomplete_flows, r.corrupt_bytes), (0, 0));
    assert!(r.data_loss_rate > 0.0, "the scenario must lose the tail");
    let t = r.completion_time_s.unwrap();
    // Waiting for the tail loss probe took 0.256 s; BBR without FEC, which loses nothing
    // here, takes 0.127 s.
    assert!(t < 0.2, "completed in {t:.3} s");
}
