//! Sending files with the transfer API: a receiver endpoint that stores what arrives in a
//! directory, and a sender that sends two files to it, each verified by its BLAKE3 hash
//! before it is renamed into place. This is what `tcpfec send` and `tcpfec recv` do, in
//! one process on loopback. Run it with
//! `cargo run --release -p tcpfec-net --example send_file`.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use tcpfec_net::transfer::{receive_files, send_files, FileEvent};
use tcpfec_net::{Endpoint, EndpointConfig, Psk, DEFAULT_SCHEME};
use tcpfec_proto::Scheme;
use tokio::io::AsyncWriteExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two files to send, and the directory they arrive in.
    let work = std::env::temp_dir().join(format!("tcpfec-send-file-{}", std::process::id()));
    let (outbox, inbox) = (work.join("outbox"), work.join("inbox"));
    std::fs::create_dir_all(&outbox)?;
    std::fs::create_dir_all(&inbox)?;
    let files: Vec<PathBuf> = vec![outbox.join("small.txt"), outbox.join("large.bin")];
    std::fs::write(&files[0], b"a few bytes\n")?;
    std::fs::write(
        &files[1],
        (0..8_000_000u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>(),
    )?;

    let config = EndpointConfig::new(Some(Psk::generate()), Scheme::parse(DEFAULT_SCHEME)?);
    let server = Endpoint::server("127.0.0.1:0".parse()?, config.clone(), 1).await?;
    let addr = server.local_addr()?;

    // The receiver: one connection, its files into `inbox`.
    let dir = inbox.clone();
    let receiver = tokio::spawn(async move {
        let mut stream = server.accept().await.ok_or("the endpoint closed")?;
        let received = AtomicU64::new(0);
        let mut on_event = |e: FileEvent| {
            if let FileEvent::Stored(f) = e {
                println!("stored   {} ({} bytes)", f.name, f.bytes);
            }
        };
        let stored = receive_files(&mut stream, &dir, false, &received, &mut on_event).await?;
        stream.shutdown().await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(stored.len())
    });

    // The sender: connect, send both, and hear of each file as the receiver confirms it.
    let client = Endpoint::client(config).await?;
    let mut stream = client.connect(addr).await?;
    let sent = AtomicU64::new(0);
    let mut on_done = |f: &tcpfec_net::transfer::FileOutcome| {
        println!("confirmed {} in {:.3} s", f.name, f.secs);
    };
    let outcomes = send_files(&mut stream, &files, &sent, false, &mut on_done).await?;
    stream.shutdown().await?;
    let stored = receiver.await?.map_err(|e| e.to_string())?;
    assert_eq!((outcomes.len(), stored), (2, 2));
    assert_eq!(
        std::fs::read(inbox.join("large.bin"))?,
        std::fs::read(&files[1])?
    );
    println!("counters: {:?}", stream.stats());
    std::fs::remove_dir_all(&work)?;
    Ok(())
}
