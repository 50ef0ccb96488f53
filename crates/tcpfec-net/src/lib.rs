//! tcpfec-net: the tcpfec engine on real UDP sockets.
//!
//! An [`Endpoint`] owns one UDP socket and multiplexes connections by connection id; each
//! connection is a [`Stream`] (`AsyncRead` + `AsyncWrite`). Connections open with a
//! stateless cookie round and a Noise handshake keyed by a pre-shared key; every data
//! packet is sealed with AEAD under an explicit packet number and checked against a replay
//! window. On top: file transfer ([`transfer`]), port forwarding ([`tunnel`]) and an
//! impairment relay ([`relay`]). `docs/reference/wire.md` describes the formats.
//!
//! ```
//! use tcpfec_net::{Endpoint, EndpointConfig, Psk};
//! use tcpfec_proto::Scheme;
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
//! rt.block_on(async {
//!     let config = EndpointConfig::new(Some(Psk::generate()), Scheme::parse("auto")?);
//!     let server = Endpoint::server("127.0.0.1:0".parse()?, config.clone(), 1).await?;
//!     let addr = server.local_addr()?;
//!     tokio::spawn(async move {
//!         let mut stream = server.accept().await.unwrap();
//!         let mut text = String::new();
//!         stream.read_to_string(&mut text).await.unwrap();
//!         assert_eq!(text, "hello");
//!     });
//!     let client = Endpoint::client(config).await?;
//!     let mut stream = client.connect(addr).await?;
//!     stream.write_all(b"hello").await?;
//!     stream.shutdown().await?;
//!     Ok(())
//! })
//! # }
//! ```

#![warn(missing_docs)]

// The library's API is the re-exports below, `transfer`, `tunnel`, `relay`, `perf`,
// `identity`, `path_cache`, `link` and `emu`. The modules marked `doc(hidden)` are pub
// only for this workspace (the `tcpfec` binary, the fuzz targets): the wire envelope,
// the handshake's pieces, the clock and pacer, and may change without notice.

#[doc(hidden)]
pub mod clock;
pub mod config;
mod conn;
#[doc(hidden)]
pub mod control;
#[doc(hidden)]
pub mod cookie;
#[doc(hidden)]
pub mod crypto;
#[cfg(target_os = "linux")]
pub mod emu;
pub mod endpoint;
#[doc(hidden)]
pub mod envelope;
pub mod error;
#[doc(hidden)]
pub mod first_message;
#[doc(hidden)]
pub mod gro;
mod gso;
pub mod identity;
pub mod key;
pub mod link;
mod memory;
#[doc(hidden)]
pub mod pacer;
#[doc(hidden)]
pub mod params;
pub mod path_cache;
pub mod perf;
pub mod printable;
pub mod relay;
#[doc(hidden)]
pub mod replay;
mod shard;
mod shared;
mod sockopt;
pub mod stats;
#[doc(hidden)]
pub mod store;
pub mod stream;
pub mod transfer;
pub mod tunnel;

pub use control::CloseCode;
pub use endpoint::{Endpoint, EndpointConfig, RetryPolicy, DEFAULT_MSS, MAX_UNVALIDATED};
pub use error::NetError;
pub use identity::{AuthorizedKeys, KeyPair, KnownServers, PublicKey};
pub use key::Psk;
pub use stats::EndpointStats;
pub use stream::Stream;

/// The scheme `send` and `tunnel` use when the user names none: `auto`, Reed-Solomon
/// blocks sized from the loss the receiver measures over BBR v3, recovered losses hidden
/// from congestion control (docs/design/auto.md has how it works and what it achieves).
pub const DEFAULT_SCHEME: &str = "auto";

/// The FEC scheme with the most goodput at 1 % random loss in our measurements (less
/// redundancy than the default, less robust at 2 % and above); `bench net` measures it too.
pub const PEAK_SCHEME: &str = "anker-16-3-cubic";
