//! The fountain code of FECTCP (Botos, B1): RaptorQ (RFC 6330) through the `raptorq`
//! crate, in source blocks of up to 56 403 symbols; symbol `n` of the transfer is the
//! `n / Z`-th encoding symbol of source block `n mod Z`, so every source block receives
//! symbols at the same pace. The first symbols of each block are its source symbols
//! (systematic), the rest repair symbols generated on demand — a symbol is never sent
//! twice, so a lost one is simply replaced by the next.

use raptorq::{
    calculate_block_offsets, EncodingPacket, ObjectTransmissionInformation, PayloadId,
    SourceBlockDecoder, SourceBlockEncoder,
};

/// Bytes of RaptorQ's payload id in front of every symbol.
pub const PAYLOAD_ID_LEN: usize = 4;

/// Largest block FECTCP transfers (B1).
pub const MAX_BLOCK: u64 = 4 << 30;

/// The code parameters for a block of `len` bytes sent in packets whose payload holds at
/// most `max_payload` bytes (payload id included).
///
/// No sub-blocks (a symbol is one contiguous piece of the block) and as few source blocks
/// as RFC 6330's K'max allows. Smaller blocks did not decode faster (16 MiB: 241 MB/s in
/// one block, 267 in three, 274 in twelve) but cost FECTCP throughput: the transfer ends
/// when the unluckiest block has its symbols (at 25 % loss, 36 blocks of
/// 1024 symbols moved 0.69 Mb/s where one block moved 0.73).
pub fn parameters(len: u64, max_payload: usize) -> ObjectTransmissionInformation {
    let symbol = symbol_size(max_payload);
    let len = len.clamp(1, max_block(max_payload));
    let symbols = len.div_ceil(symbol as u64);
    let blocks = symbols.div_ceil(MAX_SYMBOLS_PER_BLOCK).clamp(1, 255);
    ObjectTransmissionInformation::new(len, symbol, blocks as u8, 1, 1)
}

/// RFC 6330's K'max.
const MAX_SYMBOLS_PER_BLOCK: u64 = 56_403;

/// Bytes of block data per symbol in packets of `max_payload` bytes.
fn symbol_size(max_payload: usize) -> u16 {
    max_payload
        .saturating_sub(PAYLOAD_ID_LEN)
        .clamp(1, u16::MAX as usize) as u16
}

/// The largest block that packets of `max_payload` bytes can carry: [`MAX_BLOCK`], or
/// less when symbols are so small that 255 source blocks of K'max symbols hold less (a
/// larger one makes the `raptorq` crate panic).
pub fn max_block(max_payload: usize) -> u64 {
    let symbols = 255 * MAX_SYMBOLS_PER_BLOCK;
    MAX_BLOCK.min(symbols * symbol_size(max_payload) as u64)
}

/// Produces the symbols of one block.
pub struct FountainEncoder {
    blocks: Vec<SourceBlockEncoder>,
    /// Source symbols per source block.
    source_symbols: Vec<u32>,
    /// The block's bytes, zero-padded to whole source blocks.
    data: Vec<u8>,
    offsets: Vec<(usize, usize)>,
    symbol_size: usize,
    oti: ObjectTransmissionInformation,
}

impl std::fmt::Debug for FountainEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FountainEncoder")
            .field("len", &self.oti.transfer_length())
            .field("source_blocks", &self.blocks.len())
            .field("symbol_size", &self.symbol_size)
            .finish()
    }
}

impl FountainEncoder {
    /// Prepares the block `data`, taken over rather than copied (the intermediate symbols
    /// of every source block are computed here; the crate caches its encoding plans per
    /// block size).
    pub fn new(data: Vec<u8>, oti: ObjectTransmissionInformation) -> Self {
        let offsets = calculate_block_offsets(&data, &oti);
        let padded_len = offsets.last().map_or(0, |o| o.1);
        let mut padded = data;
        let len = padded.len();
        padded.resize(padded_len.max(len), 0);
        let symbol_size = oti.symbol_size() as usize;
        let blocks: Vec<SourceBlockEncoder> = offsets
            .iter()
            .enumerate()
            .map(|(i, &(a, b))| SourceBlockEncoder::new(i as u8, &oti, &padded[a..b]))
            .collect();
        let source_symbols = offsets
            .iter()
            .map(|&(a, b)| ((b - a) / symbol_size) as u32)
            .collect();
        FountainEncoder {
            blocks,
            source_symbols,
            data: padded,
            offsets,
            symbol_size,
            oti,
        }
    }

