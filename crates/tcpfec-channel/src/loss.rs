//! Packet loss models applied per link direction.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// How a link direction loses packets (independent of queue overflow).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LossSpec {
    /// No random loss.
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Gilbert–Elliott chain, stepped once per packet. `p` = P(good → bad),
    /// `r` = P(bad → good), `h` = P(delivered | bad), `k` = P(delivered | good).
    GilbertElliott {
        /// P(good → bad).
        p: f64,
        /// P(bad → good).
        r: f64,
        /// Delivery probability in the bad state.
        h: f64,
        /// Delivery probability in the good state.
        k: f64,
    },
    /// Bernoulli loss whose rate alternates between `first` and `second` every
    /// `period_ns`, starting with `first` (Teshima's 0.1 % ↔ 10 % schedule).
    Switching {
        /// Loss probability in the first, third, … period.
        first: f64,
        /// Loss probability in the second, fourth, … period.
        second: f64,
        /// Length of each period, ns.
        period_ns: u64,
    },
}

impl LossSpec {
    /// Independent loss with probability `p` (no model at all when `p` is 0).
    pub fn bernoulli(p: f64) -> LossSpec {
        if p == 0.0 {
            LossSpec::None
        } else {
            LossSpec::Bernoulli { p }
        }
    }

    /// Parses `p,r,h,k` for Gilbert–Elliott (each a fraction or a percentage; `:` may
    /// separate them too).
    pub fn parse_ge(s: &str) -> Result<LossSpec, String> {
        let parts: Vec<&str> = s.split([',', ':']).collect();
        if parts.len() != 4 {
            return Err(format!("'{s}': Gilbert-Elliott needs four values p,r,h,k"));
        }
        let v: Vec<f64> = parts
            .iter()
            .map(|x| crate::units::parse_probability(x))
            .collect::<Result<_, _>>()?;
        if v[1] == 0.0 && v[0] > 0.0 {
            return Err(format!("'{s}': r = 0 would leave the bad state never"));
        }
        Ok(LossSpec::GilbertElliott {
            p: v[0],
            r: v[1],
            h: v[2],
            k: v[3],
        })
    }

    /// Parses a switching schedule `A/B@T`: rate A, then B, alternating every T.
    pub fn parse_switching(s: &str) -> Result<LossSpec, String> {
        let (rates, period) = s
            .split_once('@')
            .ok_or_else(|| format!("'{s}': write A/B@T, e.g. 0.1%/10%@10s"))?;
        let (a, b) = rates
            .split_once('/')
            .ok_or_else(|| format!("'{s}': write A/B@T, e.g. 0.1%/10%@10s"))?;
        let first = crate::units::parse_probability(a)?;
        let second = crate::units::parse_probability(b)?;
        let period = crate::units::parse_duration(period)?;
        if period.is_zero() {
            return Err(format!("'{s}': the period must be positive"));
        }
        let period_ns = u64::try_from(period.as_nanos())
            .map_err(|_| format!("'{s}': the period is too long"))?;
        Ok(LossSpec::Switching {
            first,
            second,
            period_ns,
        })
    }

    /// How the condition reads in a table: `1.0%` (its average loss), or `GE 2.0%/b2`
    /// for Gilbert–Elliott (average loss, then 1/r: the mean stay in the bad state, in
    /// packets, which is the mean burst when the bad state loses every packet).
    pub fn label(&self) -> String {
        match *self {
            LossSpec::GilbertElliott { r, .. } if r > 0.0 => {
                let burst = 1.0 / r;
                let burst = if (burst - burst.round()).abs() < 1e-9 {
                    format!("{burst:.0}")
                } else {
                    format!("{burst:.2}")
                };
                format!("GE {:.1}%/b{burst}", self.mean_loss() * 100.0)
            }
            _ => format!("{:.1}%", self.mean_loss() * 100.0),
        }
    }

