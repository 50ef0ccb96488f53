//! Per-peer identities: X25519 key pairs, the list of peers a server accepts
//! (`authorized_keys`) and the servers a client has pinned (`known_servers`).
//!
//! File formats (docs/reference/keys.md):
//! * private key (`NAME`, mode 0600): `tcpfec-private-key BASE64` on one line;
//! * public key (`NAME.pub`): `BASE64 COMMENT` on one line; the first field is what the
//!   other files list;
//! * `authorized_keys`: one peer per line, `PUBLIC-KEY NAME`; `#` starts a comment;
//! * `known_servers`: one server per line, `HOST:PORT PUBLIC-KEY`.

use crate::key::{read_small_text, write_new_private};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Bytes of an X25519 key.
pub const KEY_LEN: usize = 32;
/// The first field of a private key file.
const PRIVATE_TAG: &str = "tcpfec-private-key";
/// Largest `authorized_keys` or `known_servers` file read (a million lines or so).
const LIST_LIMIT: u64 = 64 << 20;
/// Longest peer name.
pub const MAX_NAME: usize = 64;

/// A peer's public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; KEY_LEN]);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

impl std::fmt::Display for PublicKey {
    /// The base64 form, as `.pub` files and `authorized_keys` hold it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&BASE64.encode(self.0))
    }
}

impl PublicKey {
    /// Parses the base64 form (the first field of a `.pub` file).
    pub fn parse(s: &str) -> Result<PublicKey, String> {
        let s = s.trim();
        let bytes = BASE64
            .decode(s)
            .map_err(|_| format!("'{}' is not a base64 public key", printable(s)))?;
        let key: [u8; KEY_LEN] = bytes.try_into().map_err(|b: Vec<u8>| {
            format!("a public key is {KEY_LEN} bytes, this one {}", b.len())
        })?;
        Ok(PublicKey(key))
    }

    /// A short name for logs when the key has no name: `key:` and 8 hex digits.
    pub fn fingerprint(&self) -> String {
        let h = blake3::hash(&self.0);
        let hex: String = h.as_bytes()[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("key:{hex}")
    }

    /// Reads a `.pub` file (or any file whose first field is a public key).
    pub fn read(path: &Path) -> Result<PublicKey, String> {
        let text = read_small_text(path, "public key file", 4096, "one line: KEY COMMENT")?;
        let first = text.split_whitespace().next().unwrap_or("");
        PublicKey::parse(first).map_err(|e| format!("public key file {}: {e}", path.display()))
    }

    /// The key given on a command line: the key itself, or the path of a `.pub` file.
    pub fn from_arg(arg: &str) -> Result<PublicKey, String> {
        PublicKey::parse(arg).or_else(|e| {
            let p = Path::new(arg);
            if p.exists() {
                PublicKey::read(p)
            } else {
                Err(format!("{e}, nor a file"))
            }
        })
    }
}

/// At most 40 characters of `s`, control characters replaced (input echoed in errors).
fn printable(s: &str) -> String {
    s.chars()
        .take(40)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// This side's key pair.
#[derive(Clone)]
pub struct KeyPair {
    /// The secret half.
    pub private: [u8; KEY_LEN],
    /// The public half, which peers list.
    pub public: PublicKey,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        write!(f, "KeyPair({})", self.public.fingerprint())
    }
}

impl KeyPair {
    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> KeyPair {
        let mut private = [0u8; KEY_LEN];
        getrandom::getrandom(&mut private).expect("OS random source");
        KeyPair::from_private(private)
    }

    /// The pair whose secret half is `private`.
    pub fn from_private(private: [u8; KEY_LEN]) -> KeyPair {
        let public = x25519_public(&private);
        KeyPair {
            private,
            public: PublicKey(public),
        }
    }

    /// Reads a private key file written by [`KeyPair::write_new`].
    pub fn read(path: &Path) -> Result<KeyPair, String> {
        let form = "one line: tcpfec-private-key BASE64";
        let text = read_small_text(path, "identity file", 4096, form)?;
        let bad = |why: &str| format!("identity file {}: {why}", path.display());
        let mut fields = text.split_whitespace();
        match (fields.next(), fields.next(), fields.next()) {
            (Some(PRIVATE_TAG), Some(b64), None) => {
                let bytes = BASE64
                    .decode(b64)
                    .map_err(|_| bad("the key is not base64"))?;
                let private: [u8; KEY_LEN] = bytes
                    .try_into()
                    .map_err(|_| bad("the key is not 32 bytes"))?;
                Ok(KeyPair::from_private(private))
            }
            (Some(first), None, None) if first.len() == 2 * KEY_LEN => Err(bad(
                "this looks like a pre-shared key file (give it with --key-file); \
                 make a key pair with `tcpfec keygen --pair --out NAME`",
            )),
            (Some(first), ..) if first.ends_with(".pub") || text.starts_with("ssh-") => {
                Err(bad("not a tcpfec private key"))
            }
            _ => Err(bad(&format!("not a private key ({form})"))),
        }
    }

