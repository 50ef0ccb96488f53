//! The wire format: a parsed representation ([`Packet`]) with checked `parse` and `emit`.
//!
//! Layout (version 1, all integers big-endian) is documented in `docs/reference/wire.md`. Every field is
//! checked on parse; any byte string either parses or yields a [`WireError`], never a panic.
//! The payload is carried as [`Bytes`], so parsing from a `Bytes` buffer is zero-copy.

use bytes::Bytes;

/// Wire format version this module reads and writes.
pub const VERSION: u8 = 1;
/// Length of the fixed header in bytes, before options and payload.
pub const FIXED_HEADER_LEN: usize = 40;
/// Most SACK blocks one packet can carry.
pub const MAX_SACK_BLOCKS: usize = 4;

const TYPE_SEGMENT: u8 = 0;
const TYPE_REPAIR: u8 = 1;
const OPT_SACK: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_FEC_GROUP: u8 = 3;
/// Body length of the FEC group option of an original group; a retransmission group's
/// adds its 4-byte number.
const FEC_GROUP_LEN: usize = 13;

/// Body length of the FEC group option for `g`.
fn fec_group_len(g: &FecGroup) -> usize {
    if g.retransmission_group == 0 {
        FEC_GROUP_LEN
    } else {
        FEC_GROUP_LEN + 4
    }
}
const OPT_REPAIR: u8 = 4;
const OPT_FEC_FEEDBACK: u8 = 5;
const OPT_TRANSFER: u8 = 6;
const OPT_NUMBER: u8 = 7;
const OPT_FEC_BLOCK: u8 = 8;
const OPT_WINDOW: u8 = 9;
/// Body length of the compact FEC group option: the packet's index in its group, the
/// group's member count and its repairs, one byte each.
const FEC_BLOCK_LEN: usize = 3;

/// The packet numbered `seg`'s index in `g` when the compact option can carry `g`: a
/// group of first transmissions of consecutive segments, at most 255 of them, that holds
/// `seg` (a repair packet is numbered by its group's first member, index 0). Other
/// groups travel in the full option.
fn compact_index(g: &FecGroup, seg: u64) -> Option<u8> {
    let index = seg.checked_sub(g.first)?;
    (g.retransmission_group == 0 && g.stride == 1 && g.count <= 255 && index < g.count as u64)
        .then_some(index as u8)
}

/// Length of the option that carries `g` on the packet numbered `seg`, type and length
/// bytes included.
fn group_option_len(g: &FecGroup, seg: u64) -> usize {
    2 + compact_index(g, seg).map_or(fec_group_len(g), |_| FEC_BLOCK_LEN)
}

/// Writes the option that carries `g` on the packet numbered `seg` at the start of `out`:
/// option 8 where it applies, option 3 otherwise. Returns its length.
fn write_group_option(out: &mut [u8], g: &FecGroup, seg: u64) -> usize {
    match compact_index(g, seg) {
        Some(index) => {
            let body = [index, g.count as u8, g.repairs];
            out[0] = OPT_FEC_BLOCK;
            out[1] = FEC_BLOCK_LEN as u8;
            out[2..2 + FEC_BLOCK_LEN].copy_from_slice(&body);
            2 + FEC_BLOCK_LEN
        }
        None => write_full_group_option(out, g),
    }
}

/// Writes option 3 for `g` at the start of `out`; returns its length.
fn write_full_group_option(out: &mut [u8], g: &FecGroup) -> usize {
    out[0] = OPT_FEC_GROUP;
    out[1] = fec_group_len(g) as u8;
    out[2..10].copy_from_slice(&g.first.to_be_bytes());
    out[10..12].copy_from_slice(&g.count.to_be_bytes());
    out[12..14].copy_from_slice(&g.stride.to_be_bytes());
    out[14] = g.repairs;
    if g.retransmission_group != 0 {
        out[15..19].copy_from_slice(&g.retransmission_group.to_be_bytes());
    }
    2 + fec_group_len(g)
}

