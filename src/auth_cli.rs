//! Key flags of the commands that talk: pre-shared keys, key pairs, the server's list of
//! accepted peers and the client's pinned servers, and the reload of that list on SIGHUP.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use tcpfec_net::config::IdentityConfig;
use tcpfec_net::{
    AuthorizedKeys, Endpoint, EndpointConfig, KeyPair, KnownServers, NetError, Psk, PublicKey,
};

/// Key and encryption flags shared by every command that talks.
#[derive(Args, Clone)]
pub struct Security {
    /// Pre-shared key file (make one with `tcpfec keygen --out FILE`; copy it to the peer).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// This side's private key (make a pair with `tcpfec keygen --pair --out NAME`; give
    /// the other side NAME.pub). With a pre-shared key as well, both must be right.
    #[arg(long, value_name = "FILE")]
    identity: Option<PathBuf>,
    /// No encryption and no authentication: anyone on the path can read and forge
    /// packets. For research on trusted networks only.
    #[arg(long)]
    insecure: bool,
}

/// The keys a command was given.
pub struct Keys {
    /// The pre-shared key.
    pub psk: Option<Psk>,
    /// This side's key pair.
    pub identity: Option<KeyPair>,
}

impl Security {
    /// The keys given, checked: at least one kind, or `--insecure` alone.
    pub(crate) fn keys(&self) -> Result<Keys, String> {
        if self.insecure {
            if self.key_file.is_some() || self.identity.is_some() {
                return Err("--insecure excludes --key-file and --identity".into());
            }
            eprintln!(
                "WARNING: --insecure: NO ENCRYPTION, NO AUTHENTICATION. Anyone on the path \
                 can read, change and inject data. Use --key-file or --identity outside \
                 research setups."
            );
            return Ok(Keys {
                psk: None,
                identity: None,
            });
        }
        let psk = self
            .key_file
            .as_deref()
            .map(Psk::read)
            .transpose()
            .map_err(|e| format!("--key-file: {e}"))?;
        let identity = self
            .identity
            .as_deref()
            .map(KeyPair::read)
            .transpose()
            .map_err(|e| format!("--identity: {e}"))?;
        if psk.is_none() && identity.is_none() {
            return Err(
                "--key-file FILE (a pre-shared key: `tcpfec keygen --out FILE`) or --identity \
                 FILE (a key pair: `tcpfec keygen --pair --out NAME`) is required, or \
                 --insecure for an unencrypted research run"
                    .into(),
            );
        }
        Ok(Keys { psk, identity })
    }

    /// The pre-shared key alone (for the commands that take no key pairs).
    pub(crate) fn key(&self) -> Result<Option<Psk>, String> {
        if self.identity.is_some() {
            return Err("--identity: this command takes a pre-shared key only (--key-file)".into());
        }
        Ok(self.keys()?.psk)
    }
}

/// Which peers a listening side accepts.
#[derive(Args, Clone, Default)]
pub struct ServerAuth {
    /// Accept only the key pairs listed here, one per line: `PUBLIC-KEY NAME` (the first
    /// field of the peer's .pub file, and the name its connections are logged under);
    /// `#` starts a comment. Reread on SIGHUP: a removed peer's connections are closed.
    /// Needs --identity. Without it, any client key is accepted (named by fingerprint).
    #[arg(long, value_name = "FILE")]
    authorized_keys: Option<PathBuf>,
}

impl ServerAuth {
    /// The key-pair settings of a server with `keys`, and the list to reload on SIGHUP.
    pub(crate) fn identity_config(&self, keys: &Keys) -> Result<Option<IdentityConfig>, String> {
        let Some(own) = keys.identity.clone() else {
            return match self.authorized_keys {
                Some(_) => Err("--authorized-keys needs --identity: the server proves its own key pair to the peers it lists".into()),
                None => Ok(None),
            };
        };
        let authorized = self
            .authorized_keys
            .as_deref()
            .map(|p| AuthorizedKeys::read(p).map_err(|e| format!("--authorized-keys: {e}")))
            .transpose()?;
        if authorized.is_none() && keys.psk.is_none() {
            eprintln!(
                "warning: --identity without --authorized-keys or --key-file accepts any client \
                 that knows this server's public key"
            );
        }
        Ok(Some(IdentityConfig {
            own,
            server_key: None,
            authorized: authorized.map(|a| Arc::new(RwLock::new(a))),
        }))
    }

