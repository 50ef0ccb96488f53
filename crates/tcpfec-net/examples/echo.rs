//! The library in a few lines: a server and a client endpoint on loopback, one
//! connection, a message and its echo. Run it with
//! `cargo run --release -p tcpfec-net --example echo`.
//!
//! An [`Endpoint`] owns a UDP socket; `connect` and `accept` give [`tcpfec_net::Stream`]s,
//! which are tokio `AsyncRead + AsyncWrite`. Both sides hold the same pre-shared key here;
//! `EndpointConfig::identity` takes key pairs instead (docs/guide/identities.md).

use tcpfec_net::{Endpoint, EndpointConfig, Psk, DEFAULT_SCHEME};
use tcpfec_proto::Scheme;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let key = Psk::generate();
    let scheme = Scheme::parse(DEFAULT_SCHEME).expect("built-in scheme");
    let config = EndpointConfig::new(Some(key), scheme);

    let server = Endpoint::server("127.0.0.1:0".parse().unwrap(), config.clone(), 1).await?;
    let addr = server.local_addr()?;
    tokio::spawn(async move {
        // Echo every connection's bytes back, then end the stream.
        while let Some(mut stream) = server.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                stream.read_to_end(&mut buf).await?;
                stream.write_all(&buf).await?;
                stream.shutdown().await
            });
        }
    });

    let client = Endpoint::client(config).await?;
    let mut stream = client.connect(addr).await.map_err(std::io::Error::from)?;
    stream.write_all(b"hello over tcpfec").await?;
    stream.shutdown().await?;
    let mut echo = Vec::new();
    stream.read_to_end(&mut echo).await?;
    println!("{}", String::from_utf8_lossy(&echo));
    println!("counters: {:?}", stream.stats());
    Ok(())
}
