//! File transfer over one stream: for each file a header (name, size), the receiver's
//! go-ahead, the bytes, the BLAKE3 hash, and the receiver's verdict. The receiver writes
//! `DIR/.NAME.part`, checks the hash, and only then renames it to `DIR/NAME`, so a partial
//! file never looks complete.
//!
//! ```text
//! sender → receiver   "TFX1" | name_len u16 | name | size u64     (name_len 0: no more files)
//! receiver → sender   code u8 | msg_len u16 | msg                  (0 = go ahead)
//! sender → receiver   size bytes | blake3 (32 bytes)
//! receiver → sender   code u8 | msg_len u16 | msg                  (0 = stored)
//! ```
//!
//! Over a connection that moves whole blocks (FECTCP) the same bytes flow, but nothing
//! reaches the peer before the writer shuts its side down: the sender writes every file
//! and the end mark without waiting, shuts down, then reads the receiver's answers, which
//! the receiver's side sends as one block when it shuts down at the end mark (or when it
//! gives up on a refused file).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::fs;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAGIC: &[u8; 4] = b"TFX1";
const CHUNK: usize = 256 * 1024;

/// Receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Code {
    Ok = 0,
    Exists = 1,
    BadName = 2,
    Disk = 3,
    HashMismatch = 4,
}

/// One file done.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    /// The file's name (no directories).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Seconds from header to verdict.
    pub secs: f64,
}

/// Why a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// The connection failed (peer gone, reset, timeout…).
    Net(io::Error),
    /// A local file could not be read or written.
    Local {
        /// The file.
        path: PathBuf,
        /// The error.
        err: io::Error,
    },
    /// The receiver refused or could not store a file.
    Refused {
        /// The file's name.
        name: String,
        /// The receiver's reason.
        reason: String,
    },
    /// The received bytes do not match the sender's hash (not stored).
    HashMismatch(String),
    /// The peer broke the protocol.
    Protocol(String),
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransferError::Net(e) => match crate::error::net_error(e) {
                Some(n) => write!(f, "transfer interrupted: {n}"),
                None if e.kind() == io::ErrorKind::UnexpectedEof => {
                    write!(
                        f,
                        "transfer interrupted: the peer closed the connection early"
                    )
                }
                None => write!(f, "transfer interrupted: {e}"),
            },
            TransferError::Local { path, err } => write!(f, "{}: {err}", path.display()),
            TransferError::Refused { name, reason } => {
                write!(f, "the receiver refused {name}: {reason}")
            }
            TransferError::HashMismatch(n) => write!(
                f,
                "{n}: the received bytes do not match the sender's hash; the file was not stored"
            ),
            TransferError::Protocol(m) => write!(f, "protocol error: {m}"),
        }
    }
}

impl std::error::Error for TransferError {}

fn net(e: io::Error) -> TransferError {
    TransferError::Net(e)
}

async fn write_answer<S: AsyncWrite + Unpin>(s: &mut S, code: Code, msg: &str) -> io::Result<()> {
    let mut v = vec![code as u8];
    let m = &msg.as_bytes()[..msg.len().min(1000)];
    v.extend_from_slice(&(m.len() as u16).to_be_bytes());
    v.extend_from_slice(m);
    s.write_all(&v).await
}

async fn read_answer<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<(u8, String)> {
    let code = s.read_u8().await?;
    let len = s.read_u16().await? as usize;
    let mut m = vec![0u8; len];
    s.read_exact(&mut m).await?;
    Ok((code, String::from_utf8_lossy(&m).into_owned()))
}

