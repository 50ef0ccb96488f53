//! Attacks and failures on a live server: garbage, truncated, forged and replayed packets
//! are dropped and counted while a transfer completes; a wrong key fails fast; a killed
//! receiver gives the sender a clear error in bounded time.

mod common;

use common::{any, client, config, data, proxy, server};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcpfec_net::crypto::Cipher;
use tcpfec_net::error::net_error;
use tcpfec_net::{NetError, Psk, RetryPolicy, MAX_UNVALIDATED};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// A transparent UDP proxy that copies every client → server datagram to `tap` and can
/// inject datagrams towards the server from its own (the client's apparent) address.
async fn tapping_proxy(
    server: SocketAddr,
) -> (SocketAddr, Arc<UdpSocket>, mpsc::UnboundedReceiver<Vec<u8>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (addr, back) = proxy(server, move |d| {
        let _ = tx.send(d.to_vec());
        true
    })
    .await;
    (addr, back, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_forged_truncated_and_replayed_packets_are_dropped_and_counted() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let cfg = config(Some(Psk::generate()), "sack");
        let srv = Arc::new(server(cfg.clone()).await);
        let srv_addr = srv.local_addr().unwrap();
        let (entry, inject, mut tap) = tapping_proxy(srv_addr).await;
        const LEN: usize = 8 << 20;
        let s2 = srv.clone();
        let receiver = tokio::spawn(async move {
            let mut s = s2.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            s.write_all(blake3::hash(&got).as_bytes()).await.unwrap();
            s.shutdown().await.unwrap();
            got.len()
        });
        // The attacker: replays, bit-flips and truncates what it sees, adds random bytes,
        // and sends spoofed Initials from its own socket.
        let stranger = UdpSocket::bind(any()).await.unwrap();
        let attacker = tokio::spawn(async move {
            let mut seen = 0u64;
            let mut x = 12345u64;
            while let Some(d) = tap.recv().await {
                seen += 1;
                if !seen.is_multiple_of(7) || d.first() != Some(&4) {
                    continue;
                }
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let _ = inject.send(&d).await; // replay
                                               // Forged: a fresh packet number (so the replay window lets it through to the
                                               // AEAD) and a flipped body byte.
                let mut forged = d.clone();
                let pn = u64::from_be_bytes(forged[5..13].try_into().unwrap()) + 1_000_000;
                forged[5..13].copy_from_slice(&pn.to_be_bytes());
                let i = 13 + (x as usize % (forged.len() - 13));
                forged[i] ^= 0x5a;
                let _ = inject.send(&forged).await;
                let cut = (x >> 20) as usize % d.len();
                let _ = inject.send(&d[..cut]).await; // truncated
                let junk: Vec<u8> = (0..(x >> 40) as usize % 1500)
                    .map(|k| (x >> (k % 56)) as u8)
                    .collect();
                let _ = inject.send(&junk).await; // random
                if seen.is_multiple_of(70) {
                    let spoof = tcpfec_net::envelope::initial(
                        true,
                        Cipher::preferred(),
                        tcpfec_net::crypto::Pattern::Psk,
                        x as u32,
                        &[7; 24],
                        &[1; 48],
                    );
                    let _ = stranger.send_to(&spoof, srv_addr).await;
                }
            }
        });
        let payload = data(LEN, 9);
        let cli = client(cfg).await;
        let mut s = cli.connect(entry).await.unwrap();
        s.write_all(&payload).await.unwrap();
        s.shutdown().await.unwrap();
        let mut h = Vec::new();
        s.read_to_end(&mut h).await.unwrap();
        assert_eq!(h.as_slice(), blake3::hash(&payload).as_bytes());
        assert_eq!(receiver.await.unwrap(), LEN);
        attacker.abort();
        let st = srv.stats();
        eprintln!("{st:?}");
        assert!(st.replayed > 0, "replays counted: {st:?}");
        assert!(st.auth_failed > 0, "forgeries counted: {st:?}");
        assert!(st.malformed > 0, "garbage counted: {st:?}");
        assert!(st.bad_token > 0, "spoofed Initials counted: {st:?}");
        assert_eq!(st.handshakes_accepted, 1, "no state for spoofed Initials");
        assert_eq!(
            st.bad_inner, 0,
            "nothing unauthenticated reached the engine"
        );
    })
    .await
    .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_fails_fast_with_a_clear_error() {
    let srv = server(config(Some(Psk::generate()), "sack")).await;
    let cli = client(config(Some(Psk::generate()), "sack")).await;
    let start = Instant::now();
    let e = cli.connect(srv.local_addr().unwrap()).await.err().unwrap();
    assert_eq!(e, NetError::WrongKey);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(e.to_string().contains("wrong key"), "{e}");
    assert_eq!(srv.stats().auth_failed, 1);
    // Insecure against secure: refused too, with its own message.
    let plain = client(config(None, "sack")).await;
    let e = plain
        .connect(srv.local_addr().unwrap())
        .await
        .err()
        .unwrap();
    assert_eq!(e, NetError::ModeMismatch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_peer_fails_after_the_handshake_timeout() {
    // A bound socket that never answers.
    let silent = UdpSocket::bind(any()).await.unwrap();
    let mut cfg = config(Some(Psk::generate()), "sack");
    cfg.handshake_timeout = Duration::from_secs(1);
    let cli = client(cfg).await;
    let e = cli
        .connect(silent.local_addr().unwrap())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            NetError::NoAnswer {
                cookie_seen: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("no answer"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_receiver_gives_the_sender_a_clear_error_in_bounded_time() {
    let key = Psk::generate();
    let mut cfg = config(Some(key), "sack");
    cfg.idle_timeout = Duration::from_secs(2);
    // The receiver lives in its own runtime on its own thread, so it can be killed at once
    // (tasks and socket gone, as when the process dies).
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (kill_tx, kill_rx) = std::sync::mpsc::channel::<()>();
    let scfg = cfg.clone();
    let killer = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (got_tx, got_rx) = std::sync::mpsc::channel::<()>();
        rt.spawn(async move {
            let srv = server(scfg).await;
            addr_tx.send(srv.local_addr().unwrap()).unwrap();
            let mut s = srv.accept().await.unwrap();
            let mut buf = vec![0u8; 1 << 16];
            let mut n = 0;
            while n < (1 << 20) {
                n += s.read(&mut buf).await.unwrap();
            }
            got_tx.send(()).unwrap();
            std::future::pending::<()>().await;
        });
        got_rx.recv().unwrap();
        let _ = kill_rx.recv_timeout(Duration::from_millis(0));
        rt.shutdown_background();
    });
    let addr = addr_rx.recv().unwrap();
    let cli = client(cfg).await;
    let mut s = cli.connect(addr).await.unwrap();
    let big = data(64 << 20, 5);
    let start = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(30), async {
        s.write_all(&big).await?;
        s.shutdown().await?;
        let mut v = Vec::new();
        s.read_to_end(&mut v).await
    })
    .await
    .expect("the sender must not hang");
    let _ = kill_tx.send(());
    killer.join().unwrap();
    let e = r.expect_err("the transfer cannot succeed");
    let ne = net_error(&e).cloned();
    assert!(matches!(ne, Some(NetError::PeerTimeout(_))), "{e:?}");
    assert!(e.to_string().contains("stopped answering"), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// An Initial captured on the path and replayed from the same address within the token's
/// lifetime opens no second connection, and the server answers it with nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_token_opens_no_second_connection() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut cfg = config(Some(Psk::generate()), "sack");
        cfg.retry = RetryPolicy::Always;
        let srv = Arc::new(server(cfg.clone()).await);
        let (entry, inject, mut tap) = tapping_proxy(srv.local_addr().unwrap()).await;
        let s2 = srv.clone();
        let echo = tokio::spawn(async move {
            let mut s = s2.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            s.write_all(&got).await.unwrap();
        });
        let cli = client(cfg).await;
        let mut s = cli.connect(entry).await.unwrap();
        s.write_all(b"once").await.unwrap();
        s.shutdown().await.unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"once");
        echo.await.unwrap();
        drop(s);
        assert!(cli.wait_idle(Duration::from_secs(5)).await);
        assert!(srv.wait_idle(Duration::from_secs(5)).await);
        // The Initial that carried the token.
        let mut initial = None;
        while let Ok(d) = tap.try_recv() {
            if let Some(tcpfec_net::envelope::Envelope::Initial { token, .. }) =
                tcpfec_net::envelope::parse(&d)
            {
                if !token.is_empty() {
                    initial = Some(d.clone());
                }
            }
        }
        let initial = initial.expect("a token-bearing Initial was sent");
        let before = srv.stats();
        assert_eq!(before.handshakes_accepted, 1);
        inject.send(&initial).await.unwrap();
        while srv.stats().initial_replayed == 0 {
            tokio::task::yield_now().await;
        }
        let after = srv.stats();
        assert_eq!(
            after.handshakes_accepted, 1,
            "a second connection was opened"
        );
        assert_eq!(
            after.datagrams_out, before.datagrams_out,
            "the server answered"
        );
        assert!(
            srv.wait_idle(Duration::from_millis(1)).await,
            "state was created"
        );
    })
    .await
    .unwrap();
}

