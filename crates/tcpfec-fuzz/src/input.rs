//! A cursor over fuzzer bytes that never fails: reads past the end yield zeros, so every
//! byte string is a valid input and the fuzzer's mutations always mean something.

/// Reads little pieces of a fuzz input in order.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Input { bytes }
    }

    /// True once every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.bytes
    }

    /// The next byte, or `None` at the end (for callers that treat the end specially).
    pub fn take(&mut self) -> Option<u8> {
        let (&b, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(b)
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        self.take().unwrap_or(0)
    }

    /// The next two bytes, big-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, big-endian.
    pub fn u32(&mut self) -> u32 {
        (self.u16() as u32) << 16 | self.u16() as u32
    }

    /// The next eight bytes, big-endian.
    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) << 32 | self.u32() as u64
    }

    /// The next `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = rest;
        head
    }

    /// One of `items`, chosen by the next byte.
    pub fn pick<'t, T>(&mut self, items: &'t [T]) -> &'t T {
        &items[self.u8() as usize % items.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_in_order_and_zeros_past_the_end() {
        let mut i = Input::new(&[1, 2, 3, 4, 5]);
        assert_eq!(i.u8(), 1);
        assert_eq!(i.u16(), 0x0203);
        assert_eq!(i.bytes(5), &[4, 5]);
        assert!(i.is_empty());
        assert_eq!(i.u32(), 0);
        assert_eq!(i.take(), None);
    }
}
