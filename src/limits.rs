//! Size checks before a sweep starts: a mistyped list or flow count must give a clear
//! message at once, not exhaust the machine's memory an hour later.

use crate::sweep::Run;

/// Memory one simulated flow costs (two engines, their buffers, the flow's statistics),
/// with headroom over the ~39 KiB measured at 40 000 flows (1.56 GB peak).
const BYTES_PER_FLOW: u64 = 48 << 10;
/// Largest memory one run may be estimated to need without `--i-know`.
pub const MAX_RUN_BYTES: u64 = 8 << 30;
/// Largest number of packet transmissions a sweep may be estimated to simulate without
/// `--i-know`: about a day of one core at the simulator's ~1 M packets/s.
pub const MAX_PACKETS: f64 = 1e11;
/// Default cap on the number of runs of one sweep (`--max-runs` overrides it).
pub const DEFAULT_MAX_RUNS: u64 = 10_000;

/// What the user allowed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most runs a sweep may have.
    pub max_runs: u64,
    /// Skip the memory and work estimates.
    pub i_know: bool,
}

/// Refuses a sweep of `count` runs above the run cap, before the run list is built.
pub fn check_count(count: u128, limits: Limits) -> Result<(), String> {
    if count > u128::from(limits.max_runs) {
        return Err(format!(
            "this sweep has {count} runs (every combination of the listed values times \
             --seeds), more than --max-runs {}; give --max-runs {count} to run it",
            limits.max_runs
        ));
    }
    Ok(())
}

/// Estimated packet transmissions of one run: every bottleneck packet of the run's
/// duration, data and ACK, whatever the number of flows.
fn packets_of(r: &Run) -> f64 {
    let sc = &r.scenario;
    let per_second = sc.bottleneck_bps as f64 / (8.0 * f64::from(sc.packet_size));
    2.0 * per_second * sc.duration.as_secs_f64()
}

/// Refuses a sweep whose runs would need more memory, or more work, than the limits,
/// saying how large it is and how to run it anyway.
pub fn check_runs(runs: &[Run], limits: Limits) -> Result<(), String> {
    if limits.i_know {
        return Ok(());
    }
    let biggest = runs
        .iter()
        .map(|r| u64::from(r.scenario.flows) + u64::from(r.scenario.background))
        .max()
        .unwrap_or(0);
    let bytes = biggest.saturating_mul(BYTES_PER_FLOW);
    if bytes > MAX_RUN_BYTES {
        return Err(format!(
            "a run of {biggest} flows would need about {:.1} GiB of memory (about {} KiB a \
             flow; the limit is {} GiB); give --i-know to run it anyway",
            bytes as f64 / f64::from(1u32 << 30),
            BYTES_PER_FLOW >> 10,
            MAX_RUN_BYTES >> 30
        ));
    }
    let packets: f64 = runs.iter().map(packets_of).sum();
    if packets > MAX_PACKETS {
        return Err(format!(
            "this sweep would simulate about {packets:.1e} packet transmissions over {} runs, \
             roughly {:.0} CPU-hours at 1 M packets/s; give --i-know to run it anyway, or \
             shorten --duration",
            runs.len(),
            packets / 1e6 / 3600.0
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Axes;

    fn runs(settings: &[(&str, &str)]) -> Vec<Run> {
        let mut a = Axes::default();
        for (axis, v) in settings {
            a.set(axis, v).unwrap();
        }
        a.expand(1, 1).unwrap()
    }

    #[test]
    fn counts_memory_and_work_are_capped() {
        let strict = Limits {
            max_runs: 10,
            i_know: false,
        };
        assert!(check_count(10, strict).is_ok());
        let e = check_count(11, strict).unwrap_err();
        assert!(e.contains("11 runs") && e.contains("--max-runs 11"), "{e}");
        let big = runs(&[("flows", "400000")]);
        let e = check_runs(&big, strict).unwrap_err();
        assert!(e.contains("GiB") && e.contains("--i-know"), "{e}");
        let long = runs(&[("bottleneck", "100gbit"), ("duration", "80000s")]);
        let e = check_runs(&long, strict).unwrap_err();
        assert!(e.contains("CPU-hours"), "{e}");
        assert!(check_runs(&runs(&[("flows", "10")]), strict).is_ok());
        let trusting = Limits {
            max_runs: 10,
            i_know: true,
        };
        assert!(check_runs(&big, trusting).is_ok());
    }
}