    /// The parameters the receiver needs, serialized (12 bytes).
    pub fn oti(&self) -> [u8; 12] {
        self.oti.serialize()
    }

    /// Source symbols in the whole block: the fewest symbols that can decode it.
    pub fn source_symbol_count(&self) -> u64 {
        self.source_symbols.iter().map(|&k| k as u64).sum()
    }

    /// Symbol number `n` of the transfer as a packet payload (payload id + symbol).
    pub fn symbol(&self, n: u64) -> Vec<u8> {
        let z = self.blocks.len() as u64;
        let (b, esi) = ((n % z) as usize, (n / z) as u32);
        let k = self.source_symbols[b];
        let mut out = Vec::with_capacity(PAYLOAD_ID_LEN + self.symbol_size);
        if esi < k {
            out.extend_from_slice(&PayloadId::new(b as u8, esi).serialize());
            let start = self.offsets[b].0 + esi as usize * self.symbol_size;
            out.extend_from_slice(&self.data[start..start + self.symbol_size]);
        } else {
            let p = self.blocks[b]
                .repair_packets(esi - k, 1)
                .pop()
                .expect("one repair packet");
            out.extend_from_slice(&p.payload_id().serialize());
            out.extend_from_slice(p.data());
        }
        out
    }
}

/// Collects symbols until the block can be rebuilt.
pub struct FountainDecoder {
    blocks: Vec<SourceBlockDecoder>,
    done: Vec<Option<Vec<u8>>>,
    oti: ObjectTransmissionInformation,
    /// Symbols accepted (duplicates and unusable ones excluded).
    pub symbols_received: u64,
}

impl std::fmt::Debug for FountainDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FountainDecoder")
            .field("len", &self.oti.transfer_length())
            .field("symbols_received", &self.symbols_received)
            .finish()
    }
}

/// Why a block's parameters were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParameters(pub &'static str);

impl FountainDecoder {
    /// A decoder for the block the serialized parameters describe. Parameters are checked
    /// first: they come off the wire and the crate would panic on some.
    pub fn new(oti: &[u8; 12], max_payload: usize) -> Result<Self, BadParameters> {
        let oti = ObjectTransmissionInformation::deserialize(oti);
        let t = oti.symbol_size() as usize;
        if t == 0 || t + PAYLOAD_ID_LEN > max_payload {
            return Err(BadParameters("symbol size"));
        }
        // Also refuses a length too large for its symbol size (found by the fec fuzz
        // target: building the comparison parameters then panicked in `raptorq`).
        if oti.transfer_length() == 0 || oti.transfer_length() > max_block(t + PAYLOAD_ID_LEN) {
            return Err(BadParameters("block length"));
        }
        // Only the parameters our own encoder chooses are accepted.
        let expect = parameters(oti.transfer_length(), t + PAYLOAD_ID_LEN);
        if expect != oti {
            return Err(BadParameters("not the parameters tcpfec uses"));
        }
        let z = oti.source_blocks() as usize;
        let kt = oti.transfer_length().div_ceil(t as u64);
        // RFC 6330 partition: the first zl blocks have kl symbols, the rest ks.
        let (kl, ks, zl) = {
            let kl = kt.div_ceil(z as u64);
            let ks = kt / z as u64;
            let zl = kt - ks * z as u64;
            (kl, ks, zl as usize)
        };
        let blocks = (0..z)
            .map(|i| {
                let k = if i < zl { kl } else { ks };
                SourceBlockDecoder::new(i as u8, &oti, k * t as u64)
            })
            .collect();
        Ok(FountainDecoder {
            blocks,
            done: vec![None; z],
            oti,
            symbols_received: 0,
        })
    }

