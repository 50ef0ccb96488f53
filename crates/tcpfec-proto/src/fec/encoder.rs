//! Sender side: assigns each newly sent segment to a group and produces the repair packet
//! when the group is complete (or when the sender runs out of data).

use super::policy::GroupPolicy;
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

/// `groups` interleaved groups opened together over segments `[base, base + groups·count)`.
#[derive(Debug)]
struct Block {
    base: u64,
    count: u16,
    groups: u16,
    acc: Vec<XorAccumulator>,
    closed: Vec<bool>,
}

impl Block {
    fn end(&self) -> u64 {
        self.base + self.groups as u64 * self.count as u64
    }
}

#[derive(Debug)]
pub(crate) struct Encoder {
    policy: GroupPolicy,
    block: Option<Block>,
    ready: VecDeque<RepairOut>,
    last_group_size: u16,
}

impl Encoder {
    pub fn new(policy: GroupPolicy) -> Self {
        Encoder {
            policy,
            block: None,
            ready: VecDeque::new(),
            last_group_size: 0,
        }
    }

    /// Size of the most recently opened groups (for time series).
    pub fn group_size(&self) -> u16 {
        self.last_group_size
    }

    /// Adds a first transmission of segment `seg`; returns the group it belongs to.
    pub fn add(&mut self, seg: u64, payload: &[u8], cwnd: f64) -> FecGroup {
        if self
            .block
            .as_ref()
            .is_none_or(|b| seg >= b.end() || seg < b.base)
        {
            self.flush();
            let (count, groups) = self.policy.shape(cwnd);
            self.last_group_size = count;
            self.block = Some(Block {
                base: seg,
                count,
                groups,
                acc: vec![XorAccumulator::default(); groups as usize],
                closed: vec![false; groups as usize],
            });
        }
        let b = self.block.as_mut().expect("just opened");
        let off = seg - b.base;
        let j = (off % b.groups as u64) as usize;
        let k = off / b.groups as u64;
        b.acc[j].add(payload);
        let group = FecGroup {
            first: b.base + j as u64,
            count: b.count,
            stride: b.groups,
        };
        if k + 1 == b.count as u64 {
            b.closed[j] = true;
            let acc = std::mem::take(&mut b.acc[j]);
            self.ready.push_back(repair_of(group, &acc));
            if b.closed.iter().all(|&c| c) {
                self.block = None;
            }
        }
        group
    }

    /// Closes every open group early (the sender has no more data to send now), so the
    /// tail of a transfer is protected too. The repair names the true member count.
    pub fn flush(&mut self) {
        let Some(b) = self.block.take() else { return };
        for (j, acc) in b.acc.iter().enumerate() {
            if b.closed[j] || acc.members() == 0 {
                continue;
            }
            let group = FecGroup {
                first: b.base + j as u64,
                count: acc.members() as u16,
                stride: b.groups,
            };
            self.ready.push_back(repair_of(group, acc));
        }
    }

    /// True if a group is open (a flush would produce repairs).
    pub fn has_open_group(&self) -> bool {
        self.block.is_some()
    }

    /// Takes the next repair packet.
    pub fn pop_ready(&mut self) -> Option<RepairOut> {
        self.ready.pop_front()
    }
}

fn repair_of(group: FecGroup, acc: &XorAccumulator) -> RepairOut {
    RepairOut {
        group,
        info: RepairInfo {
            len_xor: acc.len_xor(),
            index: 0,
            total: 1,
        },
        payload: Bytes::copy_from_slice(acc.bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_members_go_round_robin_and_each_group_gets_a_repair() {
        let mut e = Encoder::new(GroupPolicy::Interleave {
            groups: 3,
            limit: 2,
        });
        let mut groups = vec![];
        for seg in 0..6u64 {
            groups.push(e.add(seg, &[seg as u8; 4], 100.0));
        }
        assert_eq!(
            groups[0],
            FecGroup {
                first: 0,
                count: 2,
                stride: 3
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
        let mut e = Encoder::new(GroupPolicy::Static(10));
        e.add(0, b"abc", 20.0);
        e.add(1, b"de", 20.0);
        assert!(e.pop_ready().is_none());
        e.flush();
        let r = e.pop_ready().unwrap();
        assert_eq!(r.group.count, 2);
        assert_eq!(r.info.len_xor, 3 ^ 2);
    }
}
