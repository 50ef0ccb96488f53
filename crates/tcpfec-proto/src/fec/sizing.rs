//! Code sizing for the `auto` scheme: given the channel estimate, how many data packets K
//! a block carries and how many repairs M protect it, so that the probability a block
//! cannot be rebuilt (more than M of its K + M packets lost) stays under a target at the
//! least repair overhead M / (K + M).
//!
//! The loss count in a block of n consecutive packets on a Gilbert channel is computed
//! exactly by a forward recursion over (state, losses so far), one step per packet, with
//! losses counted one by one only as far as the search asks (the rest in one bin); on a
//! Bernoulli channel it is the binomial tail. K is bounded above by the repair delay a block may add
//! (the caller turns "a fraction of an RTT" into packets) and by the code's limit; larger
//! blocks need relatively fewer repairs (the law of large numbers), so the search prefers
//! the largest K the delay allows and the least M for it.

use super::channel::ChannelEstimate;

/// Most packets (data plus repair) in one block: Reed-Solomon over GF(2⁸).
pub const MAX_BLOCK: usize = 255;

/// The probe level of redundancy on a path with no loss measured: one repair per this many
/// packets at most (1 %), which also keeps measuring whether repair would help. At 2 %
/// (one per 50) a clean path's bulk goodput stayed 5 % below CUBIC's, 2 points of it the
/// probe's, on top of what BBR's own probing costs.
pub const PROBE_BLOCK: usize = 100;

/// A chosen code: K data packets and M repairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeSize {
    /// Data packets per block.
    pub k: usize,
    /// Repair packets per block.
    pub m: usize,
}

impl CodeSize {
    /// Repair share of the packets sent, M / (K + M).
    pub fn overhead(&self) -> f64 {
        self.m as f64 / (self.k + self.m) as f64
    }
}

/// P(more than `m` losses among `n` consecutive packets) on the estimated channel, the
/// first packet's state drawn from the stationary distribution.
pub fn block_failure(est: &ChannelEstimate, n: usize, m: usize) -> f64 {
    if m >= n {
        return 0.0;
    }
    FailureTable::new(est, n).at(n, m)
}

thread_local! {
    /// The cells of the last table built on this thread, kept for the next: `auto` builds
    /// a table at every resize (every 64 packets measured), and a reused buffer costs no
    /// allocation.
    static SCRATCH: core::cell::Cell<Vec<f64>> = const { core::cell::Cell::new(Vec::new()) };
}

/// `at(n, m)` = P(more than `m` losses among `n` consecutive packets) for every n and
/// m < `counted`, from the forward recursion, one row per packet. Rows are computed when
/// first asked for: a search that stops at short blocks never pays for long ones.
///
/// Loss counts are tracked exactly below `counted` and lumped above it (one bin for
/// "`counted` or more"), so a row costs O(`counted`) instead of O(n): the searches ask
/// for few repairs per block, and the long tail of many losses was most of the work
/// (a block of 200 at 0.05 % loss carries probabilities down to 10⁻⁶⁰⁰, subnormal long
/// before they reach 0). A question beyond the counted losses recounts with more.
/// Row n lives at offset n · `counted` of one buffer.
struct FailureTable {
    cells: Vec<f64>,
    /// The Gilbert chain (p, r); `None` on a loss-free estimate (every cell 0).
    chain: Option<(f64, f64)>,
    /// Loss counts tracked one by one: 0..counted, and bin `counted` for the rest.
    counted: usize,
    /// good[j], bad[j]: probability of j losses (j = `counted`: at least that many)
    /// among the rows' packets so far and being in that state after the last of them.
    good: Vec<f64>,
    bad: Vec<f64>,
    /// Rows computed: 0..rows.
    rows: usize,
}

/// The widest table whose rows [`FailureTable::steady_rows`] computes in registers.
const STEADY_WIDTH_MAX: usize = 8;

/// Losses a new table counts one by one: enough for every search on a channel below a
/// few percent loss; heavier channels recount once or twice.
const FIRST_COUNTED: usize = 4;

impl FailureTable {
    fn new(est: &ChannelEstimate, n_max: usize) -> Self {
        let mut t = FailureTable {
            cells: SCRATCH.with(|c| c.take()),
            chain: est.gilbert(),
            counted: FIRST_COUNTED.min(n_max + 1),
            good: Vec::new(),
            bad: Vec::new(),
            rows: 0,
        };
        t.restart();
        t
    }

