//! qlog traces of real connections: a transfer through a lossy relay leaves one file per
//! end whose loss, repair and rebuild events match the connection's counters.

mod common;

use common::{client, config, data, relay, server};
use std::time::Duration;
use tcpfec_channel::LossSpec;
use tcpfec_net::Psk;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Events named `name` in the JSON-SEQ file at `path`.
fn count(path: &std::path::Path, name: &str) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    tcpfec_qlog::records(&bytes)
        .expect("one JSON value per record")
        .into_iter()
        .filter(|v| v["name"] == name)
        .count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lossy_transfer_leaves_a_trace_per_end_that_matches_its_counters() {
    let dir = std::env::temp_dir().join(format!("tcpfec-net-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cfg = config(Some(Psk::generate()), "anker-8-2");
    cfg.qlog_dir = Some(dir.clone());
    let srv = server(cfg.clone()).await;
    let path = relay(
        srv.local_addr().unwrap(),
        50_000_000,
        Duration::from_millis(10),
        LossSpec::bernoulli(0.02),
    )
    .await;
    let payload = data(3_000_000, 5);
    let cli = client(cfg).await;
    let mut s = cli.connect(path.local_addr()).await.unwrap();
    let mut r = srv.accept().await.unwrap();
    let (sent, got) = tokio::join!(
        async {
            s.write_all(&payload).await.unwrap();
            s.shutdown().await.unwrap();
        },
        async {
            let mut got = Vec::new();
            r.read_to_end(&mut got).await.unwrap();
            r.shutdown().await.unwrap();
            got
        }
    );
    let () = sent;
    assert!(got == payload);
    // Both ends done both ways: nothing more is sent (no late repair) before the counters
    // are read.
    let mut back = Vec::new();
    s.read_to_end(&mut back).await.unwrap();
    assert!(cli.wait_done(Duration::from_secs(5)).await);
    assert!(srv.wait_done(Duration::from_secs(5)).await);
    let (tx, rx) = (s.stats(), r.stats());
    drop((s, r));
    drop((cli, srv));
    tcpfec_qlog::flush_all(Duration::from_secs(5));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let (client_file, server_file) = (&files[0], &files[1]);
    assert!(client_file
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("client-"));
    assert!(tx.retransmissions > 0 && rx.recovered > 0, "{tx:?} {rx:?}");
    assert_eq!(
        count(client_file, "recovery:packet_lost"),
        tx.retransmissions
    );
    assert_eq!(count(client_file, "tcpfec:repair_sent"), tx.repairs_sent);
    assert_eq!(count(server_file, "tcpfec:segment_rebuilt"), rx.recovered);
    assert!(count(server_file, "transport:packet_received") > 2000);
    std::fs::remove_dir_all(&dir).unwrap();
}
