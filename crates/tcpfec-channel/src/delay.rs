//! Delivery delay: how long data took from the application's write to its in-order read,
//! kept as a histogram so that a run of any length costs the same memory, and summarised
//! as the percentiles `tcpfec sim` and `tcpfec perf` report.
//!
//! The histogram is an HDR histogram (`hdrhistogram`) over microseconds: every
//! percentile it gives is at most 0.1 % above the exact one over the same samples (three
//! significant digits, 220 KB once it holds a sample), or 1 % for a coarse one (two
//! digits, 28 KB; a simulator keeps one per flow, and a run may have thousands). It
//! reports the top of the bucket the exact value falls in; a test checks both against a
//! sort. Samples carry a weight, so a simulator can count bytes (a 1460-byte segment
//! weighs 1460) and a message test messages. Memory is taken at the first sample.

use core::time::Duration;
use hdrhistogram::Histogram;

/// Largest delay the histogram tells apart, in microseconds (a day); longer delays are
/// counted as this.
const MAX_US: u64 = 86_400 * 1_000_000;

/// Significant decimal digits a histogram keeps: 3, a relative error of at most 0.1 %.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Significant decimal digits a coarse histogram keeps: 2, at most 1 %.
const COARSE_DIGITS: u8 = 2;

/// The percentiles of a set of delays, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DelaySummary {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Total weight of the samples (bytes or messages).
    pub weight: u64,
}

impl DelaySummary {
    /// The same delays less `floor_ms` (delays read on another host's clock, reported
    /// above the smallest seen).
    pub fn above(self, floor_ms: f64) -> DelaySummary {
        let less = |v: f64| (v - floor_ms).max(0.0);
        DelaySummary {
            p50_ms: less(self.p50_ms),
            p90_ms: less(self.p90_ms),
            p99_ms: less(self.p99_ms),
            p999_ms: less(self.p999_ms),
            max_ms: less(self.max_ms),
            weight: self.weight,
        }
    }
}

/// A weighted histogram of delays.
#[derive(Debug, Clone)]
pub struct DelayHistogram {
    digits: u8,
    /// Allocated at the first sample.
    h: Option<Histogram<u64>>,
}

impl Default for DelayHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl DelayHistogram {
    /// An empty histogram, within 0.1 %.
    pub fn new() -> Self {
        DelayHistogram {
            digits: SIGNIFICANT_DIGITS,
            h: None,
        }
    }

    /// An empty coarse histogram, within 1 %, an eighth of the memory.
    pub fn coarse() -> Self {
        DelayHistogram {
            digits: COARSE_DIGITS,
            h: None,
        }
    }

    /// Counts one delay `weight` times (a delay of 0 counts as 1 µs).
    pub fn record(&mut self, delay: Duration, weight: u64) {
        if weight == 0 {
            return;
        }
        let us = (delay.as_micros() as u64).clamp(1, MAX_US);
        let digits = self.digits;
        self.h
            .get_or_insert_with(|| {
                Histogram::new_with_bounds(1, MAX_US, digits).expect("valid fixed bounds")
            })
            .saturating_record_n(us, weight);
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &DelayHistogram) {
        let Some(o) = &other.h else { return };
        match &mut self.h {
            // Bounds are fixed, so adding cannot fail (a coarser one adds at its bucket
            // tops).
            Some(h) => h.add(o).expect("same bounds"),
            None if self.digits == other.digits => self.h = Some(o.clone()),
            None => {
                let mut h =
                    Histogram::new_with_bounds(1, MAX_US, self.digits).expect("valid fixed bounds");
                h.add(o).expect("same bounds");
                self.h = Some(h);
            }
        }
    }

    /// Forgets every sample (a new interval).
    pub fn clear(&mut self) {
        if let Some(h) = &mut self.h {
            h.reset();
        }
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.as_ref().is_none_or(|h| h.is_empty())
    }

    /// Total weight recorded.
    pub fn weight(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    /// The delay at quantile `q` (0..=1), in milliseconds (0 if empty).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        self.h
            .as_ref()
            .map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1e3)
    }

    /// The percentiles, or `None` if nothing was recorded.
    pub fn summary(&self) -> Option<DelaySummary> {
        if self.is_empty() {
            return None;
        }
        Some(DelaySummary {
            p50_ms: self.quantile_ms(0.5),
            p90_ms: self.quantile_ms(0.9),
            p99_ms: self.quantile_ms(0.99),
            p999_ms: self.quantile_ms(0.999),
            max_ms: self.quantile_ms(1.0),
            weight: self.weight(),
        })
    }

    /// The distribution as (delay in ms, share of the weight at or below it), one point
    /// per distinct bucket recorded, in increasing order: a CDF to plot.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let Some(h) = &self.h else {
            return Vec::new();
        };
        let total = self.weight().max(1) as f64;
        let mut below = 0u64;
        h.iter_recorded()
            .map(|v| {
                below += v.count_since_last_iteration();
                (v.value_iterated_to() as f64 / 1e3, below as f64 / total)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact weighted quantile of `samples` (delay in µs, weight): the smallest
    /// delay whose cumulative weight reaches `q` of the total.
    fn exact(samples: &[(u64, u64)], q: f64) -> f64 {
        let mut s = samples.to_vec();
        s.sort();
        let total: u64 = s.iter().map(|x| x.1).sum();
        let want = ((q * total as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (v, w) in s {
            acc += w;
            if acc >= want {
                return v as f64 / 1e3;
            }
        }
        unreachable!()
    }

    #[test]
    fn percentiles_are_within_a_thousandth_of_the_exact_ones() {
        // Delays from 100 µs to 30 s, spread unevenly, with byte-like weights.
        let mut samples = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let delay = 100 + (x % 1000).pow(3) / 33;
            let weight = 1 + x % 1460;
            samples.push((delay, weight));
        }
        let (mut h, mut coarse) = (DelayHistogram::new(), DelayHistogram::coarse());
        for &(d, w) in &samples {
            h.record(Duration::from_micros(d), w);
            coarse.record(Duration::from_micros(d), w);
        }
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let want = exact(&samples, q);
            let got = h.quantile_ms(q);
            assert!(
                got >= want && got <= want * 1.001 + 1e-3,
                "q {q}: {got} ms against {want} ms"
            );
            let got = coarse.quantile_ms(q);
            assert!(
                got >= want && got <= want * 1.01 + 1e-3,
                "coarse, q {q}: {got} ms against {want} ms"
            );
        }
        let s = h.summary().unwrap();
        assert_eq!(s.max_ms, h.quantile_ms(1.0));
        assert_eq!(s.weight, samples.iter().map(|x| x.1).sum::<u64>());
    }

    #[test]
    fn merging_two_halves_gives_the_whole() {
        let (mut a, mut b, mut whole) = (
            DelayHistogram::new(),
            DelayHistogram::new(),
            DelayHistogram::new(),
        );
        for i in 1..=1000u64 {
            let d = Duration::from_micros(i * 37);
            whole.record(d, i);
            if i % 2 == 0 { &mut a } else { &mut b }.record(d, i);
        }
        a.merge(&b);
        assert_eq!(a.summary(), whole.summary());
        assert!(DelayHistogram::new().summary().is_none());
        let cdf = whole.cdf();
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }
}