    /// Forgets every row, to count again from the first packet.
    fn restart(&mut self) {
        let width = self.counted;
        self.cells.clear();
        self.cells.resize(width, 0.0); // n = 0: no losses
        self.rows = 1;
        self.good.clear();
        self.bad.clear();
        if let Some((p, r)) = self.chain {
            let pi_bad = p / (p + r);
            self.good.resize(width + 1, 0.0);
            self.bad.resize(width + 1, 0.0);
            self.good[0] = 1.0 - pi_bad;
            self.bad[1.min(width)] = pi_bad;
        }
    }

    fn at(&mut self, n: usize, m: usize) -> f64 {
        if m >= n {
            return 0.0;
        }
        if m >= self.counted {
            self.counted = (2 * self.counted).max(m + 1);
            self.restart();
        }
        while self.rows <= n {
            // Past the first `width` packets every count is reachable and a row's shape
            // no longer changes: the common widths take a step the compiler unrolls (a
            // search computes about 120 rows per resize, most of them past the first few).
            match (self.chain, self.counted) {
                (Some(chain), 4) if self.rows > 4 => self.steady_rows::<4>(n, chain),
                (Some(chain), 8) if self.rows > 8 => self.steady_rows::<8>(n, chain),
                _ => self.next_row(),
            }
        }
        self.cells[n * self.counted + m]
    }

    /// Rows `self.rows..=n`, all past the first `W` packets, with the chain's state in
    /// locals for the whole run instead of read back from `good` and `bad` every row: the
    /// rows are one dependent chain, and the round trip through memory was most of a
    /// row's time. The arithmetic is [`steady_step`]'s, so the bits are too.
    fn steady_rows<const W: usize>(&mut self, n: usize, (p, r): (f64, f64)) {
        const { assert!(W <= STEADY_WIDTH_MAX, "a wider run needs wider locals") };
        let mut good = [0.0; STEADY_WIDTH_MAX + 1];
        let mut bad = [0.0; STEADY_WIDTH_MAX + 1];
        good[..=W].copy_from_slice(&self.good[..=W]);
        bad[..=W].copy_from_slice(&self.bad[..=W]);
        self.cells.reserve((n + 1 - self.rows) * W);
        while self.rows <= n {
            let row = steady_step::<W>(&mut good, &mut bad, p, r);
            self.cells.extend_from_slice(&row);
            self.rows += 1;
        }
        self.good[..=W].copy_from_slice(&good[..=W]);
        self.bad[..=W].copy_from_slice(&bad[..=W]);
    }

    /// Computes row `self.rows`.
    fn next_row(&mut self) {
        let n = self.rows;
        self.rows += 1;
        let width = self.counted;
        let off = self.cells.len();
        self.cells.resize(off + width, 0.0);
        if let Some((p, r)) = self.chain {
            step(
                &mut self.good,
                &mut self.bad,
                p,
                r,
                n,
                &mut self.cells[off..],
            );
        }
    }
}

/// One more packet, the `n`th, in the forward recursion, and row n of the table written
/// to `row` (`row.len()` losses counted one by one, `good` and `bad` holding one bin
/// more). `row` must be zero where n packets cannot reach. Inlined, so that a constant
/// width ([`steady_step`]) unrolls its loops.
#[inline(always)]
fn step(good: &mut [f64], bad: &mut [f64], p: f64, r: f64, n: usize, row: &mut [f64]) {
    let width = row.len();
    let (keep_good, keep_bad) = (1.0 - p, 1.0 - r);
    // Counts reachable after n packets: 0..=n, the last bin holding all beyond it.
    let top = n.min(width);
    if n > 1 {
        // The lumped bin (filled once more than `width` packets have passed) keeps
        // what it holds whether the packet is lost or not: a loss leaves it in the bad
        // state, a delivery in the good one.
        let (g_top, b_top) = (good[width], bad[width]);
        // One more packet: good → good (kept), good → bad (lost), bad → good (kept),
        // bad → bad (lost). Cell j reads cell j − 1 as it was before this packet,
        // carried along (iterators: this loop is most of `auto`'s sizing time, and
        // indexing checked every access).
        let (mut g_before, mut b_before) = (good[0], bad[0]);
        for (gj, bj) in good[1..=top].iter_mut().zip(bad[1..=top].iter_mut()) {
            let (g, b) = (*gj, *bj);
            *gj = g * keep_good + b * r;
            *bj = g_before * p + b_before * keep_bad;
            (g_before, b_before) = (g, b);
        }
        if n > width {
            bad[width] += g_top * p + b_top * keep_bad;
        }
        // No losses so far: only good → good and bad → good lead here, and bad[0]
        // stays 0 (a packet in the bad state is a loss).
        good[0] = good[0] * keep_good + bad[0] * r;
    }
    // Row n: tail[m] = sum over j > m of P(j losses), 0 for m ≥ n.
    let mut acc = 0.0;
    let losses = good[1..=top].iter().zip(&bad[1..=top]).rev();
    for (cell, (g, b)) in row[..top].iter_mut().rev().zip(losses) {
        acc += g + b;
        *cell = acc.min(1.0);
    }
}

