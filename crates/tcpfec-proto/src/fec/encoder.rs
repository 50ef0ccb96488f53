//! Sender side: assigns each newly sent segment to a group and produces the repair packets
//! when the group is complete (or when the sender runs out of data).

use super::policy::GroupPolicy;
use super::rs::{RsCache, MAX_SHARDS};
use super::xor::XorAccumulator;
use crate::wire::{FecGroup, RepairInfo};
use bytes::Bytes;
use std::collections::VecDeque;

/// A repair packet ready to send.
#[derive(Debug, Clone)]
pub(crate) struct RepairOut {
    pub group: FecGroup,
    pub info: RepairInfo,
    pub payload: Bytes,
}

/// What a group keeps until it is closed: a running XOR (one repair) or the payloads
/// themselves (Reed-Solomon, several repairs; `Bytes` clones share the memory).
#[derive(Debug, Clone)]
enum GroupData {
    Xor(XorAccumulator),
    Rs(Vec<Bytes>),
}

impl GroupData {
    fn new(repairs: u8) -> Self {
        if repairs <= 1 {
            GroupData::Xor(XorAccumulator::default())
        } else {
            GroupData::Rs(Vec::new())
        }
    }

    fn add(&mut self, payload: &Bytes) {
        match self {
            GroupData::Xor(acc) => acc.add(payload),
            GroupData::Rs(v) => v.push(payload.clone()),
        }
    }

    fn members(&self) -> usize {
        match self {
            GroupData::Xor(acc) => acc.members() as usize,
            GroupData::Rs(v) => v.len(),
        }
    }
}

/// `groups` interleaved groups opened together over segments `[base, base + groups·count)`.
#[derive(Debug)]
struct Block {
    base: u64,
    count: u16,
    groups: u16,
    /// Repair packets per group, fixed when the block opens.
    repairs: u8,
    data: Vec<GroupData>,
    closed: Vec<bool>,
}

impl Block {
    fn end(&self) -> u64 {
        self.base + self.groups as u64 * self.count as u64
    }
}

/// A group of retransmissions: consecutive retransmissions of consecutive segments
/// `[first, first + count)` (see `FecConfig::protect_retransmissions`).
#[derive(Debug)]
struct RetransmissionGroup {
    /// Its number on the wire (`FecGroup::retransmission_group`, never 0).
    number: u32,
    first: u64,
    count: u16,
    repairs: u8,
    data: GroupData,
}

#[derive(Debug)]
pub(crate) struct Encoder {
    policy: GroupPolicy,
    repairs: u8,
    block: Option<Block>,
    retransmissions: Option<RetransmissionGroup>,
    /// Number of the last retransmission group opened.
    last_retransmission_group: u32,
    ready: VecDeque<RepairOut>,
    last_group_size: u16,
    rs: RsCache,
}

impl Encoder {
    /// An encoder making `repairs` repair packets per group (1: XOR, more: Reed-Solomon).
    pub fn new(policy: GroupPolicy, repairs: u8) -> Self {
        Encoder {
            policy,
            repairs: repairs.max(1),
            block: None,
            retransmissions: None,
            last_retransmission_group: 0,
            ready: VecDeque::new(),
            last_group_size: 0,
            rs: RsCache::default(),
        }
    }

    /// Changes the number of repair packets per group from the next block on (TCP-AFEC's
    /// and TCP-TFEC's redundancy).
    pub fn set_repairs(&mut self, repairs: u8) {
        self.repairs = repairs.max(1);
    }

    /// Changes how groups are sized from the next group on (TCP-dFEC's ratio control).
    pub fn set_policy(&mut self, policy: GroupPolicy) {
        self.policy = policy;
    }

    /// Members of a group opened at `cwnd`.
    pub fn group_size_at(&self, cwnd: f64) -> u16 {
        self.policy.shape(cwnd).0
    }

    /// Size of the most recently opened groups (for time series).
    pub fn group_size(&self) -> u16 {
        self.last_group_size
    }