/// Sends `files` one after the other; returns when the receiver has confirmed each.
/// `progress` counts payload bytes handed to the stream.
pub async fn send_files<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    files: &[PathBuf],
    progress: &AtomicU64,
    blocks: bool,
) -> Result<Vec<FileOutcome>, TransferError> {
    let mut done = Vec::new();
    let mut sizes = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    for path in files {
        let local = |err| TransferError::Local {
            path: path.clone(),
            err,
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| local(io::Error::other("not a file name in UTF-8")))?
            .to_string();
        let mut f = fs::File::open(path).await.map_err(local)?;
        let size = f.metadata().await.map_err(local)?.len();
        let start = Instant::now();
        let mut head = MAGIC.to_vec();
        head.extend_from_slice(&(name.len() as u16).to_be_bytes());
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(&size.to_be_bytes());
        s.write_all(&head).await.map_err(net)?;
        if !blocks {
            let (code, msg) = read_answer(s).await.map_err(net)?;
            if code != Code::Ok as u8 {
                return Err(TransferError::Refused { name, reason: msg });
            }
        }
        let mut hasher = blake3::Hasher::new();
        let mut left = size;
        while left > 0 {
            let want = (left as usize).min(CHUNK);
            let n = f.read(&mut buf[..want]).await.map_err(local)?;
            if n == 0 {
                return Err(local(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file shrank while being sent",
                )));
            }
            hasher.update(&buf[..n]);
            s.write_all(&buf[..n]).await.map_err(net)?;
            left -= n as u64;
            progress.fetch_add(n as u64, Ordering::Relaxed);
        }
        s.write_all(hasher.finalize().as_bytes())
            .await
            .map_err(net)?;
        if blocks {
            sizes.push((name, size, start));
            continue;
        }
        read_verdict(s, &name).await?;
        done.push(FileOutcome {
            name,
            bytes: size,
            secs: start.elapsed().as_secs_f64(),
        });
    }
    s.write_all(MAGIC).await.map_err(net)?;
    s.write_all(&0u16.to_be_bytes()).await.map_err(net)?;
    s.shutdown().await.map_err(net)?;
    // Block mode: the go-ahead and the verdict of every file come back together.
    for (name, size, start) in sizes {
        let (code, msg) = read_answer(s).await.map_err(net)?;
        if code != Code::Ok as u8 {
            return Err(TransferError::Refused { name, reason: msg });
        }
        read_verdict(s, &name).await?;
        done.push(FileOutcome {
            name,
            bytes: size,
            secs: start.elapsed().as_secs_f64(),
        });
    }
    Ok(done)
}

/// Reads the receiver's answer after a file's hash: stored, or why not.
async fn read_verdict<S: AsyncRead + Unpin>(s: &mut S, name: &str) -> Result<(), TransferError> {
    let (code, msg) = read_answer(s).await.map_err(net)?;
    match code {
        0 => Ok(()),
        4 => Err(TransferError::HashMismatch(name.to_string())),
        _ => Err(TransferError::Refused {
            name: name.to_string(),
            reason: msg,
        }),
    }
}

/// A name is stored only if it is one plain path component.
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n != "."
        && n != ".."
        && !n.contains(['/', '\\', '\0'])
        && Path::new(n).file_name().and_then(|x| x.to_str()) == Some(n)
}

/// Receives files into `dir` until the sender says it is done. `progress` counts payload
/// bytes received.
pub async fn receive_files<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    dir: &Path,
    force: bool,
    progress: &AtomicU64,
) -> Result<Vec<FileOutcome>, TransferError> {
    let mut done = Vec::new();
    loop {
        let mut magic = [0u8; 4];
        s.read_exact(&mut magic).await.map_err(net)?;
        if &magic != MAGIC {
            return Err(TransferError::Protocol("not a tcpfec file sender".into()));
        }
        let len = s.read_u16().await.map_err(net)? as usize;
        if len == 0 {
            s.shutdown().await.map_err(net)?;
            return Ok(done);
        }
        let mut name = vec![0u8; len];
        s.read_exact(&mut name).await.map_err(net)?;
        let size = s.read_u64().await.map_err(net)?;
        let name = String::from_utf8_lossy(&name).into_owned();
        if !valid_name(&name) {
            write_answer(s, Code::BadName, "not a plain file name")
                .await
                .map_err(net)?;
            return Err(TransferError::Refused {
                name,
                reason: "not a plain file name".into(),
            });
        }
        let dest = dir.join(&name);
        if !force && fs::try_exists(&dest).await.unwrap_or(false) {
            let why = format!("{} exists (use --force to overwrite)", dest.display());
            write_answer(s, Code::Exists, &why).await.map_err(net)?;
            return Err(TransferError::Refused { name, reason: why });
        }
        let part = dir.join(format!(".{name}.part"));
        let start = Instant::now();
        match receive_one(s, &part, size, progress).await {
            Ok(hash_ok) => {
                if !hash_ok {
                    let _ = fs::remove_file(&part).await;
                    write_answer(s, Code::HashMismatch, "hash mismatch")
                        .await
                        .map_err(net)?;
                    return Err(TransferError::HashMismatch(name));
                }
                if let Err(err) = fs::rename(&part, &dest).await {
                    let _ = fs::remove_file(&part).await;
                    let why = format!("cannot store {}: {err}", dest.display());
                    write_answer(s, Code::Disk, &why).await.map_err(net)?;
                    return Err(TransferError::Local { path: dest, err });
                }
                write_answer(s, Code::Ok, "").await.map_err(net)?;
                done.push(FileOutcome {
                    name,
                    bytes: size,
                    secs: start.elapsed().as_secs_f64(),
                });
            }
            Err(e) => {
                let _ = fs::remove_file(&part).await;
                if let TransferError::Local { path, err } = &e {
                    let why = format!("cannot write {}: {err}", path.display());
                    let _ = write_answer(s, Code::Disk, &why).await;
                }
                return Err(e);
            }
        }
    }
}

