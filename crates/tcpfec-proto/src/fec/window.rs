//! A sliding-window random linear code over GF(2^8), the kind RFC 8681 describes (and
//! Tetrys, FlEC and QUIC-FEC use): a repair packet is a random linear combination of the
//! source packets of a window of consecutive segments, `[first, first + count)`, and any
//! set of repairs whose windows overlap the losses solves for them by Gaussian
//! elimination, whichever windows they cover. `auto` sends such repairs for streams
//! (docs/design/on-time.md): a loss is rebuilt by the next repair whose window covers it,
//! and a repair that cannot rebuild a loss yet (two losses, one repair) is kept until a
//! later one can, so repair spent on one stretch of the stream still helps the next.
//!
//! The symbol of a source packet is its payload length (2 bytes, big-endian) followed by
//! the payload, zero-padded to the repair's length; the coefficient of segment `s` in
//! the repair with key `k` is a nonzero value drawn from `(k, s)` by a fixed hash, so the
//! receiver computes the same ones. Repairs over the same window with different keys are
//! independent with high probability (a random 255-valued coefficient per segment).
//!
//! Both sides use the GF(2^8) kernels of `reed-solomon-erasure` (SIMD where built with
//! it), the same field as the Reed-Solomon blocks.

use bytes::Bytes;
use reed_solomon_erasure::galois_8;
use std::collections::VecDeque;

/// Most source packets one repair may cover. A larger window costs the sender one
/// multiply-add of a packet per covered segment and repair.
pub const MAX_WINDOW: usize = 256;

/// Payloads of the most recent segments the decoder keeps to take them out of the
/// repairs that cover them (a repair covers at most [`MAX_WINDOW`]).
const KEEP: usize = 4 * MAX_WINDOW;

/// Most equations (repairs not yet solved) the decoder keeps; the oldest goes first.
const MAX_ROWS: usize = 128;

/// Bytes of a symbol ahead of the payload: its length.
const LEN_BYTES: usize = 2;

/// The coefficient of segment `seg` in the repair with key `key`: never 0.
pub fn coefficient(key: u16, seg: u64) -> u8 {
    // splitmix64's finaliser over the pair.
    let mut z = seg ^ (u64::from(key) << 48) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    1 + (z % 255) as u8
}

/// Adds `c` times the symbol of `payload` (length first) into `out`, which must be at
/// least `LEN_BYTES + payload.len()` long.
fn add_symbol(c: u8, payload: &[u8], out: &mut [u8]) {
    let len = (payload.len() as u16).to_be_bytes();
    out[0] ^= galois_8::mul(c, len[0]);
    out[1] ^= galois_8::mul(c, len[1]);
    // The crate's SIMD kernel indexes its first byte: an empty payload (a segment that
    // hostile repairs "rebuilt" as empty) panicked there (engine fuzz target).
    if !payload.is_empty() {
        galois_8::mul_slice_xor(c, payload, &mut out[LEN_BYTES..LEN_BYTES + payload.len()]);
    }
}

/// A repair packet of the window code, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowRepair {
    /// First segment of its window.
    pub first: u64,
    /// Segments in the window.
    pub count: u16,
    /// The key its coefficients are drawn from.
    pub key: u16,
    /// The coded symbol.
    pub payload: Bytes,
}

impl WindowRepair {
    /// The last segment it covers.
    pub fn last(&self) -> u64 {
        self.first + u64::from(self.count.max(1)) - 1
    }
}

/// The sender's side: the source packets a repair may cover, consecutive segments in
/// send order.
#[derive(Debug, Default)]
pub struct WindowEncoder {
    sources: VecDeque<(u64, Bytes)>,
    next_key: u16,
}

impl WindowEncoder {
    /// A first transmission of segment `seg` left. A segment not following the newest
    /// one (a FIN took a number, or the stream restarted) starts the window anew, since a
    /// window is a run of consecutive segments; an empty payload (a FIN) is never covered.
    pub fn add(&mut self, seg: u64, payload: &Bytes) {
        if payload.is_empty() {
            self.sources.clear();
            return;
        }
        match self.sources.back() {
            Some(&(last, _)) if seg <= last => return, // already covered
            Some(&(last, _)) if seg != last + 1 => self.sources.clear(),
            _ => {}
        }
        self.sources.push_back((seg, payload.clone()));
        if self.sources.len() > MAX_WINDOW {
            self.sources.pop_front();
        }
    }

    /// Forgets every source packet: the next one starts a new window.
    pub fn clear(&mut self) {
        self.sources.clear();
    }

