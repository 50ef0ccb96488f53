//! The loss channel as the `auto` scheme sees it: an estimate of the loss rate and of how
//! bursty the losses are, from the per-packet outcomes (received or lost, in sending
//! order) the receiver's feedback reports.
//!
//! The model is the simple Gilbert channel (a Gilbert–Elliott channel that loses every
//! packet in the bad state and none in the good one): P(good → bad) = `p`, P(bad → good)
//! = `r`. Its loss rate is p / (p + r) and its mean loss run is 1 / r, so counting packets,
//! losses and loss runs (a loss after a received packet starts a run) estimates both:
//! loss rate = losses / packets, mean burst = losses / runs. Bernoulli loss is the case
//! p + r = 1 (mean burst 1 / (1 − loss rate)).
//!
//! The counts decay exponentially with a memory of [`SLOW_MEMORY`] packets, long enough
//! for a steady estimate. A second set with a memory of [`FAST_MEMORY`] packets watches for
//! a change: when the short-memory loss rate is significantly above the long one (more
//! than four standard deviations of a short-memory estimate on the long-memory channel,
//! bursts counted, and more than twice it),
//! the long memory restarts from the short one, so the estimate follows a jump in loss
//! within a few hundred packets (a few round trips at tens of Mb/s). So it does a fall
//! to half or less by as many standard deviations, which only an estimate far above what
//! the path shows now can pass (`ChannelEstimator::loss_changed`); a smaller fall is followed
//! at the slow pace, which errs on the side of too much repair.
//!
//! A long run of packets without a loss is evidence of a fall too, where the short memory
//! is too noisy to show one by itself: where the long memory's channel would have started a
//! loss run within that many packets but for a chance of 10⁻⁴ ([`QUIET_EVIDENCE`]), and
//! the short memory has fallen to half the long one, the long memory restarts from the
//! short one (`ChannelEstimator::implausibly_quiet`). An estimate a flow made from drops it
//! misread in its first seconds on a shared queue then comes down within seconds instead
//! of over the long memory: tens of seconds where most of the flow's packets meet the
//! full queue and are left out of the measurement (docs/design/coexistence.md).

/// Memory of the steady estimate, packets.
pub const SLOW_MEMORY: f64 = 8192.0;
/// Memory of the change detector, packets.
pub const FAST_MEMORY: f64 = 512.0;

/// A run of packets without a loss is implausibly long on a channel that starts a loss run
/// with probability q per packet once it passes this many times 1/q packets: the chance
/// of so long a quiet run is then e^−9.21 = 10⁻⁴.
pub const QUIET_EVIDENCE: f64 = 9.21;

/// Exponentially decaying counts of packets, losses and loss runs.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    packets: f64,
    losses: f64,
    runs: f64,
}

impl Counts {
    /// Adds one outcome; the weights of older ones shrink by (1 − 1/memory) — until
    /// `memory` packets have been seen the counts are plain sums (no start-up bias).
    fn add(&mut self, lost: bool, starts_run: bool, memory: f64) {
        if self.packets >= memory {
            let keep = 1.0 - 1.0 / memory;
            self.packets *= keep;
            self.losses *= keep;
            self.runs *= keep;
        }
        self.packets += 1.0;
        if lost {
            self.losses += 1.0;
        }
        if starts_run {
            self.runs += 1.0;
        }
    }

    fn loss_rate(&self) -> f64 {
        if self.packets > 0.0 {
            self.losses / self.packets
        } else {
            0.0
        }
    }
}

/// What the estimator believes about the channel now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelEstimate {
    /// Fraction of packets lost.
    pub loss_rate: f64,
    /// Mean number of consecutive losses in a run (1 for isolated losses).
    pub mean_burst: f64,
    /// Packets the estimate rests on (the decayed count).
    pub packets: f64,
}