/// [`step`] for a packet past the first `W`, with `W` losses counted one by one
/// (`good` and `bad` holding `W` + 1 bins), the width a constant the compiler unrolls.
/// Past the first `W` packets every count is reachable, so the step is the same for any
/// such packet: `W` + 1 stands for it. Returns the row.
fn steady_step<const W: usize>(good: &mut [f64], bad: &mut [f64], p: f64, r: f64) -> [f64; W] {
    let mut row = [0.0; W];
    step(&mut good[..=W], &mut bad[..=W], p, r, W + 1, &mut row);
    row
}

impl Drop for FailureTable {
    fn drop(&mut self) {
        let cells = core::mem::take(&mut self.cells);
        SCRATCH.with(|c| {
            // Keep the larger buffer of the two.
            let kept = c.take();
            c.set(if kept.capacity() > cells.capacity() {
                kept
            } else {
                cells
            });
        });
    }
}

/// The fallback when no code meets the target (very heavy loss): the most repair a block
/// can carry.
pub const MOST_REPAIR: CodeSize = CodeSize {
    k: 1,
    m: MAX_BLOCK - 1,
};

/// Sizes codes for one channel estimate and failure target. The failure table (a row per
/// block length) is built once, whatever number of delay bounds are tried with it.
pub struct Sizer {
    target: f64,
    /// `None` on a loss-free estimate, which needs no table.
    table: Option<FailureTable>,
}

impl Sizer {
    /// A sizer for `est` and a block-failure `target`.
    pub fn new(est: &ChannelEstimate, target: f64) -> Self {
        let table = (est.loss_rate > 0.0).then(|| FailureTable::new(est, MAX_BLOCK));
        Sizer { target, table }
    }

    /// One repair per block of `k` data packets keeps the block-failure probability under
    /// the target (always, on a loss-free estimate).
    pub fn one_repair_suffices(&mut self, k: usize) -> bool {
        let k = k.clamp(1, MAX_BLOCK - 1);
        let target = self.target;
        self.table.as_mut().is_none_or(|t| t.at(k + 1, 1) <= target)
    }

    /// The fewest repairs, at most `max_m`, that keep a block of `n` data packets under the
    /// target: 0 where `n` packets alone are lost with at most the target's probability
    /// (always, on a loss-free estimate), `max_m` where none is enough.
    pub fn repairs_for(&mut self, n: usize, max_m: usize) -> usize {
        let n = n.clamp(1, MAX_BLOCK - 1);
        let max_m = max_m.min(MAX_BLOCK - n);
        let target = self.target;
        let Some(table) = self.table.as_mut() else {
            return 0;
        };
        fewest_repairs(table, target, n, 0..=max_m).unwrap_or(max_m)
    }

