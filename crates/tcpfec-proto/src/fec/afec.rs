//! TCP-AFEC's redundancy state machine (Teshima §3.2, SPEC T2): levels 1..=S, each with a
//! drop timer DT. A loss at level K moves to K + 1 and multiplies DT(K+1) by α; a DT
//! expiry at level K + 1 moves back to K and multiplies DT(K) by α; every round trip with
//! neither (timer Tp) multiplies the other levels' DTs by β. With a target rate R the
//! window W_app = R · RTT sets a threshold R_th, and while cwnd < R_th a DT expiry does not
//! lower the redundancy.

use crate::time::Instant;
use core::time::Duration;

/// Ceiling of every drop timer. α = 2 doubles a level's DT each time it is entered, which
/// overflows after ~60 entries; ten minutes is longer than any run we simulate (choice).
const MAX_DT: Duration = Duration::from_secs(600);

fn scaled(d: Duration, f: f64) -> Duration {
    Duration::from_secs_f64((d.as_secs_f64() * f).min(MAX_DT.as_secs_f64()))
}

/// TCP-AFEC settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AfecParams {
    /// Data packets per Reed-Solomon block, K.
    pub block: u16,
    /// Number of redundancy levels S; level ℓ sends ℓ repairs per block.
    pub levels: u8,
    /// DT growth factor α (> 1).
    pub alpha: f64,
    /// DT shrink factor β (0 < β < 1).
    pub beta: f64,
    /// Every level's DT at the start (the papers give none: our choice, docs/design/fec.md).
    pub initial_dt: Duration,
}

impl AfecParams {
    /// "default": K = 20, S = 20, α = 2, β = 0.8.
    pub fn default_preset() -> Self {
        AfecParams {
            block: 20,
            levels: 20,
            alpha: 2.0,
            beta: 0.8,
            initial_dt: Duration::from_secs(1),
        }
    }

    /// "raw100": K = 100, S = 100.
    pub fn raw100() -> Self {
        AfecParams {
            block: 100,
            levels: 100,
            ..Self::default_preset()
        }
    }
}

/// The state machine.
#[derive(Debug, Clone)]
pub(crate) struct AfecControl {
    p: AfecParams,
    level: u8,
    /// DT of each level; index 0 unused.
    dt: Vec<Duration>,
    dt_deadline: Option<Instant>,
    tp_deadline: Option<Instant>,
    event_in_period: bool,
    /// R_th in packets, once a loss has set it (target rate only).
    r_th: Option<f64>,
}

impl AfecControl {
    pub fn new(p: AfecParams) -> Self {
        AfecControl {
            p,
            level: 1,
            dt: vec![p.initial_dt; p.levels.max(1) as usize + 1],
            dt_deadline: None,
            tp_deadline: None,
            event_in_period: false,
            r_th: None,
        }
    }

    /// Data packets per block, K.
    pub fn block(&self) -> u16 {
        self.p.block
    }

    /// Repair packets per block at the current level.
    pub fn repairs(&self) -> u8 {
        self.level
    }

    /// The earliest timer.
    pub fn deadline(&self) -> Option<Instant> {
        [self.dt_deadline, self.tp_deadline]
            .into_iter()
            .flatten()
            .min()
    }

    /// Starts the timers with the first data.
    pub fn start(&mut self, now: Instant, rtt: Duration) {
        if self.dt_deadline.is_none() {
            self.dt_deadline = Some(now + self.dt[self.level as usize]);
            self.tp_deadline = Some(now + rtt);
        }
    }

    /// The sender detected a loss FEC did not repair (fast retransmit or timeout).
    /// `w_app` is the target window in packets, if there is a target rate.
    pub fn on_loss(&mut self, now: Instant, cwnd: f64, w_app: Option<f64>) {
        self.event_in_period = true;
        if let Some(w) = w_app {
            let r = w + (w - cwnd).max(0.0);
            self.r_th = Some(r.clamp(w, (2.0 * w - 1.0).max(w)));
        }
        if self.level < self.p.levels {
            self.level += 1;
            let dt = &mut self.dt[self.level as usize];
            *dt = scaled(*dt, self.p.alpha);
        }
        self.dt_deadline = Some(now + self.dt[self.level as usize]);
    }

    /// Handles the timers due at `now`; `rtt` is the smoothed round trip (floor of every DT).
    pub fn on_timer(&mut self, now: Instant, cwnd: f64, rtt: Duration) {
        if self.dt_deadline.is_some_and(|d| d <= now) {
            self.event_in_period = true;
            let hold = self.r_th.is_some_and(|r| cwnd < r);
            if self.level > 1 && !hold {
                self.level -= 1;
                let dt = &mut self.dt[self.level as usize];
                *dt = scaled(*dt, self.p.alpha);
            }
            self.dt_deadline = Some(now + self.dt[self.level as usize]);
        }
        if self.tp_deadline.is_some_and(|d| d <= now) {
            if !self.event_in_period {
                for (l, dt) in self.dt.iter_mut().enumerate().skip(1) {
                    if l != self.level as usize {
                        *dt = scaled(*dt, self.p.beta).max(rtt);
                    }
                }
            }
            self.event_in_period = false;
            self.tp_deadline = Some(now + rtt.max(Duration::from_millis(1)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000_000)
    }

    #[test]
    fn losses_climb_and_drop_timers_descend() {
        let mut a = AfecControl::new(AfecParams::default_preset());
        let rtt = Duration::from_millis(20);
        a.start(ms(0), rtt);
        a.on_loss(ms(1), 10.0, None);
        a.on_loss(ms(2), 10.0, None);
        assert_eq!(a.repairs(), 3);
        // DT(3) was doubled to 2 s: no descent before then.
        a.on_timer(ms(1000), 10.0, rtt);
        assert_eq!(a.repairs(), 3);
        a.on_timer(ms(2002), 10.0, rtt);
        assert_eq!(a.repairs(), 2, "DT(3) expired");
        // DT(2), doubled on the way up (2 s), is doubled again on the way down.
        assert_eq!(a.dt[2], Duration::from_secs(4));
        assert_eq!(a.dt_deadline, Some(ms(2002) + Duration::from_secs(4)));
    }

    #[test]
    fn quiet_round_trips_shrink_the_other_levels_timers() {
        let mut a = AfecControl::new(AfecParams::default_preset());
        let rtt = Duration::from_millis(100);
        a.start(ms(0), rtt);
        a.on_timer(ms(100), 10.0, rtt);
        assert_eq!(a.dt[1], Duration::from_secs(1), "current level untouched");
        assert_eq!(a.dt[2], Duration::from_millis(800));
        // A loss in the period: no shrinking at the next Tp.
        a.on_loss(ms(150), 10.0, None);
        a.on_timer(ms(200), 10.0, rtt);
        assert_eq!(a.dt[1], Duration::from_secs(1));
    }

    #[test]
    fn below_the_target_threshold_redundancy_is_held() {
        let mut a = AfecControl::new(AfecParams::default_preset());
        let rtt = Duration::from_millis(20);
        a.start(ms(0), rtt);
        // W_app = 50, cwnd 20 at the loss: R_th = 50 + 30 = 80, clamped to 2·50 − 1 = 99.
        a.on_loss(ms(1), 20.0, Some(50.0));
        assert_eq!(a.r_th, Some(80.0));
        a.on_timer(ms(3000), 60.0, rtt);
        assert_eq!(a.repairs(), 2, "cwnd 60 < R_th 80: held");
        a.on_timer(ms(6000), 90.0, rtt);
        assert_eq!(a.repairs(), 1, "cwnd 90 >= R_th: lowered");
    }
}
