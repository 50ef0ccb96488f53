//! Receiver side: keeps each group's received members and rebuilds the missing ones when
//! enough repairs are there (XOR for groups of one repair, Reed-Solomon beyond); answers
//! whether a gap can still be repaired (for duplicate-ACK suppression, S4).

use super::rs::RsCache;
use super::xor::XorAccumulator;
use crate::wire::{FecGroup, RepairInfo};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Groups whose first member lies this many groups back are still searched for members.
const MEMBER_SEARCH_DEPTH: usize = 64;

#[derive(Debug)]
struct GroupRx {
    group: FecGroup,
    received: Vec<u64>,
    n_received: u32,
    /// The members received, by index. Kept rather than XORed as they arrive, for XOR
    /// groups too: most groups lose nothing, and their members are then never read (a
    /// running XOR cost a pass over every payload received, 4 % of a simulated `auto`
    /// flow), and a group closed early drops the segments it counted beyond its end.
    members: Vec<Option<Bytes>>,
    /// Repair payloads by index (XOR: one, with its length XOR).
    repairs: Vec<Option<(Bytes, u16)>>,
    n_repairs: u32,
    failed_counted: bool,
}

impl GroupRx {
    fn new(group: FecGroup) -> Self {
        GroupRx {
            group,
            received: vec![0; (group.count as usize).div_ceil(64)],
            n_received: 0,
            members: vec![None; group.count as usize],
            repairs: vec![None; group.repairs.max(1) as usize],
            n_repairs: 0,
            failed_counted: false,
        }
    }

    fn has(&self, i: usize) -> bool {
        self.received
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    fn missing(&self) -> u32 {
        self.group.count as u32 - self.n_received.min(self.group.count as u32)
    }

    /// A decode could rebuild something: a repair has come and a member is missing.
    fn may_rebuild(&self) -> bool {
        self.n_repairs > 0 && self.missing() > 0
    }

    /// Members at or below `highest` not received.
    fn missing_up_to(&self, highest: u64) -> u32 {
        (0..self.group.count as usize)
            .take_while(|&i| self.group.first + i as u64 * self.group.stride as u64 <= highest)
            .filter(|&i| !self.has(i))
            .count() as u32
    }

    fn add_member(&mut self, i: usize, payload: &Bytes) {
        self.received[i / 64] |= 1 << (i % 64);
        self.n_received += 1;
        self.members[i] = Some(payload.clone());
    }

    /// Shrinks the group to the member count a repair announces (a group closed early):
    /// segments counted beyond it were no members.
    fn truncate(&mut self, count: u16) {
        if count >= self.group.count {
            return;
        }
        let strays = (count as usize..self.group.count as usize)
            .filter(|&i| self.has(i))
            .count() as u32;
        for i in count as usize..self.group.count as usize {
            self.received[i / 64] &= !(1 << (i % 64));
        }
        self.group.count = count;
        self.n_received -= strays;
        self.members.truncate(count as usize);
    }

    /// Can the group still rebuild its missing members, given the highest segment
    /// received? Also says whether it just failed for the first time (it is then marked,
    /// to be counted once).
    fn can_repair(&mut self, highest: u64) -> (bool, bool) {
        let repairable = if highest > self.group.last() {
            self.missing_up_to(highest) <= self.n_repairs
        } else if self.n_repairs > 0 {
            // A repair follows the group's last member: every member has been sent, and
            // those not here are lost.
            self.missing() <= self.group.repairs as u32
        } else {
            self.missing_up_to(highest) <= self.group.repairs as u32
        };
        let newly_failed = !repairable && !self.failed_counted;
        self.failed_counted |= newly_failed;
        (repairable, newly_failed)
    }

    /// The one missing member of an XOR group, rebuilt from its repair and the rest.
    fn rebuild_xor(&self) -> (u64, Bytes) {
        let (repair, len_xor) = self.repairs[0].as_ref().expect("one repair present");
        let mut acc = XorAccumulator::default();
        for m in self.members.iter().flatten() {
            acc.add(m);
        }
        let i = (0..self.group.count as usize)
            .find(|&i| !self.has(i))
            .expect("one missing");
        let seg = self.group.first + i as u64 * self.group.stride as u64;
        (seg, Bytes::from(acc.recover(repair, *len_xor)))
    }
}

/// What the decoder counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecoderStats {
    /// Repair packets handed to the decoder.
    pub repairs_received: u64,
    /// Repair packets whose group had lost nothing (or was already delivered).
    pub repairs_unneeded: u64,
    /// Segments rebuilt.
    pub recovered: u64,
    /// Groups that lost more members than they had repairs.
    pub unrecoverable_groups: u64,
    /// Groups that lost no data but whose repair never came (TCP-dFEC's "FEC lost").
    pub repairs_lost: u64,
}