    /// Writes `path` (the private key, mode 0600) and `path.pub` (the public key and
    /// `comment`); refuses to overwrite either.
    pub fn write_new(&self, path: &Path, comment: &str) -> Result<PathBuf, String> {
        let public = public_path(path);
        if public.exists() {
            return Err(format!(
                "{} exists; not overwriting a key",
                public.display()
            ));
        }
        let private = format!("{PRIVATE_TAG} {}\n", BASE64.encode(self.private));
        write_new_private(path, &private)?;
        let line = format!("{} {}\n", self.public, comment.trim());
        std::fs::write(&public, line)
            .map_err(|e| format!("cannot write {}: {e}", public.display()))?;
        Ok(public)
    }
}

/// `NAME.pub` for a private key file `NAME`.
pub fn public_path(private: &Path) -> PathBuf {
    let mut s = private.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// The X25519 public key of `private` (the base point times the clamped scalar), through
/// the same Noise library that runs the handshake.
fn x25519_public(private: &[u8; KEY_LEN]) -> [u8; KEY_LEN] {
    use snow::resolvers::{CryptoResolver, DefaultResolver};
    let mut dh = DefaultResolver
        .resolve_dh(&snow::params::DHChoice::Curve25519)
        .expect("X25519 is built in");
    dh.set(private);
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(dh.pubkey());
    out
}

/// Whether `name` may name a peer: 1 to [`MAX_NAME`] letters, digits, `.`, `_`, `-`, `@`,
/// not starting with `.` (a name becomes a directory under `recv --out-per-peer`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b))
}

/// The two-field lines of a key list (`authorized_keys`, `known_servers`): `#` starts a
/// comment, blank lines are skipped. Yields each line's label for errors (`ORIGIN line
/// N`) and its two fields, or an error saying which two were `expected`.
fn pairs<'a>(
    text: &'a str,
    origin: &'a str,
    expected: &'a str,
) -> impl Iterator<Item = Result<(String, &'a str, &'a str), String>> + 'a {
    text.lines().enumerate().filter_map(move |(i, line)| {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            return None;
        }
        let at = format!("{origin} line {}", i + 1);
        let mut f = line.split_whitespace();
        Some(match (f.next(), f.next(), f.next()) {
            (Some(a), Some(b), None) => Ok((at, a, b)),
            _ => Err(format!("{at}: expected {expected}")),
        })
    })
}

/// The peers a server accepts, by public key, with their names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizedKeys {
    names: HashMap<PublicKey, String>,
}

impl AuthorizedKeys {
    /// Parses the text of an `authorized_keys` file; `origin` names it in errors, which
    /// give the line number.
    pub fn parse(text: &str, origin: &str) -> Result<AuthorizedKeys, String> {
        let mut names = HashMap::new();
        for entry in pairs(text, origin, "PUBLIC-KEY NAME") {
            let (at, key, name) = entry?;
            let key = PublicKey::parse(key).map_err(|e| format!("{at}: {e}"))?;
            if !valid_name(name) {
                return Err(format!(
                    "{at}: '{}' is not a peer name (letters, digits, . _ - @, at most {MAX_NAME}, \
                     not starting with .)",
                    printable(name)
                ));
            }
            if let Some(old) = names.insert(key, name.to_string()) {
                return Err(format!("{at}: the key is listed already, as {old}"));
            }
        }
        Ok(AuthorizedKeys { names })
    }

    /// Reads an `authorized_keys` file.
    pub fn read(path: &Path) -> Result<AuthorizedKeys, String> {
        let text = read_small_text(
            path,
            "authorized keys file",
            LIST_LIMIT,
            "PUBLIC-KEY NAME lines",
        )?;
        AuthorizedKeys::parse(&text, &path.display().to_string())
    }

    /// The name `key` is listed under.
    pub fn name_of(&self, key: &PublicKey) -> Option<&str> {
        self.names.get(key).map(String::as_str)
    }

    /// How many peers are listed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True if no peer is listed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The servers a client has pinned, by the address the user typed (`HOST:PORT`).
#[derive(Debug, Clone)]
pub struct KnownServers {
    path: PathBuf,
    keys: HashMap<String, PublicKey>,
}

impl KnownServers {
    /// `$XDG_CONFIG_HOME/tcpfec/known_servers`, or `~/.config/tcpfec/known_servers`.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("tcpfec").join("known_servers"))
    }

    /// Reads the file at `path`; a missing file is an empty list.
    pub fn load(path: &Path) -> Result<KnownServers, String> {
        let mut keys = HashMap::new();
        if path.exists() {
            let text = read_small_text(
                path,
                "known servers file",
                LIST_LIMIT,
                "HOST:PORT KEY lines",
            )?;
            let origin = path.display().to_string();
            for entry in pairs(&text, &origin, "HOST:PORT PUBLIC-KEY") {
                let (at, host, key) = entry?;
                let key = PublicKey::parse(key).map_err(|e| format!("{at}: {e}"))?;
                keys.insert(host.to_string(), key);
            }
        }
        Ok(KnownServers {
            path: path.to_path_buf(),
            keys,
        })
    }

