//! Reed-Solomon (K+M, K) over GF(2^8) for groups of up to 255 packets (SPEC T1, A1), using
//! the `reed-solomon-erasure` crate's code and SIMD kernels. Shards are the payloads
//! zero-padded to the longest; the payload lengths are coded by the same code as 2-byte
//! shards whose parity rides at the end of each repair packet, so a rebuilt member has its
//! exact length.
//!
//! Encoding needs only the code's parity rows, which this module computes in closed form
//! ([`parity_rows`]) and multiplies in with the crate's kernels; only decoding builds the
//! crate's codec.

use bytes::Bytes;
use reed_solomon_erasure::galois_8::{self, ReedSolomon};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Most packets (data + repair) in one Reed-Solomon group.
pub const MAX_SHARDS: usize = 256;

/// Codecs by (data shards, parity shards), so groups of the same shape share one. Only
/// weak references: the process-wide registry (`shared_codec`) decides how long a codec
/// (and the decode matrices it caches) lives.
#[derive(Default)]
pub struct RsCache {
    codecs: Vec<((usize, usize), Weak<Codec>)>,
    /// Parity rows by (data shards, parity shards), most recently used last.
    rows: Vec<((usize, usize), Vec<u8>)>,
}

impl core::fmt::Debug for RsCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RsCache({} codecs)", self.codecs.len())
    }
}

/// A codec, and how many decodes it has run: the crate caches the inverted matrix of
/// every erasure pattern it decodes (up to [`CRATE_MATRIX_CACHE`] of them), and nothing
/// else says how large that cache has grown.
struct Codec {
    rs: ReedSolomon,
    k: usize,
    m: usize,
    decodes: AtomicUsize,
}

/// Decode matrices one codec of `reed-solomon-erasure` caches at most (its LRU).
const CRATE_MATRIX_CACHE: usize = 254;

/// What all codecs and their decode matrices may take together, bytes. Over it, the codecs
/// used least recently are dropped, their caches with them. `auto` uses many shapes and
/// random losses make many erasure patterns, so without a bound memory keeps growing; a
/// smaller budget costs speed (rebuilt codecs, matrices inverted again: 15 % of a
/// simulated `auto` run at 32 MB).
const MATRIX_BUDGET: usize = 64 << 20;

impl Codec {
    /// Bytes it may hold now: its (k + m) × k coding matrix, and per pattern decoded (up
    /// to the crate's limit) a k × k matrix, its key (k indices) and their allocations.
    fn cached_bytes(&self) -> usize {
        let patterns = self.decodes.load(Ordering::Relaxed).min(CRATE_MATRIX_CACHE);
        self.k * (self.k + self.m) + patterns * (self.k * self.k + 8 * self.k + 96)
    }
}

/// The process's codecs, by shape, with the tick of their last use.
struct Registry {
    codecs: Vec<((usize, usize), Arc<Codec>, u64)>,
    tick: u64,
}

static SHARED: Mutex<Registry> = Mutex::new(Registry {
    codecs: Vec::new(),
    tick: 0,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    SHARED.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    /// Drops the least recently used codecs (never `keep`) until they fit `budget`.
    fn fit_budget(&mut self, keep: (usize, usize), budget: usize) {
        loop {
            let total: usize = self.codecs.iter().map(|(_, c, _)| c.cached_bytes()).sum();
            if total <= budget {
                return;
            }
            let oldest = self
                .codecs
                .iter()
                .enumerate()
                .filter(|(_, (s, _, _))| *s != keep)
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => {
                    self.codecs.remove(i);
                }
                None => return,
            }
        }
    }
}

/// The codec of shape (k, m), shared by every [`RsCache`] of the process. Building one
/// inverts a k × k matrix (about a millisecond for TCP-TFEC's k = 100) and every
/// connection of a scheme uses the same few shapes, so connections (simulated flows, fuzz
/// runs, UDP peers) build each shape once while it is in use. A codec is a pure function
/// of its shape: sharing, dropping and rebuilding change no result.
fn shared_codec(k: usize, m: usize) -> Option<Arc<Codec>> {
    let mut reg = registry();
    reg.tick += 1;
    let tick = reg.tick;
    if let Some(entry) = reg.codecs.iter_mut().find(|(s, _, _)| *s == (k, m)) {
        entry.2 = tick;
        return Some(entry.1.clone());
    }
    let codec = Arc::new(Codec {
        rs: ReedSolomon::new(k, m).ok()?,
        k,
        m,
        decodes: AtomicUsize::new(0),
    });
    reg.codecs.push(((k, m), codec.clone(), tick));
    reg.fit_budget((k, m), MATRIX_BUDGET);
    Some(codec)
}