    /// Adds one symbol (payload id + symbol); returns the block once it is rebuilt.
    pub fn add(&mut self, payload: &[u8]) -> Option<Vec<u8>> {
        if payload.len() != PAYLOAD_ID_LEN + self.oti.symbol_size() as usize {
            return None;
        }
        let id = PayloadId::deserialize(payload[..PAYLOAD_ID_LEN].try_into().ok()?);
        let b = id.source_block_number() as usize;
        if b >= self.blocks.len() {
            return None;
        }
        self.symbols_received += 1;
        if self.done[b].is_none() {
            let packet = EncodingPacket::new(id, payload[PAYLOAD_ID_LEN..].to_vec());
            self.done[b] = self.blocks[b].decode(std::iter::once(packet));
        }
        if self.done.iter().any(|d| d.is_none()) {
            return None;
        }
        let mut out = Vec::with_capacity(self.oti.transfer_length() as usize);
        for d in self.done.iter().flatten() {
            out.extend_from_slice(d);
        }
        out.truncate(self.oti.transfer_length() as usize);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    #[test]
    fn decodes_from_any_symbols_slightly_more_than_the_source_count() {
        for len in [1usize, 1000, 64 << 10, 300_000] {
            let data = block(len);
            let oti = parameters(len as u64, 1456);
            let enc = FountainEncoder::new(data.clone(), oti);
            let k = enc.source_symbol_count();
            let mut dec = FountainDecoder::new(&enc.oti(), 1456).unwrap();
            // Lose every third symbol: only repair symbols can make up for them.
            let mut got = None;
            let mut sent = 0;
            for n in 0..3 * k + 10 {
                if n % 3 == 1 {
                    continue;
                }
                sent += 1;
                if let Some(d) = dec.add(&enc.symbol(n)) {
                    got = Some(d);
                    break;
                }
            }
            assert_eq!(got.as_deref(), Some(&data[..]), "len {len}");
            assert!(
                sent <= k + 2 * enc.blocks.len() as u64 + 2,
                "len {len}: {sent} symbols for {k}"
            );
        }
    }

    #[test]
    fn an_11_mib_block_with_bursty_loss_decodes() {
        let data = block(11 << 20);
        let oti = parameters(data.len() as u64, 1456);
        let enc = FountainEncoder::new(data.clone(), oti);
        let mut dec = FountainDecoder::new(&enc.oti(), 1456).unwrap();
        let mut got = None;
        // Lose 10 %, in runs of four symbols.
        for n in 0..2 * enc.source_symbol_count() {
            if n % 40 < 4 {
                continue;
            }
            if let Some(d) = dec.add(&enc.symbol(n)) {
                got = Some(d);
                break;
            }
        }
        assert!(got == Some(data), "11 MiB block not rebuilt");
    }

    #[test]
    fn foreign_parameters_are_refused() {
        let oti = parameters(10_000, 1456).serialize();
        assert!(
            FountainDecoder::new(&oti, 1000).is_err(),
            "symbol larger than the packet"
        );
        let mut bad = oti;
        bad[7] ^= 1; // another symbol size
        assert!(FountainDecoder::new(&bad, 1456).is_err());
        assert!(FountainDecoder::new(&[0; 12], 1456).is_err());
        // 4 GiB in 1-byte symbols: more than 255 source blocks can hold (this panicked).
        let mut tiny = [0u8; 12];
        tiny[..5].copy_from_slice(&(4u64 << 30).to_be_bytes()[3..]);
        tiny[6..8].copy_from_slice(&1u16.to_be_bytes());
        tiny[8] = 255;
        tiny[9..11].copy_from_slice(&1u16.to_be_bytes());
        tiny[11] = 1;
        assert!(FountainDecoder::new(&tiny, 1456).is_err());
    }
}