    /// The key pinned for `server` (as the user typed it).
    pub fn lookup(&self, server: &str) -> Option<PublicKey> {
        self.keys.get(server).copied()
    }

    /// Pins `key` for `server`, appending a line to the file (created with its directory).
    pub fn remember(&mut self, server: &str, key: PublicKey) -> Result<(), String> {
        use std::io::Write;
        if server.chars().any(char::is_whitespace) {
            return Err(format!(
                "cannot pin '{}': the address has spaces",
                printable(server)
            ));
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        writeln!(f, "{server} {key}")
            .map_err(|e| format!("writing {}: {e}", self.path.display()))?;
        self.keys.insert(server.to_string(), key);
        Ok(())
    }

    /// Where the list lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tcpfec-id-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_key_pair_round_trips_through_its_files_and_the_private_half_is_private() {
        let d = scratch("pair");
        let k = KeyPair::generate();
        let pubf = k.write_new(&d.join("alice"), "alice@laptop").unwrap();
        assert_eq!(pubf, d.join("alice.pub"));
        let back = KeyPair::read(&d.join("alice")).unwrap();
        assert_eq!(back.private, k.private);
        assert_eq!(back.public, k.public);
        assert_eq!(PublicKey::read(&pubf).unwrap(), k.public);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(d.join("alice"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(k
            .write_new(&d.join("alice"), "again")
            .unwrap_err()
            .contains("exists"));
        let text = std::fs::read_to_string(&pubf).unwrap();
        assert!(text.ends_with(" alice@laptop\n"), "{text}");
        assert!(
            !format!("{k:?}").contains(&k.public.to_string()),
            "Debug leaks nothing long"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_public_half_is_x25519_of_the_private_half() {
        // RFC 7748 §6.1: Alice's private and public keys.
        let hex = |s: &str| -> [u8; 32] {
            let v: Vec<u8> = (0..32)
                .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            v.try_into().unwrap()
        };
        let k = KeyPair::from_private(hex(
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        ));
        assert_eq!(
            k.public.0,
            hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        );
    }

    #[test]
    fn wrong_files_say_what_they_are() {
        let d = scratch("wrong");
        let psk = d.join("psk");
        crate::Psk::generate().write_new(&psk).unwrap();
        assert!(KeyPair::read(&psk).unwrap_err().contains("pre-shared key"));
        let k = KeyPair::generate();
        let pubf = k.write_new(&d.join("k"), "c").unwrap();
        assert!(KeyPair::read(&pubf).unwrap_err().contains("not a"));
        std::fs::write(d.join("short"), "tcpfec-private-key AAAA\n").unwrap();
        assert!(KeyPair::read(&d.join("short"))
            .unwrap_err()
            .contains("32 bytes"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn authorized_keys_parse_with_comments_and_refuse_bad_lines_by_number() {
        let (a, b) = (KeyPair::generate().public, KeyPair::generate().public);
        let text = format!("# team\n{a} alice   # laptop\n\n  {b} bob-2\n");
        let list = AuthorizedKeys::parse(&text, "ak").unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list.name_of(&a), Some("alice"));
        assert_eq!(list.name_of(&b), Some("bob-2"));
        assert_eq!(list.name_of(&KeyPair::generate().public), None);
        for (bad, why) in [
            (format!("{a}\n"), "ak line 1: expected"),
            (
                format!("# x\n{a} ../etc\n"),
                "ak line 2: '../etc' is not a peer name",
            ),
            (format!("{a} a/b\n"), "not a peer name"),
            ("AAAA alice\n".to_string(), "a public key is 32 bytes"),
            ("not-base64! alice\n".to_string(), "not a base64 public key"),
            (
                format!("{a} alice\n{a} bob\n"),
                "line 2: the key is listed already, as alice",
            ),
        ] {
            let e = AuthorizedKeys::parse(&bad, "ak").unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn known_servers_pin_by_typed_address_and_persist() {
        let d = scratch("known");
        let path = d.join("sub").join("known_servers");
        let mut ks = KnownServers::load(&path).unwrap();
        assert_eq!(ks.lookup("example.org:5000"), None);
        let k = KeyPair::generate().public;
        ks.remember("example.org:5000", k).unwrap();
        let again = KnownServers::load(&path).unwrap();
        assert_eq!(again.lookup("example.org:5000"), Some(k));
        assert_eq!(again.lookup("example.org:5001"), None);
        std::fs::write(&path, "host-without-key\n").unwrap();
        assert!(KnownServers::load(&path).unwrap_err().contains("line 1"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