/// Bytes the process's codecs and their decode matrices may take now (for tests and
/// benchmarks).
pub fn cached_matrix_bytes() -> usize {
    registry()
        .codecs
        .iter()
        .map(|(_, c, _)| c.cached_bytes())
        .sum()
}

/// The parity count of the codec that serves (k, m): m rounded up to a power of two
/// (within the shard limit). The crate's code is a Vandermonde matrix times the inverse of
/// its top k × k square, and the Vandermonde rows of k + m shards are the first rows of
/// those of k + m' shards for m' > m, so the first m parity rows of the (k, m') code are
/// exactly the (k, m) code: one codec serves every m up to m'. Building a codec inverts a
/// k × k matrix (tens of milliseconds at k = 128); `auto` changes m with every estimate,
/// and keying by exact m built a new codec for each (184 builds, two thirds of a 60 s
/// simulated `auto` run).
fn codec_parity(k: usize, m: usize) -> usize {
    // A shape beyond the shard limit (a peer's corrupt group fields) has no codec; `get`
    // refuses it, and this must not underflow before it does.
    m.next_power_of_two().min(MAX_SHARDS.saturating_sub(k))
}

/// The first `m` parity rows of the crate's (k, m) code, row-major (`m * k` coefficients):
/// exactly the rows its codec would use, without building it. The crate's code is the
/// Vandermonde matrix of the points 0, 1, ..., k + m - 1 times the inverse of its top k × k
/// square, so row r maps the values of a polynomial of degree < k at the points 0..k to its
/// value at r: the Lagrange coefficients L_i(r) = Π_{l≠i} (r - l) / (i - l) (in GF(2^8),
/// minus is XOR). O(k² + mk) multiplications where the codec inverts a k × k matrix
/// (~80 M instructions at k = 128, once per shape, and `auto` changes shape with almost
/// every Reed-Solomon group).
pub fn parity_rows(k: usize, m: usize) -> Vec<u8> {
    assert!(k + m <= MAX_SHARDS, "({k}, {m}) is beyond the shard limit");
    let point = |i: usize| i as u8;
    // D_i = Π_{l≠i} (i - l): the Lagrange denominators, all nonzero (distinct points).
    let denominators: Vec<u8> = (0..k)
        .map(|i| {
            (0..k)
                .filter(|&l| l != i)
                .fold(1u8, |d, l| galois_8::mul(d, point(i) ^ point(l)))
        })
        .collect();
    let mut rows = Vec::with_capacity(m * k);
    for r in k..k + m {
        // N_r = Π_l (r - l), so L_i(r) = N_r / (r - i) / D_i.
        let numerator = (0..k).fold(1u8, |n, l| galois_8::mul(n, point(r) ^ point(l)));
        rows.extend((0..k).map(|i| {
            galois_8::div(
                galois_8::div(numerator, point(r) ^ point(i)),
                denominators[i],
            )
        }));
    }
    rows
}

impl RsCache {
    /// The codec of (k, [`codec_parity`]), whose first `m` parity rows are the (k, m) code.
    fn get(&mut self, k: usize, m: usize) -> Option<Arc<Codec>> {
        if k == 0 || m == 0 || k + m > MAX_SHARDS {
            return None;
        }
        let m = codec_parity(k, m);
        if let Some(i) = self.codecs.iter().position(|(s, _)| *s == (k, m)) {
            if let Some(c) = self.codecs[i].1.upgrade() {
                return Some(c);
            }
            self.codecs.remove(i);
        }
        if self.codecs.len() >= 16 {
            self.codecs.remove(0);
        }
        let c = shared_codec(k, m)?;
        self.codecs.push(((k, m), Arc::downgrade(&c)));
        Some(c)
    }

    /// The parity rows of (k, m), computed once while the shape stays in use.
    fn rows(&mut self, k: usize, m: usize) -> &[u8] {
        match self.rows.iter().position(|(s, _)| *s == (k, m)) {
            Some(i) => {
                let entry = self.rows.remove(i);
                self.rows.push(entry);
            }
            None => {
                if self.rows.len() >= 16 {
                    self.rows.remove(0);
                }
                self.rows.push(((k, m), parity_rows(k, m)));
            }
        }
        &self.rows.last().expect("just pushed").1
    }