impl ChannelEstimate {
    /// Gilbert parameters (P(good → bad), P(bad → good)) with this loss rate and mean
    /// burst; `None` on a loss-free estimate.
    pub fn gilbert(&self) -> Option<(f64, f64)> {
        if self.loss_rate <= 0.0 {
            return None;
        }
        let r = (1.0 / self.mean_burst.max(1.0)).min(1.0);
        let pi = self.loss_rate.min(0.999);
        // pi = p / (p + r)  =>  p = r · pi / (1 − pi).
        Some(((r * pi / (1.0 - pi)).min(1.0), r))
    }
}

/// The estimator: feed it outcomes in sending order.
#[derive(Debug, Clone, Default)]
pub struct ChannelEstimator {
    slow: Counts,
    fast: Counts,
    last_lost: bool,
    restarts: u64,
    observed: u64,
    /// Packets received since the last loss.
    quiet: u64,
}

impl ChannelEstimator {
    /// An estimator that has seen nothing (loss rate 0, mean burst 1).
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the outcome of the next packet in sending order.
    pub fn observe(&mut self, lost: bool) {
        let starts_run = lost && !self.last_lost;
        self.last_lost = lost;
        self.observed += 1;
        self.slow.add(lost, starts_run, SLOW_MEMORY);
        self.fast.add(lost, starts_run, FAST_MEMORY);
        self.quiet = if lost { 0 } else { self.quiet + 1 };
        if self.fast.packets >= FAST_MEMORY && (self.loss_changed() || self.implausibly_quiet()) {
            self.slow = self.fast;
            self.restarts += 1;
            self.quiet = 0;
        }
    }

    /// The packets since the last loss are a run the long memory's channel would have
    /// broken with a loss but for a chance of 10⁻⁴ ([`QUIET_EVIDENCE`], runs starting at
    /// the long memory's rate of runs per packet), and the short memory's loss rate is
    /// half the long one's or less. A true channel that happens to go quiet that long keeps
    /// its short memory near its rate, and a restart from it would change little.
    fn implausibly_quiet(&self) -> bool {
        let (s, f) = (&self.slow, &self.fast);
        // Asked after every packet: products instead of the rates' divisions.
        self.quiet as f64 * s.runs > QUIET_EVIDENCE * s.packets
            && 2.0 * f.losses * s.packets < s.losses * f.packets
    }

    /// Records `received` delivered packets followed by `lost` lost ones (a compact form
    /// of feedback: one loss run and the packets before it).
    pub fn observe_run(&mut self, received: u64, lost: u64) {
        for _ in 0..received {
            self.observe(false);
        }
        for _ in 0..lost {
            self.observe(true);
        }
    }

    /// The short memory's loss rate differs significantly from the long one's: more
    /// than twice it, or half or less, and four standard deviations away (the long
    /// memory's rate and bursts taken as the truth). A fall passes only where the long
    /// estimate is far above what the path shows now: with no loss in the short memory
    /// the long one must be above 3 % for isolated losses, above 22 % for bursts of 5.
    /// Losses misread as the channel's at a flow's start (a queue maximum from its own
    /// bursts, a minimum delay taken over a standing queue) had held eight `auto` flows
    /// sharing a clean half-BDP buffer at a 15 % estimate and a fifth of their packets
    /// repair for the whole minute.
    fn loss_changed(&self) -> bool {
        !self.clearly_within_a_factor_of_two() && self.loss_changed_exactly()
    }

    /// [`Self::loss_changed`] from the two rates themselves.
    fn loss_changed_exactly(&self) -> bool {
        let slow = self.slow.loss_rate();
        let fast = self.fast.loss_rate();
        // Asked after every packet: the cheap halves of the tests first. A rise is judged
        // on the long rate floored, so a loss-free past is not "certain".
        if fast > 2.0 * slow {
            fast - slow > 4.0 * self.short_memory_sd(slow.max(1.0 / SLOW_MEMORY))
        } else if 2.0 * fast < slow {
            slow - fast > 4.0 * self.short_memory_sd(slow)
        } else {
            false
        }
    }