/// Why a byte string is not a valid packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the fixed header, or than the lengths it announces.
    Truncated,
    /// A version this implementation does not speak.
    UnknownVersion(u8),
    /// A packet type this implementation does not know.
    UnknownType(u8),
    /// Flag bits that are reserved in this version are set.
    ReservedFlags(u16),
    /// The reserved header byte is not zero.
    ReservedByte(u8),
    /// Bytes left over after the announced payload.
    TrailingBytes,
    /// An option is malformed (bad length, bad SACK block, repeated, or unknown type).
    BadOption(&'static str),
    /// The payload is longer than a 16-bit length can say.
    PayloadTooLong,
    /// The output buffer is too small for `emit`.
    BufferTooSmall,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "packet truncated"),
            WireError::UnknownVersion(v) => write!(f, "unknown wire version {v}"),
            WireError::UnknownType(t) => write!(f, "unknown packet type {t}"),
            WireError::ReservedFlags(b) => write!(f, "reserved flag bits set: {b:#06x}"),
            WireError::ReservedByte(b) => write!(f, "reserved byte is {b}, not 0"),
            WireError::TrailingBytes => write!(f, "trailing bytes after payload"),
            WireError::BadOption(why) => write!(f, "bad option: {why}"),
            WireError::PayloadTooLong => write!(f, "payload longer than 65535 bytes"),
            WireError::BufferTooSmall => write!(f, "output buffer too small"),
        }
    }
}

impl std::error::Error for WireError {}

/// Header flags (a bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Flags(pub u16);

impl Flags {
    /// Opens a connection.
    pub const SYN: Flags = Flags(1 << 0);
    /// The `ack` field is valid.
    pub const ACK: Flags = Flags(1 << 1);
    /// This segment ends the sender's byte stream; it occupies one segment number.
    pub const FIN: Flags = Flags(1 << 2);
    /// Aborts the connection.
    pub const RST: Flags = Flags(1 << 3);
    /// ECN-Echo: the receiver asks the sender to react as to congestion (RFC 3168).
    pub const ECE: Flags = Flags(1 << 4);
    /// Congestion Window Reduced: the sender has reacted to ECE (RFC 3168).
    pub const CWR: Flags = Flags(1 << 5);
    /// On SYN / SYN-ACK: the sender of this packet understands SACK blocks.
    pub const SACK_PERMITTED: Flags = Flags(1 << 6);
    /// FECTCP: the first symbol of a new block transfer (Botos' BSYN).
    pub const BSYN: Flags = Flags(1 << 7);
    /// FECTCP: the receiver has decoded the block (Botos' BACK).
    pub const BACK: Flags = Flags(1 << 8);
    /// All bits defined in this version.
    pub const KNOWN: u16 = 0x1ff;

    /// No flag set.
    pub const fn empty() -> Flags {
        Flags(0)
    }
    /// True if every bit of `other` is set here.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: Flags) {
        self.0 |= other.0;
    }
}

impl core::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// A run of received segments `[start, end)` reported by the receiver (RFC 2018 style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SackBlock {
    /// First segment number of the run.
    pub start: u64,
    /// One past the last segment number of the run.
    pub end: u64,
}

/// Up to [`MAX_SACK_BLOCKS`] SACK blocks, most recent first, stored inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// Appends a block; returns false (and drops it) when full.
    pub fn push(&mut self, b: SackBlock) -> bool {
        if (self.len as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.len as usize] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }
    /// The blocks present.
    pub fn as_slice(&self) -> &[SackBlock] {
        &self.blocks[..self.len as usize]
    }
    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// True if there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Keeps the first `n` blocks (the most recent), drops the rest.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n.min(MAX_SACK_BLOCKS) as u8);
    }
}

/// The FEC group a source segment or repair packet belongs to: segments
/// `first, first + stride, …, first + (count − 1)·stride` (SPEC C4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FecGroup {
    /// Segment number of the first member; also the group's identifier.
    pub first: u64,
    /// Number of source segments in the group.
    pub count: u16,
    /// Distance between consecutive members (the interleaving depth; 1 = consecutive).
    pub stride: u16,
    /// Repair packets the group gets (1: XOR; more: Reed-Solomon).
    pub repairs: u8,
    /// 0 for a group of first transmissions, whose first member identifies it. A group of
    /// retransmissions carries a nonzero number of its own, unique within the connection,
    /// because it may start at the same segment as an original group or as an earlier
    /// group of retransmissions (Sato §3.2 protects retransmissions like originals).
    pub retransmission_group: u32,
}