    /// Rereads the list on every SIGHUP and hands it to `ep`, which closes the revoked
    /// peers' connections; `log` tells the operator. Nothing to do without a list.
    pub(crate) fn reload_on_sighup(
        &self,
        ep: Arc<Endpoint>,
        log: impl Fn(Result<(usize, usize), String>) + Send + 'static,
    ) -> Result<Option<tokio::task::JoinHandle<()>>, String> {
        let Some(path) = self.authorized_keys.clone() else {
            return Ok(None);
        };
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup =
            signal(SignalKind::hangup()).map_err(|e| format!("cannot catch SIGHUP: {e}"))?;
        Ok(Some(tokio::spawn(async move {
            while hup.recv().await.is_some() {
                // A bad file keeps the list in force: a typo must not lock everyone out.
                let r = AuthorizedKeys::read(&path).and_then(|keys| {
                    let n = keys.len();
                    ep.reload_authorized_keys(keys).map(|closed| (n, closed))
                });
                log(r);
            }
        })))
    }
}

/// How a connecting side knows its server.
#[derive(Args, Clone, Default)]
pub struct ClientAuth {
    /// The server's public key (the first field of its .pub file, or the file's path):
    /// a server holding another key is refused before any data is sent. Without it, the
    /// key pinned for the address in the known servers file is used.
    #[arg(long, value_name = "KEY|FILE")]
    server_key: Option<String>,
    /// The known servers file, `HOST:PORT PUBLIC-KEY` per line [default:
    /// $XDG_CONFIG_HOME/tcpfec/known_servers, else ~/.config/tcpfec/known_servers].
    #[arg(long, value_name = "FILE")]
    known_servers: Option<PathBuf>,
    /// If no key is pinned for the server's address, take the key it offers on this
    /// first connection and pin it in the known servers file (unauthenticated the first
    /// time: an attacker on the path could offer its own).
    #[arg(long)]
    trust_on_first_use: bool,
}

impl ClientAuth {
    /// The key-pair settings of a client with `keys` connecting to `server` (typed as
    /// `text`, the known servers file's key): the server's key from `--server-key`, the
    /// file, or (trust on first use) learnt from the server and pinned.
    pub(crate) async fn identity_config(
        &self,
        keys: &Keys,
        cfg: &EndpointConfig,
        text: &str,
        server: SocketAddr,
    ) -> Result<Option<IdentityConfig>, String> {
        let pinned = match &self.server_key {
            Some(k) => Some(PublicKey::from_arg(k).map_err(|e| format!("--server-key: {e}"))?),
            None => {
                let file = match &self.known_servers {
                    Some(p) => Some(p.clone()),
                    None => KnownServers::default_path(),
                };
                let known = file
                    .map(|f| KnownServers::load(&f))
                    .transpose()
                    .map_err(|e| format!("known servers: {e}"))?;
                match (known.as_ref().and_then(|k| k.lookup(text)), known) {
                    (Some(k), _) => Some(k),
                    (None, Some(mut known)) if self.trust_on_first_use => {
                        let k = learn_server_key(cfg, server).await?;
                        known.remember(text, k)?;
                        eprintln!(
                            "trusting {text} on first use: its key {k} ({}) is now pinned in {}",
                            k.fingerprint(),
                            known.path().display()
                        );
                        Some(k)
                    }
                    _ => None,
                }
            }
        };
        if pinned.is_none() && keys.identity.is_some() {
            return Err(format!(
                "the key of {text} is unknown: give --server-key (the first field of the server's \
                 .pub file), or --trust-on-first-use to pin the key it offers now"
            ));
        }
        Ok(pinned.map(|server_key| IdentityConfig {
            // With only the server's key, a fresh pair per run: the server is still
            // authenticated, the client is anonymous to it.
            own: keys.identity.clone().unwrap_or_else(KeyPair::generate),
            server_key: Some(server_key),
            authorized: None,
        }))
    }
}

/// Asks the server at `server` for its public key: a handshake encrypted to a key no
/// server holds, which it answers with its own.
async fn learn_server_key(cfg: &EndpointConfig, server: SocketAddr) -> Result<PublicKey, String> {
    let mut probe = cfg.clone();
    probe.identity = Some(IdentityConfig {
        own: KeyPair::generate(),
        server_key: Some(KeyPair::generate().public),
        authorized: None,
    });
    let ep = Endpoint::client(probe)
        .await
        .map_err(|e| format!("cannot open a UDP socket: {e}"))?;
    match ep.connect(server).await {
        Err(NetError::ServerKeyMismatch { offered }) => Ok(offered),
        Err(NetError::NoServerIdentity) => Err(format!(
            "{server} has no key pair to pin (it runs with a pre-shared key only): drop --trust-on-first-use"
        )),
        Err(e) => Err(e.to_string()),
        Ok(_) => Err("the server accepted a key nobody holds".into()),
    }
}
