//! Key pairs on real sockets: a listed client is accepted and named, an unlisted one is
//! refused with nothing kept, a client pinned to another key stops before any data, a
//! reload of the authorized keys closes only the revoked peer's transfer, and the
//! pre-shared key still works beside key pairs.

mod common;

use common::{client, config, data, server};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tcpfec_net::config::IdentityConfig;
use tcpfec_net::control::CloseCode;
use tcpfec_net::error::net_error;
use tcpfec_net::{AuthorizedKeys, Endpoint, EndpointConfig, KeyPair, NetError, Psk, PublicKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server with key pair `own` accepting the `(key, name)` pairs listed.
async fn listing_server(
    own: &KeyPair,
    psk: Option<Psk>,
    listed: &[(&KeyPair, &str)],
) -> (Endpoint, Arc<RwLock<AuthorizedKeys>>) {
    let list = Arc::new(RwLock::new(authorized(listed)));
    let mut cfg = config(psk, "sack");
    cfg.identity = Some(IdentityConfig {
        own: own.clone(),
        server_key: None,
        authorized: Some(list.clone()),
    });
    (server(cfg).await, list)
}

fn authorized(listed: &[(&KeyPair, &str)]) -> AuthorizedKeys {
    let text: String = listed
        .iter()
        .map(|(k, name)| format!("{} {name}\n", k.public))
        .collect();
    AuthorizedKeys::parse(&text, "test").unwrap()
}

/// A client proving `own` and pinning `server_key`.
fn identity_client(own: &KeyPair, server_key: PublicKey, psk: Option<Psk>) -> EndpointConfig {
    let mut cfg = config(psk, "sack");
    cfg.identity = Some(IdentityConfig {
        own: own.clone(),
        server_key: Some(server_key),
        authorized: None,
    });
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_key_is_accepted_and_named_and_an_unlisted_one_leaves_nothing_behind() {
    let (srv_key, alice, mallory) = (
        KeyPair::generate(),
        KeyPair::generate(),
        KeyPair::generate(),
    );
    let (srv, _) = listing_server(&srv_key, None, &[(&alice, "alice")]).await;
    let addr = srv.local_addr().unwrap();

    let m = client(identity_client(&mallory, srv_key.public, None)).await;
    let e = m.connect(addr).await.err().unwrap();
    assert_eq!(e, NetError::UnknownPeer);
    assert!(e.to_string().contains("not in its authorized keys"), "{e}");
    let st = srv.stats();
    assert_eq!((st.unknown_peer, st.handshakes_accepted), (1, 0));
    assert_eq!(srv.connection_count(), 0, "no state for a refused key");

    let a = client(identity_client(&alice, srv_key.public, None)).await;
    let mut s = a.connect(addr).await.unwrap();
    let payload = data(200_000, 3);
    s.write_all(&payload).await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = srv.accept().await.unwrap();
    assert_eq!(got.peer_name().as_deref(), Some("alice"));
    assert_eq!(got.peer_key(), Some(alice.public));
    let mut back = Vec::new();
    got.read_to_end(&mut back).await.unwrap();
    assert!(back == payload, "the listed peer's bytes arrive intact");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_pinned_to_another_key_stops_before_sending_anything() {
    let (srv_key, alice, impostor) = (
        KeyPair::generate(),
        KeyPair::generate(),
        KeyPair::generate(),
    );
    let (srv, _) = listing_server(&impostor, None, &[(&alice, "alice")]).await;
    let a = client(identity_client(&alice, srv_key.public, None)).await;
    let e = a.connect(srv.local_addr().unwrap()).await.err().unwrap();
    // The impostor names its own key; nothing of the client's was readable to it.
    assert_eq!(
        e,
        NetError::ServerKeyMismatch {
            offered: impostor.public
        }
    );
    assert_eq!(srv.stats().handshakes_accepted, 0);
    assert_eq!(srv.connection_count(), 0);
    let out = a.stats().datagrams_out;
    assert!(
        (1..=2).contains(&out),
        "the Initial (and its copy if the Reject came later), no data: {out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_closes_only_the_revoked_peers_live_transfer() {
    let (srv_key, alice, bob) = (
        KeyPair::generate(),
        KeyPair::generate(),
        KeyPair::generate(),
    );
    let (srv, _) = listing_server(&srv_key, None, &[(&alice, "alice"), (&bob, "bob")]).await;
    let srv = Arc::new(srv);
    let addr = srv.local_addr().unwrap();
    let (ca, cb) = (
        client(identity_client(&alice, srv_key.public, None)).await,
        client(identity_client(&bob, srv_key.public, None)).await,
    );
    let mut sa = ca.connect(addr).await.unwrap();
    let mut sb = cb.connect(addr).await.unwrap();
    // Both write a first part; the server reads it from each.
    sa.write_all(b"alice 1").await.unwrap();
    sb.write_all(b"bob 1").await.unwrap();
    let mut by_name = std::collections::HashMap::new();
    for _ in 0..2 {
        let mut s = srv.accept().await.unwrap();
        let mut first = vec![0u8; 5];
        s.read_exact(&mut first).await.unwrap();
        by_name.insert(s.peer_name().unwrap(), s);
    }
    let closed = srv
        .reload_authorized_keys(authorized(&[(&alice, "alice")]))
        .unwrap();
    assert_eq!(closed, 1);
    // Bob learns why; his connection is gone.
    let mut buf = [0u8; 16];
    let err = tokio::time::timeout(Duration::from_secs(5), sb.read(&mut buf))
        .await
        .expect("bob is told at once")
        .expect_err("an error, not the end of the stream");
    match net_error(&err) {
        Some(NetError::PeerClosed { code, .. }) => assert_eq!(*code, CloseCode::Revoked),
        other => panic!("bob got {other:?}: {err}"),
    }
    // Alice's transfer goes on to its end.
    let rest = data(300_000, 5);
    sa.write_all(&rest).await.unwrap();
    sa.shutdown().await.unwrap();
    let mut s = by_name.remove("alice").unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    assert!(
        got.ends_with(&rest) && got.len() == 2 + rest.len(),
        "alice's bytes all arrive"
    );
    assert_eq!(srv.stats().revoked, 1);
    // And bob cannot come back.
    let cb2 = client(identity_client(&bob, srv_key.public, None)).await;
    assert_eq!(cb2.connect(addr).await.err(), Some(NetError::UnknownPeer));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_pairs_and_a_pre_shared_key_together_need_both_and_a_list_refuses_psk_alone() {
    let (srv_key, alice) = (KeyPair::generate(), KeyPair::generate());
    let psk = Psk::generate();
    let (srv, _) = listing_server(&srv_key, Some(psk.clone()), &[(&alice, "alice")]).await;
    let addr = srv.local_addr().unwrap();
    let both = client(identity_client(&alice, srv_key.public, Some(psk.clone()))).await;
    let mut s = both.connect(addr).await.unwrap();
    s.write_all(b"x").await.unwrap();
    assert_eq!(
        srv.accept().await.unwrap().peer_name().as_deref(),
        Some("alice")
    );
    let wrong_psk = client(identity_client(
        &alice,
        srv_key.public,
        Some(Psk::generate()),
    ))
    .await;
    assert_eq!(
        wrong_psk.connect(addr).await.err(),
        Some(NetError::WrongKey)
    );
    let no_psk = client(identity_client(&alice, srv_key.public, None)).await;
    assert_eq!(no_psk.connect(addr).await.err(), Some(NetError::WrongKey));
    // The pre-shared key alone does not pass a server that lists its peers.
    let psk_only = client(config(Some(psk), "sack")).await;
    assert_eq!(
        psk_only.connect(addr).await.err(),
        Some(NetError::IdentityRequired)
    );
    // A server with a pre-shared key only cannot take key pairs.
    let plain_srv = server(config(Some(Psk::generate()), "sack")).await;
    let e = client(identity_client(&alice, srv_key.public, None))
        .await
        .connect(plain_srv.local_addr().unwrap())
        .await
        .err();
    assert_eq!(e, Some(NetError::NoServerIdentity));
}