    /// Long-run loss probability of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossSpec::Switching { first, second, .. } => (first + second) / 2.0,
            LossSpec::None => 0.0,
            LossSpec::Bernoulli { p } => p,
            LossSpec::GilbertElliott { p, r, h, k } => {
                if p + r == 0.0 {
                    1.0 - k
                } else {
                    let bad = p / (p + r);
                    bad * (1.0 - h) + (1.0 - bad) * (1.0 - k)
                }
            }
        }
    }
}

/// A loss model with its own state and random stream.
#[derive(Debug, Clone)]
pub struct LossModel {
    spec: LossSpec,
    bad: bool,
    rng: Rng,
}

impl LossModel {
    /// A model following `spec`, drawing from `rng`.
    pub fn new(spec: LossSpec, rng: Rng) -> Self {
        LossModel {
            spec,
            bad: false,
            rng,
        }
    }

    /// Whether the packet offered at `now` (ns) is lost, the next packet after the
    /// previous one.
    #[inline]
    pub fn drops(&mut self, now: u64) -> bool {
        self.drops_after(now, 1)
    }

    /// Whether the packet offered at `now` (ns) is lost on a link that stood idle for
    /// `idle_ns` before it, `packet_ns` being one packet's time on that link: the chain
    /// steps once per packet time, sent or not.
    #[inline]
    pub fn drops_after_idle(&mut self, now: u64, idle_ns: u64, packet_ns: u64) -> bool {
        // Only the Gilbert–Elliott chain has steps to count (a division per packet the
        // other models need not pay).
        let steps = if matches!(self.spec, LossSpec::GilbertElliott { .. }) {
            1 + idle_ns / packet_ns.max(1)
        } else {
            1
        };
        self.drops_after(now, steps)
    }

    /// Whether the packet offered at `now` (ns) is lost, `steps` ≥ 1 packet times after
    /// the previous one (a link that idled between them). The Gilbert–Elliott chain
    /// advances once per packet time, sent or not: its bursts are bursts in time, so a
    /// packet sent long after the last one finds the channel in its stationary state.
    /// Stepped once per packet sent, a retransmission timer's lone packets stayed in a
    /// bad state 1 − r of the time each: nine timeouts in a row (160 s) for one 10 MB
    /// transfer with mean bursts of 5 packets. Back to back (`steps` = 1) the chain and
    /// its random draws are exactly the per-packet ones.
    #[inline]
    fn drops_after(&mut self, now: u64, steps: u64) -> bool {
        match self.spec {
            LossSpec::None => false,
            LossSpec::Switching {
                first,
                second,
                period_ns,
            } => {
                let p = if (now / period_ns).is_multiple_of(2) {
                    first
                } else {
                    second
                };
                self.rng.chance(p)
            }
            LossSpec::Bernoulli { p } => self.rng.chance(p),
            LossSpec::GilbertElliott { p, r, h, k } => {
                let flip = if steps <= 1 {
                    if self.bad {
                        r
                    } else {
                        p
                    }
                } else {
                    ge_flip_after(p, r, self.bad, steps)
                };
                if self.rng.chance(flip) {
                    self.bad = !self.bad;
                }
                let deliver = if self.bad { h } else { k };
                !self.rng.chance(deliver)
            }
        }
    }
}

