//! The XOR code: one repair packet per group recovers any single lost member.

/// XORs `src` into the start of `dst` (which must be at least as long), a vector at a
/// time: a fixed-size step the compiler turns into vector XORs (a word a step took twice
/// the instructions, and XOR is most of what an `auto` sender does to a payload). On a
/// processor with AVX-512 the loop runs on 64-byte registers, with AVX2 on 32-byte ones,
/// otherwise on the baseline's 16-byte ones.
#[inline]
pub fn xor_into(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has AVX-512F, checked just above.
            return unsafe { xor_into_avx512(dst, src) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { xor_into_avx2(dst, src) };
        }
    }
    xor_into_any::<32>(dst, src)
}

/// [`xor_into`] compiled for AVX-512: half the steps of AVX2 over a 1460-byte payload.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn xor_into_avx512(dst: &mut [u8], src: &[u8]) {
    xor_into_any::<64>(dst, src)
}

/// [`xor_into`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn xor_into_avx2(dst: &mut [u8], src: &[u8]) {
    xor_into_any::<32>(dst, src)
}

/// [`xor_into`] in steps of `STEP` bytes, for whatever instructions the caller was
/// compiled for.
#[inline(always)]
fn xor_into_any<const STEP: usize>(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let whole = n - n % STEP;
    let (dst_whole, dst_rest) = dst[..n].split_at_mut(whole);
    let (src_whole, src_rest) = src.split_at(whole);
    for (a, b) in dst_whole
        .chunks_exact_mut(STEP)
        .zip(src_whole.chunks_exact(STEP))
    {
        let a: &mut [u8; STEP] = a.try_into().unwrap();
        let b: &[u8; STEP] = b.try_into().unwrap();
        for (a, b) in a.iter_mut().zip(b) {
            *a ^= b;
        }
    }
    xor_words(dst_rest, src_rest);
}

/// XORs `src` into `dst` (the same length) a word at a time, the last bytes one by one.
#[inline]
fn xor_words(dst: &mut [u8], src: &[u8]) {
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (a, b) in (&mut d).zip(&mut s) {
        let x = u64::from_ne_bytes(a[..].try_into().unwrap())
            ^ u64::from_ne_bytes(b.try_into().unwrap());
        a.copy_from_slice(&x.to_ne_bytes());
    }
    for (a, b) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *a ^= b;
    }
}

/// Running XOR of a group's payloads and their lengths.
#[derive(Debug, Clone, Default)]
pub struct XorAccumulator {
    bytes: Vec<u8>,
    len_xor: u16,
    members: u32,
}

impl XorAccumulator {
    /// Adds one payload.
    pub fn add(&mut self, payload: &[u8]) {
        if self.bytes.len() < payload.len() {
            self.bytes.resize(payload.len(), 0);
        }
        xor_into(&mut self.bytes, payload);
        self.len_xor ^= payload.len() as u16;
        self.members += 1;
    }

    /// XOR of all payloads (as long as the longest).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// XOR of all payload lengths.
    pub fn len_xor(&self) -> u16 {
        self.len_xor
    }

    /// Payloads added.
    pub fn members(&self) -> u32 {
        self.members
    }

    /// Given the repair of the whole group, rebuilds the one member not added here.
    pub fn recover(&self, repair: &[u8], repair_len_xor: u16) -> Vec<u8> {
        let len = (repair_len_xor ^ self.len_xor) as usize;
        let mut out = repair.to_vec();
        if out.len() < self.bytes.len() {
            out.resize(self.bytes.len(), 0);
        }
        xor_into(&mut out, &self.bytes);
        out.truncate(len.min(out.len()));
        out.resize(len, 0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every single-loss position for group sizes 1–64 with random lengths is rebuilt
    /// byte-exactly, length included.
    #[test]
    fn recovers_every_single_loss_position() {
        let mut state = 0x1234_5678u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for n in 1..=64usize {
            let payloads: Vec<Vec<u8>> = (0..n)
                .map(|_| {
                    let len = 1 + (rnd() % 1460) as usize;
                    (0..len).map(|_| rnd() as u8).collect()
                })
                .collect();
            let mut all = XorAccumulator::default();
            for p in &payloads {
                all.add(p);
            }
            for lost in 0..n {
                let mut acc = XorAccumulator::default();
                for (i, p) in payloads.iter().enumerate() {
                    if i != lost {
                        acc.add(p);
                    }
                }
                let got = acc.recover(all.bytes(), all.len_xor());
                assert_eq!(got, payloads[lost], "n={n} lost={lost}");
            }
        }
    }

    /// Every path the processor can run XORs like one byte at a time, at every length
    /// up to three of the widest steps and with `dst` longer than `src`.
    #[test]
    fn every_vector_width_xors_like_bytes() {
        let src: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        let base: Vec<u8> = (0..210u32).map(|i| (i * 101 + 7) as u8).collect();
        type Path = (&'static str, fn(&mut [u8], &[u8]));
        let mut paths: Vec<Path> = vec![("dispatch", xor_into), ("baseline", xor_into_any::<32>)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the processor has AVX2.
                paths.push(("avx2", |d, s| unsafe { xor_into_avx2(d, s) }));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the processor has AVX-512F.
                paths.push(("avx512", |d, s| unsafe { xor_into_avx512(d, s) }));
            }
        }
        for n in 0..=src.len() {
            let mut want = base.clone();
            for (a, b) in want.iter_mut().zip(&src[..n]) {
                *a ^= b;
            }
            for (name, xor) in &paths {
                let mut got = base.clone();
                xor(&mut got, &src[..n]);
                assert_eq!(got, want, "{name} at length {n}");
            }
        }
    }

    #[test]
    fn two_losses_do_not_give_either_member() {
        let payloads = [vec![1u8; 10], vec![2u8; 20], vec![3u8; 30]];
        let mut all = XorAccumulator::default();
        for p in &payloads {
            all.add(p);
        }
        let mut acc = XorAccumulator::default();
        acc.add(&payloads[0]);
        let got = acc.recover(all.bytes(), all.len_xor());
        assert_ne!(got, payloads[1]);
        assert_ne!(got, payloads[2]);
    }
}
