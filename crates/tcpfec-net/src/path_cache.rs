//! What connections learnt about their paths, kept between runs so that the next
//! connection to the same peer can start with Careful Resume (RFC 9959,
//! `tcpfec_proto::resume`).
//!
//! One line per peer address in a small text file in the user's cache directory
//! (`$XDG_CACHE_HOME/tcpfec/paths`, else `~/.cache/tcpfec/paths`, or the file
//! `$TCPFEC_PATH_CACHE` names): the address, the
//! delivery rate and the minimum RTT, and when they were saved. Nothing in it is secret,
//! and nothing in it is trusted: a line that does not parse, or holds values no path has,
//! is skipped with a warning, and a jump from it is still checked against the current
//! RTT and retreats on congestion. The file holds at most [`MAX_ENTRIES`] peers (the
//! least recently saved go first) and entries expire after [`DEFAULT_LIFETIME`].

use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tcpfec_proto::SavedPath;

/// Most peers the file keeps.
pub const MAX_ENTRIES: usize = 256;

/// How long a saved path may be resumed from. RFC 9959 §4.3.1 leaves it to the
/// implementation ("minutes" on shared, changing paths, "hours" on stable ones); an hour
/// covers repeated transfers in one session and expires before a day's routing changes.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// The environment variable that turns resumption off (any value but `0` or empty).
pub const NO_RESUME_ENV: &str = "TCPFEC_NO_RESUME";

/// The first line of the file: its format.
const HEADER: &str = "# tcpfec path cache v1: address rate_bytes_per_s min_rtt_us saved_unix_s";

/// Rates and RTTs outside these bounds are not a path's: the line is hostile or corrupt.
const MAX_RATE: f64 = 1e12; // 8 Tb/s
const MAX_RTT_US: u64 = 60_000_000; // a minute

/// One peer's saved path.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    path: SavedPath,
    /// Seconds since the Unix epoch when it was saved.
    saved_at: u64,
}

/// The saved paths of one cache file (see the module documentation).
#[derive(Debug)]
pub struct PathCache {
    file: PathBuf,
    lifetime: Duration,
    entries: Mutex<BTreeMap<IpAddr, Entry>>,
}

/// True unless [`NO_RESUME_ENV`] turns resumption off.
pub fn resume_enabled_by_env() -> bool {
    std::env::var(NO_RESUME_ENV).map_or(true, |v| v.is_empty() || v == "0")
}

/// The environment variable that names the cache file instead of the default.
pub const FILE_ENV: &str = "TCPFEC_PATH_CACHE";

/// The cache file: [`FILE_ENV`] if set, else in the user's cache directory, if the
/// environment names a cache or home directory.
pub fn default_file() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os(FILE_ENV).filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(f));
    }
    let dir = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(dir.join("tcpfec").join("paths"))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl PathCache {
    /// The cache in `file` (which need not exist yet) with entries valid for `lifetime`.
    /// Returns the warnings about lines that were skipped.
    pub fn open(file: &Path, lifetime: Duration) -> (PathCache, Vec<String>) {
        let (entries, warnings) = read_entries(file);
        let cache = PathCache {
            file: file.to_path_buf(),
            lifetime,
            entries: Mutex::new(entries),
        };
        (cache, warnings)
    }

    /// The file this cache reads and writes.
    pub fn file(&self) -> &Path {
        &self.file
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<IpAddr, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The path saved for `peer`, if there is one that has not expired.
    pub fn lookup(&self, peer: IpAddr) -> Option<SavedPath> {
        self.lookup_at(peer, unix_now())
    }

    fn lookup_at(&self, peer: IpAddr, now: u64) -> Option<SavedPath> {
        let mut entries = self.lock();
        let e = *entries.get(&peer)?;
        let age = now.saturating_sub(e.saved_at);
        // A clock set back makes an entry from the future: not trusted either.
        if age > self.lifetime.as_secs() || e.saved_at > now + 60 {
            entries.remove(&peer);
            return None;
        }
        Some(e.path)
    }

    /// Saves what a connection to `peer` learnt, and writes the file (merged with what
    /// other processes saved meanwhile).
    pub fn store(&self, peer: IpAddr, path: SavedPath) -> io::Result<()> {
        self.store_at(peer, path, unix_now())
    }

    fn store_at(&self, peer: IpAddr, path: SavedPath, now: u64) -> io::Result<()> {
        if !plausible(&path) {
            return Ok(());
        }
        let mut entries = self.lock();
        let (on_disk, _) = read_entries(&self.file);
        for (ip, e) in on_disk {
            let newer = entries
                .get(&ip)
                .is_none_or(|mine| e.saved_at > mine.saved_at);
            if newer {
                entries.insert(ip, e);
            }
        }
        entries.insert(
            peer,
            Entry {
                path,
                saved_at: now,
            },
        );
        let lifetime = self.lifetime.as_secs();
        entries.retain(|_, e| now.saturating_sub(e.saved_at) <= lifetime);
        while entries.len() > MAX_ENTRIES {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.saved_at)
                .map(|(ip, _)| *ip)
                .expect("not empty");
            entries.remove(&oldest);
        }
        write_entries(&self.file, &entries)
    }
}

fn plausible(p: &SavedPath) -> bool {
    let rtt_us = p.min_rtt.as_micros();
    p.rate.is_finite()
        && p.rate > 0.0
        && p.rate <= MAX_RATE
        && rtt_us > 0
        && rtt_us <= MAX_RTT_US as u128
}