    /// Redundancy of the next group, (K + k)/K with the current group size and repair count
    /// (Teshima's measure; 1 before any group).
    pub fn redundancy(&self) -> f64 {
        if self.last_group_size == 0 {
            return 1.0;
        }
        1.0 + self.repairs as f64 / self.last_group_size as f64
    }

    /// Adds a first transmission of segment `seg`; returns the group it belongs to.
    pub fn add(&mut self, seg: u64, payload: &Bytes, cwnd: f64) -> FecGroup {
        if self
            .block
            .as_ref()
            .is_none_or(|b| seg >= b.end() || seg < b.base)
        {
            self.flush();
            let (mut count, groups) = self.policy.shape(cwnd);
            if self.repairs > 1 {
                // A Reed-Solomon group has at most 255 data + repair packets.
                count = count.min((MAX_SHARDS - self.repairs as usize) as u16);
            }
            self.last_group_size = count;
            self.block = Some(Block {
                base: seg,
                count,
                groups,
                repairs: self.repairs,
                data: vec![GroupData::new(self.repairs); groups as usize],
                closed: vec![false; groups as usize],
            });
        }
        let b = self.block.as_mut().expect("just opened");
        let repairs = b.repairs;
        let off = seg - b.base;
        let j = (off % b.groups as u64) as usize;
        let k = off / b.groups as u64;
        b.data[j].add(payload);
        let group = FecGroup {
            first: b.base + j as u64,
            count: b.count,
            stride: b.groups,
            repairs,
            retransmission_group: 0,
        };
        if k + 1 == b.count as u64 {
            b.closed[j] = true;
            let data = std::mem::replace(&mut b.data[j], GroupData::new(repairs));
            if b.closed.iter().all(|&c| c) {
                self.block = None;
            }
            self.emit(group, &data);
        }
        group
    }

    /// Adds a retransmission of segment `seg`, the first of `run` consecutive segments now
    /// due for retransmission; returns the group it joins. It continues the open
    /// retransmission group if it is that group's next segment, and otherwise opens one of
    /// `run` members (at most a group's size at `cwnd`) with `repairs_for(members)`
    /// repairs, or, if that is 0, sends the retransmission unprotected (`None`). A full
    /// group's repairs are ready at once.
    pub fn add_retransmission(
        &mut self,
        seg: u64,
        payload: &Bytes,
        run: u64,
        cwnd: f64,
        repairs_for: impl Fn(u16) -> u8,
    ) -> Option<FecGroup> {
        let continues = self.retransmissions.as_ref().is_some_and(|g| {
            let members = g.data.members() as u64;
            seg == g.first + members && members < g.count as u64
        });
        if !continues {
            self.flush_retransmissions();
            let (size, _) = self.policy.shape(cwnd);
            let mut count = run.clamp(1, size as u64) as u16;
            let repairs = repairs_for(count).min((MAX_SHARDS - 1) as u8);
            if repairs == 0 {
                return None;
            }
            if repairs > 1 {
                count = count.min((MAX_SHARDS - repairs as usize) as u16);
            }
            // Numbers wrap after 2³² − 1 groups, long after the receiver forgot number 1.
            self.last_retransmission_group = self.last_retransmission_group % u32::MAX + 1;
            self.retransmissions = Some(RetransmissionGroup {
                number: self.last_retransmission_group,
                first: seg,
                count,
                repairs,
                data: GroupData::new(repairs),
            });
        }
        let g = self.retransmissions.as_mut().expect("just opened");
        g.data.add(payload);
        let group = FecGroup {
            first: g.first,
            count: g.count,
            stride: 1,
            repairs: g.repairs,
            retransmission_group: g.number,
        };
        if g.data.members() == g.count as usize {
            let g = self.retransmissions.take().expect("present");
            self.emit(group, &g.data);
        }
        Some(group)
    }