    /// Segments below `seg` are acknowledged: no repair needs to cover them.
    pub fn forget_below(&mut self, seg: u64) {
        while self.sources.front().is_some_and(|&(s, _)| s < seg) {
            self.sources.pop_front();
        }
    }

    /// The newest segment a repair can cover now, if any.
    pub fn newest(&self) -> Option<u64> {
        self.sources.back().map(|&(s, _)| s)
    }

    /// A repair over the sources from segment `from` (or the oldest kept) to the newest;
    /// `None` if none is kept from there.
    pub fn repair(&mut self, from: u64) -> Option<WindowRepair> {
        let start = self.sources.partition_point(|&(s, _)| s < from);
        let window = self.sources.range(start..);
        let first = window.clone().next()?.0;
        let count = window.len();
        let len = window.clone().map(|(_, p)| p.len()).max().unwrap_or(0);
        let key = self.next_key;
        self.next_key = self.next_key.wrapping_add(1);
        let mut out = vec![0u8; LEN_BYTES + len];
        for (seg, p) in window {
            add_symbol(coefficient(key, *seg), p, &mut out);
        }
        Some(WindowRepair {
            first,
            count: count as u16,
            key,
            payload: Bytes::from(out),
        })
    }
}

/// One equation: the coefficients of the segments it still misses (sorted by segment),
/// and the symbol they combine to.
#[derive(Debug, Clone)]
struct Row {
    unknowns: Vec<(u64, u8)>,
    symbol: Vec<u8>,
}

impl Row {
    fn coefficient_of(&self, seg: u64) -> Option<u8> {
        self.unknowns
            .binary_search_by_key(&seg, |&(s, _)| s)
            .ok()
            .map(|i| self.unknowns[i].1)
    }

    /// This row minus (plus: GF(2^8)) `c` times `other`.
    fn add_scaled(&mut self, c: u8, other: &Row) {
        if self.symbol.len() < other.symbol.len() {
            self.symbol.resize(other.symbol.len(), 0);
        }
        galois_8::mul_slice_xor(c, &other.symbol, &mut self.symbol[..other.symbol.len()]);
        for &(seg, oc) in &other.unknowns {
            let add = galois_8::mul(c, oc);
            match self.unknowns.binary_search_by_key(&seg, |&(s, _)| s) {
                Ok(i) => {
                    self.unknowns[i].1 ^= add;
                    if self.unknowns[i].1 == 0 {
                        self.unknowns.remove(i);
                    }
                }
                Err(i) => self.unknowns.insert(i, (seg, add)),
            }
        }
    }

    /// Scales the row so that its first unknown has coefficient 1.
    fn normalise(&mut self) {
        let c = self.unknowns[0].1;
        if c == 1 {
            return;
        }
        let inv = galois_8::div(1, c);
        let sym = std::mem::take(&mut self.symbol);
        self.symbol = vec![0; sym.len()];
        galois_8::mul_slice(inv, &sym, &mut self.symbol);
        for u in &mut self.unknowns {
            u.1 = galois_8::mul(inv, u.1);
        }
    }

    /// Takes a known segment's symbol out of the row.
    fn substitute(&mut self, seg: u64, payload: &[u8]) -> bool {
        let Ok(i) = self.unknowns.binary_search_by_key(&seg, |&(s, _)| s) else {
            return false;
        };
        let c = self.unknowns.remove(i).1;
        let need = LEN_BYTES + payload.len();
        if self.symbol.len() < need {
            self.symbol.resize(need, 0);
        }
        add_symbol(c, payload, &mut self.symbol);
        true
    }
}

/// What the window decoder counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Repair packets handed to the decoder.
    pub repairs_received: u64,
    /// Of those, repairs whose window lost nothing.
    pub repairs_unneeded: u64,
    /// Of those, repairs covering a segment too old for the decoder to take out.
    pub repairs_too_old: u64,
    /// Segments rebuilt.
    pub recovered: u64,
}

/// The receiver's side: the payloads of recent segments and the repairs not yet solved,
/// kept in reduced row-echelon form (each row leads with an unknown no other row has).
#[derive(Debug, Default)]
pub struct WindowDecoder {
    /// Payloads of the recent segments that arrived or were rebuilt.
    known: Kept,
    rows: Vec<Row>,
    /// Counters.
    pub stats: WindowStats,
}

