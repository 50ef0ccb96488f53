//! The tunnel on loopback: 20 concurrent TCP connections and a UDP echo, each through its
//! own tcpfec connection, all encrypted.

mod common;

use common::{any, client, config, data, server};
use std::sync::Arc;
use std::time::Duration;
use tcpfec_net::tunnel::{self, ServerLimits, TunnelEvent, TunnelEvents, TunnelStats};
use tcpfec_net::{Psk, DEFAULT_SCHEME};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

/// A TCP echo server; returns its address.
async fn tcp_echo() -> std::net::SocketAddr {
    let l = TcpListener::bind(any()).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// A UDP echo server on the same port number as nothing in particular; returns its address.
async fn udp_echo() -> std::net::SocketAddr {
    let s = UdpSocket::bind(any()).await.unwrap();
    let addr = s.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_536];
        loop {
            let (n, from) = s.recv_from(&mut buf).await.unwrap();
            s.send_to(&buf[..n], from).await.unwrap();
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tcp_connections_and_udp_echo() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let key = Psk::generate();
        let cfg = config(Some(key), DEFAULT_SCHEME);
        let tcp_target = tcp_echo().await;
        let udp_target = udp_echo().await;

        // TCP tunnel.
        let srv = Arc::new(server(cfg.clone()).await);
        let srv_addr = srv.local_addr().unwrap();
        let sstats = Arc::new(TunnelStats::default());
        tokio::spawn(tunnel::serve(srv, tcp_target.to_string(), sstats.clone()));
        let cli = Arc::new(client(cfg.clone()).await);
        let listener = TcpListener::bind(any()).await.unwrap();
        let entry = listener.local_addr().unwrap();
        let cstats = Arc::new(TunnelStats::default());
        tokio::spawn(tunnel::client_tcp(
            cli.clone(),
            listener,
            srv_addr,
            cstats.clone(),
        ));

        let mut tasks = Vec::new();
        for i in 0..20u64 {
            tasks.push(tokio::spawn(async move {
                let msg = data(200_000 + i as usize * 1000, i);
                let mut s = TcpStream::connect(entry).await.unwrap();
                let (mut r, mut w) = s.split();
                let send = async {
                    w.write_all(&msg).await.unwrap();
                    w.shutdown().await.unwrap();
                };
                let mut back = Vec::new();
                let recv = r.read_to_end(&mut back);
                let (_, got) = tokio::join!(send, recv);
                got.unwrap();
                assert!(back == msg, "connection {i}: echo differs");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            sstats
                .tcp_connections
                .load(std::sync::atomic::Ordering::Relaxed),
            20
        );

        // UDP tunnel: a separate server endpoint forwarding to the UDP echo.
        let usrv = Arc::new(server(cfg.clone()).await);
        let usrv_addr = usrv.local_addr().unwrap();
        tokio::spawn(tunnel::serve(
            usrv,
            udp_target.to_string(),
            Arc::new(TunnelStats::default()),
        ));
        let usock = UdpSocket::bind(any()).await.unwrap();
        let uentry = usock.local_addr().unwrap();
        tokio::spawn(tunnel::client_udp(
            cli,
            usock,
            usrv_addr,
            Arc::new(TunnelStats::default()),
        ));
        let app = UdpSocket::bind(any()).await.unwrap();
        app.connect(uentry).await.unwrap();
        let mut buf = [0u8; 2000];
        for i in 0..50u32 {
            let d = data(100 + i as usize * 20, i as u64);
            app.send(&d).await.unwrap();
            let n = app.recv(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &d[..], "datagram {i}");
        }
    })
    .await
    .expect("tunnel test in time");
}

/// A tunnel from a fresh local listener to `target`; returns the local entry address and
/// the server's counters.
async fn tunnel_to(target: std::net::SocketAddr) -> (std::net::SocketAddr, Arc<TunnelStats>) {
    tunnel_within(target, ServerLimits::default(), TunnelStats::default()).await
}

/// [`tunnel_to`] with a server within `limits` counting into `sstats`.
async fn tunnel_within(
    target: std::net::SocketAddr,
    limits: ServerLimits,
    sstats: TunnelStats,
) -> (std::net::SocketAddr, Arc<TunnelStats>) {
    let cfg = config(Some(Psk::generate()), "sack");
    let srv = Arc::new(server(cfg.clone()).await);
    let srv_addr = srv.local_addr().unwrap();
    let sstats = Arc::new(sstats);
    tokio::spawn(tunnel::serve_within(
        srv,
        target.to_string(),
        limits,
        sstats.clone(),
    ));
    let cli = Arc::new(client(cfg).await);
    let listener = TcpListener::bind(any()).await.unwrap();
    let entry = listener.local_addr().unwrap();
    tokio::spawn(tunnel::client_tcp(
        cli,
        listener,
        srv_addr,
        Arc::new(TunnelStats::default()),
    ));
    (entry, sstats)
}

/// Reads until the end; the error kind if the connection was reset instead of closed.
async fn read_end(s: &mut TcpStream) -> Result<Vec<u8>, std::io::ErrorKind> {
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.map_err(|e| e.kind())?;
    Ok(got)
}

/// When the target refuses, or resets mid-stream, the local client's TCP connection is
/// reset too — never closed with a clean EOF that looks like a normal end of stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_or_resetting_target_resets_the_local_connection() {
    tokio::time::timeout(Duration::from_secs(30), async {
        // Refused: nothing listens at the target.
        let closed = TcpListener::bind(any()).await.unwrap();
        let nowhere = closed.local_addr().unwrap();
        drop(closed);
        let (entry, sstats) = tunnel_to(nowhere).await;
        // The reset can come so fast that it ends the connect itself, or a write: both are
        // the expected outcome, as long as it is a reset and not a clean end.
        let outcome = match TcpStream::connect(entry).await {
            Ok(mut s) => {
                let _ = s.write_all(b"hello?").await;
                read_end(&mut s).await
            }
            Err(e) => Err(e.kind()),
        };
        assert_eq!(outcome, Err(std::io::ErrorKind::ConnectionReset));
        assert_eq!(
            sstats.failures.load(std::sync::atomic::Ordering::Relaxed),
            1
        );

        // Reset: the target answers a little, then aborts its connection.
        let target = TcpListener::bind(any()).await.unwrap();
        let taddr = target.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut t, _) = target.accept().await.unwrap();
            let mut buf = [0u8; 5];
            t.read_exact(&mut buf).await.unwrap();
            t.write_all(b"partial answer").await.unwrap();
            t.flush().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            socket2::SockRef::from(&t)
                .set_linger(Some(Duration::ZERO))
                .unwrap();
        });
        let (entry, _) = tunnel_to(taddr).await;
        let mut s = TcpStream::connect(entry).await.unwrap();
        s.write_all(b"hello").await.unwrap();
        // As with TCP itself, an abort may overtake bytes still in flight: only the
        // ending is checked.
        assert_eq!(
            read_end(&mut s).await,
            Err(std::io::ErrorKind::ConnectionReset)
        );

        // A clean close stays a clean close.
        let target = TcpListener::bind(any()).await.unwrap();
        let taddr = target.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut t, _) = target.accept().await.unwrap();
            t.write_all(b"bye").await.unwrap();
        });
        let (entry, _) = tunnel_to(taddr).await;
        let mut s = TcpStream::connect(entry).await.unwrap();
        assert_eq!(read_end(&mut s).await, Ok(b"bye".to_vec()));
    })
    .await
    .expect("in time");
}