/// Groups delivered in order whose repair has not arrived yet, kept this long at most.
const AWAITING_REPAIRS: usize = 256;

/// Groups rebuilt ahead of the in-order point remembered at most (`Decoder::rebuilt`):
/// more than a receive window of the largest groups.
const REBUILT_REMEMBERED: usize = 4096;

/// A group's key: its first member and its retransmission group number (0 for a group
/// of first transmissions), see `FecGroup::key`.
type GroupKey = (u64, u32);

/// The receiver's FEC decoder: every group it has heard of, by first member and
/// retransmission group number. Public so that the fuzz targets can feed it arrivals
/// directly; the engine owns one per stream.
#[derive(Debug, Default)]
pub struct Decoder {
    groups: BTreeMap<GroupKey, GroupRx>,
    rs: RsCache,
    /// Counters.
    pub stats: DecoderStats,
    /// (key, last member) of groups delivered without their repair, oldest first. A
    /// repair follows its group's last member, so once a segment two places later has
    /// arrived the repair is counted lost.
    awaiting_repair: std::collections::VecDeque<(GroupKey, u64)>,
    highest_source: u64,
    /// (key, last member) of groups rebuilt and forgotten while an earlier hole keeps the
    /// in-order point below them. Their remaining repairs are surplus; without this record
    /// each one opened an empty group that counted as unrecoverable, so one failed group
    /// made every group rebuilt behind it (a round trip of them) report failure too.
    rebuilt: BTreeMap<GroupKey, u64>,
    /// Groups may overlap (protected retransmissions form groups of their own): a segment
    /// counts in every group that holds it, and a rebuilt one in the others too.
    overlapping: bool,
}

/// At most this many groups are searched for one segment when groups overlap.
const MAX_OVERLAP: usize = 4;

/// Segments rebuilt by one call: (segment number, payload).
pub type Rebuilt = Vec<(u64, Bytes)>;

impl Decoder {
    /// A decoder for senders whose groups overlap (see `FecConfig::protect_retransmissions`).
    pub fn with_overlapping_groups() -> Self {
        Decoder {
            overlapping: true,
            ..Decoder::default()
        }
    }

    /// Visits the groups holding `seg`, nearest first, with their index of it, and
    /// returns how many there were. Without overlapping groups a segment has one, and the
    /// search stops there; with them, up to [`MAX_OVERLAP`]: groups of retransmissions,
    /// and one group of first transmissions. Those never overlap, and the nearest one
    /// that claims `seg` is its own: a group further back claims it only if it was closed
    /// early and its repair, which says so, has not arrived yet. The groups are visited
    /// where the search finds them, not looked up again.
    fn visit_groups_holding(
        &mut self,
        seg: u64,
        mut visit: impl FnMut(GroupKey, usize, &mut GroupRx),
    ) -> usize {
        let limit = if self.overlapping { MAX_OVERLAP } else { 1 };
        let mut n = 0;
        let mut original_found = false;
        let candidates = self.groups.range_mut(..=(seg, u32::MAX)).rev();
        for (&k, g) in candidates.take(MEMBER_SEARCH_DEPTH) {
            let original = k.1 == 0;
            if original && original_found {
                continue;
            }
            if let Some(i) = g.group.index_of(seg) {
                original_found |= original;
                visit(k, i, g);
                n += 1;
                if n == limit {
                    break;
                }
            }
        }
        n
    }