/// Packets from a new address move a connection only if they are authentic and new:
/// captured data packets replayed from a stranger's socket, and forged ones with fresh
/// packet numbers, draw no path challenge and no migration, and the stranger receives
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_and_forgeries_from_a_new_address_do_not_move_the_connection() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let cfg = config(Some(Psk::generate()), "sack");
        let srv = Arc::new(server(cfg.clone()).await);
        let srv_addr = srv.local_addr().unwrap();
        let (entry, _inject, mut tap) = tapping_proxy(srv_addr).await;
        let (got_all_tx, got_all_rx) = tokio::sync::oneshot::channel();
        let (attacked_tx, attacked_rx) = tokio::sync::oneshot::channel::<()>();
        let s2 = srv.clone();
        let receiver = tokio::spawn(async move {
            let mut s = s2.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            // Every captured packet is old now; the connection is still open.
            got_all_tx.send(()).unwrap();
            attacked_rx.await.unwrap();
            s.write_all(b"ok").await.unwrap();
            s.shutdown().await.unwrap();
            got.len()
        });
        let cli = client(cfg).await;
        let mut s = cli.connect(entry).await.unwrap();
        s.write_all(&data(2_000_000, 5)).await.unwrap();
        s.shutdown().await.unwrap();
        got_all_rx.await.unwrap();
        // The attacker, at another address: every captured data packet replayed, and a
        // forged copy of each with a fresh packet number.
        let stranger = UdpSocket::bind(any()).await.unwrap();
        let mut sent = 0;
        while let Ok(d) = tap.try_recv() {
            if d.first() != Some(&4) {
                continue;
            }
            stranger.send_to(&d, srv_addr).await.unwrap();
            let mut forged = d.clone();
            let pn = u64::from_be_bytes(forged[5..13].try_into().unwrap()) + 1_000_000;
            forged[5..13].copy_from_slice(&pn.to_be_bytes());
            let last = forged.len() - 1;
            forged[last] ^= 1;
            stranger.send_to(&forged, srv_addr).await.unwrap();
            sent += 1;
        }
        assert!(sent > 100, "{sent} data packets captured");
        // Until the server has judged them all (bounded: some may be lost in buffers).
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while srv.stats().replayed + srv.stats().auth_failed < 2 * sent {
                tokio::task::yield_now().await;
            }
        })
        .await;
        attacked_tx.send(()).unwrap();
        let mut back = Vec::new();
        s.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"ok");
        assert_eq!(receiver.await.unwrap(), 2_000_000);
        let st = srv.stats();
        assert!(st.replayed > 0 && st.auth_failed > 0, "{st:?}");
        assert_eq!(st.path_challenges_sent, 0, "{st:?}");
        assert_eq!(st.migrations, 0, "{st:?}");
        let mut buf = [0u8; 2048];
        assert!(
            stranger.try_recv_from(&mut buf).is_err(),
            "the server sent something to the stranger"
        );
    })
    .await
    .expect("in time");
}

