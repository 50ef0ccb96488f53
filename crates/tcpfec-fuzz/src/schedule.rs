//! Seeded adversarial schedules: the pair harness of [`crate::pair`] driven by a seed
//! instead of a fuzzer, for long runs (`tcpfec bench fuzz`) and the quick test.
//!
//! Each seed draws a channel profile (loss rate and burstiness, duplication, corruption,
//! long holds, jitter, how long the adversary lasts) and a setup (sizes, segment size,
//! write pattern, delayed ACKs), then writes the schedule bytes the fuzz target would
//! read. A failing seed is therefore also a pair fuzz input: [`input`] gives its bytes.

use crate::pair::{self, Fate, Outcome, Setup, MAX_BYTES, MSS_CHOICES, SCHEMES, WRITE_CHOICES};
use core::time::Duration;

/// SplitMix64: small, fast and good enough to vary channel profiles.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [0, n).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

/// How hostile one schedule's channel is.
struct Profile {
    loss: f64,
    /// Share of losses that start a burst.
    burst: f64,
    dup: f64,
    corrupt: f64,
    hold: f64,
    jitter_ms: u64,
    /// Datagrams the adversary decides before the channel turns clean.
    length: u64,
}

impl Profile {
    fn draw(r: &mut Rng) -> Profile {
        Profile {
            loss: 0.4 * r.unit(),
            burst: 0.5 * r.unit(),
            dup: 0.15 * r.unit(),
            corrupt: 0.1 * r.unit(),
            hold: 0.15 * r.unit(),
            jitter_ms: r.below(63),
            length: r.below(2501),
        }
    }

    fn fate(&self, r: &mut Rng) -> Fate {
        let ms = Duration::from_millis;
        let delay = |r: &mut Rng| ms(10 + r.below(self.jitter_ms + 1));
        if r.chance(self.loss) {
            if r.chance(self.burst) {
                Fate::DropBurst(1 + r.below(15) as u8)
            } else {
                Fate::Drop
            }
        } else if r.chance(self.dup) {
            Fate::Duplicate(delay(r), ms(r.below(511)))
        } else if r.chance(self.corrupt) {
            Fate::Corrupt {
                at: r.next() as u8,
                mask: (r.next() as u8).max(1),
                delay: delay(r),
            }
        } else if r.chance(self.hold) {
            Fate::Deliver(ms(100 + 50 * r.below(32)))
        } else {
            Fate::Deliver(delay(r))
        }
    }
}

/// The setup and schedule of seed `seed` with `scheme` (an index into [`SCHEMES`]) as
/// the client's scheme. One seed in eight has the server send with another scheme.
pub fn generate(seed: u64, scheme: usize) -> (Setup, Vec<u8>) {
    let mut r = Rng(seed);
    let size = |r: &mut Rng| {
        // Log-uniform: as many small transfers as large ones.
        let bits = 1 + r.below(14) as u32;
        (r.below(1 << bits) as usize + 1).min(MAX_BYTES)
    };
    let server_scheme = if r.chance(0.125) {
        r.below(SCHEMES.len() as u64) as usize
    } else {
        scheme
    };
    let client_bytes = size(&mut r);
    let server_bytes = if r.chance(0.5) { size(&mut r) } else { 0 };
    let setup = Setup {
        client_scheme: scheme,
        server_scheme,
        client_bytes,
        server_bytes,
        mss: MSS_CHOICES[r.below(MSS_CHOICES.len() as u64) as usize],
        write_chunk: WRITE_CHOICES[r.below(WRITE_CHOICES.len() as u64) as usize],
        delayed_ack: r.chance(0.5),
        small_send_buffer: r.chance(0.25),
        insecure: false,
        long_rto: r.chance(0.25),
        data_seed: r.next() as u8,
    };
    let profile = Profile::draw(&mut r);
    let mut schedule = Vec::new();
    for _ in 0..profile.length {
        profile.fate(&mut r).encode(&mut schedule);
    }
    (setup, schedule)
}

/// The pair fuzz input of seed `seed` with `scheme`: replaying it runs the same case.
pub fn input(seed: u64, scheme: usize) -> Vec<u8> {
    let (setup, schedule) = generate(seed, scheme);
    let mut v = setup.encode().to_vec();
    v.extend_from_slice(&schedule);
    v
}

/// Runs seed `seed` with `scheme`.
pub fn run(seed: u64, scheme: usize) -> Outcome {
    let (setup, schedule) = generate(seed, scheme);
    pair::run(&setup, &schedule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saved_input_replays_the_same_run() {
        for seed in 0..20 {
            let scheme = seed as usize % SCHEMES.len();
            assert_eq!(pair::run_input(&input(seed, scheme)), run(seed, scheme));
        }
    }
}
