//! Storing received files safely in one directory.
//!
//! Every incoming file is written to its own temporary file, created exclusively
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`) under a random name, so two connections sending the same
//! name never share bytes. Only once the bytes on disk have been synced and hashed is the
//! temporary file renamed to its final name, and without `--force` that rename never
//! replaces a file that appeared meanwhile (`renameat2(RENAME_NOREPLACE)`, or where the
//! file system lacks it, `link` + `unlink`, which also fails on an existing name). A name
//! that is a symbolic link, a directory, a FIFO or any other non-regular file, or a
//! regular file with other hard links, is never written through or replaced, even with
//! `--force`: the file is refused instead. Nothing outside the directory is touched.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a name cannot be stored (said to the sender, so it names no local path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A regular file of that name exists and `--force` was not given.
    Exists,
    /// The name is a symbolic link, directory, FIFO, socket or device.
    NotRegular(&'static str),
    /// The name is a regular file with other hard links (overwriting it would change
    /// a file elsewhere).
    HardLinked,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Exists => write!(f, "a file of that name exists (use --force to overwrite)"),
            Refusal::NotRegular(kind) => {
                write!(
                    f,
                    "that name is a {kind} on the receiver; it is never replaced"
                )
            }
            Refusal::HardLinked => write!(
                f,
                "that name is a file with other hard links on the receiver; it is never replaced"
            ),
        }
    }
}

/// What kind of non-regular file a metadata describes.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// Whether `path` may become (or be replaced by) a received file. Never follows a link.
pub fn check_target(path: &Path, force: bool) -> Result<(), Refusal> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(()), // absent (or unreadable: the final rename will say)
    };
    if !m.file_type().is_file() {
        return Err(Refusal::NotRegular(kind_of(&m)));
    }
    if m.nlink() > 1 {
        return Err(Refusal::HardLinked);
    }
    if force {
        Ok(())
    } else {
        Err(Refusal::Exists)
    }
}

/// A temporary file being received; removed when dropped unless committed.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    /// Creates a new temporary file in `dir` for a file called `name`: `.NAME.RANDOM.part`,
    /// exclusively and never through a link.
    pub fn create(dir: &Path, name: &str) -> io::Result<(TempFile, File)> {
        // Keep the temporary name well under NAME_MAX (255 bytes) whatever `name` is.
        let mut short = name;
        while short.len() > 120 {
            let mut cut = 120.min(short.len() - 1);
            while !short.is_char_boundary(cut) {
                cut -= 1;
            }
            short = &short[..cut];
        }
        loop {
            let mut r = [0u8; 8];
            getrandom::getrandom(&mut r).map_err(io::Error::other)?;
            let tag: String = r.iter().map(|b| format!("{b:02x}")).collect();
            let path = dir.join(format!(".{short}.{tag}.part"));
            match OpenOptions::new()
                .write(true)
                .read(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(f) => {
                    let t = TempFile {
                        path,
                        committed: false,
                    };
                    return Ok((t, f));
                }
                // Another file took this random name: draw again.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the temporary file to `dest`. Without `force` an existing `dest` is never
    /// replaced (the race with another writer is decided by the file system, atomically);
    /// with `force` only a plain regular file with no other links is.
    pub fn commit(mut self, dest: &Path, force: bool) -> Result<(), CommitError> {
        check_target(dest, force).map_err(CommitError::Refused)?;
        let r = if force {
            std::fs::rename(&self.path, dest)
        } else {
            rename_noreplace(&self.path, dest)
        };
        match r {
            Ok(()) => {
                self.committed = true;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Something appeared at `dest` after the check: say what it is.
                Err(CommitError::Refused(
                    check_target(dest, false).err().unwrap_or(Refusal::Exists),
                ))
            }
            Err(e) => Err(CommitError::Io(e)),
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Why [`TempFile::commit`] did not store the file.
#[derive(Debug)]
pub enum CommitError {
    /// The destination name may not be written (see [`Refusal`]).
    Refused(Refusal),
    /// The file system failed.
    Io(io::Error),
}

/// `rename(from, to)` that fails with `AlreadyExists` instead of replacing `to`.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let f = CString::new(from.as_os_str().as_bytes()).map_err(io::Error::other)?;
        let t = CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them as given.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        // EINVAL / ENOSYS: this file system or kernel has no RENAME_NOREPLACE; fall back.
        if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(e);
        }
    }
    // link() never replaces an existing name; then drop the temporary name.
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// BLAKE3 of what `file` holds, read back from the start (after it was synced), so a
/// "verified" verdict is about the stored bytes, not the bytes as they went by.
/// Large chunks are hashed on all cores: a verification runs once the bytes are in, when
/// the network path is idle, and a large file's verdict waits for it.
pub fn hash_file(file: &mut File) -> io::Result<blake3::Hash> {
    use std::io::Seek;
    file.seek(io::SeekFrom::Start(0))?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = read_full(file, &mut buf)?;
        if n == 0 {
            return Ok(h.finalize());
        }
        h.update_rayon(&buf[..n]);
    }
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tcpfec-store-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> TempFile {
        use std::io::Write;
        let (t, mut f) = TempFile::create(dir, name).unwrap();
        f.write_all(bytes).unwrap();
        t
    }

    #[test]
    fn hash_file_reads_from_the_start_across_chunks() {
        use std::io::Write;
        let d = scratch("hash");
        // Two full 8 MiB chunks and a short one, with content that differs per chunk.
        let bytes: Vec<u8> = (0..(16 << 20) + 12_345u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let path = d.join("f");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        f.write_all(&bytes).unwrap();
        // The cursor is at the end: the hash must still cover the whole file.
        assert_eq!(hash_file(&mut f).unwrap(), blake3::hash(&bytes));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn two_temporaries_for_one_name_never_share_a_file() {
        let d = scratch("two");
        let a = write_temp(&d, "x", b"aaaa");
        let b = write_temp(&d, "x", b"bb");
        assert_ne!(a.path(), b.path());
        a.commit(&d.join("x"), false).unwrap();
        // The second may not replace the first: refused, first intact, no temporary left.
        let e = b.commit(&d.join("x"), false).unwrap_err();
        assert!(matches!(e, CommitError::Refused(Refusal::Exists)), "{e:?}");
        assert_eq!(std::fs::read(d.join("x")).unwrap(), b"aaaa");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn links_and_special_files_are_never_replaced_even_with_force() {
        let d = scratch("special");
        let outside = scratch("special-outside").join("victim");
        std::fs::write(&outside, b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("link")).unwrap();
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        std::fs::create_dir(d.join("dir")).unwrap();
        std::fs::write(d.join("hard"), b"h").unwrap();
        std::fs::hard_link(d.join("hard"), d.join("hard2")).unwrap();
        let fifo = std::ffi::CString::new(d.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for (name, want) in [
            ("link", Refusal::NotRegular("symbolic link")),
            ("dangling", Refusal::NotRegular("symbolic link")),
            ("dir", Refusal::NotRegular("directory")),
            ("fifo", Refusal::NotRegular("FIFO")),
            ("hard", Refusal::HardLinked),
        ] {
            for force in [false, true] {
                assert_eq!(
                    check_target(&d.join(name), force),
                    Err(want.clone()),
                    "{name}"
                );
                let t = write_temp(&d, name, b"evil");
                match t.commit(&d.join(name), force) {
                    Err(CommitError::Refused(r)) => assert_eq!(r, want, "{name}"),
                    other => panic!("{name} force={force}: {other:?}"),
                }
            }
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert!(!d.join("nowhere").exists());
        // A temporary name that is already a link is never opened through it.
        assert!(std::fs::read_dir(&d).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".part")));
        std::fs::remove_dir_all(&d).unwrap();
        std::fs::remove_dir_all(outside.parent().unwrap()).unwrap();
    }

    #[test]
    fn force_replaces_a_plain_file_and_drop_removes_the_temporary() {
        let d = scratch("force");
        std::fs::write(d.join("f"), b"old").unwrap();
        let t = write_temp(&d, "f", b"new");
        t.commit(&d.join("f"), true).unwrap();
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"new");
        let t = write_temp(&d, "g", b"partial");
        let p = t.path().to_path_buf();
        assert!(p.exists());
        drop(t);
        assert!(!p.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn long_and_multibyte_names_get_a_short_temporary_name() {
        let d = scratch("long");
        let name = "é".repeat(127); // 254 bytes
        let (t, _f) = TempFile::create(&d, &name).unwrap();
        assert!(t.path().file_name().unwrap().len() < 160);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