    /// The code with the least overhead that keeps the block-failure probability under
    /// the target, with at most `max_k` data packets per block (the delay bound), or
    /// `None` if no M up to the block limit meets it. On a loss-free estimate: one repair
    /// per block of up to `probe_k` packets, at most [`PROBE_BLOCK`] − 1 (the probe has
    /// no failure target to meet, so its block may be longer than the delay bound: one
    /// repair per four packets of a small window would not be a probe). The same probe
    /// block serves a lossy estimate whose loss one repair per probe block already keeps
    /// under the target.
    pub fn code(&mut self, max_k: usize, probe_k: usize) -> Option<CodeSize> {
        let max_k = max_k.clamp(1, MAX_BLOCK - 1);
        let probe = probe_k.clamp(1, PROBE_BLOCK - 1);
        if self.table.is_none() {
            return Some(CodeSize { k: probe, m: 1 });
        }
        // A channel so clean that one repair per probe block meets the target needs no
        // tighter delay bound: its rare loss waits at most about a round trip for the
        // repair, as long as a retransmission would take, and a small window pays
        // 1/(probe + 1) for repair instead of 1/(max_k + 1) (12 % instead of 3 % at
        // 10 Mb/s and 20 ms, where the bound allows blocks of 8).
        if probe > max_k && self.one_repair_suffices(probe) {
            return Some(CodeSize { k: probe, m: 1 });
        }
        let mut best: Option<CodeSize> = None;
        // Larger K never needs a larger share of repair, but M is whole: try every K from
        // the delay bound down and keep the least overhead (ties: the larger K, fewer
        // blocks).
        let target = self.target;
        let table = self.table.as_mut().expect("checked above");
        for k in (1..=max_k).rev() {
            let Some(m) = fewest_repairs(table, target, k, 1..=MAX_BLOCK - k) else {
                continue;
            };
            let c = CodeSize { k, m };
            if best.is_none_or(|b| c.overhead() < b.overhead() - 1e-12) {
                best = Some(c);
            }
            // A smaller K cannot beat an overhead below the share one repair costs it.
            if best.is_some_and(|b| b.overhead() <= 1.0 / (k as f64)) {
                break;
            }
        }
        best
    }
}

/// The first repair count in `tried` that keeps a block of `k` data packets under
/// `target`.
fn fewest_repairs(
    table: &mut FailureTable,
    target: f64,
    k: usize,
    mut tried: core::ops::RangeInclusive<usize>,
) -> Option<usize> {
    tried.find(|&m| table.at(k + m, m) <= target)
}

/// [`Sizer::code`] for one delay bound, or [`MOST_REPAIR`] if no code meets `target`.
pub fn size_code(est: &ChannelEstimate, target: f64, max_k: usize, probe_k: usize) -> CodeSize {
    Sizer::new(est, target)
        .code(max_k, probe_k)
        .unwrap_or(MOST_REPAIR)
}

#[cfg(test)]
mod tests {
    use super::super::channel::tests::{Draws, Gilbert};
    use super::*;

    fn est(loss_rate: f64, mean_burst: f64) -> ChannelEstimate {
        ChannelEstimate {
            loss_rate,
            mean_burst,
            packets: 1e5,
        }
    }

    /// Binomial tail, for checking the recursion on a Bernoulli channel.
    fn binomial_tail(n: usize, m: usize, p: f64) -> f64 {
        let mut total = 0.0;
        for j in m + 1..=n {
            let mut c = 1.0f64;
            for i in 0..j {
                c *= (n - i) as f64 / (j - i) as f64;
            }
            total += c * p.powi(j as i32) * (1.0 - p).powi((n - j) as i32);
        }
        total
    }

    #[test]
    fn the_recursion_is_the_binomial_tail_on_a_bernoulli_channel() {
        for (p, n, m) in [(0.01, 20, 1), (0.05, 40, 3), (0.1, 10, 2)] {
            let e = est(p, 1.0 / (1.0 - p));
            let a = block_failure(&e, n, m);
            let b = binomial_tail(n, m, p);
            assert!((a - b).abs() < 1e-12 * b.max(1e-300) + 1e-15, "{a} vs {b}");
        }
    }

    /// P(more than m losses among n packets) on a Gilbert channel by the plain recursion
    /// over every loss count, for checking the table that lumps the many-loss tail.
    fn gilbert_tail(e: &ChannelEstimate, n: usize, m: usize) -> f64 {
        let (p, r) = e.gilbert().unwrap();
        let pi_bad = p / (p + r);
        let (mut good, mut bad) = (vec![0.0; n + 1], vec![0.0; n + 1]);
        good[0] = 1.0 - pi_bad;
        bad[1] = pi_bad;
        for _ in 1..n {
            let (g0, b0) = (good.clone(), bad.clone());
            for j in 0..=n {
                good[j] = g0[j] * (1.0 - p) + b0[j] * r;
                bad[j] = if j == 0 {
                    0.0
                } else {
                    g0[j - 1] * p + b0[j - 1] * (1.0 - r)
                };
            }
        }
        (m + 1..=n).map(|j| good[j] + bad[j]).sum()
    }

