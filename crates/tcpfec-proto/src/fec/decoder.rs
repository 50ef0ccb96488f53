//! Receiver side: tracks each group's received members as a running XOR and rebuilds the one
//! missing member when the repair packet is there; answers whether a gap can still be
//! repaired (for duplicate-ACK suppression, S4).

use super::rs::RsCache;
use super::xor::XorAccumulator;
use crate::wire::{FecGroup, RepairInfo};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Groups whose first member lies this many groups back are still searched for members.
const MEMBER_SEARCH_DEPTH: usize = 64;

/// What a group keeps of its received members.
#[derive(Debug)]
enum Received {
    /// XOR: the running XOR of the members received.
    Xor(XorAccumulator),
    /// Reed-Solomon: the members themselves.
    Rs(Vec<Option<Bytes>>),
}

#[derive(Debug)]
struct GroupRx {
    group: FecGroup,
    received: Vec<u64>,
    n_received: u32,
    data: Received,
    /// Repair payloads by index (XOR: one, with its length XOR).
    repairs: Vec<Option<(Bytes, u16)>>,
    n_repairs: u32,
    failed_counted: bool,
}

impl GroupRx {
    fn new(group: FecGroup) -> Self {
        let data = if group.repairs <= 1 {
            Received::Xor(XorAccumulator::default())
        } else {
            Received::Rs(vec![None; group.count as usize])
        };
        GroupRx {
            group,
            received: vec![0; (group.count as usize).div_ceil(64)],
            n_received: 0,
            data,
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
        match &mut self.data {
            Received::Xor(acc) => acc.add(payload),
            Received::Rs(v) => v[i] = Some(payload.clone()),
        }
    }

    /// Shrinks the group to the member count a repair announces (a flushed group).
    fn truncate(&mut self, count: u16) {
        if count < self.group.count {
            self.group.count = count;
            if let Received::Rs(v) = &mut self.data {
                v.truncate(count as usize);
            }
        }
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

/// The receiver's FEC decoder: every group it has heard of, by first member. Public so
/// that the fuzz targets can feed it arrivals directly; the engine owns one per stream.
#[derive(Debug, Default)]
pub struct Decoder {
    groups: BTreeMap<u64, GroupRx>,
    rs: RsCache,
    /// Counters.
    pub stats: DecoderStats,
    /// (first, last) of groups delivered without their repair, oldest first. A repair
    /// follows its group's last member, so once a segment two places later has arrived
    /// the repair is counted lost.
    awaiting_repair: std::collections::VecDeque<(u64, u64)>,
    highest_source: u64,
}

/// Segments rebuilt by one call: (segment number, payload).
pub type Rebuilt = Vec<(u64, Bytes)>;

impl Decoder {
    fn find_member(&mut self, seg: u64) -> Option<(u64, usize)> {
        self.groups
            .range(..=seg)
            .rev()
            .take(MEMBER_SEARCH_DEPTH)
            .find_map(|(&k, g)| g.group.index_of(seg).map(|i| (k, i)))
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
                    .entry(g.first)
                    .or_insert_with(|| GroupRx::new(g));
            }
        }
        let Some((key, i)) = self.find_member(seg) else {
            return Vec::new();
        };
        let g = self.groups.get_mut(&key).expect("found");
        if g.has(i) {
            return Vec::new();
        }
        g.add_member(i, payload);
        self.try_decode(key)
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
            .position(|&(first, _)| first == group.first)
        {
            self.awaiting_repair.remove(i);
        }
        if group.last() < rcv_nxt && !self.groups.contains_key(&group.first) {
            self.stats.repairs_unneeded += 1; // everything it protects has arrived already
            return Vec::new();
        }
        let g = self
            .groups
            .entry(group.first)
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
                self.groups.remove(&group.first);
            }
            return Vec::new();
        }
        self.try_decode(group.first)
    }

    fn try_decode(&mut self, key: u64) -> Rebuilt {
        let Some(g) = self.groups.get_mut(&key) else {
            return Vec::new();
        };
        let missing = g.missing();
        if missing == 0 || g.n_repairs == 0 {
            return Vec::new();
        }
        if missing > g.n_repairs {
            if missing > g.group.repairs as u32 && !g.failed_counted {
                g.failed_counted = true;
                self.stats.unrecoverable_groups += 1;
            }
            return Vec::new();
        }
        let rebuilt: Rebuilt = match &g.data {
            Received::Xor(acc) => {
                let (repair, len_xor) = g.repairs[0].as_ref().expect("one repair present");
                let i = (0..g.group.count as usize)
                    .find(|&i| !g.has(i))
                    .expect("one missing");
                let seg = g.group.first + i as u64 * g.group.stride as u64;
                vec![(seg, Bytes::from(acc.recover(repair, *len_xor)))]
            }
            Received::Rs(data) => {
                let repairs: Vec<Option<Bytes>> = g
                    .repairs
                    .iter()
                    .map(|r| r.as_ref().map(|r| r.0.clone()))
                    .collect();
                match self.rs.decode(data, &repairs) {
                    Some(v) => v
                        .into_iter()
                        .map(|(i, p)| (g.group.first + i as u64 * g.group.stride as u64, p))
                        .collect(),
                    None => return Vec::new(),
                }
            }
        };
        self.stats.recovered += rebuilt.len() as u64;
        self.groups.remove(&key);
        rebuilt
    }

    /// Can the gap at segment `seg` still be repaired by FEC, given that `highest` is the
    /// highest segment received? No when the segment is in no known group, when its group
    /// misses more members than it has repairs, or when the group's repairs should have
    /// arrived (a segment sent after them has) but too few did.
    pub fn gap_repairable(&mut self, seg: u64, highest: u64) -> bool {
        let Some((key, _)) = self.find_member(seg) else {
            return self.unseen_lane_repairable(seg, highest);
        };
        let g = self.groups.get_mut(&key).expect("found");
        let repairable = if highest > g.group.last() {
            g.missing_up_to(highest) <= g.n_repairs
        } else if g.n_repairs > 0 {
            // A repair follows the group's last member: every member has been sent, and
            // those not here are lost.
            g.missing() <= g.group.repairs as u32
        } else {
            g.missing_up_to(highest) <= g.group.repairs as u32
        };
        if !repairable && !g.failed_counted {
            g.failed_counted = true;
            self.stats.unrecoverable_groups += 1;
        }
        repairable
    }

    /// A gap at `seg` in no known group may be the first member of an interleaved group
    /// none of whose members has arrived yet: a block of `s` groups sends the first member
    /// of every group before the second of any, so after a lost first member up to `s − 1`
    /// members of the sibling groups arrive before anything of its own. It is taken for
    /// one when a known group with stride `s > 1` starts less than `s` segments away, and
    /// stays repairable while its second member (`seg + s`) is not yet due; once that is
    /// due and still no member has arrived, two are missing.
    fn unseen_lane_repairable(&self, seg: u64, highest: u64) -> bool {
        let below = self.groups.range(..seg).next_back();
        let above = self.groups.range(seg..).next();
        [below, above].into_iter().flatten().any(|(_, g)| {
            let s = g.group.stride as u64;
            s > 1 && g.group.first.abs_diff(seg) < s && seg + s > highest
        })
    }

    /// Forgets groups all of whose members lie below `rcv_nxt` (delivered in order).
    pub fn forget_below(&mut self, rcv_nxt: u64) {
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
