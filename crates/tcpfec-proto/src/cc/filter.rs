//! A windowed maximum, as BBR keeps its bandwidth and ACK-aggregation estimates.

/// A windowed maximum over the last `len` periods (rounds or probe cycles).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MaxFilter<const N: usize> {
    slots: [(u64, f64); N],
    /// (period, maximum) of the last answer: most updates fall in the period just asked
    /// about, and their maximum is then that answer's and the new value's.
    last: Option<(u64, f64)>,
}

impl<const N: usize> MaxFilter<N> {
    pub(crate) fn new() -> Self {
        MaxFilter {
            slots: [(0, 0.0); N],
            last: None,
        }
    }
    /// Records `v` in period `t`; returns the maximum over periods `t − N + 1 ..= t`.
    pub(crate) fn update(&mut self, t: u64, v: f64) -> f64 {
        let i = (t % N as u64) as usize;
        if self.slots[i].0 != t {
            self.slots[i] = (t, 0.0);
        }
        self.slots[i].1 = self.slots[i].1.max(v);
        let max = match self.last {
            Some((p, m)) if p == t => m.max(v),
            _ => self.scan(t),
        };
        self.last = Some((t, max));
        max
    }
    /// The maximum over periods `t − N + 1 ..= t`.
    pub(crate) fn get(&mut self, t: u64) -> f64 {
        let max = self.scan(t);
        self.last = Some((t, max));
        max
    }
    fn scan(&self, t: u64) -> f64 {
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

    #[test]
    fn the_remembered_maximum_is_the_scanned_one() {
        let mut f = MaxFilter::<3>::new();
        let (mut t, mut x) = (0u64, 12345u64);
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += (x >> 62 == 0) as u64 + (x >> 61 == 0) as u64 * 3;
            let v = (x >> 40) as f64 / 7.0;
            let got = if x & 15 == 0 {
                f.get(t)
            } else {
                f.update(t, v)
            };
            assert_eq!(got, f.scan(t));
        }
    }
}
