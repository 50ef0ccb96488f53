//! A server sharded over several sockets on one port: clients spread over the shards,
//! every byte arrives, and a client whose address changes mid-connection (its packets now
//! hash to another shard) keeps its connection.

mod common;

use common::{any, client, config, data, relay, relay_on};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_channel::LossSpec;
use tcpfec_net::{Endpoint, Psk};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CLIENTS: usize = 20;
const EACH: usize = 200_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_server_spreads_clients_over_its_shards_and_moves_every_byte() {
    let cfg = config(Some(Psk::generate()), "sack");
    let srv = Endpoint::server(any(), cfg.clone(), 2).await.unwrap();
    assert_eq!(srv.shard_count(), 2);
    let target = srv.local_addr().unwrap();
    // Each stream echoes the hash of what it read.
    let server = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..CLIENTS {
            let mut s = srv.accept().await.unwrap();
            tasks.push(tokio::spawn(async move {
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                s.write_all(blake3::hash(&got).as_bytes()).await.unwrap();
                s.shutdown().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        srv
    });
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let cfg = cfg.clone();
        // One endpoint, so one source port, per client: the kernel spreads them.
        clients.push(tokio::spawn(async move {
            let ep = client(cfg).await;
            let mut s = ep.connect(target).await.unwrap();
            let payload = data(EACH, i as u64);
            s.write_all(&payload).await.unwrap();
            s.shutdown().await.unwrap();
            let mut echo = Vec::new();
            s.read_to_end(&mut echo).await.unwrap();
            assert_eq!(
                echo.as_slice(),
                blake3::hash(&payload).as_bytes(),
                "client {i}"
            );
            drop(s);
            ep.wait_done(Duration::from_secs(2)).await;
        }));
    }
    let run = async {
        for c in clients {
            c.await.unwrap();
        }
        server.await.unwrap()
    };
    let srv = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("all clients done in time");
    let per_shard = srv.shard_stats();
    let accepted: Vec<u64> = per_shard.iter().map(|s| s.handshakes_accepted).collect();
    eprintln!("connections per shard: {accepted:?}");
    assert_eq!(accepted.iter().sum::<u64>(), CLIENTS as u64);
    // 20 source ports all hashed to one of two sockets: odds 2 in 2^20.
    assert!(accepted.iter().all(|&n| n > 0), "{accepted:?}");
    let total = srv.stats();
    assert_eq!(total.dropped(), 0, "{total:?}");
    assert_eq!(total.forwarded, 0, "no client moved: {total:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_moves_to_another_shard_keeps_its_connection() {
    let mut cfg = config(Some(Psk::generate()), "sack");
    cfg.idle_timeout = Duration::from_secs(30);
    let srv = Arc::new(Endpoint::server(any(), cfg.clone(), 2).await.unwrap());
    let target = srv.local_addr().unwrap();
    const RATE: u64 = 200_000_000;
    const ONE_WAY: Duration = Duration::from_millis(2);
    const CHUNK: usize = 100_000;
    let mut path = relay(target, RATE, ONE_WAY, LossSpec::None).await;
    let entry = path.local_addr();
    let srv2 = srv.clone();
    let server = tokio::spawn(async move {
        let mut s = srv2.accept().await.unwrap();
        let mut buf = vec![0u8; CHUNK];
        // Answer each chunk with its hash, until the client ends.
        while s.read_exact(&mut buf).await.is_ok() {
            s.write_all(blake3::hash(&buf).as_bytes()).await.unwrap();
        }
        s.shutdown().await.unwrap();
    });
    let cli = client(cfg).await;
    let mut s = cli.connect(entry).await.unwrap();
    let test = async {
        // Each relay restart gives the client's packets a new source port, which hashes
        // to either shard. Restart until data has crossed shards and come back answered
        // (each move crosses with odds 1/2).
        for round in 0..16u64 {
            let chunk = data(CHUNK, round);
            s.write_all(&chunk).await.unwrap();
            let mut echo = [0u8; 32];
            s.read_exact(&mut echo).await.unwrap();
            assert_eq!(&echo, blake3::hash(&chunk).as_bytes(), "round {round}");
            if srv.stats().forwarded > 0 {
                break;
            }
            let (listen, to) = (path.local_addr(), path.to());
            path.stop().await;
            path = relay_on(listen, to, RATE, ONE_WAY, LossSpec::None).await;
        }
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        server.await.unwrap();
        path
    };
    let path = tokio::time::timeout(Duration::from_secs(120), test)
        .await
        .expect("done in time");
    let st = srv.stats();
    eprintln!("{st:?}");
    assert!(
        st.forwarded >= 1,
        "no move crossed shards in 15 tries: {st:?}"
    );
    assert!(st.migrations >= 1, "{st:?}");
    assert_eq!(st.unknown_conn, 0, "{st:?}");
    drop(path);
}

/// A proxy that sends the client's first datagram to the server from one socket and every
/// later one from another, dropping the server's answers to the first: the client's
/// address changes between its Initial and its repeat, as after a NAT rebinding
/// mid-handshake. Returns the proxy's address.
async fn rebinding_proxy(server: std::net::SocketAddr) -> std::net::SocketAddr {
    use tokio::net::UdpSocket;
    let front = Arc::new(UdpSocket::bind(any()).await.unwrap());
    let first = UdpSocket::bind(any()).await.unwrap();
    let later = Arc::new(UdpSocket::bind(any()).await.unwrap());
    first.connect(server).await.unwrap();
    later.connect(server).await.unwrap();
    let addr = front.local_addr().unwrap();
    let client = Arc::new(std::sync::Mutex::new(None));
    let (f, l, c) = (front.clone(), later.clone(), client.clone());
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        let mut sent_first = false;
        loop {
            let (n, from) = f.recv_from(&mut buf).await.unwrap();
            *c.lock().unwrap() = Some(from);
            if sent_first {
                let _ = l.send(&buf[..n]).await;
            } else {
                sent_first = true;
                let _ = first.send(&buf[..n]).await;
            }
        }
    });
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let Ok(n) = later.recv(&mut buf).await else {
                return;
            };
            let to = *client.lock().unwrap();
            if let Some(to) = to {
                let _ = front.send_to(&buf[..n], to).await;
            }
        }
    });
    addr
}