/// A genuine Initial (Noise message 1 under `key`) from client id `id`, as a replay of a
/// captured one would look: it opens a connection whose client never answers.
fn genuine_initial(key: &Psk, id: u32) -> Vec<u8> {
    let params = tcpfec_net::params::ClientParams {
        sent_at_ms: tcpfec_net::first_message::wall_clock_ms(),
        send: tcpfec_proto::Scheme::parse("sack").unwrap(),
        want: None,
        opening: tcpfec_net::params::Opening {
            mss: 1316,
            window: 1 << 20,
            sack: true,
        },
    }
    .encode();
    let creds = tcpfec_net::crypto::Credentials {
        psk: Some(key),
        own: None,
        server: None,
    };
    let (m, _, pattern) = tcpfec_net::crypto::first_message(&creds, Cipher::preferred(), &params);
    tcpfec_net::envelope::initial(true, Cipher::preferred(), pattern, id, &[], &m)
}

/// Without a cookie round the server answers a first Initial with the handshake, but it
/// sends an unproven address no more than three times what it received from it, hands
/// out no stream for it, and once `MAX_UNVALIDATED` such clients are pending it asks new
/// ones for a cookie first: a real client still gets through, one round trip later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unproven_clients_get_bounded_answers_and_a_busy_server_asks_for_cookies() {
    tokio::time::timeout(Duration::from_secs(30), async {
        let key = Psk::generate();
        let cfg = config(Some(key.clone()), "sack");
        let srv = Arc::new(server(cfg.clone()).await);
        let addr = srv.local_addr().unwrap();
        let silent = UdpSocket::bind(any()).await.unwrap();
        let (mut sent, mut got, mut handshakes) = (0usize, 0usize, 0usize);
        let mut buf = vec![0u8; 2048];
        for id in 1..=MAX_UNVALIDATED as u32 {
            let initial = genuine_initial(&key, id);
            // Each Initial twice, as a client whose answer was lost would.
            for _ in 0..2 {
                silent.send_to(&initial, addr).await.unwrap();
                sent += initial.len();
                let n = silent.recv(&mut buf).await.unwrap();
                got += n;
                assert_eq!(buf[0], 3, "a handshake answer, not a cookie");
                handshakes += 1;
            }
        }
        assert_eq!(handshakes, 2 * MAX_UNVALIDATED);
        assert!(3 * sent >= got, "sent {got} bytes for {sent}");
        let st = srv.stats();
        assert_eq!(
            (st.handshakes_accepted, st.retries_sent),
            (MAX_UNVALIDATED as u64, 0)
        );
        // Busy: the next client is asked for a cookie, then connects.
        let cli = client(cfg).await;
        let mut s = cli.connect(addr).await.unwrap();
        // One cookie per copy of the Initial that reached the server before the first
        // cookie reached the client (the copy follows 10 ms after the original).
        let cookies = srv.stats().retries_sent;
        assert!((1..=2).contains(&cookies), "{cookies} cookies");
        s.write_all(b"real").await.unwrap();
        s.shutdown().await.unwrap();
        // The first stream handed out is the real client's: none of the unproven ones.
        let mut mine = srv.accept().await.unwrap();
        assert_eq!(mine.peer_addr(), cli.local_addr().unwrap());
        let mut v = Vec::new();
        mine.read_to_end(&mut v).await.unwrap();
        assert_eq!(v, b"real");
    })
    .await
    .unwrap();
}