impl FecGroup {
    /// The key a receiver files the group under: first member and retransmission group.
    pub fn key(&self) -> (u64, u32) {
        (self.first, self.retransmission_group)
    }

    /// Segment number of the last member.
    pub fn last(&self) -> u64 {
        self.first + (self.count.max(1) as u64 - 1) * self.stride as u64
    }

    /// Position of `seg` in the group, if it is a member.
    pub fn index_of(&self, seg: u64) -> Option<usize> {
        let off = seg.checked_sub(self.first)?;
        let stride = self.stride.max(1) as u64;
        (off % stride == 0 && off / stride < self.count as u64).then(|| (off / stride) as usize)
    }
}

/// What makes a packet a repair packet: the coding parameters beside the coded payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RepairInfo {
    /// XOR of the members' payload lengths, so a recovered segment has its exact length.
    pub len_xor: u16,
    /// Index of this repair packet among the group's repair packets (0 for XOR).
    pub index: u8,
    /// Number of repair packets of the group (1 for XOR).
    pub total: u8,
}

/// What makes a packet a repair of the sliding-window code (`fec::window`): it combines
/// the source segments `[seg, seg + count)`, `seg` being the packet's segment number, with
/// coefficients drawn from `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct WindowInfo {
    /// Segments covered, at least 1.
    pub count: u16,
    /// The key the coefficients are drawn from.
    pub key: u16,
}

/// One packet, parsed. Data, acknowledgement and control travel in the same packet type;
/// a packet with `repair` set is a repair packet (its payload is coded, not stream data).
/// FECTCP: which block transfer a symbol belongs to and how to decode it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TransferInfo {
    /// Transfer id: distinguishes the blocks of one connection.
    pub id: u32,
    /// The fountain code's object transmission information (RFC 6330 §3.3.2, 12 bytes):
    /// block length, symbol size, source blocks, sub-blocks, alignment.
    pub oti: [u8; 12],
}

/// What the receiver's FEC decoder has seen, as wrapping cumulative counters (so a lost
/// ACK loses no event): TCP-dFEC (Ferlin, F2) steers cwnd and the FEC ratio by them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct FecFeedback {
    /// Segments rebuilt from repair packets.
    pub recovered: u32,
    /// Groups with more losses than repairs ("FEC failed").
    pub failed: u32,
    /// Groups that lost no data but whose repair never arrived ("FEC lost").
    pub repairs_lost: u32,
    /// Data and repair packets received (TCP-TFEC's Rp).
    pub received: u32,
    /// Loss runs the receiver measured from packet numbers (`auto` only).
    pub loss: Option<LossCounters>,
}

/// What the receiver learned from the gaps in the packet numbers, as wrapping cumulative
/// counters: the sufficient statistics of a two-state Gilbert channel (packets lost, runs
/// of losses), split by whether the path's queue was near full when the run ended
/// (`receiver::loss_runs` explains the split).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct LossCounters {
    /// Numbered packets lost while the queue was not near full (channel losses).
    pub lost: u32,
    /// Runs of consecutive channel losses.
    pub runs: u32,
    /// Numbered packets lost while the queue was near full (taken as congestion drops),
    /// or in runs too long for any block to repair (outages).
    pub congestion_lost: u32,
    /// Numbered packets received while the queue was near full. The channel estimate
    /// leaves them out with the losses counted as congestion: counting them as channel
    /// packets that arrived would read a lossy link's losses at a full queue as no loss.
    pub congestion_received: u32,
}