    /// The unrolled steps give the general step's bits, row after row, on channels from
    /// nearly clean to heavily bursty.
    #[test]
    fn the_fixed_width_steps_are_the_general_step_bit_for_bit() {
        fn check<const W: usize>(p: f64, r: f64) {
            let start = |good: &mut Vec<f64>, bad: &mut Vec<f64>| {
                *good = vec![0.0; W + 1];
                *bad = vec![0.0; W + 1];
                good[0] = r / (p + r);
                bad[1] = p / (p + r);
            };
            let (mut g1, mut b1, mut g2, mut b2) = (vec![], vec![], vec![], vec![]);
            start(&mut g1, &mut b1);
            start(&mut g2, &mut b2);
            for n in 1..=MAX_BLOCK {
                let mut general = [0.0; W];
                step(&mut g1, &mut b1, p, r, n, &mut general);
                if n <= W {
                    step(&mut g2, &mut b2, p, r, n, &mut [0.0; W]);
                    continue;
                }
                let fixed = steady_step::<W>(&mut g2, &mut b2, p, r);
                let bits = |row: &[f64]| row.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fixed), bits(&general), "W {W}, p {p}, r {r}, row {n}");
                assert_eq!(bits(&g1), bits(&g2));
                assert_eq!(bits(&b1), bits(&b2));
            }
        }
        for (loss, burst) in [
            (5e-4, 1.0),
            (0.01, 1.0),
            (0.05, 2.0),
            (0.1, 5.0),
            (0.4, 20.0),
        ] {
            let (p, r) = est(loss, burst).gilbert().unwrap();
            check::<4>(p, r);
            check::<8>(p, r);
        }
    }

    /// A table filled by the searches' questions (runs of rows in registers, widened on
    /// the way) holds, after every question, the bits of one filled a row at a time by
    /// the general step.
    #[test]
    fn rows_computed_in_runs_are_the_rows_computed_one_by_one() {
        let bits = |t: &FailureTable| t.cells.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (loss, burst) in [(5e-4, 1.0), (0.02, 1.5), (0.1, 5.0)] {
            let e = est(loss, burst);
            let mut runs = FailureTable::new(&e, MAX_BLOCK);
            let questions = [
                (3, 1),
                (9, 2),
                (60, 1),
                (61, 3),
                (140, 5),
                (200, 2),
                (255, 7),
            ];
            for (n, m) in questions {
                runs.at(n, m);
                let mut single = FailureTable::new(&e, MAX_BLOCK);
                single.counted = runs.counted;
                single.restart();
                while single.rows < runs.rows {
                    single.next_row();
                }
                let at = format!("loss {loss}, burst {burst}, after at({n}, {m})");
                assert_eq!(bits(&runs), bits(&single), "{at}");
            }
            assert_eq!(runs.counted, 8, "the questions widened the table once");
        }
    }

    #[test]
    fn the_lumped_tail_agrees_with_counting_every_loss() {
        // Questions in rising m make the table recount with more losses several times.
        for (loss, burst) in [(0.0005, 1.0), (0.02, 3.0), (0.2, 8.0)] {
            let e = est(loss, burst);
            let mut table = FailureTable::new(&e, MAX_BLOCK);
            for m in [0, 1, 3, 4, 7, 20, 60] {
                for n in [m + 1, 2 * m + 5, 100, 255] {
                    if n <= m || n > MAX_BLOCK {
                        continue;
                    }
                    let (a, b) = (table.at(n, m), gilbert_tail(&e, n, m));
                    assert!(
                        (a - b).abs() <= 1e-12 * b + 1e-300,
                        "n={n} m={m}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn bursts_need_more_repair_than_isolated_losses() {
        let isolated = size_code(&est(0.02, 1.0 / 0.98), 1e-3, 64, 64);
        let bursty = size_code(&est(0.02, 5.0), 1e-3, 64, 64);
        assert!(
            bursty.overhead() > isolated.overhead(),
            "{bursty:?} vs {isolated:?}"
        );
    }

    #[test]
    fn a_clean_path_gets_the_probe_level_only() {
        let c = size_code(&est(0.0, 1.0), 1e-3, 200, 200);
        assert!(c.overhead() <= 0.01, "{c:?}");
        let short = size_code(&est(0.0, 1.0), 1e-3, 10, 10);
        assert_eq!(short, CodeSize { k: 10, m: 1 });
    }

    #[test]
    fn the_chosen_code_meets_the_target_over_a_million_packets() {
        // Draw the channel packet by packet, cut it into blocks of the chosen code and
        // count blocks with more than M losses: the rate must be under the target (with
        // room for the sampling error of about 1000 blocks' worth of failures).
        for (pi, burst, seed) in [(0.01, 1.0 / 0.99, 1), (0.05, 1.0 / 0.95, 2), (0.02, 2.0, 3)] {
            let target = 1e-3;
            let c = size_code(&est(pi, burst), target, 100, 100);
            let n = c.k + c.m;
            let mut ch = Gilbert::new(pi, burst);
            let mut d = Draws(seed);
            let (mut blocks, mut failed) = (0u64, 0u64);
            let mut sent = 0usize;
            while sent < 1_000_000 {
                let lost = (0..n).filter(|_| ch.lost(&mut d)).count();
                blocks += 1;
                if lost > c.m {
                    failed += 1;
                }
                sent += n;
            }
            let rate = failed as f64 / blocks as f64;
            let predicted = block_failure(&est(pi, burst), n, c.m);
            assert!(predicted <= target, "{c:?}: predicted {predicted}");
            // Poisson bound: at most the target plus three standard deviations.
            let allowed = target + 3.0 * (target / blocks as f64).sqrt();
            assert!(
                rate <= allowed,
                "p {pi} burst {burst} {c:?}: {failed} of {blocks} blocks failed ({rate}), allowed {allowed}"
            );
        }
    }

    #[test]
    fn a_nearly_clean_small_window_gets_the_probe_block_not_the_delay_bound() {
        // A 36-packet window, the delay bound a quarter of it.
        let rare = size_code(&est(1e-4, 1.0), 1e-3, 9, 36);
        assert_eq!(rare, CodeSize { k: 36, m: 1 });
        // At 1 % one repair per 37 packets fails 5 % of blocks: the bound holds.
        let lossy = size_code(&est(0.01, 1.0 / 0.99), 1e-3, 9, 36);
        assert!(lossy.k <= 9, "{lossy:?}");
        // Bursts of 5 at 0.1 %: a burst takes several packets of one block, so one repair
        // per window is not enough and the bound holds there too.
        let bursty = size_code(&est(1e-3, 5.0), 1e-3, 9, 36);
        assert!(bursty.k <= 9, "{bursty:?}");
    }

    /// Groups of retransmissions: no repair where a loss among them is rarer than the
    /// target, the fewest that meet it otherwise, and never more than the cap.
    #[test]
    fn a_group_of_retransmissions_gets_the_fewest_repairs_that_meet_the_target() {
        let random = |p: f64| est(p, 1.0 / (1.0 - p));
        let mut clean = Sizer::new(&est(0.0, 1.0), 1e-3);
        assert_eq!(clean.repairs_for(1, 1), 0);
        assert_eq!(clean.repairs_for(30, 30), 0);
        // 0.05 % loss: one packet alone meets 10⁻³, ten do not.
        let mut light = Sizer::new(&random(0.0005), 1e-3);
        assert_eq!(light.repairs_for(1, 1), 0);
        assert_eq!(light.repairs_for(10, 10), 1);
        // 5 %: a lone retransmission needs two (5 % · 5 % · 5 %), one if capped at one.
        let mut heavy = Sizer::new(&random(0.05), 1e-3);
        assert_eq!(heavy.repairs_for(1, 5), 2);
        assert_eq!(heavy.repairs_for(1, 1), 1);
        for n in 1..40 {
            let m = heavy.repairs_for(n, 20);
            assert!(
                block_failure(&random(0.05), n + m, m) <= 1e-3,
                "n {n}, m {m}"
            );
            assert!(m == 0 || block_failure(&random(0.05), n + m - 1, m - 1) > 1e-3);
            assert!(
                heavy.repairs_for(n + 1, 20) >= m,
                "more packets, no fewer repairs"
            );
            assert!(heavy.repairs_for(n, n) <= n, "capped");
        }
        // A priced target (1/BDP on a short path) leaves a lone one unprotected at 5 %.
        assert_eq!(Sizer::new(&random(0.05), 1.0 / 17.0).repairs_for(1, 1), 0);
    }

    #[test]
    fn heavier_loss_costs_more_repair() {
        let mut last = 0.0;
        for p in [0.001, 0.01, 0.02, 0.05, 0.1] {
            let c = size_code(&est(p, 1.0 / (1.0 - p)), 1e-3, 100, 100);
            assert!(c.overhead() > last, "p {p}: {c:?}");
            assert!(block_failure(&est(p, 1.0 / (1.0 - p)), c.k + c.m, c.m) <= 1e-3);
            last = c.overhead();
        }
    }
}