/// The review's attack: one genuine first Initial, recorded on the path, replayed from many
/// new source ports, each Retry answered with the same message and the fresh token. No
/// key is needed for that, only the ability to receive at one's own address. The copies
/// open no connection (before, each did, up to the idle timeout), the server sends them no
/// handshake answer, and it holds no state for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_first_message_replayed_from_new_addresses_opens_nothing() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let cfg = config(Some(Psk::generate()), "sack");
        let srv = Arc::new(server(cfg.clone()).await);
        let addr = srv.local_addr().unwrap();
        let (entry, _inject, mut tap) = tapping_proxy(addr).await;
        let s2 = srv.clone();
        let echo = tokio::spawn(async move {
            let mut s = s2.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
        });
        let cli = client(cfg).await;
        let mut s = cli.connect(entry).await.unwrap();
        s.write_all(b"genuine").await.unwrap();
        s.shutdown().await.unwrap();
        echo.await.unwrap();
        let recorded = loop {
            let d = tap.recv().await.unwrap();
            if let Some(tcpfec_net::envelope::Envelope::Initial { .. }) =
                tcpfec_net::envelope::parse(&d)
            {
                break d;
            }
        };
        assert_eq!(srv.stats().handshakes_accepted, 1);
        const COPIES: usize = 200;
        // All copies at once, each from its own port, as a flood would come.
        let copies = (0..COPIES).map(|_| {
            let recorded = recorded.clone();
            tokio::spawn(async move { replay_from_a_new_port(&recorded, addr).await })
        });
        let mut handshake_answers = 0;
        for c in copies.collect::<Vec<_>>() {
            handshake_answers += c.await.unwrap() as usize;
        }
        let st = srv.stats();
        assert_eq!(handshake_answers, 0, "copies drew handshake answers");
        assert_eq!(st.handshakes_accepted, 1, "copies opened connections");
        assert_eq!(st.initial_replayed, COPIES as u64, "{st:?}");
        drop(s);
        assert!(cli.wait_idle(Duration::from_secs(5)).await);
        assert!(
            srv.wait_idle(Duration::from_secs(5)).await,
            "the server holds connections for the copies"
        );
    })
    .await
    .unwrap();
}

