//! File transfer over one stream: for each file a header (name, size), the bytes, a
//! status byte and the BLAKE3 hash; the receiver answers the header (go ahead or a
//! refusal) and then the bytes (its verdict). The sender does not wait for the first
//! answer: the bytes follow the header at once, and a refusal stops them.
//!
//! ```text
//! sender → receiver   "TFX2" | name_len u16 | name | size u64     (name_len 0: no more files)
//! receiver → sender   code u8 | msg_len u16 | msg                  (0 = go ahead)
//! sender → receiver   size bytes | status u8 | blake3 (32 bytes)   (status 1: file changed)
//! receiver → sender   code u8 | msg_len u16 | msg                  (0 = stored)
//! ```
//!
//! The receiver writes each file to its own temporary file ([`crate::store`]), syncs it,
//! hashes the bytes back from disk, and only if that hash is the sender's renames the file
//! into place, never over a file that appeared meanwhile. The sender checks, before the
//! hash goes out, that the file did not change while it was read (size, modification
//! time, and for files up to [`REHASH_MAX`] a second hash); a changed file is sent with
//! status 1 and the receiver discards it. Names and texts from the peer are printed only
//! through [`printable`]; texts sent to the peer never name a local path.
//!
//! Over a connection that moves whole blocks (FECTCP) the same bytes flow, but nothing
//! reaches the peer before the writer shuts its side down: the sender writes every file
//! and the end mark without waiting, shuts down, then reads the receiver's answers, which
//! the receiver's side sends as one block when it shuts down at the end mark (or when it
//! gives up on a refused file).

use crate::printable::printable;
use crate::store::{self, CommitError, TempFile};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};
use tokio::fs;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAGIC: &[u8; 4] = b"TFX2";
const CHUNK: usize = 256 * 1024;
/// Files up to this size are hashed a second time before their hash is sent, to catch a
/// change that kept size and modification time; larger ones rely on those two.
pub const REHASH_MAX: u64 = 256 << 20;

/// Status byte before a file's hash.
const STATUS_AS_READ: u8 = 0;
const STATUS_CHANGED: u8 = 1;

/// Receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Code {
    Ok = 0,
    Exists = 1,
    BadName = 2,
    Disk = 3,
    HashMismatch = 4,
    Changed = 5,
}

/// One file done.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    /// The file's name (no directories), as the sender gave it; print it with
    /// [`printable`].
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Seconds from header to verdict.
    pub secs: f64,
}

/// What the receiver reports while it works, as it happens.
#[derive(Debug, Clone, Copy)]
pub enum FileEvent<'a> {
    /// A file was accepted and its bytes are about to arrive.
    Receiving {
        /// Its name (print it with [`printable`]).
        name: &'a str,
        /// Its announced size.
        bytes: u64,
    },
    /// A file is in place, its stored bytes verified.
    Stored(&'a FileOutcome),
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
    /// The file changed while it was being sent (not stored).
    Changed(PathBuf),
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
                write!(
                    f,
                    "the receiver refused {}: {}",
                    printable(name),
                    printable(reason)
                )
            }
            TransferError::HashMismatch(n) => write!(
                f,
                "{}: the received bytes do not match the sender's hash; the file was not stored",
                printable(n)
            ),
            TransferError::Changed(p) => write!(
                f,
                "{}: the file changed while it was being sent; the receiver discarded it (send it again once it is stable)",
                p.display()
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
    let mut end = msg.len().min(1000);
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    let m = &msg.as_bytes()[..end];
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

/// What identifies one version of a file: if any of it differs after the file was read,
/// the bytes sent may mix two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    len: u64,
    modified: Option<SystemTime>,
    dev: u64,
    ino: u64,
}