/// Reads the file; a missing file is an empty cache.
fn read_entries(file: &Path) -> (BTreeMap<IpAddr, Entry>, Vec<String>) {
    let mut entries = BTreeMap::new();
    let mut warnings = Vec::new();
    let text = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (entries, warnings),
        Err(e) => {
            warnings.push(format!(
                "path cache {}: {e}; starting without it",
                file.display()
            ));
            return (entries, warnings);
        }
    };
    let Ok(text) = String::from_utf8(text) else {
        warnings.push(format!("path cache {}: not text; ignored", file.display()));
        return (entries, warnings);
    };
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Some((ip, e)) if entries.len() < MAX_ENTRIES => {
                entries.insert(ip, e);
            }
            Some(_) => {}
            None => warnings.push(format!(
                "path cache {} line {}: not 'address rate rtt_us saved_s' with plausible values; ignored",
                file.display(),
                i + 1
            )),
        }
    }
    (entries, warnings)
}

fn parse_line(line: &str) -> Option<(IpAddr, Entry)> {
    let mut f = line.split_whitespace();
    let ip: IpAddr = f.next()?.parse().ok()?;
    let rate: f64 = f.next()?.parse().ok()?;
    let rtt_us: u64 = f.next()?.parse().ok()?;
    let saved_at: u64 = f.next()?.parse().ok()?;
    if f.next().is_some() || rtt_us > MAX_RTT_US {
        return None;
    }
    let path = SavedPath {
        rate,
        min_rtt: Duration::from_micros(rtt_us),
    };
    plausible(&path).then_some((ip, Entry { path, saved_at }))
}

/// Writes the file whole, through a temporary file renamed over it, so that a reader
/// never sees half of it.
fn write_entries(file: &Path, entries: &BTreeMap<IpAddr, Entry>) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::from(HEADER);
    text.push('\n');
    for (ip, e) in entries {
        text.push_str(&format!(
            "{ip} {:.0} {} {}\n",
            e.path.rate,
            e.path.min_rtt.as_micros(),
            e.saved_at
        ));
    }
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("tcpfec-path-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn path(rate: f64, rtt_ms: u64) -> SavedPath {
        SavedPath {
            rate,
            min_rtt: Duration::from_millis(rtt_ms),
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn a_saved_path_is_read_back_per_peer_by_a_later_process() {
        let file = dir("roundtrip").join("paths");
        let (c, w) = PathCache::open(&file, DEFAULT_LIFETIME);
        assert!(w.is_empty() && c.lookup(A).is_none());
        c.store(A, path(6.25e6, 200)).unwrap();
        c.store(B, path(1e6, 30)).unwrap();
        let (again, w) = PathCache::open(&file, DEFAULT_LIFETIME);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(again.lookup(A), Some(path(6.25e6, 200)));
        assert_eq!(again.lookup(B), Some(path(1e6, 30)));
        assert_eq!(again.lookup("192.0.2.3".parse().unwrap()), None);
    }

    #[test]
    fn an_entry_expires_after_its_lifetime() {
        let file = dir("expiry").join("paths");
        let (c, _) = PathCache::open(&file, Duration::from_secs(100));
        c.store_at(A, path(1e6, 50), 1_000).unwrap();
        assert!(c.lookup_at(A, 1_100).is_some());
        assert!(c.lookup_at(A, 1_101).is_none());
        // Expired entries are gone for good, and from the file at the next write.
        assert!(c.lookup_at(A, 1_000).is_none());
        c.store_at(B, path(1e6, 50), 5_000).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("192.0.2.1"), "{text}");
    }

    #[test]
    fn a_corrupt_or_hostile_file_is_ignored_line_by_line_with_a_warning() {
        let d = dir("corrupt");
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("paths");
        let now = unix_now();
        let text = format!(
            "{HEADER}\n192.0.2.1 1000000 50000 {now}\ngarbage\n192.0.2.2 -5 50000 {now}\n\
             192.0.2.3 1e300 50000 {now}\n192.0.2.4 1000 0 {now}\n192.0.2.5 1000 50000 {now} extra\n"
        );
        std::fs::write(&file, text).unwrap();
        let (c, w) = PathCache::open(&file, DEFAULT_LIFETIME);
        assert_eq!(w.len(), 5, "{w:?}");
        assert!(w[0].contains("line 3"), "{w:?}");
        assert_eq!(c.lookup(A), Some(path(1e6, 50)));
        assert_eq!(c.lookup(B), None);
        // Not text at all: ignored as a whole.
        std::fs::write(&file, [0xff, 0xfe, 0x00]).unwrap();
        let (c, w) = PathCache::open(&file, DEFAULT_LIFETIME);
        assert_eq!(w.len(), 1);
        assert_eq!(c.lookup(A), None);
    }

    #[test]
    fn the_file_keeps_the_most_recently_saved_peers() {
        let file = dir("bound").join("paths");
        let (c, _) = PathCache::open(&file, DEFAULT_LIFETIME);
        let now = unix_now();
        for i in 0..(MAX_ENTRIES as u64 + 10) {
            let ip = IpAddr::V6(std::net::Ipv6Addr::from(i as u128 + 1));
            c.store_at(ip, path(1e6, 10), now - 1000 + i).unwrap();
        }
        let (again, _) = PathCache::open(&file, DEFAULT_LIFETIME);
        let first = IpAddr::V6(std::net::Ipv6Addr::from(1u128));
        let last = IpAddr::V6(std::net::Ipv6Addr::from(MAX_ENTRIES as u128 + 10));
        assert_eq!(again.lookup(first), None, "the oldest went first");
        assert!(again.lookup(last).is_some());
        assert_eq!(again.lock().len(), MAX_ENTRIES);
    }
}
