//! Streams over real UDP on loopback: bytes arrive intact, with and without encryption.

mod common;

use common::{data, Endpoint};
use std::time::Duration;
use tcpfec_net::crypto::Cipher;
use tcpfec_net::{EndpointConfig, Psk};
use tcpfec_proto::Scheme;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn transfer(key: Option<Psk>, scheme: &str, len: usize) {
    transfer_with(
        EndpointConfig::new(key, Scheme::parse(scheme).unwrap()),
        len,
    )
    .await
}

async fn transfer_with(cfg: EndpointConfig, len: usize) {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap(), cfg.clone(), true)
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let payload = data(len, 1);
    let expect = payload.clone();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        s.write_all(b"ok").await.unwrap();
        s.shutdown().await.unwrap();
        drop(s);
        server.wait_idle(Duration::from_secs(5)).await;
        got
    });
    let client = Endpoint::bind("127.0.0.1:0".parse().unwrap(), cfg, false)
        .await
        .unwrap();
    let mut s = client.connect(addr).await.unwrap();
    s.write_all(&payload).await.unwrap();
    s.shutdown().await.unwrap();
    let mut verdict = Vec::new();
    s.read_to_end(&mut verdict).await.unwrap();
    assert_eq!(verdict, b"ok");
    let got = srv.await.unwrap();
    assert!(got == expect, "received bytes differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_loopback_transfer() {
    tokio::time::timeout(Duration::from_secs(60), transfer(None, "sack", 20 << 20))
        .await
        .expect("in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encrypted_loopback_transfer_with_fec() {
    tokio::time::timeout(
        Duration::from_secs(60),
        transfer(Some(Psk::generate()), "anker-16-2", 20 << 20),
    )
    .await
    .expect("in time");
}

/// The client names its cipher and the server follows, whichever it is: both carry a
/// transfer (on any CPU: AES-GCM without AES instructions is slow, not wrong).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn either_cipher_carries_an_encrypted_transfer() {
    for cipher in [Cipher::ChaChaPoly, Cipher::AesGcm] {
        let mut cfg = EndpointConfig::new(Some(Psk::generate()), Scheme::parse("sack").unwrap());
        cfg.cipher = cipher;
        tokio::time::timeout(Duration::from_secs(60), transfer_with(cfg, 4 << 20))
            .await
            .expect("in time");
    }
}