    /// Adds `seg` to the groups holding it that lack it; appends what they rebuild to
    /// `out` (once: two overlapping groups may rebuild the same segment).
    fn add_to_groups(&mut self, seg: u64, payload: &Bytes, out: &mut Rebuilt) {
        // A decode reads only its own group, so every group takes the segment first and
        // those that may rebuild something decode after, in the same order.
        let mut may_rebuild = [(0, 0); MAX_OVERLAP];
        let mut n = 0;
        self.visit_groups_holding(seg, |key, i, g| {
            if g.has(i) {
                return;
            }
            g.add_member(i, payload);
            // Most arrivals rebuild nothing: `try_decode`'s lookup is spared them.
            if g.may_rebuild() {
                may_rebuild[n] = key;
                n += 1;
            }
        });
        for &key in &may_rebuild[..n] {
            for r in self.try_decode(key) {
                if out.iter().all(|(s, _)| *s != r.0) {
                    out.push(r);
                }
            }
        }
    }

    /// With overlapping groups, feeds every segment rebuilt so far (and what follows
    /// from it) to the other groups holding it.
    fn cascade(&mut self, out: &mut Rebuilt) {
        if !self.overlapping {
            return;
        }
        let mut i = 0;
        while i < out.len() {
            let (seg, payload) = out[i].clone();
            self.add_to_groups(seg, &payload, out);
            i += 1;
        }
    }

    /// A source segment arrived (original or retransmission; `fec` is its group option, if
    /// it carried one). Returns the segments rebuilt thanks to it.
    pub fn on_source(&mut self, seg: u64, fec: Option<FecGroup>, payload: &Bytes) -> Rebuilt {
        self.highest_source = self.highest_source.max(seg);
        while let Some(&(_, last)) = self.awaiting_repair.front() {
            if last.saturating_add(1) >= self.highest_source {
                break;
            }
            self.awaiting_repair.pop_front();
            self.stats.repairs_lost += 1;
        }
        if let Some(g) = fec {
            if g.index_of(seg).is_some() {
                self.groups
                    .entry(g.key())
                    .or_insert_with(|| GroupRx::new(g));
            }
        }
        let mut out = Vec::new();
        self.add_to_groups(seg, payload, &mut out);
        self.cascade(&mut out);
        out
    }

    /// A repair packet arrived. `rcv_nxt` is the next in-order segment the receiver expects.
    pub fn on_repair(
        &mut self,
        group: FecGroup,
        info: RepairInfo,
        payload: Bytes,
        rcv_nxt: u64,
    ) -> Rebuilt {
        self.stats.repairs_received += 1;
        if let Some(i) = self
            .awaiting_repair
            .iter()
            .position(|&(key, _)| key == group.key())
        {
            self.awaiting_repair.remove(i);
        }
        let known = self.groups.contains_key(&group.key());
        if !known && (group.last() < rcv_nxt || self.rebuilt.contains_key(&group.key())) {
            self.stats.repairs_unneeded += 1; // everything it protects is here already
            return Vec::new();
        }
        let g = self
            .groups
            .entry(group.key())
            .or_insert_with(|| GroupRx::new(group));
        g.truncate(group.count);
        let idx = info.index as usize;
        if idx >= g.repairs.len() || g.repairs[idx].is_some() {
            return Vec::new();
        }
        g.repairs[idx] = Some((payload, info.len_xor));
        g.n_repairs += 1;
        if g.missing() == 0 {
            self.stats.repairs_unneeded += 1;
            if g.n_repairs as usize == g.repairs.len() {
                self.groups.remove(&group.key());
            }
            return Vec::new();
        }
        let mut out = self.try_decode(group.key());
        self.cascade(&mut out);
        out
    }

