//! The settings that make a simulated sender grow and recover as Linux's does
//! (`tcpfec validate --set kernel` uses them): byte counting, RACK's rule for lost
//! retransmissions (with the retransmission timer restarted by SACKs), HyStart and
//! Proportional Rate Reduction; and HyStart++, which the engine runs over real networks.
//! Each is measured against the same run without it.

use core::time::Duration;
use tcpfec_proto::Scheme;
use tcpfec_sim::{run, App, LossSpec, RunResult, Scenario};

/// A 50 Mb/s path with one-way delay `delay_ms`, a drop-tail queue of `buffer`
/// packets, no random loss, and one finite transfer of `bytes`.
fn transfer(scheme: &str, delay_ms: u64, buffer: u32, bytes: u64) -> Scenario {
    Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        bottleneck_bps: 50_000_000,
        access_bps: 1_000_000_000,
        access_delay: (Duration::ZERO, Duration::ZERO),
        delay: Duration::from_millis(delay_ms),
        buffer,
        loss: LossSpec::None,
        initial_window: 10,
        app: App::Transfer { bytes },
        duration: Duration::from_secs(60),
        window: (Duration::ZERO, Duration::from_secs(60)),
        ..Scenario::default()
    }
}

fn seconds(r: &RunResult) -> f64 {
    r.completion_time_s.expect("the transfer finishes")
}

#[test]
fn byte_counting_makes_delayed_acks_grow_the_window_as_an_ack_per_segment_does() {
    // 1 MB at RTT 200 ms, a queue that never fills: slow start's rounds decide.
    let base = transfer("sack", 100, 10_000, 1_000_000);
    let every_segment = seconds(&run(&base));
    let delayed = Scenario {
        delayed_ack: true,
        ..base.clone()
    };
    let per_ack = seconds(&run(&delayed));
    let counted = seconds(&run(&Scenario {
        byte_counting: true,
        ..delayed
    }));
    // Per ACK, delayed ACKs grow slow start by half per round instead of doubling it:
    // two rounds more here.
    assert!(
        per_ack > 1.2 * every_segment,
        "{per_ack} s with delayed ACKs, {every_segment} s without"
    );
    assert!(
        (counted / every_segment - 1.0).abs() < 0.02,
        "{counted} s counted, {every_segment} s with an ACK per segment"
    );
}

#[test]
fn rack_marks_the_holes_of_a_flights_tail_lost_in_recovery() {
    // Slow start overshoots a 4 BDP queue (RTT 100 ms): the recovery ends with holes at
    // the tail that have fewer than three segments delivered above them.
    let base = Scenario {
        delayed_ack: true,
        byte_counting: true,
        ..transfer("sack", 50, 1667, 10_000_000)
    };
    let rto = run(&base);
    let rack = run(&Scenario { rack: true, ..base });
    assert_eq!(rto.timeouts, 1, "the tail waits for the timer without RACK");
    assert_eq!(rack.timeouts, 0);
    assert!(
        seconds(&rack) < 0.9 * seconds(&rto),
        "{} s with RACK, {} s without",
        seconds(&rack),
        seconds(&rto)
    );
}

#[test]
fn rack_finds_lost_retransmissions_that_would_wait_for_the_rto() {
    // Slow start overflows a half-BDP queue (RTT 50 ms, 104 packets) and loses
    // retransmissions in the same burst.
    let base = Scenario {
        delayed_ack: true,
        byte_counting: true,
        ..transfer("sack", 25, 104, 10_000_000)
    };
    let rto = run(&base);
    let rack = run(&Scenario { rack: true, ..base });
    assert!(rto.timeouts >= 1, "{} timeouts without RACK", rto.timeouts);
    assert_eq!(rack.timeouts, 0);
    assert!(
        seconds(&rack) < 0.85 * seconds(&rto),
        "{} s with RACK, {} s without",
        seconds(&rack),
        seconds(&rto)
    );
}

#[test]
fn hystart_leaves_slow_start_before_the_queue_overflows() {
    // RTT 100 ms, a queue of one BDP (417 packets): plain slow start overshoots it.
    let base = Scenario {
        delayed_ack: true,
        byte_counting: true,
        ..transfer("cubic", 50, 417, 10_000_000)
    };
    let plain = run(&base);
    let hystart = run(&Scenario {
        hystart: true,
        ..base.clone()
    });
    let retransmitted = |r: &RunResult| r.retransmission_rate * r.data_packets as f64;
    assert!(retransmitted(&plain) > 500.0, "{}", retransmitted(&plain));
    assert_eq!(retransmitted(&hystart), 0.0);
    // Other controllers ignore it.
    let sack = run(&Scenario {
        scheme: Scheme::parse("sack").unwrap(),
        ..base.clone()
    });
    let sack_hystart = run(&Scenario {
        scheme: Scheme::parse("sack").unwrap(),
        hystart: true,
        ..base
    });
    assert_eq!(seconds(&sack), seconds(&sack_hystart));
}