/// The payloads of segments `[base, base + len)`, `len` at most [`KEEP`], each in slot
/// `segment mod KEEP` of a ring: the window slides by a segment per arrival, which a ring
/// does by rewriting one slot. Slots outside the window are empty.
#[derive(Debug, Default)]
struct Kept {
    slots: Vec<Option<Bytes>>,
    base: u64,
    len: usize,
}

impl Kept {
    fn slot(seg: u64) -> usize {
        (seg % KEEP as u64) as usize
    }

    fn get(&self, seg: u64) -> Option<&Bytes> {
        let i = seg.checked_sub(self.base)?;
        if i >= self.len as u64 {
            return None;
        }
        self.slots[Self::slot(seg)].as_ref()
    }

    /// Forgets every segment; the window starts again at `base`.
    fn restart_at(&mut self, base: u64) {
        for i in 0..self.len as u64 {
            self.slots[Self::slot(self.base.wrapping_add(i))] = None;
        }
        self.base = base;
        self.len = 0;
    }

    /// Keeps `payload` for `seg`, sliding the window forward to reach it, or back if it
    /// still has room for an older one; a segment older than that is not kept (false).
    fn store(&mut self, seg: u64, payload: &Bytes) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![None; KEEP];
        }
        if self.len == 0 {
            self.base = seg;
        }
        if seg < self.base {
            // A segment that arrived after a later one (reordered, or a retransmission):
            // kept if the window reaches back to it. Dropping it left the decoder
            // treating a segment it had as missing, and rebuilding (delivering) it a
            // second time from the next repairs (found by the `fec` fuzz target).
            let back = self.base - seg;
            if back > KEEP.saturating_sub(self.len) as u64 {
                return false; // older than anything a repair may still cover
            }
            self.base = seg;
            self.len += back as usize;
        }
        // Saturating: a hostile segment number at the end of the space (engine fuzz
        // target) would overflow, and it clears the window like any far jump.
        let span = (seg - self.base).saturating_add(1);
        if span > KEEP as u64 {
            let drop = span - KEEP as u64;
            if drop >= self.len as u64 {
                self.restart_at(seg);
            } else {
                for _ in 0..drop {
                    self.slots[Self::slot(self.base)] = None;
                    self.base += 1;
                    self.len -= 1;
                }
            }
        }
        self.len = self.len.max((seg - self.base) as usize + 1);
        self.slots[Self::slot(seg)] = Some(payload.clone());
        true
    }
}

impl WindowDecoder {
    fn known_payload(&self, seg: u64) -> Option<&Bytes> {
        self.known.get(seg)
    }

    fn store(&mut self, seg: u64, payload: &Bytes) {
        // Equations waiting on segments no longer kept can never be taken apart.
        if self.known.store(seg, payload) && !self.rows.is_empty() {
            let base = self.known.base;
            self.rows.retain(|r| r.unknowns[0].0 >= base);
        }
    }

    /// Drops every kept payload and waiting equation (the stream is complete: nothing
    /// is left to rebuild). The counters stay.
    pub fn release(&mut self) {
        self.known = Kept::default();
        self.rows = Vec::new();
    }

    /// A source segment arrived (first transmission, retransmission, or rebuilt by
    /// another code): kept for later repairs, and taken out of the equations that miss
    /// it. Returns the segments this lets the decoder rebuild.
    pub fn on_source(&mut self, seg: u64, payload: &Bytes) -> Vec<(u64, Bytes)> {
        if payload.is_empty() || self.known_payload(seg).is_some() {
            return Vec::new();
        }
        self.store(seg, payload);
        let mut touched = Vec::new();
        let mut i = 0;
        while i < self.rows.len() {
            if self.rows[i].coefficient_of(seg).is_some() {
                let mut row = self.rows.swap_remove(i);
                row.substitute(seg, payload);
                touched.push(row);
            } else {
                i += 1;
            }
        }
        let mut rebuilt = Vec::new();
        for row in touched {
            self.insert(row, &mut rebuilt);
        }
        rebuilt
    }