/// A client whose address changes mid-handshake on a sharded server: its repeated Initial
/// reaches the shard that holds its connection (forwarded when it lands on another) and
/// is answered there, at the new address, so the connection opens instead of the client
/// starting over. Eight rebinds over four shards: at least one repeat lands on another
/// shard than its Initial (all eight on the same one would happen once in 65 536 runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_rebinding_mid_handshake_is_answered_by_its_shard() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let cfg = config(Some(Psk::generate()), "sack");
        let srv = Arc::new(Endpoint::server(any(), cfg.clone(), 4).await.unwrap());
        let target = srv.local_addr().unwrap();
        let s2 = srv.clone();
        tokio::spawn(async move {
            while let Some(mut s) = s2.accept().await {
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    s.read_to_end(&mut got).await.unwrap();
                    s.write_all(&got).await.unwrap();
                    s.shutdown().await.unwrap();
                });
            }
        });
        for i in 0..8u64 {
            let entry = rebinding_proxy(target).await;
            let ep = client(cfg.clone()).await;
            let mut s = ep.connect(entry).await.expect("the handshake completes");
            let msg = data(10_000, i);
            s.write_all(&msg).await.unwrap();
            s.shutdown().await.unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).await.unwrap();
            assert_eq!(back, msg, "rebind {i}");
        }
        let forwarded: u64 = srv.shard_stats().iter().map(|s| s.forwarded).sum();
        assert!(forwarded > 0, "no repeat was forwarded between shards");
        let opened: u64 = srv
            .shard_stats()
            .iter()
            .map(|s| s.handshakes_accepted)
            .sum();
        assert_eq!(opened, 8, "a repeat opened a second connection");
    })
    .await
    .unwrap();
}
