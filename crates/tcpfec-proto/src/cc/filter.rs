//! A windowed maximum, as BBR keeps its bandwidth and ACK-aggregation estimates.

/// A windowed maximum over the last `len` periods (rounds or probe cycles).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MaxFilter<const N: usize> {
    slots: [(u64, f64); N],
}

impl<const N: usize> MaxFilter<N> {
    pub(crate) fn new() -> Self {
        MaxFilter {
            slots: [(0, 0.0); N],
        }
    }
    /// Records `v` in period `t`; returns the maximum over periods `t − N + 1 ..= t`.
    pub(crate) fn update(&mut self, t: u64, v: f64) -> f64 {
        let i = (t % N as u64) as usize;
        if self.slots[i].0 != t {
            self.slots[i] = (t, 0.0);
        }
        self.slots[i].1 = self.slots[i].1.max(v);
        self.get(t)
    }
    pub(crate) fn get(&self, t: u64) -> f64 {
        self.slots
            .iter()
            .filter(|(p, _)| *p + N as u64 > t)
            .map(|(_, v)| *v)
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_filter_forgets_after_its_window() {
        let mut f = MaxFilter::<2>::new();
        assert_eq!(f.update(0, 5.0), 5.0);
        assert_eq!(f.update(1, 3.0), 5.0);
        assert_eq!(f.update(2, 1.0), 3.0);
        assert_eq!(f.get(4), 0.0);
    }
}