/// A server at its connection limit closes a new connection with the reason and tells its
/// operator; the client's application sees a reset; once a connection ends there is room
/// again. The per-client limit counts connections from one IP address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_at_its_limit_refuses_with_a_reason_and_makes_room_when_one_ends() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let events = Arc::new(std::sync::Mutex::new(Vec::new()));
        let e2 = events.clone();
        let stats = TunnelStats {
            events: TunnelEvents::to(move |e| e2.lock().unwrap().push(e.clone())),
            ..TunnelStats::default()
        };
        let limits = ServerLimits {
            max_connections: 8,
            max_per_peer: 2,
            ..ServerLimits::default()
        };
        let (entry, sstats) = tunnel_within(tcp_echo().await, limits, stats).await;
        let mut open = Vec::new();
        for i in 0..2u8 {
            let mut s = TcpStream::connect(entry).await.unwrap();
            s.write_all(&[i]).await.unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await.unwrap();
            assert_eq!(b[0], i);
            open.push(s);
        }
        // The reset may come before the connect call has seen its handshake complete
        // (the refusal travels only over loopback): then connect reports it.
        let third = match TcpStream::connect(entry).await {
            Ok(mut third) => {
                let _ = third.write_all(b"x").await;
                read_end(&mut third).await
            }
            Err(e) => Err(e.kind()),
        };
        assert_eq!(third, Err(std::io::ErrorKind::ConnectionReset));
        assert_eq!(sstats.refused.load(std::sync::atomic::Ordering::Relaxed), 1);
        let refused = events.lock().unwrap().clone();
        assert!(
            matches!(&refused[..], [TunnelEvent::Refused { reason, .. }] if reason.contains("limit of 2 connections from 127.0.0.1")),
            "{refused:?}"
        );
        // One ends: the next gets through.
        let mut first = open.remove(0);
        first.shutdown().await.unwrap();
        assert_eq!(read_end(&mut first).await, Ok(vec![]));
        // The server frees the slot when it has seen the end too.
        while sstats.active.load(std::sync::atomic::Ordering::Relaxed) > 1 {
            tokio::task::yield_now().await;
        }
        let mut s = TcpStream::connect(entry).await.unwrap();
        s.write_all(b"y").await.unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).await.unwrap();
        let again = Some(b[0]);
        assert_eq!(again, Some(b'y'));
    })
    .await
    .unwrap();
}