    fn try_decode(&mut self, key: GroupKey) -> Rebuilt {
        let Some(g) = self.groups.get_mut(&key) else {
            return Vec::new();
        };
        if !g.may_rebuild() {
            return Vec::new();
        }
        let missing = g.missing();
        if missing > g.n_repairs {
            if missing > g.group.repairs as u32 && !g.failed_counted {
                g.failed_counted = true;
                self.stats.unrecoverable_groups += 1;
            }
            return Vec::new();
        }
        let rebuilt: Rebuilt = if g.group.repairs <= 1 {
            vec![g.rebuild_xor()]
        } else {
            let repairs: Vec<Option<Bytes>> = g
                .repairs
                .iter()
                .map(|r| r.as_ref().map(|r| r.0.clone()))
                .collect();
            match self.rs.decode(&g.members, &repairs) {
                Some(v) => v
                    .into_iter()
                    .map(|(i, p)| (g.group.first + i as u64 * g.group.stride as u64, p))
                    .collect(),
                None => return Vec::new(),
            }
        };
        self.stats.recovered += rebuilt.len() as u64;
        if let Some(g) = self.groups.remove(&key) {
            if g.n_repairs < g.group.repairs as u32 {
                if self.rebuilt.len() == REBUILT_REMEMBERED {
                    self.rebuilt.pop_first();
                }
                self.rebuilt.insert(key, g.group.last());
            }
        }
        rebuilt
    }

    /// Can the gap at segment `seg` still be repaired by FEC, given that `highest` is the
    /// highest segment received? No when the segment is in no known group, when its group
    /// misses more members than it has repairs, or when the group's repairs should have
    /// arrived (a segment sent after them has) but too few did.
    pub fn gap_repairable(&mut self, seg: u64, highest: u64) -> bool {
        // Every group is asked, so each one that fails is counted.
        let mut any = false;
        let mut unrecoverable = 0;
        let n = self.visit_groups_holding(seg, |_, _, g| {
            let (repairable, newly_failed) = g.can_repair(highest);
            any |= repairable;
            unrecoverable += newly_failed as u64;
        });
        self.stats.unrecoverable_groups += unrecoverable;
        if n == 0 {
            return self.unseen_lane_repairable(seg, highest);
        }
        any
    }

    /// A gap at `seg` in no known group may be the first member of an interleaved group
    /// none of whose members has arrived yet: a block of `s` groups sends the first member
    /// of every group before the second of any, so after a lost first member up to `s − 1`
    /// members of the sibling groups arrive before anything of its own. It is taken for
    /// one when a known group with stride `s > 1` starts less than `s` segments away, and
    /// stays repairable while its second member (`seg + s`) is not yet due; once that is
    /// due and still no member has arrived, two are missing.
    fn unseen_lane_repairable(&self, seg: u64, highest: u64) -> bool {
        // Groups of retransmissions are never interleaved: only the nearest groups of
        // first transmissions on either side tell.
        let original = |(k, _): &(&GroupKey, &GroupRx)| k.1 == 0;
        let below = self.groups.range(..(seg, 0)).rev().find(original);
        let above = self.groups.range((seg, 0)..).find(original);
        [below, above].into_iter().flatten().any(|(_, g)| {
            let s = g.group.stride as u64;
            s > 1 && g.group.first.abs_diff(seg) < s && seg + s > highest
        })
    }

