//! Every datagram fits one 1500-byte packet over IPv6 (a UDP payload of at most 1452 bytes),
//! and data datagrams use that room: the MSS leaves no space for piggybacked SACK blocks
//! or FEC feedback, which the engine leaves out of a full data packet and sends on a pure
//! ACK instead. Checked where piggybacking is heaviest: data both ways under `auto`, with
//! the server's datagrams lost so that the client's data packets have SACK blocks to
//! carry.

mod common;

use common::{client, config, data, proxy_both, server};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_net::config::MAX_DATAGRAM;
use tcpfec_net::Psk;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datagrams_fit_one_packet_and_data_fills_it_with_data_both_ways() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let cfg = config(Some(Psk::generate()), "auto");
        let srv = server(cfg.clone()).await;
        let longest = Arc::new(AtomicUsize::new(0));
        let near_full = Arc::new(AtomicU64::new(0));
        let (l, f) = (longest.clone(), near_full.clone());
        let mut n = 0u64;
        let (entry, _) = proxy_both(
            srv.local_addr().unwrap(),
            move |d| {
                l.fetch_max(d.len(), Ordering::Relaxed);
                f.fetch_add(u64::from(d.len() > 1420), Ordering::Relaxed);
                true
            },
            // Every 20th datagram from the server is lost: the client's receiver has
            // holes to SACK while it sends.
            move |_| {
                n += 1;
                !n.is_multiple_of(20)
            },
        )
        .await;
        let cli = client(cfg).await;
        let up = data(3_000_000, 1);
        let mut s = cli.connect(entry).await.unwrap();
        let mut at_server = srv.accept().await.unwrap();
        // The server sends its own 3 MB back while the client sends.
        let down = data(3_000_000, 2);
        let (d2, u2) = (down.clone(), up.len());
        let echo = tokio::spawn(async move {
            let (mut r, mut w) = tokio::io::split(&mut at_server);
            let send = async {
                w.write_all(&d2).await.unwrap();
                w.shutdown().await.unwrap();
            };
            let recv = async {
                let mut got = vec![0u8; u2];
                r.read_exact(&mut got).await.unwrap();
                got
            };
            tokio::join!(send, recv).1
        });
        let (mut r, mut w) = tokio::io::split(&mut s);
        let send = async {
            w.write_all(&up).await.unwrap();
            w.flush().await.unwrap();
        };
        let recv = async {
            let mut got = Vec::new();
            r.read_to_end(&mut got).await.unwrap();
            got
        };
        let (_, got_down) = tokio::join!(send, recv);
        assert_eq!(got_down, down, "the server's stream");
        assert_eq!(echo.await.unwrap(), up, "the client's stream");
        let longest = longest.load(Ordering::Relaxed);
        let near_full = near_full.load(Ordering::Relaxed);
        eprintln!("longest client datagram {longest} bytes; {near_full} over 1420");
        assert!(longest <= MAX_DATAGRAM, "a {longest}-byte datagram");
        // 3 MB in datagrams of more than 1420 bytes: over 2000 of them.
        assert!(near_full > 2000, "{near_full} datagrams over 1420 bytes");
    })
    .await
    .unwrap();
}
