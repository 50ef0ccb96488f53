//! A binary min-heap with an in-place "replace the first" operation, for the event queue.
//!
//! `std`'s `BinaryHeap` sinks an element by writing it into the heap and reading it back
//! (its `Hole`), and replacing the top through `peek_mut` writes the new element before
//! sinking it. The processor cannot forward those mixed-width stores to the wider loads
//! that follow and stalls on every event. Here the element being placed stays in
//! registers until its final slot is known.

/// A min-heap of `Copy` items: [`MinHeap::pop`] returns the smallest.
#[derive(Debug)]
pub(crate) struct MinHeap<T> {
    items: Vec<T>,
}

impl<T> Default for MinHeap<T> {
    fn default() -> Self {
        MinHeap { items: Vec::new() }
    }
}

impl<T: Copy + Ord> MinHeap<T> {
    /// Number of items.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The smallest item.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    /// Adds `item`.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        let mut pos = self.items.len();
        self.items.push(item);
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if item >= self.items[parent] {
                break;
            }
            self.items[pos] = self.items[parent];
            pos = parent;
        }
        self.items[pos] = item;
    }

    /// Removes and returns the smallest item.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        let last = self.items.pop()?;
        match self.items.first() {
            None => Some(last),
            Some(&top) => {
                self.sink_from_top(last);
                Some(top)
            }
        }
    }

    /// Replaces the smallest item with `item` and returns it: one sink instead of a pop
    /// and a push. The heap must not be empty.
    #[inline]
    pub(crate) fn replace_top(&mut self, item: T) -> T {
        let top = self.items[0];
        self.sink_from_top(item);
        top
    }

    /// Places `item` at the root's slot and moves it down to where it belongs.
    #[inline]
    fn sink_from_top(&mut self, item: T) {
        let n = self.items.len();
        let mut pos = 0;
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.items[right] < self.items[left] {
                right
            } else {
                left
            };
            if item <= self.items[child] {
                break;
            }
            self.items[pos] = self.items[child];
            pos = child;
        }
        self.items[pos] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes, pops and replacements come out as from `std`'s heap.
    #[test]
    fn pops_in_order_through_pushes_and_replacements() {
        use std::cmp::Reverse;
        let mut rng = crate::rng::Rng::new(7, 0);
        let mut next = move || (rng.uniform() * (1u64 << 40) as f64) as u64;
        let (mut heap, mut model) = (MinHeap::default(), std::collections::BinaryHeap::new());
        for _ in 0..50_000 {
            let v = next() % 1000;
            match next() % 4 {
                0 | 1 => {
                    heap.push(v);
                    model.push(Reverse(v));
                }
                2 => assert_eq!(heap.pop(), model.pop().map(|r| r.0)),
                _ if !model.is_empty() => {
                    assert_eq!(heap.replace_top(v), model.pop().unwrap().0);
                    model.push(Reverse(v));
                }
                _ => {}
            }
            assert_eq!(heap.len(), model.len());
            assert_eq!(heap.peek().copied(), model.peek().map(|r| r.0));
        }
    }
}
