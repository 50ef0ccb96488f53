//! Process CPU time, to report CPU use and bytes per CPU-second as iperf3 does.

use std::time::Instant;

/// CPU seconds (user, system) this process has used so far.
pub fn used() -> (f64, f64) {
    #[cfg(unix)]
    {
        // SAFETY: getrusage fills the zeroed struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `u` is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } == 0 {
            let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            return (secs(u.ru_utime), secs(u.ru_stime));
        }
    }
    (0.0, 0.0)
}

/// CPU and wall time from a starting point.
#[derive(Debug, Clone, Copy)]
pub struct Meter {
    start: Instant,
    user: f64,
    system: f64,
}

impl Meter {
    /// Starts measuring now.
    pub fn start() -> Self {
        let (user, system) = used();
        Meter {
            start: Instant::now(),
            user,
            system,
        }
    }

    /// (user, system, wall) seconds since the start.
    pub fn read(&self) -> (f64, f64, f64) {
        let (u, s) = used();
        (
            u - self.user,
            s - self.system,
            self.start.elapsed().as_secs_f64(),
        )
    }
}