    /// The short memory's rate is above half the long one's and at most twice it, by a
    /// margin far beyond rounding: the rates compared as cross products, without the two
    /// divisions [`Self::loss_changed`] makes after every packet. Where this cannot tell,
    /// the exact test decides, so the answer is the exact test's.
    fn clearly_within_a_factor_of_two(&self) -> bool {
        const MARGIN: f64 = 1e-9;
        // Counts decayed this far have lost relative precision (subnormal quotients):
        // the exact test's rounding is not the arithmetic's there.
        const TINY: f64 = 1e-280;
        let (f, s) = (&self.fast, &self.slow);
        if f.losses < TINY || s.losses < TINY {
            return false;
        }
        // fast / slow = (f.losses / f.packets) / (s.losses / s.packets), both positive.
        let fast = f.losses * s.packets;
        let slow = s.losses * f.packets;
        fast <= 2.0 * slow * (1.0 - MARGIN) && 2.0 * fast >= slow * (1.0 + MARGIN)
    }

    /// Standard deviation of a loss-rate estimate over [`FAST_MEMORY`] packets on a
    /// channel losing `p` in the long memory's bursts. Bursts inflate the variance of a
    /// loss count by about 2b − 1 for mean burst b (the Gilbert chain's (1 + ρ)/(1 − ρ),
    /// ρ = 1 − p − r); without that, a few bursts close together read as a change of
    /// channel.
    fn short_memory_sd(&self, p: f64) -> f64 {
        let burst = self.estimate().mean_burst;
        (p * (1.0 - p) * (2.0 * burst - 1.0) / FAST_MEMORY).sqrt()
    }

    /// The current estimate.
    pub fn estimate(&self) -> ChannelEstimate {
        let c = &self.slow;
        let mean_burst = if c.runs > 0.0 {
            (c.losses / c.runs).max(1.0)
        } else {
            1.0
        };
        ChannelEstimate {
            loss_rate: c.loss_rate(),
            mean_burst,
            packets: c.packets,
        }
    }

    /// Outcomes observed in all.
    pub fn observed(&self) -> u64 {
        self.observed
    }

    /// How many times a jump in loss restarted the long memory.
    pub fn restarts(&self) -> u64 {
        self.restarts
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Where the cross products call the two rates within a factor of two, the
        /// division-based test agrees: no change (rates drawn around exactly 2x and 0.5x).
        #[test]
        fn the_quick_test_never_hides_a_change(
            slow_packets in 1.0f64..20_000.0,
            fast_packets in 1.0f64..2_000.0,
            slow_losses in 1e-300f64..500.0,
            ratio in prop_oneof![0.0f64..4.0, 1.999999f64..2.000001, 0.499999f64..0.500001],
            burst in 1.0f64..10.0,
        ) {
            let losses = slow_losses.min(slow_packets);
            let slow = Counts {
                packets: slow_packets,
                losses,
                runs: losses / burst,
            };
            let fast = Counts {
                packets: fast_packets,
                losses: (slow.loss_rate() * ratio * fast_packets).min(fast_packets),
                runs: 0.0,
            };
            let e = ChannelEstimator {
                slow,
                fast,
                ..ChannelEstimator::default()
            };
            if e.clearly_within_a_factor_of_two() {
                prop_assert!(!e.loss_changed_exactly(), "{slow:?} {fast:?}");
            }
        }
    }

    /// A small deterministic generator (SplitMix64) for channel draws.
    pub(crate) struct Draws(pub u64);

    impl Draws {
        pub(crate) fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A Gilbert channel with loss rate `pi` and mean burst `burst`.
    pub(crate) struct Gilbert {
        p: f64,
        r: f64,
        bad: bool,
    }

    impl Gilbert {
        pub(crate) fn new(pi: f64, burst: f64) -> Self {
            let r = 1.0 / burst;
            Gilbert {
                p: r * pi / (1.0 - pi),
                r,
                bad: false,
            }
        }

