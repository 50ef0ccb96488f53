//! Packet loss models applied per link direction.

use crate::rng::Rng;
use serde::Serialize;

/// How a link direction loses packets (independent of queue overflow).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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

    /// Long-run loss probability of the model.
    pub fn mean_loss(&self) -> f64 {
        match *self {
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

    /// Decides the fate of the next packet: true means it is lost.
    #[inline]
    pub fn drops(&mut self) -> bool {
        match self.spec {
            LossSpec::None => false,
            LossSpec::Bernoulli { p } => self.rng.chance(p),
            LossSpec::GilbertElliott { p, r, h, k } => {
                let flip = if self.bad { r } else { p };
                if self.rng.chance(flip) {
                    self.bad = !self.bad;
                }
                let deliver = if self.bad { h } else { k };
                !self.rng.chance(deliver)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(spec: LossSpec, n: usize) -> f64 {
        let mut m = LossModel::new(spec, Rng::new(7, 1));
        (0..n).filter(|_| m.drops()).count() as f64 / n as f64
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
            let d = m.drops();
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
}