/// A first Initial altered on the way (the cipher flag flipped) is refused as damaged, not
/// as a wrong key: the key check in front of Noise message 1 tells the two apart. One
/// under another key is still a wrong key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_handshake_is_reported_as_damaged_not_as_a_wrong_key() {
    use tcpfec_net::envelope::{parse, Envelope, RejectReason};
    tokio::time::timeout(Duration::from_secs(30), async {
        let key = Psk::generate();
        let srv = server(config(Some(key.clone()), "sack")).await;
        let addr = srv.local_addr().unwrap();
        let sock = UdpSocket::bind(any()).await.unwrap();
        let mut buf = vec![0u8; 2048];
        let mut reasons = Vec::new();
        let mut flipped = genuine_initial(&key, 1);
        flipped[2] ^= 2; // AES-GCM <-> ChaCha20-Poly1305
        for initial in [flipped, genuine_initial(&Psk::generate(), 2)] {
            sock.send_to(&initial, addr).await.unwrap();
            let n = sock.recv(&mut buf).await.unwrap();
            reasons.push(match parse(&buf[..n]) {
                Some(Envelope::Reject { reason, .. }) => Some(reason),
                _ => None,
            });
        }
        assert_eq!(
            reasons,
            [Some(RejectReason::Damaged), Some(RejectReason::BadKey)]
        );
        assert!(NetError::Damaged.to_string().contains("damaged or altered"));
    })
    .await
    .unwrap();
}

/// Sends `recorded` from a fresh socket and answers a Retry with the same message and the
/// fresh token; true if the server answered with a handshake.
async fn replay_from_a_new_port(recorded: &[u8], server: SocketAddr) -> bool {
    use tcpfec_net::envelope::{initial, parse, Envelope};
    let Some(Envelope::Initial {
        secure,
        cipher,
        pattern,
        payload,
        ..
    }) = parse(recorded)
    else {
        panic!("not an Initial")
    };
    let sock = UdpSocket::bind(any()).await.unwrap();
    let mut buf = vec![0u8; 2048];
    let wait = Duration::from_millis(300);
    sock.send_to(recorded, server).await.unwrap();
    let Ok(Ok(n)) = tokio::time::timeout(wait, sock.recv(&mut buf)).await else {
        return false;
    };
    match parse(&buf[..n]) {
        Some(Envelope::Handshake { .. }) => true,
        Some(Envelope::Retry { client_id, token }) => {
            let again = initial(secure, cipher, pattern, client_id, token, payload);
            sock.send_to(&again, server).await.unwrap();
            matches!(
                tokio::time::timeout(wait, sock.recv(&mut buf)).await,
                Ok(Ok(n)) if matches!(parse(&buf[..n]), Some(Envelope::Handshake { .. }))
            )
        }
        _ => false,
    }
}