        pub(crate) fn lost(&mut self, d: &mut Draws) -> bool {
            self.bad = if self.bad {
                d.unit() >= self.r
            } else {
                d.unit() < self.p
            };
            self.bad
        }
    }

    /// Shows the estimator `packets` outcomes of the channel.
    fn feed(e: &mut ChannelEstimator, ch: &mut Gilbert, d: &mut Draws, packets: usize) {
        for _ in 0..packets {
            e.observe(ch.lost(d));
        }
    }

    fn converged(pi: f64, burst: f64, packets: usize, seed: u64) -> ChannelEstimate {
        let mut e = ChannelEstimator::new();
        feed(
            &mut e,
            &mut Gilbert::new(pi, burst),
            &mut Draws(seed),
            packets,
        );
        e.estimate()
    }

    fn within(x: f64, truth: f64, tol: f64) -> bool {
        (x - truth).abs() <= tol * truth
    }

    #[test]
    fn converges_on_bernoulli_and_bursty_channels() {
        // Every seed of ten must land within 20 % on the loss rate and the mean burst
        // (Bernoulli's is 1 / (1 − p)). 10^4 packets for Bernoulli loss and bursts of 2;
        // bursts of 5 need 4·10^4: in 10^4 packets at 5 % they make only about 100 runs,
        // whose loss count has a relative standard error of about 13 % (the variance of a
        // loss count grows by 2b − 1 with mean burst b), so 20 % would be 1.5 standard
        // errors and about one seed in eight would miss it whatever the estimator.
        for (pi, burst, packets) in [
            (0.01, 1.0 / 0.99, 10_000),
            (0.05, 1.0 / 0.95, 10_000),
            (0.05, 2.0, 10_000),
            (0.05, 5.0, 40_000),
        ] {
            for seed in 1..=10 {
                let e = converged(pi, burst, packets, seed);
                assert!(
                    within(e.loss_rate, pi, 0.2),
                    "p {pi} burst {burst} seed {seed}: loss rate {}",
                    e.loss_rate
                );
                assert!(
                    within(e.mean_burst, burst, 0.2),
                    "p {pi} burst {burst} seed {seed}: mean burst {}",
                    e.mean_burst
                );
            }
        }
    }

    #[test]
    fn follows_a_jump_in_loss_within_a_few_hundred_packets() {
        let mut d = Draws(7);
        let mut e = ChannelEstimator::new();
        feed(&mut e, &mut Gilbert::new(0.001, 1.0), &mut d, 20_000);
        assert!(e.estimate().loss_rate < 0.003);
        let mut loud = Gilbert::new(0.10, 1.0);
        let mut after = None;
        for n in 1..=5_000 {
            e.observe(loud.lost(&mut d));
            if after.is_none() && e.estimate().loss_rate > 0.05 {
                after = Some(n);
            }
        }
        let n = after.expect("the estimate never followed the jump to 10 % loss");
        assert!(n <= 1_000, "took {n} packets to see half of a jump to 10 %");
        assert!(within(e.estimate().loss_rate, 0.10, 0.2));
    }

    #[test]
    fn a_fall_within_the_noise_is_followed_at_the_slow_pace() {
        let mut d = Draws(9);
        let mut e = ChannelEstimator::new();
        feed(&mut e, &mut Gilbert::new(0.02, 1.0), &mut d, 20_000);
        feed(
            &mut e,
            &mut Gilbert::new(0.01, 1.0),
            &mut d,
            SLOW_MEMORY as usize / 4,
        );
        // Half the loss, but within four standard deviations of 512 packets at 2 %: a
        // quarter of the memory later the estimate has come down part of the way.
        let p = e.estimate().loss_rate;
        assert!(p > 0.013 && p < 0.02, "after a quarter memory at 1 %: {p}");
        assert_eq!(e.restarts(), 0, "a fall within the noise restarts nothing");
    }