/// One engine packet: the header and its options, and the payload (a segment's data or
/// a repair symbol). [`Packet::parse`] reads one from bytes, [`Packet::emit`] writes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packet {
    /// Connection identifier chosen by the receiver of this packet (for demultiplexing).
    pub conn_id: u32,
    /// Header flags.
    pub flags: Flags,
    /// Segment number of this segment; for packets without data, the sender's next segment.
    pub seg: u64,
    /// Cumulative acknowledgement: the next segment number the sender of this packet expects.
    pub ack: u64,
    /// Receive window in bytes, counted from the first unacknowledged byte.
    pub window: u32,
    /// Sender's timestamp in microseconds (wrapping), for RTT measurement.
    pub ts_val: u32,
    /// Echo of the peer's `ts_val` that this packet acknowledges; 0 if none.
    pub ts_ecr: u32,
    /// Maximum payload per segment the sender of this packet accepts (on SYN packets).
    pub mss: Option<u16>,
    /// Selective acknowledgement blocks, most recent first.
    pub sack: SackBlocks,
    /// The FEC group of this source segment, or of this repair packet.
    pub fec: Option<FecGroup>,
    /// Set on repair packets of a block code.
    pub repair: Option<RepairInfo>,
    /// Set on repair packets of the sliding-window code.
    pub window_repair: Option<WindowInfo>,
    /// FEC decoder counters, on ACKs of schemes that ask for them.
    pub fec_feedback: Option<FecFeedback>,
    /// FECTCP: the block transfer of this symbol (or of this ACK).
    pub transfer: Option<TransferInfo>,
    /// Transmission number (wrapping), on every data and repair packet of schemes that
    /// measure loss runs: a gap in the numbers is a run of lost packets.
    pub number: Option<u32>,
    /// Application bytes carried by this segment (coded bytes on a repair packet).
    pub payload: Bytes,
}

impl Packet {
    /// True if this packet occupies a segment number (carries data or FIN).
    pub fn occupies_segment(&self) -> bool {
        !self.is_repair() && (!self.payload.is_empty() || self.flags.contains(Flags::FIN))
    }

    /// True for a repair packet (of either code).
    pub fn is_repair(&self) -> bool {
        self.repair.is_some() || self.window_repair.is_some()
    }

    /// Length of the options area in bytes.
    pub fn options_len(&self) -> usize {
        let sack = if self.sack.is_empty() {
            0
        } else {
            2 + 16 * self.sack.len()
        };
        let mss = if self.mss.is_some() { 4 } else { 0 };
        let fec = self
            .fec
            .as_ref()
            .map_or(0, |g| group_option_len(g, self.seg));
        let repair = if self.repair.is_some() { 6 } else { 0 };
        let feedback = match self.fec_feedback {
            Some(FecFeedback { loss: Some(_), .. }) => 34,
            Some(_) => 18,
            None => 0,
        };
        let transfer = if self.transfer.is_some() { 18 } else { 0 };
        let number = if self.number.is_some() { 6 } else { 0 };
        let window = if self.window_repair.is_some() { 6 } else { 0 };
        sack + mss + fec + repair + feedback + transfer + number + window
    }