    /// Repairs per block of first transmissions now.
    pub fn repairs(&self) -> u8 {
        self.repairs
    }

    /// Closes the open retransmission group early; its repairs name the true member count.
    pub fn flush_retransmissions(&mut self) {
        let Some(g) = self.retransmissions.take() else {
            return;
        };
        let group = FecGroup {
            first: g.first,
            count: g.data.members() as u16,
            stride: 1,
            repairs: g.repairs,
            retransmission_group: g.number,
        };
        self.emit(group, &g.data);
    }

    fn emit(&mut self, group: FecGroup, data: &GroupData) {
        match data {
            GroupData::Xor(acc) => self.ready.push_back(RepairOut {
                group,
                info: RepairInfo {
                    len_xor: acc.len_xor(),
                    index: 0,
                    total: 1,
                },
                payload: Bytes::copy_from_slice(acc.bytes()),
            }),
            GroupData::Rs(payloads) => {
                let m = group.repairs as usize;
                if let Some(parity) = self.rs.encode(payloads, m) {
                    for (i, shard) in parity.into_iter().enumerate() {
                        self.ready.push_back(RepairOut {
                            group,
                            info: RepairInfo {
                                len_xor: 0,
                                index: i as u8,
                                total: m as u8,
                            },
                            payload: Bytes::from(shard),
                        });
                    }
                }
            }
        }
    }

    /// Closes every open group early (the sender has no more data to send now), so the
    /// tail of a transfer is protected too. The repairs name the true member count.
    pub fn flush(&mut self) {
        self.flush_retransmissions();
        let Some(b) = self.block.take() else { return };
        for (j, data) in b.data.iter().enumerate() {
            if b.closed[j] || data.members() == 0 {
                continue;
            }
            let group = FecGroup {
                first: b.base + j as u64,
                count: data.members() as u16,
                stride: b.groups,
                repairs: b.repairs,
                retransmission_group: 0,
            };
            self.emit(group, data);
        }
    }

    /// The first segment of the open block of first transmissions, if one is open.
    pub fn open_block_base(&self) -> Option<u64> {
        self.block.as_ref().map(|b| b.base)
    }

    /// True if a group is open (a flush would produce repairs).
    pub fn has_open_group(&self) -> bool {
        self.block.is_some() || self.retransmissions.is_some()
    }

    /// Takes the next repair packet.
    pub fn pop_ready(&mut self) -> Option<RepairOut> {
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: &[u8]) -> Bytes {
        Bytes::copy_from_slice(v)
    }

    #[test]
    fn interleaved_members_go_round_robin_and_each_group_gets_a_repair() {
        let mut e = Encoder::new(
            GroupPolicy::Interleave {
                groups: 3,
                limit: 2,
            },
            1,
        );
        let mut groups = vec![];
        for seg in 0..6u64 {
            groups.push(e.add(seg, &b(&[seg as u8; 4]), 100.0));
        }
        assert_eq!(
            groups[0],
            FecGroup {
                first: 0,
                count: 2,
                stride: 3,
                repairs: 1,
                retransmission_group: 0,
            }
        );
        assert_eq!(groups[1].first, 1);
        assert_eq!(groups[3].first, 0);
        assert_eq!(groups[5].first, 2);
        let repairs: Vec<RepairOut> = std::iter::from_fn(|| e.pop_ready()).collect();
        assert_eq!(repairs.len(), 3);
        // Group 0 = segments 0 and 3.
        assert_eq!(&repairs[0].payload[..], &[3u8; 4]);
    }

    #[test]
    fn flush_closes_partial_groups_with_their_true_count() {
        let mut e = Encoder::new(GroupPolicy::Static(10), 1);
        e.add(0, &b(b"abc"), 20.0);
        e.add(1, &b(b"de"), 20.0);
        assert!(e.pop_ready().is_none());
        e.flush();
        let r = e.pop_ready().unwrap();
        assert_eq!(r.group.count, 2);
        assert_eq!(r.info.len_xor, 3 ^ 2);
    }