    /// A repair over `[first, first + count)` with key `key` arrived. Every segment
    /// below `rcv_nxt` has arrived. Returns the segments it lets the decoder rebuild.
    pub fn on_repair(
        &mut self,
        first: u64,
        count: u16,
        key: u16,
        payload: &[u8],
        rcv_nxt: u64,
    ) -> Vec<(u64, Bytes)> {
        self.stats.repairs_received += 1;
        let count = count as usize;
        if count == 0 || count > MAX_WINDOW || payload.len() < LEN_BYTES {
            self.stats.repairs_unneeded += 1;
            return Vec::new();
        }
        let Some(end) = first.checked_add(count as u64) else {
            self.stats.repairs_unneeded += 1;
            return Vec::new();
        };
        if end <= rcv_nxt {
            self.stats.repairs_unneeded += 1;
            return Vec::new();
        }
        let mut row = Row {
            unknowns: Vec::new(),
            symbol: payload.to_vec(),
        };
        for seg in first..end {
            let c = coefficient(key, seg);
            match self.known_payload(seg) {
                Some(p) => {
                    let need = LEN_BYTES + p.len();
                    if row.symbol.len() < need {
                        // A symbol is as long as the longest it covers: a shorter repair
                        // does not cover this payload as the sender sent it.
                        self.stats.repairs_unneeded += 1;
                        return Vec::new();
                    }
                    add_symbol(c, p, &mut row.symbol);
                }
                None if seg < rcv_nxt => {
                    // Arrived once, but no longer kept: this repair cannot be taken apart.
                    self.stats.repairs_too_old += 1;
                    return Vec::new();
                }
                None => row.unknowns.push((seg, c)),
            }
        }
        if row.unknowns.is_empty() {
            self.stats.repairs_unneeded += 1;
            return Vec::new();
        }
        let mut rebuilt = Vec::new();
        self.insert(row, &mut rebuilt);
        rebuilt
    }

    /// Adds an equation, keeping the rows in reduced row-echelon form, and takes out
    /// every row that is left with one unknown: that segment is rebuilt.
    fn insert(&mut self, mut row: Row, rebuilt: &mut Vec<(u64, Bytes)>) {
        for r in &self.rows {
            if let Some(c) = row.coefficient_of(r.unknowns[0].0) {
                row.add_scaled(c, r);
            }
        }
        if row.unknowns.is_empty() {
            return; // adds nothing the other rows do not say
        }
        row.normalise();
        let pivot = row.unknowns[0].0;
        for r in &mut self.rows {
            if let Some(c) = r.coefficient_of(pivot) {
                r.add_scaled(c, &row);
            }
        }
        self.rows.push(row);
        if self.rows.len() > MAX_ROWS {
            let oldest = (0..self.rows.len())
                .min_by_key(|&i| self.rows[i].unknowns[0].0)
                .expect("not empty");
            self.rows.swap_remove(oldest);
        }
        let mut i = 0;
        while i < self.rows.len() {
            if self.rows[i].unknowns.len() != 1 {
                i += 1;
                continue;
            }
            let row = self.rows.swap_remove(i);
            let seg = row.unknowns[0].0;
            // A symbol whose length field does not fit it is not a source packet's (a
            // faulty or hostile repair): nothing is rebuilt from it.
            let len = u16::from_be_bytes([row.symbol[0], row.symbol[1]]) as usize;
            let Some(data) = row.symbol.get(LEN_BYTES..LEN_BYTES + len) else {
                continue;
            };
            let payload = Bytes::copy_from_slice(data);
            self.stats.recovered += 1;
            self.store(seg, &payload);
            rebuilt.push((seg, payload));
            // Reduced form: no other row mentions `seg`, so nothing else changes.
            i = 0;
        }
    }

