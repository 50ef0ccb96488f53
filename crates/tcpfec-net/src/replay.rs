//! Replay protection: a sliding window over received packet numbers (as in IPsec/WireGuard).
//!
//! Packet numbers are explicit and 64-bit, so reordered packets are fine; a number seen
//! before, or older than the window, is refused.

/// Width of the window in packet numbers. Large enough for the reordering a relay or a
/// multi-path network produces at gigabit rates.
pub const WINDOW: u64 = 4096;
const WORDS: usize = (WINDOW / 64) as usize;

/// The highest packet number accepted and a bitmap of the [`WINDOW`] numbers below it.
#[derive(Debug, Clone)]
pub struct ReplayWindow {
    /// One more than the highest accepted number (0: nothing accepted yet).
    top: u64,
    bits: [u64; WORDS],
}

impl Default for ReplayWindow {
    fn default() -> Self {
        ReplayWindow {
            top: 0,
            bits: [0; WORDS],
        }
    }
}

impl ReplayWindow {
    /// True if `pn` would be accepted: new, and not older than the window. Check before
    /// decrypting (cheap), [`ReplayWindow::mark`] after authentication succeeded.
    pub fn check(&self, pn: u64) -> bool {
        // The last number is never sent (counters start at 0) and `mark` could not store
        // it: one past it wraps to 0, which would empty the window (or panic).
        if pn == u64::MAX {
            return false;
        }
        if pn >= self.top {
            return true;
        }
        if self.top - pn > WINDOW {
            return false;
        }
        let (w, b) = Self::slot(pn);
        self.bits[w] & (1 << b) == 0
    }

    /// True if `pn` is above every number accepted so far (not a reordered straggler).
    pub fn is_newest(&self, pn: u64) -> bool {
        pn >= self.top
    }

    /// Records `pn` as received (call only for authenticated packets that passed `check`).
    pub fn mark(&mut self, pn: u64) {
        if pn >= self.top {
            let shift = pn + 1 - self.top;
            if shift >= WINDOW {
                self.bits = [0; WORDS];
            } else {
                for n in self.top..=pn {
                    let (w, b) = Self::slot(n);
                    self.bits[w] &= !(1 << b);
                }
            }
            self.top = pn + 1;
        }
        let (w, b) = Self::slot(pn);
        self.bits[w] |= 1 << b;
    }

    fn slot(pn: u64) -> (usize, u32) {
        let i = pn % WINDOW;
        ((i / 64) as usize, (i % 64) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_new_and_reordered_refuses_replays_and_ancient() {
        let mut w = ReplayWindow::default();
        for pn in [0, 2, 1, 5, 3] {
            assert!(w.check(pn), "{pn}");
            w.mark(pn);
        }
        for pn in [0, 1, 2, 3, 5] {
            assert!(!w.check(pn), "replay {pn}");
        }
        assert!(w.check(4));
        w.mark(10_000);
        assert!(!w.check(10_000));
        assert!(!w.check(10_000 - WINDOW - 1), "older than the window");
        assert!(w.check(10_000 - 10));
        assert!(w.check(4 + WINDOW * 2), "ahead");
    }

    #[test]
    fn slots_reused_after_the_window_moves() {
        let mut w = ReplayWindow::default();
        w.mark(1);
        w.mark(1 + WINDOW);
        assert!(!w.check(1 + WINDOW));
        assert!(!w.check(1), "fell out of the window");
        assert!(w.check(1 + WINDOW - 1));
    }

    #[test]
    fn the_last_packet_number_is_refused_and_leaves_the_window_intact() {
        // Found by the envelope fuzz target: marking u64::MAX overflowed (a panic with
        // overflow checks; without them the window wrapped to empty and took replays).
        let mut w = ReplayWindow::default();
        w.mark(7);
        assert!(!w.check(u64::MAX));
        assert!(!w.check(7), "7 is still a replay");
    }
}
