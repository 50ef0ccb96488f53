//! Reed-Solomon (K+M, K) over GF(2^8) for groups of up to 255 packets (SPEC T1, A1), using
//! the `reed-solomon-erasure` crate (SIMD kernels). Shards are the payloads zero-padded to
//! the longest (no copy when all have the same length, the common case); the payload
//! lengths are coded by the same code as 2-byte shards whose parity rides at the end of
//! each repair packet, so a rebuilt member has its exact length.

use bytes::Bytes;
use reed_solomon_erasure::galois_8::ReedSolomon;
use std::sync::{Arc, Mutex};

/// Most packets (data + repair) in one Reed-Solomon group.
pub const MAX_SHARDS: usize = 256;

/// Built codecs by (data shards, parity shards), so groups of the same shape share one.
#[derive(Default)]
pub struct RsCache {
    codecs: Vec<((usize, usize), Arc<ReedSolomon>)>,
}

impl core::fmt::Debug for RsCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "RsCache({} codecs)", self.codecs.len())
    }
}

/// Codecs shared by every [`RsCache`] of the process. Building one inverts a k × k
/// matrix (about a millisecond for TCP-TFEC's k = 100) and every connection of a scheme
/// uses the same few shapes, so connections (simulated flows, fuzz runs, UDP peers) build
/// each shape once. A codec is a pure function of its shape: sharing changes no result.
fn shared_codec(k: usize, m: usize) -> Option<Arc<ReedSolomon>> {
    /// Shapes kept; a codec also caches up to 254 decode matrices, so not unbounded.
    const KEEP: usize = 256;
    /// (data, parity) shape and its codec.
    type Shaped = ((usize, usize), Arc<ReedSolomon>);
    static SHARED: Mutex<Vec<Shaped>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c)) = shared.iter().find(|(s, _)| *s == (k, m)) {
        return Some(c.clone());
    }
    let codec = Arc::new(ReedSolomon::new(k, m).ok()?);
    if shared.len() >= KEEP {
        shared.remove(0);
    }
    shared.push(((k, m), codec.clone()));
    Some(codec)
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
    m.next_power_of_two().min(MAX_SHARDS - k)
}

impl RsCache {
    /// The codec of (k, [`codec_parity`]), whose first `m` parity rows are the (k, m) code.
    fn get(&mut self, k: usize, m: usize) -> Option<&ReedSolomon> {
        if k == 0 || m == 0 || k + m > MAX_SHARDS {
            return None;
        }
        let m = codec_parity(k, m);
        if let Some(i) = self.codecs.iter().position(|(s, _)| *s == (k, m)) {
            return Some(&self.codecs[i].1);
        }
        if self.codecs.len() >= 16 {
            self.codecs.remove(0);
        }
        self.codecs.push(((k, m), shared_codec(k, m)?));
        self.codecs.last().map(|(_, c)| &**c)
    }

    /// The `m` repair packets of `payloads` (each: parity shard + 2 bytes of length
    /// parity); `None` if the shape is not codable.
    pub fn encode(&mut self, payloads: &[Bytes], m: usize) -> Option<Vec<Vec<u8>>> {
        let k = payloads.len();
        let len = payloads.iter().map(|p| p.len()).max()?;
        let rows = codec_parity(k, m);
        let mut parity = vec![vec![0u8; len]; rows];
        let codec = self.get(k, m)?;
        if payloads.iter().all(|p| p.len() == len) {
            codec.encode_sep(payloads, &mut parity).ok()?;
        } else {
            let padded: Vec<Vec<u8>> = payloads.iter().map(|p| padded(p, len)).collect();
            codec.encode_sep(&padded, &mut parity).ok()?;
        }
        let lens: Vec<[u8; 2]> = payloads
            .iter()
            .map(|p| (p.len() as u16).to_be_bytes())
            .collect();
        let mut len_parity = vec![[0u8; 2]; rows];
        codec.encode_sep(&lens, &mut len_parity).ok()?;
        parity.truncate(m);
        for (shard, lp) in parity.iter_mut().zip(&len_parity) {
            shard.extend_from_slice(lp);
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
        codec.reconstruct_data(&mut shards).ok()?;
        codec.reconstruct_data(&mut lens).ok()?;
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

    /// Any K of K+M packets rebuild every member byte-exactly (every loss pattern of up to
    /// M members for small groups, random patterns for K = 100).
    #[test]
    fn any_k_of_k_plus_m_recover() {
        let mut c = RsCache::default();
        for (k, m) in [(4usize, 2usize), (8, 1), (16, 2), (5, 3)] {
            let p = payloads(k, k as u64 * 7 + m as u64);
            let rep: Vec<Bytes> = c
                .encode(&p, m)
                .unwrap()
                .into_iter()
                .map(Bytes::from)
                .collect();
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

    /// A codec serves smaller parity counts: its first m parity rows are byte for byte
    /// the repairs a codec built for exactly (k, m) makes (the wire format depends on it).
    #[test]
    fn shared_codecs_make_exactly_the_repairs_of_their_shape() {
        let mut c = RsCache::default();
        for (k, m) in [(4usize, 3usize), (16, 5), (128, 15), (200, 9), (250, 6)] {
            let p = payloads(k, (k * m) as u64);
            let ours = c.encode(&p, m).unwrap();
            let len = p.iter().map(|x| x.len()).max().unwrap();
            let exact = ReedSolomon::new(k, m).unwrap();
            let padded: Vec<Vec<u8>> = p.iter().map(|x| padded(x, len)).collect();
            let mut parity = vec![vec![0u8; len]; m];
            exact.encode_sep(&padded, &mut parity).unwrap();
            for (o, e) in ours.iter().zip(&parity) {
                assert_eq!(&o[..len], &e[..], "k={k} m={m}");
            }
        }
    }

    #[test]
    fn too_few_shards_decode_nothing() {
        let mut c = RsCache::default();
        let p = payloads(6, 3);
        let rep: Vec<Bytes> = c
            .encode(&p, 2)
            .unwrap()
            .into_iter()
            .map(Bytes::from)
            .collect();
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