#[test]
fn hystart_plus_plus_ends_a_window_rules_first_slow_start_on_a_rising_round_trip() {
    // RTT 100 ms, a queue of one BDP (417 packets), 10 MB. Unpaced, slow start's rounds
    // are bursts the queue absorbs until a flight exceeds a BDP; the next flight's round
    // trips show the queue, and Conservative Slow Start then adds a quarter of what slow
    // start would for the rest of the overshooting round.
    let retransmitted = |r: &RunResult| r.retransmission_rate * r.data_packets as f64;
    for scheme in ["sack", "cubic", "anker-10-1"] {
        let base = transfer(scheme, 50, 417, 10_000_000);
        let plain = run(&base);
        let watched = run(&Scenario {
            hystart_pp: true,
            ..base
        });
        assert!(
            retransmitted(&watched) < 0.7 * retransmitted(&plain),
            "{scheme}: {} retransmitted with HyStart++, {} without",
            retransmitted(&watched),
            retransmitted(&plain)
        );
        assert!(
            seconds(&watched) <= 1.01 * seconds(&plain),
            "{scheme}: {} s with HyStart++, {} s without",
            seconds(&watched),
            seconds(&plain)
        );
    }
    // A controller that models the path has its own start-up.
    let auto = transfer("auto", 50, 417, 10_000_000);
    let with = run(&Scenario {
        hystart_pp: true,
        ..auto.clone()
    });
    assert_eq!(seconds(&with), seconds(&run(&auto)));
}

#[test]
fn prr_recovers_a_slow_start_overshoot_in_one_episode() {
    // Slow start overflows a half-BDP queue (RTT 50 ms, 104 packets), as Linux's Reno did
    // at the kernel reference's point 4 (10 MB in 1.87 s there). RFC 6675's rule sends
    // nothing until the flight has halved, then two segments per ACK into the drained
    // queue, which overflows again: a second recovery from a halved window.
    let base = Scenario {
        delayed_ack: true,
        byte_counting: true,
        rack: true,
        ..transfer("sack", 25, 104, 10_000_000)
    };
    let pipe_rule = run(&base);
    let prr = run(&Scenario { prr: true, ..base });
    assert_eq!(pipe_rule.fast_recoveries, 2);
    assert_eq!(prr.fast_recoveries, 1);
    assert_eq!(prr.timeouts, 0);
    assert!(
        seconds(&prr) < 0.85 * seconds(&pipe_rule),
        "{} s with PRR, {} s without",
        seconds(&prr),
        seconds(&pipe_rule)
    );
}

#[test]
fn an_ack_that_sacks_new_data_restarts_the_retransmission_timer() {
    // A resumed 10 MB transfer at 10 Mb/s, RTT 400 ms, 1 % loss, a one-BDP queue: BBR's
    // start-up after the jump builds a queue of about 230 ms, and a retransmission sent
    // into it at 1.5 s is acknowledged 0.63 s later. Timed from that retransmission, the
    // 0.6 s timer fired 30 ms before its ACK, every segment in flight was sent again, and
    // BBR v3 held its window at a few segments for seconds. SACKs arrived all along.
    let scenario = Scenario {
        scheme: Scheme::parse("auto").unwrap(),
        bottleneck_bps: 10_000_000,
        access_delay: (Duration::from_millis(1), Duration::from_millis(1)),
        delay: Duration::from_millis(198),
        buffer: 333,
        packet_size: 1500,
        loss: LossSpec::Bernoulli { p: 0.01 },
        initial_window: 10,
        app: App::Transfer { bytes: 10_000_000 },
        duration: Duration::from_secs(60),
        window: (Duration::ZERO, Duration::from_secs(60)),
        resume: tcpfec_sim::Resume::Path,
        seed: 2,
        ..Scenario::default()
    };
    let r = run(&scenario);
    assert_eq!(r.timeouts, 0, "no timeout while SACKs arrive");
    // The bound, 2 RTT + 10 MB at 10 Mb/s, is 8.8 s.
    assert!(seconds(&r) < 10.5, "{} s", seconds(&r));
}