impl Version {
    fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Version {
            len: m.len(),
            modified: m.modified().ok(),
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// True if the open file `f` still is the version `before`, whose bytes hash to `sent`.
async fn unchanged(f: &fs::File, before: Version, sent: &blake3::Hash) -> io::Result<bool> {
    if Version::of(&f.metadata().await?) != before {
        return Ok(false);
    }
    if before.len > REHASH_MAX {
        return Ok(true);
    }
    let mut again = f.try_clone().await?.into_std().await;
    let h = tokio::task::spawn_blocking(move || store::hash_file(&mut again))
        .await
        .map_err(io::Error::other)??;
    Ok(h == *sent)
}

/// Sends `files` one after the other; returns when the receiver has confirmed each.
/// `progress` counts payload bytes handed to the stream; `on_done` is called for each
/// file as soon as the receiver confirms it stored it, so a later failure does not hide
/// the files that did arrive.
pub async fn send_files<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    files: &[PathBuf],
    progress: &AtomicU64,
    blocks: bool,
    on_done: &mut (dyn FnMut(&FileOutcome) + Send),
) -> Result<Vec<FileOutcome>, TransferError> {
    let mut done = Vec::new();
    let mut sizes = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    let mut ended = false;
    for (i, path) in files.iter().enumerate() {
        let last = i + 1 == files.len();
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
        let version = Version::of(&f.metadata().await.map_err(local)?);
        let size = version.len;
        let start = Instant::now();
        let mut head = MAGIC.to_vec();
        head.extend_from_slice(&(name.len() as u16).to_be_bytes());
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(&size.to_be_bytes());
        s.write_all(&head).await.map_err(net)?;
        if blocks {
            send_body(s, &mut f, path, version, &mut buf, progress).await?;
            sizes.push((path, name, size, start));
            continue;
        }
        // The end mark goes out right behind the last file's hash, not a round trip
        // after its verdict: the receiver's verdict and its end then arrive together.
        let answer = send_body_watching(s, &mut f, path, version, &mut buf, progress, last).await?;
        ended = last && answer.0 == Code::Ok as u8;
        let o = confirm(s, answer, path, name, size, start).await?;
        on_done(&o);
        done.push(o);
    }
    if !ended {
        end_mark(s).await?;
    }
    // Block mode: the go-ahead and the verdict of every file come back together.
    for (path, name, size, start) in sizes {
        let answer = read_answer(s).await.map_err(net)?;
        let o = confirm(s, answer, path, name, size, start).await?;
        on_done(&o);
        done.push(o);
    }
    Ok(done)
}

/// Writes the end mark (a header with an empty name) and ends this side of the stream.
async fn end_mark<S: AsyncWrite + Unpin>(s: &mut S) -> Result<(), TransferError> {
    s.write_all(MAGIC).await.map_err(net)?;
    s.write_all(&0u16.to_be_bytes()).await.map_err(net)?;
    s.shutdown().await.map_err(net)
}

/// Sends one file's bytes (`send_body`) right after its header, and the end mark after
/// them if `then_end`, and returns the receiver's answer to the header, read while the
/// bytes flow: a refusal stops the file within a
/// round trip, so the bytes the receiver discards are bounded by what one round trip and
/// the send buffer hold, not by the file's size.
async fn send_body_watching<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    f: &mut fs::File,
    path: &Path,
    version: Version,
    buf: &mut [u8],
    progress: &AtomicU64,
    then_end: bool,
) -> Result<(u8, String), TransferError> {
    let (mut rd, mut wr) = tokio::io::split(s);
    let body = async {
        send_body(&mut wr, f, path, version, buf, progress).await?;
        if then_end {
            end_mark(&mut wr).await?;
        }
        Ok::<(), TransferError>(())
    };
    let answer = read_answer(&mut rd);
    tokio::pin!(body, answer);
    tokio::select! {
        sent = &mut body => {
            sent?;
            answer.await.map_err(net)
        }
        a = &mut answer => {
            let a = a.map_err(net)?;
            if a.0 == Code::Ok as u8 {
                body.await?;
            }
            Ok(a)
        }
    }
}