/// P(the Gilbert chain is in the other state `steps` steps later), from state `bad`: the
/// n-step transition of a two-state chain, whose deviation from the stationary share
/// π = p / (p + r) shrinks by 1 − p − r per step.
fn ge_flip_after(p: f64, r: f64, bad: bool, steps: u64) -> f64 {
    if p + r <= 0.0 {
        return 0.0;
    }
    let pi_bad = p / (p + r);
    // Beyond a few thousand steps the factor is 0 to double precision anyway.
    let decay = (1.0 - p - r).powi(steps.min(1 << 20) as i32);
    let stay_bad = pi_bad + (1.0 - pi_bad) * decay;
    let to_bad = pi_bad * (1.0 - decay);
    if bad {
        1.0 - stay_bad
    } else {
        to_bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_reads_as_average_loss_and_mean_burst() {
        assert_eq!(LossSpec::None.label(), "0.0%");
        assert_eq!(LossSpec::bernoulli(0.01).label(), "1.0%");
        let ge = LossSpec::parse_ge("1.0204%,50%,0,1").unwrap();
        assert_eq!(ge.label(), "GE 2.0%/b2");
        let ge = LossSpec::parse_ge("0.75%,75%,0,1").unwrap();
        assert_eq!(ge.label(), "GE 1.0%/b1.33");
    }

    #[test]
    fn an_idle_gap_lets_the_gilbert_chain_forget_its_state() {
        let (p, r) = (0.01, 0.2);
        // One step is the per-packet transition.
        assert!((ge_flip_after(p, r, true, 1) - r).abs() < 1e-12);
        assert!((ge_flip_after(p, r, false, 1) - p).abs() < 1e-12);
        // Long after, either state leads to the stationary share of bad.
        let pi_bad = p / (p + r);
        assert!((1.0 - ge_flip_after(p, r, true, 10_000) - pi_bad).abs() < 1e-9);
        assert!((ge_flip_after(p, r, false, 10_000) - pi_bad).abs() < 1e-9);
        // A lone packet every 1000 packet times, after a bad one, is lost at about the
        // average rate, not at 1 - r.
        let spec = LossSpec::GilbertElliott {
            p,
            r,
            h: 0.0,
            k: 1.0,
        };
        let mut m = LossModel::new(spec, Rng::new(7, 3));
        let n = 200_000;
        let lost = (0..n).filter(|_| m.drops_after(0, 1000)).count() as f64 / n as f64;
        assert!((lost - pi_bad).abs() < 0.1 * pi_bad, "{lost} vs {pi_bad}");
    }

    fn measured(spec: LossSpec, n: usize) -> f64 {
        let mut m = LossModel::new(spec, Rng::new(7, 1));
        (0..n).filter(|_| m.drops(0)).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_rate_matches() {
        let got = measured(LossSpec::Bernoulli { p: 0.01 }, 1_000_000);
        // Binomial std at n = 1e6, p = 0.01 is 1e-4; 5 sigma.
        assert!((got - 0.01).abs() < 5e-4, "{got}");
    }

    #[test]
    fn gilbert_elliott_rate_and_bursts() {
        let spec = LossSpec::parse_ge("1%:30%:0:1").unwrap();
        let expect = spec.mean_loss();
        let got = measured(spec, 2_000_000);
        assert!((got - expect).abs() < 0.1 * expect, "{got} vs {expect}");
        // Mean burst length of the bad state is 1/r ≈ 3.3 packets.
        let mut m = LossModel::new(spec, Rng::new(7, 2));
        let (mut bursts, mut lost, mut prev) = (0, 0, false);
        for _ in 0..2_000_000 {
            let d = m.drops(0);
            if d {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = d;
        }
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 1.0 / 0.3).abs() < 0.3, "{mean_burst}");
    }

    #[test]
    fn switching_schedule_alternates_by_time() {
        let spec = LossSpec::parse_switching("0.1%/10%@10s").unwrap();
        let mut m = LossModel::new(spec, Rng::new(3, 1));
        let rate = |m: &mut LossModel, at: u64| {
            (0..200_000).filter(|_| m.drops(at)).count() as f64 / 200_000.0
        };
        let s = 1_000_000_000u64;
        assert!((rate(&mut m, 5 * s) - 0.001).abs() < 5e-4);
        assert!((rate(&mut m, 15 * s) - 0.10).abs() < 5e-3);
        assert!((rate(&mut m, 25 * s) - 0.001).abs() < 5e-4);
        assert!(LossSpec::parse_switching("1%/2%").is_err());
        assert!(LossSpec::parse_switching("1%/2%@0s").is_err());
        // 10^13 s is more nanoseconds than a u64 holds: refused, not wrapped around.
        let long = LossSpec::parse_switching("1%/2%@10000000000000s").unwrap_err();
        assert!(long.contains("too long"), "{long}");
    }
}