    /// The `m` repair packets of `payloads` (each: parity shard + 2 bytes of length
    /// parity); `None` if the shape is not codable. Byte for byte what the crate's codec
    /// of shape (k, m) makes of the payloads zero-padded to the longest.
    pub fn encode(&mut self, payloads: &[Bytes], m: usize) -> Option<Vec<Vec<u8>>> {
        let k = payloads.len();
        let len = payloads.iter().map(|p| p.len()).max()?;
        if m == 0 || k + m > MAX_SHARDS {
            return None;
        }
        let rows = self.rows(k, m);
        let mut parity = vec![vec![0u8; len + 2]; m];
        // Payload-major, like the crate: each payload is read once while the m parity
        // shards stay in cache. Zero padding adds nothing, so shorter payloads only touch
        // their own length.
        for (i, p) in payloads.iter().enumerate() {
            let n = (p.len() as u16).to_be_bytes();
            for (j, out) in parity.iter_mut().enumerate() {
                let c = rows[j * k + i];
                if !p.is_empty() {
                    galois_8::mul_slice_xor(c, p, &mut out[..p.len()]);
                }
                out[len] ^= galois_8::mul(c, n[0]);
                out[len + 1] ^= galois_8::mul(c, n[1]);
            }
        }
        Some(parity)
    }

    /// Rebuilds missing data payloads from any `k` of the `k + m` packets. `data[i]` is
    /// member i's payload if received; `repairs[j]` repair packet j if received. Returns the
    /// rebuilt members as (index, payload), or `None` if too few packets arrived.
    pub fn decode(
        &mut self,
        data: &[Option<Bytes>],
        repairs: &[Option<Bytes>],
    ) -> Option<Vec<(usize, Bytes)>> {
        let (k, m) = (data.len(), repairs.len());
        let have = data.iter().chain(repairs).filter(|s| s.is_some()).count();
        if have < k {
            return None;
        }
        let len = repairs
            .iter()
            .flatten()
            .map(|r| r.len())
            .max()?
            .checked_sub(2)?;
        // All repairs of a group are coded together, so they have one length; repairs
        // that disagree (a faulty or hostile peer) cannot be decoded, and slicing the
        // shorter ones to the longest would panic.
        if repairs.iter().flatten().any(|r| r.len() != len + 2) {
            return None;
        }
        if let Some(one) = self.decode_one(data, repairs, len) {
            return Some(one);
        }
        let mut shards: Vec<Option<Vec<u8>>> = data
            .iter()
            .map(|d| d.as_ref().map(|p| padded(p, len)))
            .chain(
                repairs
                    .iter()
                    .map(|r| r.as_ref().map(|r| r[..len].to_vec())),
            )
            .collect();
        let mut lens: Vec<Option<Vec<u8>>> = data
            .iter()
            .map(|d| d.as_ref().map(|p| (p.len() as u16).to_be_bytes().to_vec()))
            .chain(
                repairs
                    .iter()
                    .map(|r| r.as_ref().map(|r| r[len..].to_vec())),
            )
            .collect();
        // The codec's parity rows past `m` were never sent: missing shards like any other.
        let extra = codec_parity(k, m).saturating_sub(m);
        shards.extend((0..extra).map(|_| None));
        lens.extend((0..extra).map(|_| None));
        let codec = self.get(k, m)?;
        codec.rs.reconstruct_data(&mut shards).ok()?;
        codec.rs.reconstruct_data(&mut lens).ok()?;
        // Its matrix cache may have grown by one pattern: keep all of them in budget.
        if codec.decodes.fetch_add(1, Ordering::Relaxed) < CRATE_MATRIX_CACHE {
            registry().fit_budget((k, codec_parity(k, m)), MATRIX_BUDGET);
        }
        let mut out = Vec::new();
        for (i, d) in data.iter().enumerate() {
            if d.is_none() {
                let l = lens[i].as_ref()?;
                let n = u16::from_be_bytes([l[0], l[1]]) as usize;
                let shard = shards[i].as_ref()?;
                out.push((i, Bytes::copy_from_slice(shard.get(..n)?)));
            }
        }
        Some(out)
    }