    /// Equations held (repairs that could not be solved yet).
    pub fn pending(&self) -> usize {
        self.rows.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(seg: u64) -> Bytes {
        let len = 1 + (seg * 7919 % 1400) as usize;
        Bytes::from(
            (0..len)
                .map(|i| (seg as usize * 31 + i) as u8)
                .collect::<Vec<u8>>(),
        )
    }

    fn encoder(segs: std::ops::Range<u64>) -> WindowEncoder {
        let mut e = WindowEncoder::default();
        for s in segs {
            e.add(s, &payload(s));
        }
        e
    }

    #[test]
    fn coefficients_are_never_zero_and_differ_by_key() {
        let mut differ = 0;
        for seg in 0..1000u64 {
            for key in 0..8u16 {
                assert_ne!(coefficient(key, seg), 0);
            }
            differ += (coefficient(1, seg) != coefficient(2, seg)) as u32;
        }
        assert!(differ > 990, "{differ}");
    }

    #[test]
    fn a_released_decoder_holds_no_payload() {
        let mut d = WindowDecoder::default();
        let p = Bytes::from(vec![7u8; 100]);
        assert!(d.on_source(0, &p).is_empty());
        assert!(!p.is_unique(), "kept for later repairs");
        d.release();
        assert!(p.is_unique(), "still kept after release");
        assert_eq!(d.pending(), 0);
    }

    /// Found by the `fec` fuzz target: segment 2 arrived before segment 1, so the window
    /// of kept payloads began at 2 and segment 1 was not kept; two repairs over 0..3 then
    /// "rebuilt" segment 1 again besides the lost segment 0. A segment that arrives out
    /// of order is kept, and only the lost one is rebuilt.
    #[test]
    fn a_segment_arriving_after_a_later_one_is_kept_not_rebuilt_again() {
        let mut e = encoder(0..3);
        let mut d = WindowDecoder::default();
        assert!(d.on_source(2, &payload(2)).is_empty());
        assert!(d.on_source(1, &payload(1)).is_empty());
        let r = e.repair(0).unwrap();
        let got = d.on_repair(r.first, r.count, r.key, &r.payload, 0);
        assert_eq!(got, vec![(0, payload(0))], "one unknown: segment 0 alone");
        let r2 = e.repair(0).unwrap();
        assert!(d
            .on_repair(r2.first, r2.count, r2.key, &r2.payload, 3)
            .is_empty());
    }

    /// Found by the `engine` fuzz target: segment numbers far below the kept window, or
    /// at the end of the number space (hostile or corrupted headers), overflowed the
    /// window arithmetic.
    #[test]
    fn segment_numbers_far_off_or_at_the_end_of_the_space_are_harmless() {
        let mut d = WindowDecoder::default();
        assert!(d.on_source(u64::MAX - 1, &payload(1)).is_empty());
        assert!(d.on_source(0, &payload(2)).is_empty());
        assert!(d.known_payload(0).is_none());
        assert!(d.known_payload(u64::MAX - 1).is_some());
        let mut d = WindowDecoder::default();
        assert!(d.on_source(0, &payload(3)).is_empty());
        assert!(d.on_source(u64::MAX, &payload(4)).is_empty());
        assert!(d.known_payload(u64::MAX).is_some());
    }

    proptest::proptest! {
        /// The ring is a sliding window of at most [`KEEP`] segments: whatever the order
        /// of arrivals (in order, reordered, far jumps), every segment of the window
        /// stored since it entered it is kept with its payload, and nothing else is.
        #[test]
        fn the_ring_keeps_exactly_the_window(
            steps in proptest::collection::vec((0u8..3, 0u64..3000), 1..400)
        ) {
            let mut kept = Kept::default();
            let mut model = std::collections::BTreeMap::new();
            let mut highest = 5_000u64;
            for (kind, amount) in steps {
                let seg = match kind {
                    0 => highest + amount % 4,
                    1 => highest.saturating_sub(amount % 1500),
                    _ => highest + KEEP as u64 / 2 + amount,
                };
                highest = highest.max(seg);
                let payload = Bytes::from(seg.to_be_bytes().to_vec());
                if kept.store(seg, &payload) {
                    model.insert(seg, payload);
                }
                let (base, len) = (kept.base, kept.len as u64);
                proptest::prop_assert!(len as usize <= KEEP);
                model.retain(|&s, _| s >= base);
                for s in base.saturating_sub(KEEP as u64)..base + len + KEEP as u64 {
                    let want = model.get(&s).filter(|_| s < base + len);
                    proptest::prop_assert_eq!(kept.get(s), want, "segment {}", s);
                }
            }
        }
    }

    #[test]
    fn one_repair_rebuilds_one_loss_in_its_window() {
        let mut e = encoder(10..20);
        let r = e.repair(0).unwrap();
        assert_eq!((r.first, r.count, r.last()), (10, 10, 19));
        let mut d = WindowDecoder::default();
        for s in (10..20).filter(|&s| s != 14) {
            assert!(d.on_source(s, &payload(s)).is_empty());
        }
        let got = d.on_repair(r.first, r.count, r.key, &r.payload, 14);
        assert_eq!(got, vec![(14, payload(14))]);
        assert_eq!(d.stats.recovered, 1);
        // Its window lost nothing now: a second repair over it is surplus.
        let r2 = e.repair(0).unwrap();
        assert!(d
            .on_repair(r2.first, r2.count, r2.key, &r2.payload, 14)
            .is_empty());
        assert_eq!(d.stats.repairs_unneeded, 1);
    }

    #[test]
    fn a_repair_that_cannot_solve_yet_is_kept_until_one_can() {
        // Window [0, 8): 2 and 5 lost; the first repair cannot rebuild them, the second
        // (over a later window [0, 12)) can, with the first.
        let mut e = encoder(0..8);
        let r1 = e.repair(0).unwrap();
        for s in 8..12 {
            e.add(s, &payload(s));
        }
        let r2 = e.repair(0).unwrap();
        let mut d = WindowDecoder::default();
        for s in [0, 1, 3, 4, 6, 7] {
            d.on_source(s, &payload(s));
        }
        assert!(d
            .on_repair(r1.first, r1.count, r1.key, &r1.payload, 2)
            .is_empty());
        assert_eq!(d.pending(), 1);
        for s in 8..12 {
            d.on_source(s, &payload(s));
        }
        let mut got = d.on_repair(r2.first, r2.count, r2.key, &r2.payload, 2);
        got.sort_by_key(|g| g.0);
        assert_eq!(got, vec![(2, payload(2)), (5, payload(5))]);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn a_late_source_packet_completes_an_equation() {
        // 3 and 4 lost, one repair; 4 then arrives (late, or retransmitted): 3 is rebuilt.
        let mut e = encoder(0..6);
        let r = e.repair(0).unwrap();
        let mut d = WindowDecoder::default();
        for s in [0, 1, 2, 5] {
            d.on_source(s, &payload(s));
        }
        assert!(d
            .on_repair(r.first, r.count, r.key, &r.payload, 3)
            .is_empty());
        assert_eq!(d.on_source(4, &payload(4)), vec![(3, payload(3))]);
    }

    #[test]
    fn the_window_starts_where_asked_and_forgets_acknowledged_segments() {
        let mut e = encoder(0..300);
        // Only the newest MAX_WINDOW are kept.
        let r = e.repair(0).unwrap();
        assert_eq!(
            (r.first, r.count as usize),
            (300 - MAX_WINDOW as u64, MAX_WINDOW)
        );
        let r = e.repair(290).unwrap();
        assert_eq!((r.first, r.count), (290, 10));
        e.forget_below(295);
        assert_eq!(e.repair(0).unwrap().first, 295);
        // A gap in the segments (a FIN took a number) starts the window anew.
        e.add(301, &payload(301));
        assert_eq!(e.repair(0).unwrap().first, 301);
        assert!(e.repair(400).is_none());
    }

    #[test]
    fn random_losses_are_rebuilt_exactly_when_enough_repairs_cover_them() {
        // A stream of 2000 segments, a repair after every 4 over the last 16, 5 % of
        // source and repair packets lost at random. Every rebuilt segment must be
        // byte-exact, and nearly every loss must be rebuilt.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut lost = |pct: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 100 < pct
        };
        let mut e = WindowEncoder::default();
        let mut d = WindowDecoder::default();
        let mut have = std::collections::BTreeSet::new();
        let (mut losses, mut rebuilt) = (0, 0);
        for s in 0..2000u64 {
            e.add(s, &payload(s));
            if lost(5) {
                losses += 1;
            } else {
                have.insert(s);
                for (seg, p) in d.on_source(s, &payload(s)) {
                    assert_eq!(p, payload(seg));
                    assert!(have.insert(seg));
                    rebuilt += 1;
                }
            }
            if s % 4 == 3 && !lost(5) {
                let r = e.repair(s.saturating_sub(15)).unwrap();
                let rcv_nxt = (0..).find(|n| !have.contains(n)).unwrap();
                for (seg, p) in d.on_repair(r.first, r.count, r.key, &r.payload, rcv_nxt) {
                    assert_eq!(p, payload(seg));
                    assert!(have.insert(seg), "rebuilt {seg} twice");
                    rebuilt += 1;
                }
            }
        }
        assert!(
            rebuilt * 100 >= losses * 95,
            "{rebuilt} of {losses} rebuilt"
        );
    }

    #[test]
    fn malformed_repairs_rebuild_nothing() {
        let mut d = WindowDecoder::default();
        d.on_source(0, &payload(0));
        for (first, count, body) in [
            (1u64, 0u16, vec![0u8; 8]),
            (1, (MAX_WINDOW + 1) as u16, vec![0; 8]),
            (u64::MAX, 2, vec![0; 8]),
            (1, 1, vec![0]),
        ] {
            assert!(d.on_repair(first, count, 0, &body, 1).is_empty());
        }
        // A symbol whose length field exceeds it: solved, but nothing delivered.
        assert!(d.on_repair(1, 1, 0, &[0xff, 0xff, 1, 2], 1).is_empty());
        assert_eq!(d.stats.recovered, 0);
    }
}
