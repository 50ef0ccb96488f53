//! TCP-TFEC's redundancy setting (Teshima §5.1, SPEC T3): every Δt the sender compares the
//! packets the receiver reports received (extended ACK) with the packets it sent,
//! L = 1 − ΔRp/ΔSp, smooths SL ← γ·SL + (1 − γ)·L, and uses the repair count that gave
//! the highest throughput at that loss rate in a calibration sweep (`tcpfec calibrate
//! tfec`, the paper's Fig. 6), plus a margin of one.

use crate::time::Instant;
use core::time::Duration;

/// The calibration table shipped with tcpfec: loss rate (%) → repairs per 100 packets.
pub const CALIBRATION: &str = include_str!("../../data/tfec-redundancy.csv");

/// TCP-TFEC settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfecParams {
    /// Data packets per Reed-Solomon block, K (100 in the paper).
    pub block: u16,
    /// Measurement interval Δt.
    pub interval: Duration,
    /// Smoothing coefficient γ.
    pub gamma: f64,
    /// Repairs added to the table's value ("redundancy + 1").
    pub margin: u8,
}

impl Default for TfecParams {
    fn default() -> Self {
        TfecParams {
            block: 100,
            interval: Duration::from_secs(5),
            gamma: 0.8,
            margin: 1,
        }
    }
}

/// Parses the calibration table: lines `loss_percent,repairs` after a header line.
pub fn parse_table(text: &str) -> Result<Vec<(f64, u8)>, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if i == 0 || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (loss, k) = line
            .split_once(',')
            .ok_or_else(|| format!("line {}: expected loss_percent,repairs", i + 1))?;
        let loss: f64 = loss
            .trim()
            .parse()
            .map_err(|_| format!("line {}: bad loss '{loss}'", i + 1))?;
        let k: u8 = k
            .trim()
            .parse()
            .map_err(|_| format!("line {}: bad repair count '{k}'", i + 1))?;
        rows.push((loss / 100.0, k));
    }
    if rows.is_empty() {
        return Err("the table has no rows".into());
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(rows)
}

/// The loss estimator and the redundancy it selects.
#[derive(Debug, Clone)]
pub(crate) struct TfecControl {
    p: TfecParams,
    table: Vec<(f64, u8)>,
    smoothed: Option<f64>,
    last: Option<(Instant, u64, u64)>,
    repairs: u8,
}

impl TfecControl {
    pub fn new(p: TfecParams) -> Self {
        let table = parse_table(CALIBRATION).expect("the shipped table parses");
        let repairs = Self::lookup(&table, 0.0).saturating_add(p.margin).max(1);
        TfecControl {
            p,
            table,
            smoothed: None,
            last: None,
            repairs,
        }
    }

    /// The table's repair count for loss rate `loss`: the row with the smallest loss rate
    /// at or above it (the last row beyond the table).
    fn lookup(table: &[(f64, u8)], loss: f64) -> u8 {
        table
            .iter()
            .find(|r| r.0 >= loss)
            .unwrap_or(table.last().expect("non-empty"))
            .1
    }

    /// Data packets per block, K.
    pub fn block(&self) -> u16 {
        self.p.block
    }

    /// Repair packets per block now.
    pub fn repairs(&self) -> u8 {
        self.repairs
    }

    /// The smoothed loss estimate SL, once there is one.
    #[cfg(test)]
    pub fn loss_estimate(&self) -> Option<f64> {
        self.smoothed
    }

    /// Called on every ACK with the sender's total packets sent (data and repair) and
    /// the receiver's reported total received. Returns the new repair count at the end
    /// of an interval.
    pub fn on_ack(&mut self, now: Instant, sent: u64, received: u64) -> Option<u8> {
        let Some((t0, s0, r0)) = self.last else {
            self.last = Some((now, sent, received));
            return None;
        };
        if now.saturating_since(t0) < self.p.interval || sent <= s0 {
            return None;
        }
        let delivered = received.saturating_sub(r0) as f64 / (sent - s0) as f64;
        let l = (1.0 - delivered).clamp(0.0, 1.0);
        let sl = match self.smoothed {
            Some(prev) => self.p.gamma * prev + (1.0 - self.p.gamma) * l,
            None => l,
        };
        self.smoothed = Some(sl);
        self.last = Some((now, sent, received));
        self.repairs = Self::lookup(&self.table, sl)
            .saturating_add(self.p.margin)
            .max(1);
        Some(self.repairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_grows_with_loss() {
        let t = parse_table(CALIBRATION).unwrap();
        assert!(t.len() >= 5);
        assert!(t.first().unwrap().1 <= t.last().unwrap().1);
        assert!(parse_table("loss,k\n1,x\n").is_err());
    }

    #[test]
    fn estimates_loss_per_interval_and_smooths_it() {
        let mut c = TfecControl::new(TfecParams::default());
        let s = |x: u64| Instant::from_nanos(x * 1_000_000_000);
        assert_eq!(c.on_ack(s(0), 0, 0), None);
        assert_eq!(c.on_ack(s(4), 800, 720), None, "interval not over");
        let k = c.on_ack(s(5), 1000, 900).unwrap();
        assert!((c.loss_estimate().unwrap() - 0.10).abs() < 1e-12);
        let table = parse_table(CALIBRATION).unwrap();
        assert_eq!(k, TfecControl::lookup(&table, 0.10) + 1);
        // Next interval without loss: SL = 0.8 · 0.10 + 0.2 · 0 = 0.08.
        c.on_ack(s(10), 2000, 1900).unwrap();
        assert!((c.loss_estimate().unwrap() - 0.08).abs() < 1e-12);
    }
}