    /// [`RsCache::decode`] of a group missing one data member, from the first repair that
    /// arrived: that repair's parity row solved for the missing member, as the crate
    /// would solve it from the same packets (the present members and the first repair),
    /// without building a codec or inverting a matrix. `None` where more than one member
    /// is missing, or none. Payloads are at most `len` bytes, repairs `len` + 2.
    fn decode_one(
        &mut self,
        data: &[Option<Bytes>],
        repairs: &[Option<Bytes>],
        len: usize,
    ) -> Option<Vec<(usize, Bytes)>> {
        let (k, m) = (data.len(), repairs.len());
        let mut missing = data.iter().enumerate().filter(|(_, d)| d.is_none());
        let (lost, _) = missing.next()?;
        if missing.next().is_some() || k + m > MAX_SHARDS {
            return None;
        }
        let (j, repair) = repairs
            .iter()
            .enumerate()
            .find_map(|(j, r)| r.as_ref().map(|r| (j, r)))?;
        let row = &self.rows(k, m)[j * k..(j + 1) * k];
        // repair = Σ row[i] · member[i], so row[lost] · member[lost] = repair + Σ over the
        // others (minus is XOR). Every coefficient of an MDS code's parity rows is
        // nonzero.
        let mut sum = repair[..len].to_vec();
        let mut length = [repair[len], repair[len + 1]];
        for (i, member) in data.iter().enumerate() {
            let Some(p) = member else { continue };
            // A member longer than the repairs is cut to them, as the crate's shards are.
            // The crate's slice kernels index the first byte: empty slices stay out.
            let shard = &p[..p.len().min(len)];
            if !shard.is_empty() {
                galois_8::mul_slice_xor(row[i], shard, &mut sum[..shard.len()]);
            }
            let n = (p.len() as u16).to_be_bytes();
            length[0] ^= galois_8::mul(row[i], n[0]);
            length[1] ^= galois_8::mul(row[i], n[1]);
        }
        let c = row[lost];
        let inverse = galois_8::div(1, c);
        let n = u16::from_be_bytes([
            galois_8::mul(inverse, length[0]),
            galois_8::mul(inverse, length[1]),
        ]);
        let payload = sum.get(..n as usize)?;
        let mut rebuilt = vec![0u8; payload.len()];
        if !payload.is_empty() {
            galois_8::mul_slice(inverse, payload, &mut rebuilt);
        }
        Some(vec![(lost, Bytes::from(rebuilt))])
    }
}