    #[test]
    fn reed_solomon_groups_get_m_repairs() {
        let mut e = Encoder::new(GroupPolicy::Static(8), 2);
        for seg in 0..8u64 {
            e.add(seg, &b(&[seg as u8; 30]), 20.0);
        }
        let repairs: Vec<RepairOut> = std::iter::from_fn(|| e.pop_ready()).collect();
        assert_eq!(repairs.len(), 2);
        assert_eq!((repairs[1].info.index, repairs[1].info.total), (1, 2));
        assert_eq!(
            repairs[0].payload.len(),
            32,
            "30 + 2 bytes of length parity"
        );
    }

    #[test]
    fn consecutive_retransmissions_form_a_group_and_a_broken_run_is_closed() {
        let mut e = Encoder::new(GroupPolicy::Static(8), 1);
        // Segments 5, 6 and 7 are due back to back: one group of three.
        let g5 = e.add_retransmission(5, &b(&[5]), 3, 10.0, |_| 1).unwrap();
        assert_eq!((g5.first, g5.count, g5.stride), (5, 3, 1));
        assert!(e.pop_ready().is_none());
        assert_eq!(
            e.add_retransmission(6, &b(&[6]), 2, 10.0, |_| 1).unwrap(),
            g5
        );
        assert_eq!(
            e.add_retransmission(7, &b(&[7]), 1, 10.0, |_| 1).unwrap(),
            g5
        );
        let r = e.pop_ready().expect("full group: repair ready");
        assert_eq!(r.group, g5);
        assert_eq!(&r.payload[..], &[5 ^ 6 ^ 7]);
        // A run of two cut after its first member: the next retransmission (20) opens a new
        // group and the old one's repair names the one member it got.
        let g12 = e.add_retransmission(12, &b(&[12]), 2, 10.0, |_| 1).unwrap();
        assert_eq!(g12.count, 2);
        let g20 = e.add_retransmission(20, &b(&[20]), 1, 10.0, |_| 1).unwrap();
        assert_eq!((g20.first, g20.count), (20, 1));
        let r = e.pop_ready().expect("cut group closed");
        assert_eq!((r.group.first, r.group.count), (12, 1));
        assert_eq!(&r.payload[..], &[12]);
        assert_eq!(e.pop_ready().expect("group 20 full").group, g20);
        // Every retransmission group has a number of its own, also one that starts at the
        // same segment as an earlier group: the receiver tells them apart by it.
        let again = e.add_retransmission(5, &b(&[5]), 1, 10.0, |_| 1).unwrap();
        assert_eq!(
            [g5, g12, g20, again].map(|g| g.retransmission_group),
            [1, 2, 3, 4]
        );
        assert_ne!(again.key(), g5.key());
    }

    /// The repairs of a group of retransmissions follow its length (`auto` sizes them to
    /// its failure target); none means the retransmission goes out unprotected.
    #[test]
    fn a_group_of_retransmissions_gets_the_repairs_sized_for_its_length() {
        let mut e = Encoder::new(GroupPolicy::Static(8), 1);
        let sized = |n: u16| if n >= 3 { 2 } else { 0 };
        assert_eq!(e.add_retransmission(4, &b(&[4]), 1, 10.0, sized), None);
        let g = e.add_retransmission(5, &b(&[5]), 3, 10.0, sized).unwrap();
        assert_eq!((g.first, g.count, g.repairs), (5, 3, 2));
        e.add_retransmission(6, &b(&[6]), 2, 10.0, sized).unwrap();
        e.add_retransmission(7, &b(&[7]), 1, 10.0, sized).unwrap();
        let repairs: Vec<_> = std::iter::from_fn(|| e.pop_ready()).collect();
        assert_eq!(repairs.len(), 2, "two repairs, Reed-Solomon");
        assert!(repairs.iter().all(|r| r.group == g));
    }
}
