//! qlog traces of simulated runs: the files follow the qlog main schema's JSON-SEQ form,
//! hold exactly as many loss, repair, rebuild and failure events as the run's counters,
//! and tracing changes nothing the run computes.

use core::time::Duration;
use serde_json::Value;
use std::path::Path;
use tcpfec_proto::Scheme;
use tcpfec_sim::sim::{run_traced, TraceFiles};
use tcpfec_sim::{run, App, LossSpec, Scenario};

/// 2 MB over a 20 Mb/s, 50 ms path with 2 % random loss, measured over the whole run.
fn lossy_transfer(scheme: &str) -> Scenario {
    Scenario {
        scheme: Scheme::parse(scheme).unwrap(),
        bottleneck_bps: 20_000_000,
        delay: Duration::from_millis(25),
        buffer: 100,
        loss: LossSpec::bernoulli(0.02),
        initial_window: 10,
        app: App::Transfer { bytes: 2_000_000 },
        duration: Duration::from_secs(30),
        window: (Duration::ZERO, Duration::from_secs(30)),
        seed: 7,
        ..Scenario::default()
    }
}

/// The records of a JSON-SEQ file, each checked against the main schema's shape and what
/// qvis's loader requires (`textsequencejsontoqlog.ts`): the first has `qlog_version`,
/// `qlog_format` "JSON-SEQ" and a `trace` with its vantage point; every other one is an
/// event with a time, a `category:event` name and a data object, in time order.
fn records(path: &Path) -> (Value, Vec<Value>) {
    let bytes = std::fs::read(path).unwrap();
    for r in bytes.split(|&b| b == 0x1e).filter(|r| !r.is_empty()) {
        assert_eq!(r.last(), Some(&b'\n'), "each record ends with a line feed");
    }
    let mut recs = tcpfec_qlog::records(&bytes)
        .expect("each record is one JSON value")
        .into_iter();
    let header = recs.next().expect("a header record");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["qlog_version"], "0.3");
    assert!(header["trace"].is_object());
    let vp = &header["trace"]["vantage_point"]["type"];
    assert!(vp == "client" || vp == "server", "{header}");
    let events: Vec<Value> = recs.collect();
    let mut last = 0.0;
    for e in &events {
        let t = e["time"].as_f64().expect("time");
        assert!(t >= last, "events in time order");
        last = t;
        let name = e["name"].as_str().expect("name");
        assert!(
            name.split_once(':')
                .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty()),
            "{name}"
        );
        assert!(e["data"].is_object(), "{e}");
    }
    (header, events)
}

fn count(events: &[Value], name: &str) -> u64 {
    events.iter().filter(|e| e["name"] == name).count() as u64
}

#[test]
fn a_lossy_transfer_has_as_many_loss_repair_and_rebuild_events_as_its_counters() {
    for scheme in ["anker-8-2", "auto", "sack"] {
        let sc = lossy_transfer(scheme);
        let dir = std::env::temp_dir().join(format!("tcpfec-qlog-{}-{scheme}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let q = TraceFiles {
            qlog_dir: Some(dir.clone()),
            pcap_dir: None,
            name: "t".into(),
            limit: u64::MAX,
        };
        let traced = run_traced(&sc, &q).unwrap();
        let plain = run(&sc);
        assert_eq!(
            format!("{traced:?}"),
            format!("{plain:?}"),
            "{scheme}: tracing changes nothing the run computes"
        );
        let f = &traced.flows[0];
        assert!(
            f.completion_time_s.is_some(),
            "{scheme}: the transfer finishes"
        );
        let (_, client) = records(&dir.join("t-flow0-client.sqlog"));
        let (_, server) = records(&dir.join("t-flow0-server.sqlog"));
        let retransmissions = (f.retransmission_rate * f.data_packets_sent as f64).round() as u64;
        assert!(
            retransmissions > 0,
            "{scheme}: 2 % loss costs retransmissions"
        );
        assert_eq!(
            count(&client, "recovery:packet_lost"),
            retransmissions,
            "{scheme}"
        );
        assert_eq!(
            count(&client, "tcpfec:repair_sent"),
            f.repairs_sent,
            "{scheme}"
        );
        assert_eq!(
            count(&server, "tcpfec:segment_rebuilt"),
            f.recovered_packets,
            "{scheme}"
        );
        let failed: u64 = server
            .iter()
            .filter(|e| e["name"] == "tcpfec:block_failed")
            .map(|e| e["data"]["groups"].as_u64().unwrap())
            .sum();
        assert_eq!(failed, f.unrecoverable_groups, "{scheme}");
        if scheme != "sack" {
            assert!(
                f.recovered_packets > 0,
                "{scheme}: repairs rebuild some losses"
            );
        }
        // Every packet either end sent is in its file, and every one it received.
        let sent =
            count(&client, "transport:packet_sent") + count(&server, "transport:packet_sent");
        assert_eq!(sent, traced.packets_total, "{scheme}");
        assert!(
            count(&server, "transport:packet_received") < count(&client, "transport:packet_sent")
        );
        assert!(count(&client, "recovery:metrics_updated") > 10);
        // The minimum RTT appears once measured, no lower than the path's 50 ms.
        let min_rtt: Vec<f64> = client
            .iter()
            .filter_map(|e| e["data"]["min_rtt"].as_f64())
            .collect();
        assert!(
            !min_rtt.is_empty() && min_rtt.iter().all(|&r| r >= 50.0),
            "{min_rtt:?}"
        );
        // The controller's states as it passes through them: BBR's for `auto`, slow start
        // and recovery for the window rules.
        let states: Vec<&str> = client
            .iter()
            .filter(|e| e["name"] == "recovery:congestion_state_updated")
            .map(|e| e["data"]["new"].as_str().unwrap())
            .collect();
        let first = if scheme == "auto" {
            "startup"
        } else {
            "slow_start"
        };
        assert_eq!(states.first(), Some(&first), "{scheme}: {states:?}");
        assert!(states.len() >= 2, "{scheme}: {states:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_trace_stops_at_its_size_limit_with_a_note() {
    let sc = lossy_transfer("sack");
    let dir = std::env::temp_dir().join(format!("tcpfec-qlog-limit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let q = TraceFiles {
        qlog_dir: Some(dir.clone()),
        pcap_dir: None,
        name: "t".into(),
        limit: 100_000,
    };
    run_traced(&sc, &q).unwrap();
    let path = dir.join("t-flow0-client.sqlog");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= 100_000 + 200, "{size}");
    let (_, events) = records(&path);
    assert_eq!(events.last().unwrap()["name"], "tcpfec:trace_cut");
    std::fs::remove_dir_all(&dir).unwrap();
}
