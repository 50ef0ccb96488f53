//! Tail loss probe: a short transfer whose last packets are lost finishes without waiting
//! for the retransmission timer.
//!
//! 125 KB over 10 Mb/s and a 20 ms RTT with a 17-packet buffer: `auto`'s startup
//! overflows the buffer at the transfer's tail, and nothing sent after the lost packets
//! arrives to show them lost (neither by SACKs nor by the time rule for a tail block's
//! repairs, which needs a segment SACKed above the hole), so without a probe the sender
//! waits for its 200 ms minimum RTO. (At 100 and 120 KB the tail loses holes with a
//! segment above them, the transfer's FIN among them, which the repairs' time rule
//! recovers: `tail_repairs.rs`.)

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, RunResult, Scenario};

fn tail_loss(probe: bool, loss: f64, seed: u64) -> RunResult {
    let mut scheme = Scheme::parse("auto").unwrap();
    scheme.tail_loss_probe = probe;
    run(&Scenario {
        scheme,
        bottleneck_bps: 10_000_000,
        access_bps: 10_000_000,
        delay: Duration::from_millis(8),
        access_delay: (Duration::from_millis(1), Duration::from_millis(1)),
        buffer: 17,
        initial_window: 10,
        loss: LossSpec::bernoulli(loss),
        app: App::Transfer { bytes: 125_000 },
        duration: Duration::from_secs(120),
        window: (Duration::ZERO, Duration::from_secs(120)),
        verify_data: true,
        seed,
        ..Scenario::default()
    })
}

#[test]
fn a_lost_tail_is_probed_instead_of_timing_out() {
    let without = tail_loss(false, 0.0, 1);
    let with = tail_loss(true, 0.0, 1);
    for r in [&without, &with] {
        assert_eq!((r.incomplete_flows, r.corrupt_bytes), (0, 0));
    }
    assert!(
        without.timeouts >= 1,
        "the scenario loses its tail: {without:?}"
    );
    assert_eq!(with.timeouts, 0);
    let (t_without, t_with) = (
        without.completion_time_s.unwrap(),
        with.completion_time_s.unwrap(),
    );
    // The probe leaves two smoothed RTTs (about 80 ms with the queue) after the last
    // ACK instead of the 200 ms minimum RTO after it.
    assert!(
        t_with + 0.1 < t_without,
        "with a probe {t_with:.3} s, without {t_without:.3} s"
    );
}

#[test]
fn probes_end_tail_losses_under_random_loss_too() {
    // Over 2..10 % random loss and eight seeds, losses at the tail (in recovery or not)
    // no longer wait for the RTO.
    let (mut rto_with, mut rto_without) = (0, 0);
    for loss in [0.02, 0.05, 0.1] {
        for seed in 1..=8 {
            let with = tail_loss(true, loss, seed);
            let without = tail_loss(false, loss, seed);
            assert_eq!((with.incomplete_flows, with.corrupt_bytes), (0, 0));
            rto_with += with.timeouts;
            rto_without += without.timeouts;
        }
    }
    assert!(rto_without >= 3, "the scenario has tail losses to probe");
    assert!(
        rto_with * 3 <= rto_without,
        "timeouts with probes {rto_with}, without {rto_without}"
    );
}

#[test]
fn on_a_path_longer_than_the_rto_floor_the_probe_goes_at_the_timeouts_time() {
    // 10 MB at 50 Mb/s, RTT 400 ms, Gilbert-Elliott bursts (1 %, mean burst 5), a one-BDP
    // queue. Startup's overshoot drops the transfer's last 54 segments. Two smoothed
    // RTTs (0.8 s) exceed the RTO (0.6 s): the probe used to be left out, the timeout
    // fired, and the tail was resent from a window of one segment over six round trips
    // (9.28 s). Sent at the timeout's time, the probe's ACK shows the tail lost and it is
    // resent at the model's rate.
    let r = run(&Scenario {
        scheme: Scheme::parse("auto").unwrap(),
        bottleneck_bps: 50_000_000,
        delay: Duration::from_millis(198),
        access_delay: (Duration::from_millis(1), Duration::from_millis(1)),
        buffer: 1667,
        initial_window: 10,
        loss: LossSpec::GilbertElliott {
            p: 0.010526,
            r: 0.2,
            h: 0.0,
            k: 1.0,
        },
        app: App::Transfer { bytes: 10_000_000 },
        duration: Duration::from_secs(60),
        window: (Duration::ZERO, Duration::from_secs(60)),
        verify_data: true,
        seed: 2,
        ..Scenario::default()
    });
    assert_eq!((r.incomplete_flows, r.corrupt_bytes), (0, 0));
    assert_eq!(r.timeouts, 0);
    let t = r.completion_time_s.unwrap();
    assert!(t < 8.5, "{t:.3} s");
}
