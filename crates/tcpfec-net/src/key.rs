//! Pre-shared keys: 32 random bytes stored as one line of hex.

use std::io::Write;
use std::path::Path;

/// Length of a pre-shared key in bytes (the Noise PSK size).
pub const KEY_LEN: usize = 32;

/// A pre-shared key.
#[derive(Clone, PartialEq, Eq)]
pub struct Psk(pub [u8; KEY_LEN]);

impl std::fmt::Debug for Psk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        write!(f, "Psk(..)")
    }
}

impl Psk {
    /// A fresh key from the operating system's random source.
    pub fn generate() -> Psk {
        let mut k = [0u8; KEY_LEN];
        getrandom::getrandom(&mut k).expect("OS random source");
        Psk(k)
    }

    /// Parses the hex form (surrounding whitespace ignored). Works on bytes, so any
    /// input, multibyte characters included, gives an error rather than a panic.
    pub fn from_hex(s: &str) -> Result<Psk, String> {
        let s = s.trim().as_bytes();
        if s.len() != KEY_LEN * 2 {
            return Err(format!(
                "a key is {} hex digits, this has {} bytes",
                KEY_LEN * 2,
                s.len()
            ));
        }
        let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        let mut k = [0u8; KEY_LEN];
        for (byte, pair) in k.iter_mut().zip(s.chunks_exact(2)) {
            match (digit(pair[0]), digit(pair[1])) {
                (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
                _ => return Err("a key contains only hex digits".to_string()),
            }
        }
        Ok(Psk(k))
    }

    /// The hex form.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads a key file written by [`Psk::write_new`]. Reads at most a few kilobytes, so
    /// a wrong path (a device, a huge file) fails fast instead of filling memory.
    pub fn read(path: &Path) -> Result<Psk, String> {
        let text = read_small_text(
            path,
            "key file",
            4096,
            "a key file is one line of hex digits",
        )?;
        Psk::from_hex(&text).map_err(|e| format!("key file {}: {e}", path.display()))
    }

    /// Writes a new key file readable only by its owner; refuses to overwrite.
    pub fn write_new(&self, path: &Path) -> Result<(), String> {
        write_new_private(path, &format!("{}\n", self.to_hex()))
    }
}

/// Reads a small text file (`what` names it in errors; `form` says what it should hold).
/// Reads at most `limit` bytes, so a wrong path (a device, a huge file) fails fast instead
/// of filling memory.
pub(crate) fn read_small_text(
    path: &Path,
    what: &str,
    limit: u64,
    form: &str,
) -> Result<String, String> {
    use std::io::Read;
    let cant = |e: std::io::Error| format!("cannot read {what} {}: {e}", path.display());
    let f = std::fs::File::open(path).map_err(cant)?;
    if !f.metadata().map_err(cant)?.is_file() {
        return Err(format!("{what} {}: not a regular file", path.display()));
    }
    let mut raw = Vec::new();
    f.take(limit + 1).read_to_end(&mut raw).map_err(cant)?;
    if raw.len() as u64 > limit {
        return Err(format!("{what} {}: too large ({form})", path.display()));
    }
    String::from_utf8(raw).map_err(|_| format!("{what} {}: not text ({form})", path.display()))
}

/// Creates `path` readable only by its owner and writes `text`; refuses to overwrite.
pub(crate) fn write_new_private(path: &Path, text: &str) -> Result<(), String> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!("{} exists; not overwriting a key", path.display())
        } else {
            format!("cannot create {}: {e}", path.display())
        }
    })?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_errors() {
        let k = Psk::generate();
        assert_eq!(Psk::from_hex(&format!(" {}\n", k.to_hex())).unwrap(), k);
        assert!(Psk::from_hex("abc").is_err());
        assert!(Psk::from_hex(&"zz".repeat(32)).is_err());
        assert!(Psk::from_hex(&"+1".repeat(32)).is_err()); // from_str_radix would take "+1"
                                                           // Found by the config fuzz target: 64 bytes, but a two-byte character at an odd
                                                           // offset (this panicked).
        assert!(Psk::from_hex(&format!("a{}b", "é".repeat(31))).is_err());
    }

    /// Key files with any content give an error, never a panic.
    #[test]
    fn odd_key_files_are_errors() {
        let dir = std::env::temp_dir().join(format!("tcpfec-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("k");
        let mut cases: Vec<Vec<u8>> = vec![
            "é".repeat(32).into_bytes(), // 64 bytes, a char boundary split by pairs
            format!("a{}", "é".repeat(31)).into_bytes(),
            format!("{}€", "0".repeat(61)).into_bytes(),
            vec![0xff; 64],
            vec![b'0'; 100_000],
            Vec::new(),
        ];
        cases.push([b"0".repeat(63), vec![0xc3]].concat());
        for bytes in cases {
            std::fs::write(&f, &bytes).unwrap();
            assert!(Psk::read(&f).is_err(), "{bytes:?}");
        }
        assert!(Psk::read(&dir).is_err()); // a directory
        assert!(Psk::read(Path::new("/dev/zero")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
