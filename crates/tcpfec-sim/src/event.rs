//! The event queue: a binary min-heap ordered by (time, insertion number), so events at the
//! same instant run in the order they were scheduled and every run is reproducible.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and we want the earliest first.
        (other.time, other.seq).cmp(&(self.time, self.seq))
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
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    /// Schedules `kind` at time `time` (nanoseconds).
    #[inline]
    pub fn push(&mut self, time: u64, kind: EventKind) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, kind });
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, EventKind)> {
        self.heap.pop().map(|e| (e.time, e.kind))
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True if nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
