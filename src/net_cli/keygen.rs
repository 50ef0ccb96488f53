//! `tcpfec keygen`: a pre-shared key file, or a key pair for per-peer identities.

use clap::Args;
use std::path::PathBuf;
use tcpfec_net::Psk;

/// `tcpfec keygen`.
#[derive(Args)]
pub struct KeygenArgs {
    /// Where to write the key (refuses to overwrite; mode 0600). With --pair, the
    /// private key; the public key goes to FILE.pub.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// A key pair (X25519) instead of a pre-shared key: FILE stays on this machine
    /// (--identity FILE), FILE.pub goes to the peers (a server lists it in its
    /// --authorized-keys, a client pins it with --server-key).
    #[arg(long)]
    pair: bool,
    /// With --pair: the comment after the public key in FILE.pub [default: USER@HOST].
    #[arg(long, requires = "pair")]
    comment: Option<String>,
}

/// `tcpfec keygen`.
pub fn keygen(a: KeygenArgs) -> Result<(), String> {
    if a.pair {
        let comment = a.comment.clone().unwrap_or_else(default_comment);
        let pair = tcpfec_net::KeyPair::generate();
        let public = pair
            .write_new(&a.out, &comment)
            .map_err(|e| format!("--out: {e}"))?;
        eprintln!(
            "wrote a new key pair: {} (private, stays here) and {} (public: give it to the \
             peers)\npublic key: {} ({})",
            a.out.display(),
            public.display(),
            pair.public,
            pair.public.fingerprint()
        );
        return Ok(());
    }
    Psk::generate()
        .write_new(&a.out)
        .map_err(|e| format!("--out: {e}"))?;
    eprintln!(
        "wrote a new key to {}; copy it to the other machine over a safe channel",
        a.out.display()
    );
    Ok(())
}

/// `USER@HOST`, as ssh-keygen comments its keys.
fn default_comment() -> String {
    let user = std::env::var("USER").unwrap_or_else(|_| "tcpfec".into());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{user}@{host}")
}