    #[test]
    fn a_fall_far_below_the_estimate_restarts_it() {
        let mut d = Draws(9);
        let mut e = ChannelEstimator::new();
        feed(&mut e, &mut Gilbert::new(0.10, 1.0), &mut d, 20_000);
        // The long memory restarts from the short one once that has fallen far enough
        // (about 5 %, in some 400 packets), then follows the packets without loss.
        let mut after = None;
        for n in 1..=(SLOW_MEMORY as usize / 4) {
            e.observe(false);
            if after.is_none() && e.estimate().loss_rate < 0.01 {
                after = Some(n);
            }
        }
        let n = after.expect("the estimate never followed the fall from 10 % to none");
        assert!(n <= 4 * FAST_MEMORY as usize, "took {n} packets");
        // The fall restarts it once; the quiet run that follows, once more (the short
        // memory has kept falling since).
        assert_eq!(e.restarts(), 2);
    }

    #[test]
    fn a_long_quiet_run_brings_down_an_estimate_the_short_memory_cannot() {
        // 2.5 % of isolated losses is below the fall the short memory alone can show (it
        // needs the long estimate above about 3 %): without the quiet-run rule 2 000
        // packets without a loss leave it near 2 %, as the long memory forgets.
        let mut d = Draws(13);
        let mut e = ChannelEstimator::new();
        feed(&mut e, &mut Gilbert::new(0.025, 1.0), &mut d, 20_000);
        let before = e.estimate().loss_rate;
        assert!(within(before, 0.025, 0.2), "{before}");
        let restarts = e.restarts();
        for _ in 0..2_000 {
            e.observe(false);
        }
        assert!(e.restarts() > restarts, "{:?}", e.estimate());
        assert!(e.estimate().loss_rate < 0.005, "{:?}", e.estimate());
    }

    #[test]
    fn steady_channels_are_not_restarted_by_their_quiet_runs() {
        // Over 2·10⁶ packets a run quiet beyond 10⁻⁴ comes now and then, but the short
        // memory stays near the long one. (Judged by the quiet run alone, 5 % restarted
        // three times.)
        for (pi, burst, seed) in [(0.01, 1.0, 21), (0.05, 1.0, 22), (0.02, 5.0, 23)] {
            let mut d = Draws(seed);
            let mut e = ChannelEstimator::new();
            feed(&mut e, &mut Gilbert::new(pi, burst), &mut d, 2_000_000);
            assert!(
                within(e.estimate().loss_rate, pi, 0.3),
                "{pi} {burst}: {:?}",
                e.estimate()
            );
            assert!(e.restarts() <= 1, "{pi} {burst}: {} restarts", e.restarts());
        }
    }

    #[test]
    fn a_bursty_channel_quiet_for_a_while_keeps_its_estimate() {
        // 5 % in bursts of 10: 512 packets without a loss happen, and they are no news.
        let mut d = Draws(11);
        let mut e = ChannelEstimator::new();
        feed(&mut e, &mut Gilbert::new(0.05, 10.0), &mut d, 20_000);
        for _ in 0..(2 * FAST_MEMORY as usize) {
            e.observe(false);
        }
        assert_eq!(e.restarts(), 0, "{:?}", e.estimate());
        assert!(e.estimate().loss_rate > 0.03, "{:?}", e.estimate());
    }

    #[test]
    fn gilbert_parameters_reproduce_the_estimate() {
        let e = ChannelEstimate {
            loss_rate: 0.02,
            mean_burst: 4.0,
            packets: 1e4,
        };
        let (p, r) = e.gilbert().unwrap();
        assert!((p / (p + r) - 0.02).abs() < 1e-12);
        assert!((1.0 / r - 4.0).abs() < 1e-12);
        assert!(ChannelEstimate {
            loss_rate: 0.0,
            mean_burst: 1.0,
            packets: 10.0
        }
        .gilbert()
        .is_none());
    }
}