fn padded(payload: &[u8], len: usize) -> Vec<u8> {
    let mut s = Vec::with_capacity(len);
    s.extend_from_slice(payload);
    s.resize(len, 0);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `pair` fuzz target: a group wider than the shard limit (corrupt group
    /// fields from an unauthenticated peer) underflowed while picking the codec.
    #[test]
    fn a_group_beyond_the_shard_limit_has_no_codec_and_decodes_to_nothing() {
        assert_eq!(codec_parity(MAX_SHARDS + 44, 4), 0);
        assert_eq!(codec_parity(200, 100), MAX_SHARDS - 200);
        let mut cache = RsCache::default();
        let mut data = vec![Some(Bytes::from_static(b"abc")); MAX_SHARDS + 44];
        data[3] = None;
        let repairs = vec![Some(Bytes::from_static(b"abcde")); 4];
        assert_eq!(cache.decode(&data, &repairs), None);
        assert_eq!(
            cache.encode(&[Bytes::from_static(b"x")][..], MAX_SHARDS),
            None
        );
    }

    /// Over its budget the registry drops the codecs used least recently, never the one
    /// in use, and what each may hold grows with its decodes up to the crate's limit.
    #[test]
    fn the_registry_keeps_its_codecs_within_a_budget() {
        let codec = |k: usize, decodes: usize| {
            Arc::new(Codec {
                rs: ReedSolomon::new(k, 2).unwrap(),
                k,
                m: 2,
                decodes: AtomicUsize::new(decodes),
            })
        };
        let one = codec(10, 1000).cached_bytes();
        assert_eq!(one, 10 * 12 + 254 * (100 + 80 + 96), "at most 254 patterns");
        let mut reg = Registry {
            codecs: (0..5)
                .map(|i| ((10 + i, 2), codec(10, 1000), i as u64))
                .collect(),
            tick: 5,
        };
        reg.fit_budget((10, 2), 3 * one);
        let left: Vec<_> = reg.codecs.iter().map(|(s, _, _)| s.0).collect();
        assert_eq!(
            left,
            [10, 13, 14],
            "the least recently used went first, not the one in use"
        );
        reg.fit_budget((14, 2), 0);
        let left: Vec<_> = reg.codecs.iter().map(|(s, _, _)| s.0).collect();
        assert_eq!(left, [14], "the codec in use stays, whatever the budget");
    }

    /// The `m` repairs of `payloads`, as they travel.
    fn repairs_of(c: &mut RsCache, payloads: &[Bytes], m: usize) -> Vec<Bytes> {
        c.encode(payloads, m)
            .unwrap()
            .into_iter()
            .map(Bytes::from)
            .collect()
    }

    fn payloads(k: usize, seed: u64) -> Vec<Bytes> {
        let mut x = seed | 1;
        (0..k)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = 1 + (x % 1400) as usize;
                Bytes::from((0..len).map(|i| (x >> (i % 56)) as u8).collect::<Vec<u8>>())
            })
            .collect()
    }

    /// One member lost is rebuilt from whichever repair arrived first, at every shape up
    /// to the shard limit, without a codec; a member longer than the repairs (a hostile
    /// peer) decodes to something or nothing, never a panic.
    #[test]
    fn one_lost_member_is_rebuilt_from_the_first_repair_that_arrived() {
        let mut c = RsCache::default();
        for (k, m) in [
            (2usize, 1usize),
            (16, 3),
            (100, 4),
            (128, 1),
            (200, 8),
            (250, 6),
        ] {
            let p = payloads(k, 31 * k as u64 + m as u64);
            let rep = repairs_of(&mut c, &p, m);
            for lost in [0, k / 3, k - 1] {
                for first in 0..m {
                    let data: Vec<Option<Bytes>> =
                        (0..k).map(|i| (i != lost).then(|| p[i].clone())).collect();
                    let repairs: Vec<Option<Bytes>> = (0..m)
                        .map(|j| (j >= first).then(|| rep[j].clone()))
                        .collect();
                    let got = c.decode(&data, &repairs).unwrap();
                    assert_eq!(
                        got,
                        vec![(lost, p[lost].clone())],
                        "({k}, {m}) lost {lost} from repair {first}"
                    );
                }
            }
        }
        let p = payloads(8, 5);
        let rep: Vec<Option<Bytes>> = repairs_of(&mut c, &p, 2).into_iter().map(Some).collect();
        let mut data: Vec<Option<Bytes>> = p.iter().cloned().map(Some).collect();
        data[2] = None;
        data[5] = Some(Bytes::from(vec![7u8; 3000]));
        let _ = c.decode(&data, &rep);
        assert_eq!(
            registry()
                .codecs
                .iter()
                .filter(|(s, _, _)| s.0 == 250)
                .count(),
            0,
            "no codec was built for one loss"
        );
    }

    /// Any K of K+M packets rebuild every member byte-exactly (every loss pattern of up to
    /// M members for small groups, random patterns for K = 100).
    #[test]
    fn any_k_of_k_plus_m_recover() {
        let mut c = RsCache::default();
        for (k, m) in [(4usize, 2usize), (8, 1), (16, 2), (5, 3)] {
            let p = payloads(k, k as u64 * 7 + m as u64);
            let rep = repairs_of(&mut c, &p, m);
            // Lose data members a < b (and, if m > 2, the first repair too when 3 losses fit).
            for a in 0..k {
                for b in a..k {
                    let lost = if a == b { 1 } else { 2 };
                    if lost > m {
                        continue;
                    }
                    let data: Vec<Option<Bytes>> = (0..k)
                        .map(|i| (i != a && i != b).then(|| p[i].clone()))
                        .collect();
                    let repairs: Vec<Option<Bytes>> = rep.iter().cloned().map(Some).collect();
                    let got = c.decode(&data, &repairs).unwrap();
                    for (i, payload) in got {
                        assert_eq!(payload, p[i], "k={k} m={m} lost {a},{b}");
                    }
                }
            }
        }
        // K = 100, M = 10: lose 10 members spread over the group.
        let p = payloads(100, 99);
        let rep: Vec<Bytes> = c
            .encode(&p, 10)
            .unwrap()
            .into_iter()
            .map(Bytes::from)
            .collect();
        let data: Vec<Option<Bytes>> = (0..100)
            .map(|i| (i % 10 != 3).then(|| p[i].clone()))
            .collect();
        let got = c
            .decode(&data, &rep.iter().cloned().map(Some).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(got.len(), 10);
        for (i, payload) in got {
            assert_eq!(payload, p[i]);
        }
    }

    /// The closed-form parity rows are the crate's: repairs, length parity included, are
    /// byte for byte what a codec built for exactly (k, m) makes of the zero-padded
    /// payloads (the wire format depends on it), at the shard limit's corners too.
    #[test]
    fn repairs_are_exactly_the_crates_code_of_their_shape() {
        let mut c = RsCache::default();
        let shapes = [(1usize, 1usize), (4, 3), (16, 5), (83, 4), (128, 15)];
        for (k, m) in shapes
            .into_iter()
            .chain([(200, 9), (250, 6), (255, 1), (2, 254)])
        {
            let p = payloads(k, (k * m) as u64);
            let ours = c.encode(&p, m).unwrap();
            let len = p.iter().map(|x| x.len()).max().unwrap();
            let exact = ReedSolomon::new(k, m).unwrap();
            let padded: Vec<Vec<u8>> = p.iter().map(|x| padded(x, len)).collect();
            let mut parity = vec![vec![0u8; len]; m];
            exact.encode_sep(&padded, &mut parity).unwrap();
            let lens: Vec<[u8; 2]> = p.iter().map(|x| (x.len() as u16).to_be_bytes()).collect();
            let mut len_parity = vec![[0u8; 2]; m];
            exact.encode_sep(&lens, &mut len_parity).unwrap();
            assert_eq!(ours.len(), m);
            for ((o, e), l) in ours.iter().zip(&parity).zip(&len_parity) {
                assert_eq!(&o[..len], &e[..], "k={k} m={m}");
                assert_eq!(&o[len..], &l[..], "k={k} m={m}: length parity");
            }
        }
    }

    /// Empty payloads code as zero-length shards: their repair is the length parity alone,
    /// and a lost one comes back empty.
    #[test]
    fn empty_payloads_encode_and_come_back_empty() {
        let mut c = RsCache::default();
        let p = vec![Bytes::new(), Bytes::from_static(b"xyz"), Bytes::new()];
        let rep: Vec<Option<Bytes>> = repairs_of(&mut c, &p, 2).into_iter().map(Some).collect();
        let data = vec![None, Some(p[1].clone()), None];
        let got = c.decode(&data, &rep).unwrap();
        assert_eq!(got, vec![(0, Bytes::new()), (2, Bytes::new())]);
        // One member lost (found by the `fec` fuzz target: the crate's slice kernels
        // index the first byte of an empty slice).
        let data = vec![None, Some(p[1].clone()), Some(p[2].clone())];
        assert_eq!(c.decode(&data, &rep).unwrap(), vec![(0, Bytes::new())]);
        let data = vec![Some(p[0].clone()), None, Some(p[2].clone())];
        assert_eq!(c.decode(&data, &rep).unwrap(), vec![(1, p[1].clone())]);
    }

    #[test]
    fn too_few_shards_decode_nothing() {
        let mut c = RsCache::default();
        let p = payloads(6, 3);
        let rep = repairs_of(&mut c, &p, 2);
        let data: Vec<Option<Bytes>> = (0..6).map(|i| (i > 2).then(|| p[i].clone())).collect();
        assert!(c
            .decode(&data, &rep.iter().cloned().map(Some).collect::<Vec<_>>())
            .is_none());
    }

    #[test]
    fn repairs_of_different_lengths_are_refused_not_a_panic() {
        // Found by the fec fuzz target: repairs off the wire can have any length, and a
        // repair shorter than the longest was sliced past its end.
        let mut c = RsCache::default();
        let p = payloads(4, 5);
        let mut rep: Vec<Option<Bytes>> = c
            .encode(&p, 2)
            .unwrap()
            .into_iter()
            .map(|r| Some(Bytes::from(r)))
            .collect();
        rep[1] = rep[1].as_ref().map(|r| r.slice(..r.len() / 2));
        let data: Vec<Option<Bytes>> = (0..4).map(|i| (i != 0).then(|| p[i].clone())).collect();
        assert!(c.decode(&data, &rep).is_none());
    }
}