/// Writes one file's bytes to `part`; returns whether the trailing hash matched.
async fn receive_one<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    part: &Path,
    size: u64,
    progress: &AtomicU64,
) -> Result<bool, TransferError> {
    let local = |err| TransferError::Local {
        path: part.to_path_buf(),
        err,
    };
    let mut f = fs::File::create(part).await.map_err(local)?;
    // Go ahead only once the file could be created: a read-only or missing directory is
    // reported before any data moves.
    write_answer(s, Code::Ok, "").await.map_err(net)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let want = (left as usize).min(CHUNK);
        let n = s.read(&mut buf[..want]).await.map_err(net)?;
        if n == 0 {
            return Err(net(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the sender closed the connection in the middle of a file",
            )));
        }
        hasher.update(&buf[..n]);
        f.write_all(&buf[..n]).await.map_err(local)?;
        left -= n as u64;
        progress.fetch_add(n as u64, Ordering::Relaxed);
    }
    f.flush().await.map_err(local)?;
    f.sync_all().await.map_err(local)?;
    let mut theirs = [0u8; 32];
    s.read_exact(&mut theirs).await.map_err(net)?;
    Ok(hasher.finalize().as_bytes() == &theirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("a.txt"));
        assert!(valid_name(".hidden"));
        for bad in ["", ".", "..", "a/b", "../x", "/etc/passwd", "a\\b"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn files_over_a_duplex_pipe() {
        let dir = std::env::temp_dir().join(format!("tcpfec-xfer-{}", std::process::id()));
        let src = dir.join("src");
        let dst = dir.join("dst");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::create_dir_all(&dst).unwrap();
        let a = src.join("a.bin");
        let b = src.join("b.bin");
        std::fs::write(&a, vec![1u8; 300_000]).unwrap();
        std::fs::write(&b, b"").unwrap();
        let (mut x, mut y) = tokio::io::duplex(64 * 1024);
        let p1 = AtomicU64::new(0);
        let p2 = AtomicU64::new(0);
        let files = vec![a.clone(), b.clone()];
        let (sent, got) = tokio::join!(
            send_files(&mut x, &files, &p1, false),
            receive_files(&mut y, &dst, false, &p2)
        );
        assert_eq!(sent.unwrap().len(), 2);
        assert_eq!(got.unwrap().len(), 2);
        assert_eq!(
            std::fs::read(dst.join("a.bin")).unwrap(),
            vec![1u8; 300_000]
        );
        assert_eq!(p2.load(Ordering::Relaxed), 300_000);
        // Again without --force: refused, nothing overwritten, no .part left.
        let (mut x, mut y) = tokio::io::duplex(64 * 1024);
        let (sent, got) = tokio::join!(
            send_files(&mut x, &files[..1], &p1, false),
            receive_files(&mut y, &dst, false, &p2)
        );
        assert!(matches!(sent, Err(TransferError::Refused { .. })));
        assert!(got.is_err());
        assert!(!dst.join(".a.bin.part").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