    /// Total encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        FIXED_HEADER_LEN + self.options_len() + self.payload.len()
    }

    /// Writes the packet into `out`, returning the number of bytes written.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        if self.payload.len() > u16::MAX as usize {
            return Err(WireError::PayloadTooLong);
        }
        if self.repair.is_some() && self.fec.is_none() {
            return Err(WireError::BadOption("repair packet without FEC group"));
        }
        if self.window_repair.is_some() && (self.repair.is_some() || self.fec.is_some()) {
            return Err(WireError::BadOption(
                "window repair packet with a block code's options",
            ));
        }
        let total = self.encoded_len();
        if out.len() < total {
            return Err(WireError::BufferTooSmall);
        }
        out[0] = VERSION;
        out[1] = if self.is_repair() {
            TYPE_REPAIR
        } else {
            TYPE_SEGMENT
        };
        out[2..4].copy_from_slice(&self.flags.0.to_be_bytes());
        out[4..8].copy_from_slice(&self.conn_id.to_be_bytes());
        out[8..16].copy_from_slice(&self.seg.to_be_bytes());
        out[16..24].copy_from_slice(&self.ack.to_be_bytes());
        out[24..28].copy_from_slice(&self.window.to_be_bytes());
        out[28..32].copy_from_slice(&self.ts_val.to_be_bytes());
        out[32..36].copy_from_slice(&self.ts_ecr.to_be_bytes());
        out[36..38].copy_from_slice(&(self.payload.len() as u16).to_be_bytes());
        out[38] = self.options_len() as u8;
        out[39] = 0;
        let mut at = FIXED_HEADER_LEN;
        if let Some(mss) = self.mss {
            out[at] = OPT_MSS;
            out[at + 1] = 2;
            out[at + 2..at + 4].copy_from_slice(&mss.to_be_bytes());
            at += 4;
        }
        if let Some(g) = &self.fec {
            at += write_group_option(&mut out[at..], g, self.seg);
        }
        if let Some(r) = self.repair {
            out[at] = OPT_REPAIR;
            out[at + 1] = 4;
            out[at + 2..at + 4].copy_from_slice(&r.len_xor.to_be_bytes());
            out[at + 4] = r.index;
            out[at + 5] = r.total;
            at += 6;
        }
        if let Some(f) = self.fec_feedback {
            out[at] = OPT_FEC_FEEDBACK;
            out[at + 1] = if f.loss.is_some() { 32 } else { 16 };
            out[at + 2..at + 6].copy_from_slice(&f.recovered.to_be_bytes());
            out[at + 6..at + 10].copy_from_slice(&f.failed.to_be_bytes());
            out[at + 10..at + 14].copy_from_slice(&f.repairs_lost.to_be_bytes());
            out[at + 14..at + 18].copy_from_slice(&f.received.to_be_bytes());
            at += 18;
            if let Some(l) = f.loss {
                out[at..at + 4].copy_from_slice(&l.lost.to_be_bytes());
                out[at + 4..at + 8].copy_from_slice(&l.runs.to_be_bytes());
                out[at + 8..at + 12].copy_from_slice(&l.congestion_lost.to_be_bytes());
                out[at + 12..at + 16].copy_from_slice(&l.congestion_received.to_be_bytes());
                at += 16;
            }
        }
        if let Some(w) = self.window_repair {
            out[at] = OPT_WINDOW;
            out[at + 1] = 4;
            out[at + 2..at + 4].copy_from_slice(&w.count.to_be_bytes());
            out[at + 4..at + 6].copy_from_slice(&w.key.to_be_bytes());
            at += 6;
        }
        if let Some(n) = self.number {
            out[at] = OPT_NUMBER;
            out[at + 1] = 4;
            out[at + 2..at + 6].copy_from_slice(&n.to_be_bytes());
            at += 6;
        }
        if let Some(t) = self.transfer {
            out[at] = OPT_TRANSFER;
            out[at + 1] = 16;
            out[at + 2..at + 6].copy_from_slice(&t.id.to_be_bytes());
            out[at + 6..at + 18].copy_from_slice(&t.oti);
            at += 18;
        }
        if !self.sack.is_empty() {
            out[at] = OPT_SACK;
            out[at + 1] = (16 * self.sack.len()) as u8;
            at += 2;
            for b in self.sack.as_slice() {
                out[at..at + 8].copy_from_slice(&b.start.to_be_bytes());
                out[at + 8..at + 16].copy_from_slice(&b.end.to_be_bytes());
                at += 16;
            }
        }
        out[at..at + self.payload.len()].copy_from_slice(&self.payload);
        Ok(total)
    }

    /// Encodes into a fresh vector.
    pub fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = vec![0u8; self.encoded_len()];
        let n = self.emit(&mut v)?;
        v.truncate(n);
        Ok(v)
    }

    /// Parses a packet, copying the payload out of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Packet, WireError> {
        Self::parse_with(buf, |range| Bytes::copy_from_slice(&buf[range]))
    }

    /// Parses a packet whose payload shares `buf`'s memory (no copy).
    pub fn parse_bytes(buf: &Bytes) -> Result<Packet, WireError> {
        Self::parse_with(buf, |range| buf.slice(range))
    }

    fn parse_with(
        buf: &[u8],
        payload_of: impl FnOnce(core::ops::Range<usize>) -> Bytes,
    ) -> Result<Packet, WireError> {
        if buf.len() < FIXED_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let u16_at = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes(buf[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().unwrap());
        if buf[0] != VERSION {
            return Err(WireError::UnknownVersion(buf[0]));
        }
        if buf[1] != TYPE_SEGMENT && buf[1] != TYPE_REPAIR {
            return Err(WireError::UnknownType(buf[1]));
        }
        let flags = u16_at(2);
        if flags & !Flags::KNOWN != 0 {
            return Err(WireError::ReservedFlags(flags & !Flags::KNOWN));
        }
        if buf[39] != 0 {
            return Err(WireError::ReservedByte(buf[39]));
        }
        let payload_len = u16_at(36) as usize;
        let opt_len = buf[38] as usize;
        let payload_start = FIXED_HEADER_LEN + opt_len;
        let end = payload_start + payload_len;
        if buf.len() < end {
            return Err(WireError::Truncated);
        }
        if buf.len() > end {
            return Err(WireError::TrailingBytes);
        }
        let mut p = Packet {
            conn_id: u32_at(4),
            flags: Flags(flags),
            seg: u64_at(8),
            ack: u64_at(16),
            window: u32_at(24),
            ts_val: u32_at(28),
            ts_ecr: u32_at(32),
            ..Packet::default()
        };
        parse_options(&buf[FIXED_HEADER_LEN..payload_start], &mut p)?;
        if (buf[1] == TYPE_REPAIR) != p.is_repair() {
            return Err(WireError::BadOption(
                "repair option and packet type disagree",
            ));
        }
        if p.window_repair.is_some() && (p.repair.is_some() || p.fec.is_some()) {
            return Err(WireError::BadOption(
                "window repair packet with a block code's options",
            ));
        }
        if let Some(w) = p.window_repair {
            if p.seg.checked_add(u64::from(w.count)).is_none() {
                return Err(WireError::BadOption(
                    "repair window beyond the segment space",
                ));
            }
        }
        if p.repair.is_some() && p.fec.is_none() {
            return Err(WireError::BadOption("repair packet without FEC group"));
        }
        p.payload = payload_of(payload_start..end);
        Ok(p)
    }
}

