//! pcapng capture files (the format Wireshark and tshark read natively): one section, one
//! raw-IPv4 interface with nanosecond timestamps, and each packet as an IPv4/UDP
//! datagram around its tcpfec bytes, so the dissector in `contrib/wireshark/` decodes it.
//! The simulator has no addresses: it gives each host 10.A.B.C from its node number, the
//! client of flow F port 40000 + F and every server port [`SIM_SERVER_PORT`].

use std::io::{self, BufWriter, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;

/// pcapng's link type for packets that begin with an IPv4 header.
const LINKTYPE_IPV4: u16 = 228;
/// Longest datagram kept whole.
const SNAPLEN: u32 = 65_535;

/// The UDP port the simulator's captures give the server end of every flow: the
/// dissector reads datagrams to or from it as bare engine packets (no envelope).
pub const SIM_SERVER_PORT: u16 = 7979;

/// The simulated address of node `node` (10.A.B.C, the low three bytes of its number
/// plus one, so that no host gets a network's own address).
pub fn sim_addr(node: u32, port: u16) -> SocketAddrV4 {
    let [_, a, b, c] = node.wrapping_add(1).to_be_bytes();
    SocketAddrV4::new(Ipv4Addr::new(10, a, b, c), port)
}

/// One capture file being written.
pub struct PcapWriter {
    out: BufWriter<std::fs::File>,
    packets: u64,
    bytes: u64,
    limit: u64,
    cut: bool,
}

/// Appends `body`, padded to 32 bits, as a block of `kind`.
fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let pad = (4 - body.len() % 4) % 4;
    let total = (12 + body.len() + pad) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..pad])?;
    out.write_all(&total.to_le_bytes())
}

impl PcapWriter {
    /// Starts a capture at `path` (replaced if it exists) of at most `limit` bytes.
    pub fn create(path: &Path, limit: u64) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 16, std::fs::File::create(path)?);
        // Section header: byte-order magic, version 1.0, section length unknown.
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        block(&mut out, 0x0A0D_0D0A, &shb)?;
        // Interface: raw IPv4, timestamps in nanoseconds (option if_tsresol = 9).
        let mut idb = Vec::new();
        idb.extend_from_slice(&LINKTYPE_IPV4.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&SNAPLEN.to_le_bytes());
        idb.extend_from_slice(&9u16.to_le_bytes()); // if_tsresol
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[9, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        block(&mut out, 1, &idb)?;
        Ok(PcapWriter {
            out,
            packets: 0,
            bytes: 0,
            limit,
            cut: false,
        })
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Writes the UDP datagram `payload` from `src` to `dst` at time `t` (since the start
    /// of the capture, or of the Unix epoch). Past the limit nothing more is written.
    pub fn udp(
        &mut self,
        t: Duration,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        payload: &[u8],
    ) -> io::Result<()> {
        if self.cut {
            return Ok(());
        }
        let ip_len = 20 + 8 + payload.len();
        if self.bytes + ip_len as u64 + 32 > self.limit || ip_len > SNAPLEN as usize {
            self.cut = true;
            return Ok(());
        }
        let mut pkt = Vec::with_capacity(ip_len);
        // IPv4 header: version 4, IHL 5, total length, TTL 64, protocol UDP, checksum.
        pkt.extend_from_slice(&[0x45, 0]);
        pkt.extend_from_slice(&(ip_len as u16).to_be_bytes());
        pkt.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        pkt.extend_from_slice(&src.ip().octets());
        pkt.extend_from_slice(&dst.ip().octets());
        let sum = checksum(&pkt[..20]);
        pkt[10..12].copy_from_slice(&sum.to_be_bytes());
        // UDP header, checksum 0 (none, allowed over IPv4).
        pkt.extend_from_slice(&src.port().to_be_bytes());
        pkt.extend_from_slice(&dst.port().to_be_bytes());
        pkt.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        pkt.extend_from_slice(&[0, 0]);
        pkt.extend_from_slice(payload);
        // Enhanced packet block: interface 0, timestamp (high, low), lengths, data.
        let ns = t.as_nanos() as u64;
        let mut epb = Vec::with_capacity(20 + pkt.len());
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ns as u32).to_le_bytes());
        epb.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        epb.extend_from_slice(&pkt);
        block(&mut self.out, 6, &epb)?;
        self.packets += 1;
        self.bytes += epb.len() as u64 + 12;
        Ok(())
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for PcapWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// The IPv4 header checksum (RFC 791): ones' complement of the ones' complement sum.
fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ipv4_checksum_is_rfc_791s() {
        // The example header of RFC 1071's discussion, checksum field zeroed.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
    }

    #[test]
    fn blocks_are_padded_and_framed_by_their_length() {
        let mut v = Vec::new();
        block(&mut v, 6, &[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(v.len(), 12 + 8);
        assert_eq!(&v[4..8], &20u32.to_le_bytes());
        assert_eq!(&v[16..20], &20u32.to_le_bytes());
    }
}
