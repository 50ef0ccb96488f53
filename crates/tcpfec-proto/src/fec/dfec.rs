//! TCP-dFEC's FEC ratio control (Ferlin, seed 003, F3): every period of T data packets the
//! residual loss rate — losses FEC did not repair, seen by the sender as retransmissions —
//! is compared with a target, and the ratio (repair packets per data packet) is multiplied
//! by 1 + δ or 1 − δ toward it.

use super::policy::DynamicFec;

/// The FEC ratio and the period it is being measured over.
#[derive(Debug, Clone)]
pub(crate) struct RatioControl {
    cfg: DynamicFec,
    ratio: f64,
    sent_at_start: u64,
    retransmitted_at_start: u64,
}

impl RatioControl {
    /// Starts at the smallest ratio, 1 / `max_group` (TCP-IR's static setting).
    pub fn new(cfg: DynamicFec) -> Self {
        RatioControl {
            cfg,
            ratio: 1.0 / cfg.max_group.max(1) as f64,
            sent_at_start: 0,
            retransmitted_at_start: 0,
        }
    }

    /// XOR group size for the current ratio: 1/ratio, between 1 and `max_group`.
    pub fn group_size(&self) -> u16 {
        (1.0 / self.ratio)
            .round()
            .clamp(1.0, self.cfg.max_group.max(1) as f64) as u16
    }

    /// Current ratio of repair to data packets.
    #[cfg(test)]
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Called with the sender's running totals; at the end of a period, adjusts the ratio
    /// and returns the new group size.
    pub fn on_progress(&mut self, data_sent: u64, retransmitted: u64) -> Option<u16> {
        let sent = data_sent - self.sent_at_start;
        if sent < self.cfg.period as u64 {
            return None;
        }
        let residual = (retransmitted - self.retransmitted_at_start) as f64 / sent as f64;
        self.sent_at_start = data_sent;
        self.retransmitted_at_start = retransmitted;
        let factor = if residual > self.cfg.target_residual {
            1.0 + self.cfg.step
        } else {
            1.0 - self.cfg.step
        };
        let min = 1.0 / self.cfg.max_group.max(1) as f64;
        self.ratio = (self.ratio * factor).clamp(min, 1.0);
        Some(self.group_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_rises_with_residual_loss_and_falls_back_when_it_is_gone() {
        let mut c = RatioControl::new(DynamicFec::default());
        assert_eq!(c.group_size(), 16);
        assert_eq!(c.on_progress(99, 5), None, "period not over");
        // 5 % residual loss, target 0.5 %: the ratio grows by 25 % per period.
        let mut sent = 0;
        let mut rexmit = 0;
        let mut sizes = Vec::new();
        for _ in 0..12 {
            sent += 100;
            rexmit += 5;
            sizes.push(c.on_progress(sent, rexmit).unwrap());
        }
        assert!(sizes.windows(2).all(|w| w[1] <= w[0]), "{sizes:?}");
        assert_eq!(
            *sizes.last().unwrap(),
            1,
            "ratio capped at one repair per packet"
        );
        // No residual loss: back down to the largest group.
        for _ in 0..30 {
            sent += 100;
            c.on_progress(sent, rexmit);
        }
        assert_eq!(c.group_size(), 16);
        assert!((c.ratio() - 1.0 / 16.0).abs() < 1e-12);
    }
}