fn parse_options(mut opts: &[u8], p: &mut Packet) -> Result<(), WireError> {
    let mut seen_sack = false;
    while !opts.is_empty() {
        if opts.len() < 2 {
            return Err(WireError::BadOption("option header truncated"));
        }
        let (kind, len) = (opts[0], opts[1] as usize);
        let body = opts
            .get(2..2 + len)
            .ok_or(WireError::BadOption("option body truncated"))?;
        match kind {
            OPT_MSS => {
                if len != 2 || p.mss.is_some() {
                    return Err(WireError::BadOption("MSS option length or repetition"));
                }
                p.mss = Some(u16::from_be_bytes([body[0], body[1]]));
            }
            OPT_SACK => {
                if seen_sack || len == 0 || len % 16 != 0 || len / 16 > MAX_SACK_BLOCKS {
                    return Err(WireError::BadOption("SACK option length or repetition"));
                }
                seen_sack = true;
                for chunk in body.chunks_exact(16) {
                    let start = u64::from_be_bytes(chunk[..8].try_into().unwrap());
                    let end = u64::from_be_bytes(chunk[8..].try_into().unwrap());
                    if start >= end {
                        return Err(WireError::BadOption("SACK block with start >= end"));
                    }
                    p.sack.push(SackBlock { start, end });
                }
            }
            OPT_FEC_GROUP => {
                if !(len == FEC_GROUP_LEN || len == FEC_GROUP_LEN + 4) || p.fec.is_some() {
                    return Err(WireError::BadOption(
                        "FEC group option length or repetition",
                    ));
                }
                let first = u64::from_be_bytes(body[..8].try_into().unwrap());
                let count = u16::from_be_bytes([body[8], body[9]]);
                let stride = u16::from_be_bytes([body[10], body[11]]);
                let repairs = body[12];
                let retransmission_group = if len > FEC_GROUP_LEN {
                    let n = u32::from_be_bytes(body[13..17].try_into().unwrap());
                    if n == 0 {
                        return Err(WireError::BadOption(
                            "FEC group option carries retransmission group 0",
                        ));
                    }
                    n
                } else {
                    0
                };
                if count == 0 || stride == 0 || repairs == 0 {
                    return Err(WireError::BadOption(
                        "FEC group with zero count, stride or repairs",
                    ));
                }
                if first
                    .checked_add((count as u64 - 1) * stride as u64)
                    .is_none()
                {
                    return Err(WireError::BadOption("FEC group beyond the segment space"));
                }
                let g = FecGroup {
                    first,
                    count,
                    stride,
                    repairs,
                    retransmission_group,
                };
                if compact_index(&g, p.seg).is_some() {
                    // One encoding per packet: such a group travels in option 8.
                    return Err(WireError::BadOption(
                        "FEC group option for a group the compact block option carries",
                    ));
                }
                p.fec = Some(g);
            }
            OPT_FEC_BLOCK => {
                if len != FEC_BLOCK_LEN || p.fec.is_some() {
                    return Err(WireError::BadOption(
                        "FEC block option length or repetition",
                    ));
                }
                let (index, count, repairs) = (body[0], body[1], body[2]);
                if count == 0 || repairs == 0 || index >= count {
                    return Err(WireError::BadOption(
                        "FEC block with zero count or repairs, or an index past its count",
                    ));
                }
                let Some(first) = p.seg.checked_sub(index as u64) else {
                    return Err(WireError::BadOption("FEC block starts before segment 0"));
                };
                if first.checked_add(count as u64 - 1).is_none() {
                    return Err(WireError::BadOption("FEC block beyond the segment space"));
                }
                p.fec = Some(FecGroup {
                    first,
                    count: count as u16,
                    stride: 1,
                    repairs,
                    retransmission_group: 0,
                });
            }
            OPT_REPAIR => {
                if len != 4 || p.repair.is_some() {
                    return Err(WireError::BadOption("repair option length or repetition"));
                }
                let r = RepairInfo {
                    len_xor: u16::from_be_bytes([body[0], body[1]]),
                    index: body[2],
                    total: body[3],
                };
                if r.total == 0 || r.index >= r.total {
                    return Err(WireError::BadOption("repair index outside its total"));
                }
                p.repair = Some(r);
            }
            OPT_FEC_FEEDBACK => {
                if !(len == 16 || len == 32) || p.fec_feedback.is_some() {
                    return Err(WireError::BadOption(
                        "FEC feedback option length or repetition",
                    ));
                }
                let word = |i: usize| u32::from_be_bytes(body[i..i + 4].try_into().unwrap());
                p.fec_feedback = Some(FecFeedback {
                    recovered: word(0),
                    failed: word(4),
                    repairs_lost: word(8),
                    received: word(12),
                    loss: (len == 32).then(|| LossCounters {
                        lost: word(16),
                        runs: word(20),
                        congestion_lost: word(24),
                        congestion_received: word(28),
                    }),
                });
            }
            OPT_WINDOW => {
                if len != 4 || p.window_repair.is_some() {
                    return Err(WireError::BadOption("window option length or repetition"));
                }
                let count = u16::from_be_bytes([body[0], body[1]]);
                if count == 0 {
                    return Err(WireError::BadOption("repair window of no segments"));
                }
                p.window_repair = Some(WindowInfo {
                    count,
                    key: u16::from_be_bytes([body[2], body[3]]),
                });
            }
            OPT_NUMBER => {
                if len != 4 || p.number.is_some() {
                    return Err(WireError::BadOption("number option length or repetition"));
                }
                p.number = Some(u32::from_be_bytes(body[..4].try_into().unwrap()));
            }
            OPT_TRANSFER => {
                if len != 16 || p.transfer.is_some() {
                    return Err(WireError::BadOption("transfer option length or repetition"));
                }
                let mut oti = [0u8; 12];
                oti.copy_from_slice(&body[4..16]);
                p.transfer = Some(TransferInfo {
                    id: u32::from_be_bytes(body[..4].try_into().unwrap()),
                    oti,
                });
            }
            _ => return Err(WireError::BadOption("unknown option type")),
        }
        opts = &opts[2 + len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests;