/// The receiver's two answers for one file: `answer` to its header (go ahead, or why
/// not), then the verdict on its bytes, read here.
async fn confirm<S: AsyncRead + Unpin>(
    s: &mut S,
    answer: (u8, String),
    path: &Path,
    name: String,
    size: u64,
    start: Instant,
) -> Result<FileOutcome, TransferError> {
    let (code, msg) = answer;
    if code != Code::Ok as u8 {
        return Err(TransferError::Refused { name, reason: msg });
    }
    read_verdict(s, path, &name).await?;
    Ok(FileOutcome {
        name,
        bytes: size,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// Writes one file's bytes, its status byte and its hash, checking that the file did not
/// change while it was read.
async fn send_body<W: AsyncWrite + Unpin>(
    s: &mut W,
    f: &mut fs::File,
    path: &Path,
    version: Version,
    buf: &mut [u8],
    progress: &AtomicU64,
) -> Result<(), TransferError> {
    let local = |err| TransferError::Local {
        path: path.to_path_buf(),
        err,
    };
    let mut hasher = blake3::Hasher::new();
    let mut left = version.len;
    while left > 0 {
        let want = (left as usize).min(buf.len());
        let n = f.read(&mut buf[..want]).await.map_err(local)?;
        if n == 0 {
            // Shrunk: the promised bytes cannot be sent. Dropping the connection
            // mid-file makes the receiver discard what it has.
            return Err(TransferError::Changed(path.to_path_buf()));
        }
        hasher.update(&buf[..n]);
        s.write_all(&buf[..n]).await.map_err(net)?;
        left -= n as u64;
        progress.fetch_add(n as u64, Ordering::Relaxed);
    }
    let hash = hasher.finalize();
    let same = unchanged(f, version, &hash).await.map_err(local)?;
    let status = if same { STATUS_AS_READ } else { STATUS_CHANGED };
    s.write_all(&[status]).await.map_err(net)?;
    s.write_all(hash.as_bytes()).await.map_err(net)?;
    Ok(())
}

/// Reads the receiver's answer after a file's hash: stored, or why not.
async fn read_verdict<S: AsyncRead + Unpin>(
    s: &mut S,
    path: &Path,
    name: &str,
) -> Result<(), TransferError> {
    let (code, msg) = read_answer(s).await.map_err(net)?;
    match code {
        0 => Ok(()),
        4 => Err(TransferError::HashMismatch(name.to_string())),
        5 => Err(TransferError::Changed(path.to_path_buf())),
        _ => Err(TransferError::Refused {
            name: name.to_string(),
            reason: msg,
        }),
    }
}

/// A name is stored only if it is one plain path component without control characters.
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n != "."
        && n != ".."
        && !n.contains(['/', '\\', '\0'])
        && !n.chars().any(char::is_control)
        && Path::new(n).file_name().and_then(|x| x.to_str()) == Some(n)
}

/// Receives files into `dir` until the sender says it is done. `progress` counts payload
/// bytes received; `on_event` hears of each file as it starts and the moment it is in
/// place, so a later failure on the same connection does not hide it.
pub async fn receive_files<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    dir: &Path,
    force: bool,
    progress: &AtomicU64,
    on_event: &mut (dyn FnMut(FileEvent) + Send),
) -> Result<Vec<FileOutcome>, TransferError> {
    let mut done = Vec::new();
    loop {
        let mut magic = [0u8; 4];
        s.read_exact(&mut magic).await.map_err(net)?;
        if &magic != MAGIC {
            return Err(TransferError::Protocol(
                "not a tcpfec file sender of this version".into(),
            ));
        }
        let len = s.read_u16().await.map_err(net)? as usize;
        if len == 0 {
            s.shutdown().await.map_err(net)?;
            return Ok(done);
        }
        let mut raw = vec![0u8; len];
        s.read_exact(&mut raw).await.map_err(net)?;
        let size = s.read_u64().await.map_err(net)?;
        let name = String::from_utf8_lossy(&raw).into_owned();
        if std::str::from_utf8(&raw).is_err() || !valid_name(&name) {
            let why = "not a plain file name (one UTF-8 path component, no control characters)";
            write_answer(s, Code::BadName, why).await.map_err(net)?;
            return Err(TransferError::Refused {
                name,
                reason: why.into(),
            });
        }
        let dest = dir.join(&name);
        if let Err(r) = store::check_target(&dest, force) {
            let why = r.to_string();
            write_answer(s, Code::Exists, &why).await.map_err(net)?;
            return Err(TransferError::Refused { name, reason: why });
        }
        let start = Instant::now();
        let (temp, file) = match TempFile::create(dir, &name) {
            Ok(t) => t,
            Err(err) => {
                // The reason, not the path: the sender need not learn where files go.
                let why = format!("cannot create a file in the receiver's directory: {err}");
                write_answer(s, Code::Disk, &why).await.map_err(net)?;
                return Err(TransferError::Local { path: dest, err });
            }
        };
        write_answer(s, Code::Ok, "").await.map_err(net)?;
        on_event(FileEvent::Receiving {
            name: &name,
            bytes: size,
        });
        let verdict = receive_one(s, &temp, fs::File::from_std(file), size, progress).await;
        let failure = match verdict {
            Err(e) => {
                if let TransferError::Local { err, .. } = &e {
                    let why = format!("cannot write the file on the receiver: {err}");
                    let _ = write_answer(s, Code::Disk, &why).await;
                }
                return Err(e);
            }
            Ok(Received::Changed) => Some((
                Code::Changed,
                "the sender's file changed while it was sent".to_string(),
                TransferError::Changed(PathBuf::from(&name)),
            )),
            Ok(Received::Mismatch) => Some((
                Code::HashMismatch,
                "hash mismatch".to_string(),
                TransferError::HashMismatch(name.clone()),
            )),
            Ok(Received::Verified) => match temp.commit(&dest, force) {
                Ok(()) => None,
                Err(CommitError::Refused(r)) => Some((
                    Code::Exists,
                    r.to_string(),
                    TransferError::Refused {
                        name: name.clone(),
                        reason: r.to_string(),
                    },
                )),
                Err(CommitError::Io(err)) => Some((
                    Code::Disk,
                    format!("cannot store the file on the receiver: {err}"),
                    TransferError::Local { path: dest, err },
                )),
            },
        };
        if let Some((code, why, err)) = failure {
            write_answer(s, code, &why).await.map_err(net)?;
            return Err(err);
        }
        write_answer(s, Code::Ok, "").await.map_err(net)?;
        let o = FileOutcome {
            name,
            bytes: size,
            secs: start.elapsed().as_secs_f64(),
        };
        on_event(FileEvent::Stored(&o));
        done.push(o);
    }
}

/// What became of one file's bytes.
enum Received {
    /// The bytes on disk, read back after sync, hash to the sender's hash.
    Verified,
    /// They do not (corrupted, or not what the sender sent).
    Mismatch,
    /// The sender says its file changed while it was read.
    Changed,
}

/// Writes one file's bytes to the temporary file, syncs it, and checks the hash of what
/// is on disk against the sender's.
async fn receive_one<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    temp: &TempFile,
    mut f: fs::File,
    size: u64,
    progress: &AtomicU64,
) -> Result<Received, TransferError> {
    let local = |err| TransferError::Local {
        path: temp.path().to_path_buf(),
        err,
    };
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
        f.write_all(&buf[..n]).await.map_err(local)?;
        left -= n as u64;
        progress.fetch_add(n as u64, Ordering::Relaxed);
    }
    let status = s.read_u8().await.map_err(net)?;
    let mut theirs = [0u8; 32];
    s.read_exact(&mut theirs).await.map_err(net)?;
    if status == STATUS_CHANGED {
        return Ok(Received::Changed);
    }
    if status != STATUS_AS_READ {
        return Err(TransferError::Protocol(format!(
            "unknown file status {status}"
        )));
    }
    f.flush().await.map_err(local)?;
    f.sync_all().await.map_err(local)?;
    let mut std_f = f.into_std().await;
    let on_disk = tokio::task::spawn_blocking(move || store::hash_file(&mut std_f))
        .await
        .map_err(|e| local(io::Error::other(e)))?
        .map_err(local)?;
    Ok(if on_disk.as_bytes() == &theirs {
        Received::Verified
    } else {
        Received::Mismatch
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tcpfec-xfer-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join("dst")).unwrap();
        d
    }

    /// Names of the files left in `dir` (temporary files included).
    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn pattern(seed: u8, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
            .collect()
    }

    async fn pair(
        files: &[PathBuf],
        dst: &Path,
        force: bool,
    ) -> (
        Result<Vec<FileOutcome>, TransferError>,
        Result<Vec<FileOutcome>, TransferError>,
        Vec<String>,
        Vec<String>,
    ) {
        let (mut x, mut y) = tokio::io::duplex(64 * 1024);
        let (p1, p2) = (AtomicU64::new(0), AtomicU64::new(0));
        let (mut sent_log, mut stored_log) = (Vec::new(), Vec::new());
        let mut log_sent = |o: &FileOutcome| sent_log.push(o.name.clone());
        let mut log_stored = |e: FileEvent| {
            if let FileEvent::Stored(o) = e {
                stored_log.push(o.name.clone())
            }
        };
        let (sent, got) = tokio::join!(
            send_files(&mut x, files, &p1, false, &mut log_sent),
            receive_files(&mut y, dst, force, &p2, &mut log_stored)
        );
        (sent, got, sent_log, stored_log)
    }

    #[test]
    fn names() {
        assert!(valid_name("a.txt"));
        assert!(valid_name(".hidden"));
        assert!(valid_name("x\u{202e}txt.exe")); // stored, but printed escaped
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../x",
            "/etc/passwd",
            "a\\b",
            "a\nb",
            "\x1b[2J",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn files_over_a_duplex_pipe() {
        let dir = scratch("pipe");
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        let a = src.join("a.bin");
        let b = src.join("b.bin");
        std::fs::write(&a, vec![1u8; 300_000]).unwrap();
        std::fs::write(&b, b"").unwrap();
        let files = vec![a.clone(), b.clone()];
        let (sent, got, _, _) = pair(&files, &dst, false).await;
        assert_eq!(sent.unwrap().len(), 2);
        assert_eq!(got.unwrap().len(), 2);
        assert_eq!(
            std::fs::read(dst.join("a.bin")).unwrap(),
            vec![1u8; 300_000]
        );
        // Again without --force: refused, nothing overwritten, no temporary file left,
        // and the reason names no local path.
        let (sent, got, _, _) = pair(&files[..1], &dst, false).await;
        match sent {
            Err(TransferError::Refused { reason, .. }) => {
                assert!(reason.contains("exists"), "{reason}");
                assert!(!reason.contains(dst.to_str().unwrap()), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(got.is_err());
        assert_eq!(listing(&dst), ["a.bin", "b.bin"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Two connections deliver different files of the same name into one directory at
    /// the same time: one is stored intact, the other refused, never a mix of the two.
    #[tokio::test]
    async fn racing_senders_of_one_name_never_store_a_mix() {
        for (round, (la, lb)) in [(3_000_000, 3_000_000), (2_000_000, 3_500_000), (1, 900_000)]
            .into_iter()
            .enumerate()
        {
            let dir = scratch(&format!("race{round}"));
            let (src, dst) = (dir.join("src"), dir.join("dst"));
            std::fs::create_dir_all(src.join("a")).unwrap();
            std::fs::create_dir_all(src.join("b")).unwrap();
            let (ba, bb) = (pattern(0x11, la), pattern(0x77, lb));
            std::fs::write(src.join("a/same.bin"), &ba).unwrap();
            std::fs::write(src.join("b/same.bin"), &bb).unwrap();
            let fa = vec![src.join("a/same.bin")];
            let fb = vec![src.join("b/same.bin")];
            let ((sa, ra, _, _), (sb, rb, _, _)) =
                tokio::join!(pair(&fa, &dst, false), pair(&fb, &dst, false));
            let stored = std::fs::read(dst.join("same.bin")).unwrap();
            assert!(
                stored == ba || stored == bb,
                "round {round}: a mix was stored"
            );
            let oks = [sa.is_ok(), sb.is_ok()];
            assert_eq!(oks.iter().filter(|&&x| x).count(), 1, "round {round}");
            assert_eq!(ra.is_ok(), sa.is_ok());
            assert_eq!(rb.is_ok(), sb.is_ok());
            let winner = if sa.is_ok() { &ba } else { &bb };
            assert!(stored == *winner, "round {round}: stored the loser's bytes");
            let loser = if sa.is_ok() { sb } else { sa };
            match loser {
                Err(TransferError::Refused { reason, .. }) => {
                    assert!(reason.contains("exists"), "{reason}")
                }
                other => panic!("round {round}: {other:?}"),
            }
            assert_eq!(listing(&dst), ["same.bin"], "round {round}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[tokio::test]
    async fn a_symlink_in_the_directory_is_never_followed() {
        let dir = scratch("link");
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        let outside = dir.join("outside.txt");
        std::fs::write(&outside, b"precious").unwrap();
        std::os::unix::fs::symlink(&outside, dst.join("f.txt")).unwrap();
        std::fs::write(src.join("f.txt"), b"attacker bytes").unwrap();
        for force in [false, true] {
            let (sent, got, _, stored) = pair(&[src.join("f.txt")], &dst, force).await;
            match sent {
                Err(TransferError::Refused { reason, .. }) => {
                    assert!(reason.contains("symbolic link"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
            assert!(got.is_err() && stored.is_empty());
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(dst.join("f.txt"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(listing(&dst), ["f.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every file stored before a later one fails is reported on both sides.
    #[tokio::test]
    async fn files_stored_before_a_failure_are_reported() {
        let dir = scratch("audit");
        let (src, dst) = (dir.join("src"), dir.join("dst"));
        for n in ["one", "two", "three"] {
            std::fs::write(src.join(n), n.as_bytes()).unwrap();
        }
        std::fs::write(dst.join("three"), b"already here").unwrap();
        let files: Vec<PathBuf> = ["one", "two", "three"]
            .iter()
            .map(|n| src.join(n))
            .collect();
        let (sent, got, sent_log, stored_log) = pair(&files, &dst, false).await;
        assert!(sent.is_err() && got.is_err());
        assert_eq!(sent_log, ["one", "two"]);
        assert_eq!(stored_log, ["one", "two"]);
        assert_eq!(std::fs::read(dst.join("three")).unwrap(), b"already here");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A stream that runs `act` once, after `after` bytes have been written through it.
    struct Tamper<S> {
        inner: S,
        written: u64,
        after: u64,
        act: Option<Box<dyn FnOnce() + Send>>,
    }

    impl<S: AsyncRead + Unpin> AsyncRead for Tamper<S> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl<S: AsyncWrite + Unpin> AsyncWrite for Tamper<S> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let r = Pin::new(&mut self.inner).poll_write(cx, buf);
            if let Poll::Ready(Ok(n)) = r {
                self.written += n as u64;
                if self.written >= self.after {
                    if let Some(act) = self.act.take() {
                        act();
                    }
                }
            }
            r
        }
        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    /// A file rewritten in place while it is sent is refused on both sides, including
    /// when the writer puts the modification time back (only the second hash sees it).
    #[tokio::test]
    async fn a_file_that_changes_while_sent_is_never_stored() {
        for keep_mtime in [false, true] {
            let dir = scratch(&format!("changing{keep_mtime}"));
            let (src, dst) = (dir.join("src"), dir.join("dst"));
            let path = src.join("log.bin");
            std::fs::write(&path, pattern(1, 2_000_000)).unwrap();
            let p = path.clone();
            let act = Box::new(move || {
                use std::io::{Seek, Write};
                let before = std::fs::metadata(&p).unwrap().modified().unwrap();
                let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                f.seek(io::SeekFrom::Start(10)).unwrap();
                f.write_all(b"NEW VERSION").unwrap();
                if keep_mtime {
                    f.set_modified(before).unwrap();
                }
            });
            let (x, mut y) = tokio::io::duplex(64 * 1024);
            let mut x = Tamper {
                inner: x,
                written: 0,
                after: 1_000_000,
                act: Some(act),
            };
            let (p1, p2) = (AtomicU64::new(0), AtomicU64::new(0));
            let (mut quiet1, mut quiet2) = (|_: &FileOutcome| {}, |_: FileEvent| {});
            let (sent, got) = tokio::join!(
                send_files(&mut x, std::slice::from_ref(&path), &p1, false, &mut quiet1),
                receive_files(&mut y, &dst, false, &p2, &mut quiet2)
            );
            assert!(
                matches!(sent, Err(TransferError::Changed(_))),
                "keep_mtime {keep_mtime}: {sent:?}"
            );
            assert!(matches!(got, Err(TransferError::Changed(_))), "{got:?}");
            assert!(listing(&dst).is_empty(), "{:?}", listing(&dst));
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn names_from_the_peer_are_printed_escaped() {
        let e = TransferError::Refused {
            name: "x\u{202e}gpj.exe".into(),
            reason: "no\nfake line \x1b[31m".into(),
        };
        let text = e.to_string();
        assert!(!text.contains(['\n', '\x1b', '\u{202e}']), "{text}");
        assert!(text.contains("\\u{202e}") && text.contains("\\n") && text.contains("\\x1b"));
    }
}