    /// Forgets groups all of whose members lie below `rcv_nxt` (delivered in order).
    pub fn forget_below(&mut self, rcv_nxt: u64) {
        // In key order the last members grow too (a retransmission group that does not
        // fit waits for the next call, or for the cap).
        while let Some((_, &last)) = self.rebuilt.first_key_value() {
            if last >= rcv_nxt {
                break;
            }
            self.rebuilt.pop_first();
        }
        while let Some((&k, g)) = self.groups.first_key_value() {
            if g.group.last() >= rcv_nxt {
                break;
            }
            if g.n_repairs == 0 && !g.failed_counted {
                if self.awaiting_repair.len() == AWAITING_REPAIRS {
                    self.awaiting_repair.pop_front();
                }
                self.awaiting_repair.push_back((k, g.group.last()));
            }
            self.groups.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fec::xor::XorAccumulator;

    fn group(first: u64, count: u16) -> FecGroup {
        strided(first, count, 1)
    }

    /// An XOR group of `count` members `stride` apart from `first`.
    fn strided(first: u64, count: u16, stride: u16) -> FecGroup {
        FecGroup {
            retransmission_group: 0,
            repairs: 1,
            first,
            count,
            stride,
        }
    }

    fn payload(seg: u64) -> Bytes {
        Bytes::from(vec![seg as u8; 5 + seg as usize])
    }

    fn repair_for(g: FecGroup) -> (RepairInfo, Bytes) {
        let mut acc = XorAccumulator::default();
        for i in 0..g.count as u64 {
            acc.add(&payload(g.first + i * g.stride as u64));
        }
        (
            RepairInfo {
                len_xor: acc.len_xor(),
                index: 0,
                total: 1,
            },
            Bytes::copy_from_slice(acc.bytes()),
        )
    }

    #[test]
    fn one_loss_is_rebuilt_two_are_not_until_a_retransmission() {
        let g = group(10, 4);
        let (info, rep) = repair_for(g);
        let mut d = Decoder::default();
        d.on_source(10, Some(g), &payload(10));
        d.on_source(12, Some(g), &payload(12));
        assert!(d.gap_repairable(11, 12));
        // 11 and 13 missing: the repair alone cannot help.
        assert!(d.on_repair(g, info, rep, 10).is_empty());
        assert_eq!(d.stats.unrecoverable_groups, 1);
        assert!(!d.gap_repairable(11, 13));
        // A retransmission of 13 (no group option) leaves one missing: rebuilt now.
        let got = d.on_source(13, None, &payload(13));
        assert_eq!(got, vec![(11, payload(11))]);
        assert_eq!(d.stats.recovered, 1);
    }

    #[test]
    fn a_lost_first_member_of_an_interleaved_group_is_repairable_before_its_group_is_seen() {
        // A block of 4 interleaved groups of 3 over segments 100..112: group j holds
        // 100 + j, 104 + j, 108 + j. Segment 100 is lost; 101, 102, 103 arrive first.
        let g = |j: u64| strided(100 + j, 3, 4);
        let mut d = Decoder::default();
        for j in 1..4 {
            d.on_source(100 + j, Some(g(j)), &payload(100 + j));
            assert!(d.gap_repairable(100, 100 + j), "after {}", 100 + j);
        }
        // 104, group 0's second member, arrives: its group is known now, one missing.
        d.on_source(104, Some(g(0)), &payload(104));
        assert!(d.gap_repairable(100, 104));
        // Had 104 been lost too, the arrival of 105 shows two missing in a group never seen.
        let mut d = Decoder::default();
        for j in 1..4 {
            d.on_source(100 + j, Some(g(j)), &payload(100 + j));
        }
        d.on_source(105, Some(g(1)), &payload(105));
        assert!(!d.gap_repairable(100, 105));
        // Without interleaving a gap in no known group is no repairable one.
        let mut d = Decoder::default();
        d.on_source(101, Some(group(101, 3)), &payload(101));
        assert!(!d.gap_repairable(100, 101));
    }

    /// A group of retransmissions numbered `n` over `first..first + count`.
    fn retransmissions(first: u64, count: u16, n: u32) -> FecGroup {
        FecGroup {
            retransmission_group: n,
            ..group(first, count)
        }
    }

    #[test]
    fn a_retransmission_group_rebuilds_a_lost_retransmission_and_its_original_group() {
        // Group 10..14 loses 11 and 13: its repair cannot help. 11 is retransmitted in a
        // group of its own (one member) and lost again; that group's repair rebuilds 11,
        // which leaves group 10 one short, so its repair rebuilds 13 as well.
        let g = group(10, 4);
        let (info, rep) = repair_for(g);
        let mut d = Decoder::with_overlapping_groups();
        d.on_source(10, Some(g), &payload(10));
        d.on_source(12, Some(g), &payload(12));
        assert!(d.on_repair(g, info, rep, 10).is_empty());
        let r = retransmissions(11, 1, 1);
        let (rinfo, rrep) = repair_for(r);
        let mut got = d.on_repair(r, rinfo, rrep, 10);
        got.sort_by_key(|(s, _)| *s);
        assert_eq!(got, vec![(11, payload(11)), (13, payload(13))]);
        // A retransmission that arrives counts in its original group too: 12 and 13 lost,
        // 13's retransmission (its own group) arrives, and group 10 rebuilds 12.
        let (info, rep) = repair_for(g);
        let mut d = Decoder::with_overlapping_groups();
        d.on_source(10, Some(g), &payload(10));
        d.on_source(11, Some(g), &payload(11));
        assert!(d.on_repair(g, info, rep, 10).is_empty());
        let got = d.on_source(13, Some(retransmissions(13, 1, 1)), &payload(13));
        assert_eq!(got, vec![(12, payload(12))]);
    }

    #[test]
    fn groups_that_start_at_the_same_segment_stay_apart() {
        // The interleaved group {5, 7} and a group of retransmissions {5, 6} both start at
        // 5. 7 arrives; the retransmission group's repair, with 6 lost as well, must
        // rebuild nothing: applied to {5, 7} it would make 5 out of 5 ^ 6 ^ 7.
        let il = strided(5, 2, 2);
        let rtx = retransmissions(5, 2, 1);
        let mut d = Decoder::with_overlapping_groups();
        d.on_source(7, Some(il), &payload(7));
        let (info, rep) = repair_for(rtx);
        assert!(d.on_repair(rtx, info, rep, 5).is_empty());
        // 6 arrives: the retransmission group rebuilds 5, which completes {5, 7} too.
        assert_eq!(
            d.on_source(6, Some(rtx), &payload(6)),
            vec![(5, payload(5))]
        );
        // A second retransmission of 5 in a new group (number 2) is a group of its own.
        let again = retransmissions(5, 1, 2);
        let (info, rep) = repair_for(again);
        let got = d.on_repair(again, info, rep, 5);
        assert_eq!(got, vec![(5, payload(5))]);
    }

    #[test]
    fn a_group_closed_early_drops_a_segment_that_was_no_member() {
        // Group 0 announces 8 members but is closed after 0, 1, 2; 3 opens the next group.
        // 1 is lost, and 3 arrives before anything of its own group (a retransmission
        // without a group option), so group 0 takes it for a member. The repair (3
        // members) drops it again and rebuilds 1 from 0 and 2 alone.
        let announced = group(0, 8);
        let mut d = Decoder::default();
        d.on_source(0, Some(announced), &payload(0));
        d.on_source(2, Some(announced), &payload(2));
        d.on_source(3, None, &payload(3));
        let (info, rep) = repair_for(group(0, 3));
        assert_eq!(
            d.on_repair(group(0, 3), info, rep, 0),
            vec![(1, payload(1))]
        );
        assert_eq!(d.stats.unrecoverable_groups, 0);
        // So does a Reed-Solomon group.
        let rs = |count| FecGroup {
            repairs: 2,
            ..group(0, count)
        };
        let mut d = Decoder::default();
        for seg in [0, 2, 3] {
            d.on_source(seg, Some(rs(8)), &payload(seg));
        }
        let mut enc = crate::fec::rs::RsCache::default();
        let parity = enc
            .encode(&[payload(0), payload(1), payload(2)], 2)
            .expect("encodes");
        let info = RepairInfo {
            len_xor: 0,
            index: 0,
            total: 2,
        };
        let got = d.on_repair(rs(3), info, Bytes::from(parity[0].clone()), 0);
        assert_eq!(got, vec![(1, payload(1))]);
    }

    #[test]
    fn the_surplus_repairs_of_a_rebuilt_group_behind_a_hole_are_unneeded() {
        // Group 10..13 (Reed-Solomon, 2 repairs) loses 11 and is rebuilt from its first
        // repair while an earlier hole keeps the in-order point at 5. Its second repair
        // then finds the group forgotten: it protects nothing. Taken for a new group
        // none of whose members arrived, it counted as unrecoverable, and every group
        // rebuilt behind one that failed reported a failure of its own.
        let g = FecGroup {
            repairs: 2,
            ..group(10, 3)
        };
        let mut d = Decoder::default();
        d.on_source(10, Some(g), &payload(10));
        d.on_source(12, Some(g), &payload(12));
        let mut enc = crate::fec::rs::RsCache::default();
        let parity = enc
            .encode(&[payload(10), payload(11), payload(12)], 2)
            .expect("encodes");
        let info = |index| RepairInfo {
            len_xor: 0,
            index,
            total: 2,
        };
        let got = d.on_repair(g, info(0), Bytes::from(parity[0].clone()), 5);
        assert_eq!(got, vec![(11, payload(11))]);
        assert!(d
            .on_repair(g, info(1), Bytes::from(parity[1].clone()), 5)
            .is_empty());
        assert_eq!(d.stats.unrecoverable_groups, 0);
        assert_eq!(d.stats.repairs_unneeded, 1);
        // Once the in-order point passes the group, it is forgotten for good.
        d.forget_below(13);
        assert!(d.rebuilt.is_empty());
    }

    #[test]
    fn a_repair_for_a_complete_group_is_unneeded() {
        let g = group(0, 3);
        let (info, rep) = repair_for(g);
        let mut d = Decoder::default();
        for s in 0..3 {
            d.on_source(s, Some(g), &payload(s));
        }
        assert!(d.on_repair(g, info, rep, 3).is_empty());
        assert_eq!(d.stats.repairs_unneeded, 1);
        assert_eq!(d.stats.recovered, 0);
    }

    #[test]
    fn missing_repair_makes_the_gap_unrepairable_once_later_data_arrives() {
        let g = group(0, 3);
        let mut d = Decoder::default();
        d.on_source(0, Some(g), &payload(0));
        d.on_source(2, Some(g), &payload(2));
        assert!(d.gap_repairable(1, 2));
        // Segment 3 was sent after the repair of group 0: the repair is lost.
        d.on_source(3, Some(group(3, 3)), &payload(3));
        assert!(!d.gap_repairable(1, 3));
    }

    #[test]
    fn a_lost_repair_of_a_complete_group_is_counted_once_later_data_arrives() {
        let mut d = Decoder::default();
        for seg in 0..3 {
            d.on_source(seg, Some(group(0, 3)), &payload(seg));
        }
        d.forget_below(3); // delivered in order, repair not seen
        d.on_source(3, Some(group(3, 3)), &payload(3));
        assert_eq!(
            d.stats.repairs_lost, 0,
            "the repair may still be on its way"
        );
        d.on_source(4, Some(group(3, 3)), &payload(4));
        assert_eq!(d.stats.repairs_lost, 1);
        // A repair that arrives late is not counted lost.
        let mut d = Decoder::default();
        for seg in 0..3 {
            d.on_source(seg, Some(group(0, 3)), &payload(seg));
        }
        d.forget_below(3);
        let (info, p) = repair_for(group(0, 3));
        d.on_repair(group(0, 3), info, p, 3);
        d.on_source(4, Some(group(3, 3)), &payload(4));
        assert_eq!(d.stats.repairs_lost, 0);
    }
}
