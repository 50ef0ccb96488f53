//! Delivery delay of a byte stream: when each byte was written, so that its in-order
//! read can be charged the time between (SPEC C6 asks for delay jitter; this is the delay
//! itself).

use std::collections::VecDeque;

/// The writes of one stream not yet read in full, as (stream offset after the write,
/// time of the write in ns), oldest first.
#[derive(Debug, Default)]
pub(crate) struct WriteLog {
    writes: VecDeque<(u64, u64)>,
    read: u64,
}

impl WriteLog {
    /// The application has written the stream up to offset `end` at `now_ns`.
    pub fn on_write(&mut self, end: u64, now_ns: u64) {
        match self.writes.back_mut() {
            // Several writes at one instant are one write.
            Some(last) if last.1 == now_ns => last.0 = last.0.max(end),
            // Nothing new written.
            Some(last) if last.0 >= end => {}
            None if end <= self.read => {}
            _ => self.writes.push_back((end, now_ns)),
        }
    }

    /// `len` more bytes were read in order at `now_ns`: calls `charge(delay_ns, bytes)`
    /// for each write they came from.
    pub fn on_read(&mut self, len: u64, now_ns: u64, mut charge: impl FnMut(u64, u64)) {
        let end = self.read + len;
        while self.read < end {
            let Some(&(w_end, at)) = self.writes.front() else {
                debug_assert!(false, "read beyond what was written");
                self.read = end;
                return;
            };
            let upto = w_end.min(end);
            charge(now_ns.saturating_sub(at), upto - self.read);
            self.read = upto;
            if upto == w_end {
                self.writes.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_byte_is_charged_from_its_own_write() {
        let mut log = WriteLog::default();
        log.on_write(1000, 10);
        log.on_write(1500, 20);
        log.on_write(3000, 20); // same instant: one write up to 3000
        log.on_write(4000, 35);
        let mut got = Vec::new();
        // 1200 bytes at t = 50: 1000 written at 10, 200 at 20.
        log.on_read(1200, 50, |d, b| got.push((d, b)));
        // The rest at t = 100: 1800 written at 20, 1000 at 35.
        log.on_read(2800, 100, |d, b| got.push((d, b)));
        assert_eq!(got, vec![(40, 1000), (30, 200), (80, 1800), (65, 1000)]);
        assert!(log.writes.is_empty());
    }
}
