//! The event queue: events come out ordered by (time, insertion number), so events at the
//! same instant run in the order they were scheduled and every run is reproducible.
//!
//! Most events are packet arrivals, and a FIFO link delivers its packets in the order it
//! sent them: its arrivals are scheduled in time order. Such events go into their link's
//! lane (a FIFO), and only each lane's first event sits in the binary min-heap, with the
//! timers and other events. The heap then holds tens of entries instead of a path's
//! packets in flight, and each pop is that much cheaper; the order is the same, since
//! every lane is sorted and its first event is in the heap.

use crate::heap::MinHeap;
use std::cmp::Ordering;
use std::collections::VecDeque;

/// What happens when an event fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Packet `packet` (a slot in the packet store) reaches node `node`.
    Arrive {
        /// Receiving node.
        node: u32,
        /// Packet slot.
        packet: u32,
    },
    /// Endpoint `endpoint`'s connection timer may be due.
    Timer {
        /// Endpoint index.
        endpoint: u32,
    },
    /// Flow `flow` starts: its client opens the connection.
    Start {
        /// Flow index.
        flow: u32,
    },
    /// Record a sample of every flow's congestion window.
    Sample,
    /// A rate-limited application of flow `flow` may write more data.
    AppTick {
        /// Flow index.
        flow: u32,
    },
    /// The measurement window opens: snapshot the counters.
    WindowStart,
    /// The measurement window closes: snapshot the counters.
    WindowEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    time: u64,
    seq: u64,
    kind: EventKind,
    /// The lane whose first event this is, or [`NO_LANE`].
    lane: u32,
}

/// An event in the heap that belongs to no lane.
const NO_LANE: u32 = u32::MAX;

/// An arrival waiting in a lane: the entry without what the lane implies (24 bytes
/// instead of 32; lanes hold most of a run's pending events).
#[derive(Debug, Clone, Copy)]
struct Waiting {
    time: u64,
    seq: u64,
    node: u32,
    packet: u32,
}

/// Arrivals scheduled in time order by one source (a link), after the one in the heap.
#[derive(Debug, Default)]
struct Lane {
    waiting: VecDeque<Waiting>,
    /// The lane's first event is in the heap.
    in_heap: bool,
    /// Time of the event scheduled last into the lane.
    last: u64,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Pending events in time order with a stable tie-break.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: MinHeap<Entry>,
    lanes: Vec<Lane>,
    /// Events waiting in lanes (not in the heap).
    waiting: usize,
    next_seq: u64,
}

impl EventQueue {
    /// Schedules `kind` at time `time` (nanoseconds).
    #[inline]
    pub fn push(&mut self, time: u64, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry {
            time,
            seq,
            kind,
            lane: NO_LANE,
        });
    }

    /// Schedules packet `packet`'s arrival at node `node` at `time`, sent by link `lane`,
    /// whose arrivals usually come in time order. One earlier than the lane's last goes
    /// into the heap by itself, so the order stays exact whatever the link does.
    #[inline]
    pub fn push_arrival(&mut self, lane: u32, time: u64, node: u32, packet: u32) {
        let i = lane as usize;
        if i >= self.lanes.len() {
            self.lanes.resize_with(i + 1, Lane::default);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let l = &mut self.lanes[i];
        let mut e = Entry {
            time,
            seq,
            kind: EventKind::Arrive { node, packet },
            lane: NO_LANE,
        };
        if time >= l.last {
            l.last = time;
            if l.in_heap {
                l.waiting.push_back(Waiting {
                    time,
                    seq,
                    node,
                    packet,
                });
                self.waiting += 1;
                return;
            }
            l.in_heap = true;
            e.lane = lane;
        }
        self.heap.push(e);
    }

    /// Removes and returns the earliest event.
    ///
    /// When it is a lane's first event and the lane has another, that one takes its place
    /// at the top of the heap and sinks once, instead of a pop and a push.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, EventKind)> {
        let e = *self.heap.peek()?;
        if e.lane != NO_LANE {
            let l = &mut self.lanes[e.lane as usize];
            if let Some(w) = l.waiting.pop_front() {
                self.waiting -= 1;
                self.heap.replace_top(Entry {
                    time: w.time,
                    seq: w.seq,
                    kind: EventKind::Arrive {
                        node: w.node,
                        packet: w.packet,
                    },
                    lane: e.lane,
                });
                return Some((e.time, e.kind));
            }
            l.in_heap = false;
        }
        self.heap.pop();
        Some((e.time, e.kind))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.waiting
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_fifo_among_equals() {
        let mut q = EventQueue::default();
        q.push(5, EventKind::Timer { endpoint: 1 });
        q.push(3, EventKind::Timer { endpoint: 2 });
        q.push(5, EventKind::Timer { endpoint: 3 });
        q.push(5, EventKind::Timer { endpoint: 4 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let ids: Vec<u32> = order
            .iter()
            .map(|(_, k)| match k {
                EventKind::Timer { endpoint } => *endpoint,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ids, vec![2, 1, 3, 4]);
    }

    /// Lanes change nothing about the order: the same pushes, some through lanes (in
    /// order, out of order, interleaved), pop as from the plain heap.
    #[test]
    fn lanes_pop_in_exactly_the_plain_heaps_order() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut plain, mut laned) = (EventQueue::default(), EventQueue::default());
        let mut lane_time = [0u64; 4];
        let (mut out_plain, mut out_laned) = (Vec::new(), Vec::new());
        for i in 0..20_000u32 {
            let r = next();
            if r % 3 == 0 {
                // A timer anywhere ahead.
                let t = lane_time[0] + r % 1000;
                let kind = EventKind::Timer { endpoint: i };
                plain.push(t, kind);
                laned.push(t, kind);
            } else {
                // A lane's arrival: mostly later than its last, now and then earlier.
                let lane = (r >> 8) as usize % 4;
                let t = if r % 17 == 0 {
                    lane_time[lane].saturating_sub(r % 50)
                } else {
                    lane_time[lane] + r % 30
                };
                lane_time[lane] = lane_time[lane].max(t);
                let node = (r % 5) as u32;
                plain.push(t, EventKind::Arrive { node, packet: i });
                laned.push_arrival(lane as u32, t, node, i);
            }
            assert_eq!(plain.len(), laned.len());
            if r % 5 < 2 {
                out_plain.extend(plain.pop());
                out_laned.extend(laned.pop());
            }
        }
        out_plain.extend(std::iter::from_fn(|| plain.pop()));
        out_laned.extend(std::iter::from_fn(|| laned.pop()));
        assert_eq!(out_plain.len(), 20_000);
        assert_eq!(out_plain, out_laned);
        assert!(laned.is_empty());
    }
}
