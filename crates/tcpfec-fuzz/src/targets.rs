//! The fuzz target bodies. Each takes any byte string and panics only on a finding: a
//! panic inside the code under test, or a broken oracle (stated in each doc comment).

use crate::input::Input;
use crate::pair;
use bytes::Bytes;
use tcpfec_net::envelope::{self, Envelope};
use tcpfec_net::params::{ClientParams, ServerParams};
use tcpfec_net::replay::{ReplayWindow, WINDOW};
use tcpfec_proto::fec::fountain::{parameters, FountainDecoder, FountainEncoder};
use tcpfec_proto::fec::rs::RsCache;
use tcpfec_proto::fec::window::{WindowDecoder, WindowEncoder};
use tcpfec_proto::fec::xor::XorAccumulator;
use tcpfec_proto::fec::Decoder;
use tcpfec_proto::wire::{
    FecFeedback, FecGroup, Flags, LossCounters, Packet, RepairInfo, SackBlock, TransferInfo,
    WindowInfo,
};
use tcpfec_proto::{Config, Endpoint, Instant, Scheme};

/// `wire`: the packet and option parser. Oracle: whatever parses re-emits to as many
/// bytes and parses back to the same packet (zero-copy parsing agrees); whatever fails to
/// parse fails zero-copy too; a packet built from the bytes field by field emits and
/// parses back to itself.
pub fn wire(data: &[u8]) {
    let parsed = Packet::parse(data);
    let zero_copy = Packet::parse_bytes(&Bytes::copy_from_slice(data));
    assert_eq!(parsed, zero_copy, "parse and parse_bytes disagree");
    if let Ok(p) = parsed {
        let again = p.to_vec().expect("a parsed packet emits");
        assert_eq!(again.len(), data.len(), "re-emitted length differs");
        assert_eq!(Packet::parse(&again), Ok(p), "re-emitted packet differs");
    }
    let built = packet_from(&mut Input::new(data), &Anchors::default());
    if let Ok(bytes) = built.to_vec() {
        assert_eq!(bytes.len(), built.encoded_len());
        assert_eq!(
            Packet::parse(&bytes),
            Ok(built),
            "built packet does not round-trip"
        );
    }
}

/// Where relative fields of a built packet point: the engine's own sequence numbers, so
/// built packets land near what the engine expects.
#[derive(Debug, Default, Clone, Copy)]
struct Anchors {
    /// What the engine acknowledged last (segments we should send next).
    their_ack: u64,
    /// The engine's next segment (what our ACKs should cover).
    their_seg: u64,
    /// The engine's last timestamp (for ts_ecr).
    their_ts: u32,
}

/// A packet whose every field comes from `input`: sequence numbers near `at`, options
/// present or not as bits say. Values are those the parser accepts (a group has a
/// member, SACK blocks are non-empty), so it round-trips when it emits at all.
fn packet_from(input: &mut Input, at: &Anchors) -> Packet {
    let near = |input: &mut Input, base: u64| {
        let d = input.u8() as i8 as i64;
        if d == i8::MIN as i64 {
            input.u64() // now and then anywhere at all
        } else {
            base.wrapping_add_signed(d)
        }
    };
    let opts = input.u8();
    let mut p = Packet {
        conn_id: input.u8() as u32,
        flags: Flags(input.u16() & Flags::KNOWN),
        seg: near(input, at.their_ack),
        ack: near(input, at.their_seg),
        window: input.u32(),
        ts_val: input.u32(),
        ts_ecr: if input.u8() & 1 == 0 { at.their_ts } else { 0 },
        ..Packet::default()
    };
    if opts & 1 != 0 {
        p.mss = Some(input.u16());
    }
    if opts & 2 != 0 {
        for _ in 0..1 + input.u8() % 4 {
            let start = near(input, at.their_seg);
            let end = start.saturating_add(1 + input.u8() as u64);
            if start < end {
                p.sack.push(SackBlock { start, end });
            }
        }
    }
    if opts & 4 != 0 {
        let first = near(input, at.their_ack);
        let count = 1 + input.u8() as u16 % 64;
        let stride = 1 + input.u8() as u16 % 4;
        let span = (count as u64 - 1) * stride as u64;
        if first.checked_add(span).is_some() {
            let repairs = 1 + input.u8() % 4;
            // A third of them name a group of retransmissions (any nonzero number).
            let retransmission_group = if count.is_multiple_of(3) {
                input.u32().max(1)
            } else {
                0
            };
            p.fec = Some(FecGroup {
                first,
                count,
                stride,
                repairs,
                retransmission_group,
            });
        }
    }
    if opts & 8 != 0 && p.fec.is_some() {
        let total = 1 + input.u8() % 4;
        p.repair = Some(RepairInfo {
            len_xor: input.u16(),
            index: input.u8() % total,
            total,
        });
    } else if opts & 8 != 0 {
        // A repair of the sliding-window code, over a window starting at `seg`.
        let count = 1 + input.u16() % 300;
        if p.seg.checked_add(count as u64).is_some() {
            p.window_repair = Some(WindowInfo {
                count,
                key: input.u16(),
            });
        }
    }
    if opts & 16 != 0 {
        p.fec_feedback = Some(FecFeedback {
            recovered: input.u32(),
            failed: input.u32(),
            repairs_lost: input.u32(),
            received: input.u32(),
            loss: None,
        });
        if opts & 128 != 0 {
            let f = p.fec_feedback.as_mut().expect("just set");
            f.loss = Some(LossCounters {
                lost: f.recovered,
                runs: f.failed,
                congestion_lost: f.repairs_lost,
                congestion_received: f.received,
            });
            p.number = Some(p.ts_val);
        }
    }
    if opts & 32 != 0 {
        let oti = if opts & 64 != 0 {
            let mut oti = [0u8; 12];
            oti.iter_mut().for_each(|b| *b = input.u8());
            oti
        } else {
            // The parameters a real sender would use for a small block.
            parameters(1 + input.u16() as u64, 536).serialize()
        };
        p.transfer = Some(TransferInfo {
            id: input.u8() as u32,
            oti,
        });
    }
    let len = input.u16() as usize % 1500;
    p.payload = Bytes::copy_from_slice(input.bytes(len));
    p
}

/// `envelope`: the outer datagram envelope and the handshake parameters inside it.
/// Oracle: every envelope that parses re-encodes to the same bytes (an Initial to the
/// same fields: its padding is not kept); handshake parameters that decode re-encode to
/// parameters that decode to the same; the replay window refuses every packet number it
/// has marked and accepts every fresh one in its window. No panics, including in the
/// Noise responder fed the Initial's payload.
pub fn envelope(data: &[u8]) {
    match envelope::parse(data) {
        Some(Envelope::Initial {
            secure,
            cipher,
            pattern,
            client_id,
            token,
            payload,
        }) => {
            let again = envelope::initial(secure, cipher, pattern, client_id, token, payload);
            assert_eq!(
                envelope::parse(&again),
                Some(Envelope::Initial {
                    secure,
                    cipher,
                    pattern,
                    client_id,
                    token,
                    payload
                })
            );
            if secure {
                // What a server does with message 1 under the keys of
                // `fuzz_server_credentials` (the seed corpus holds genuine messages).
                let (psk, own) = fuzz_server_keys();
                let creds = tcpfec_net::crypto::Credentials {
                    psk: Some(&psk),
                    own: Some(&own),
                    server: None,
                };
                let mut plain = [0u8; 1024];
                if let Ok(m) = tcpfec_net::crypto::read_first_message(
                    &creds, pattern, cipher, payload, &mut plain,
                ) {
                    if pattern.uses_identities() {
                        assert!(
                            m.client_key.is_some(),
                            "an identity handshake names its client"
                        );
                    }
                    client_params(&plain[..m.len]);
                }
            } else {
                client_params(payload);
            }
        }
        Some(Envelope::Retry { client_id, token }) => {
            assert_eq!(envelope::retry(client_id, token), data);
        }
        Some(Envelope::Handshake { client_id, payload }) => {
            assert_eq!(envelope::handshake(client_id, payload), data);
            server_params(payload);
        }
        Some(Envelope::Data { dst_id, pn, body }) => {
            let mut header = [0u8; envelope::DATA_HEADER];
            envelope::data_header(&mut header, dst_id, pn);
            assert_eq!(&header[..], &data[..envelope::DATA_HEADER]);
            // Insecure mode hands the body to the engine's parser.
            let _ = Packet::parse(body);
        }
        Some(Envelope::Reject {
            client_id,
            reason,
            server_key,
        }) => {
            assert_eq!(
                envelope::reject(client_id, reason, server_key.as_ref()),
                data
            );
        }
        None => {}
    }
    client_params(data);
    server_params(data);
    replay(data);
}

/// The pre-shared key and key pair the `envelope` target's server holds; the seed corpus
/// (`examples/seed_corpus`) writes genuine first messages made for them.
pub fn fuzz_server_keys() -> (tcpfec_net::Psk, tcpfec_net::KeyPair) {
    (
        tcpfec_net::Psk([7; 32]),
        tcpfec_net::KeyPair::from_private([9; 32]),
    )
}

fn client_params(b: &[u8]) {
    if let Some(p) = ClientParams::decode(b) {
        assert_eq!(ClientParams::decode(&p.encode()), Some(p));
    }
}

fn server_params(b: &[u8]) {
    if let Some(p) = ServerParams::decode(b) {
        assert_eq!(ServerParams::decode(&p.encode()), Some(p));
    }
}

/// Packet numbers from `data` (8 bytes each, or a small step up or down from the last)
/// through a replay window, checked against a plain set.
fn replay(data: &[u8]) {
    let mut input = Input::new(data);
    let mut w = ReplayWindow::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut top: Option<u64> = None;
    let mut last = 0u64;
    while !input.is_empty() {
        let op = input.u8();
        let pn = if op & 0x80 != 0 {
            input.u64()
        } else {
            last.wrapping_add_signed((op as i8 as i64) << 1 >> 1)
        };
        last = pn;
        let fresh = !seen.contains(&pn);
        let in_window = top.is_none_or(|t| pn >= t || t - pn <= WINDOW);
        // The last number is refused (never sent; one past it does not exist).
        let valid = pn != u64::MAX;
        assert_eq!(
            w.check(pn),
            fresh && in_window && valid,
            "replay check of {pn}"
        );
        if w.check(pn) {
            w.mark(pn);
            seen.insert(pn);
            top = Some(top.map_or(pn + 1, |t| t.max(pn + 1)));
        }
    }
}

/// `config`: scheme names and the other text the CLI and the handshake accept. Oracle:
/// a scheme that parses parses again from its own name to the same scheme, and a short
/// lossy transfer with it completes exactly (a peer may name any scheme in the
/// handshake, so no name may crash an engine); the unit and loss parsers, the TFEC
/// table parser and the key parser never panic.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = Scheme::parse(&text) {
        assert_eq!(
            Scheme::parse(&s.name).as_ref(),
            Ok(&s),
            "name does not round-trip"
        );
        scheme_transfer(&s);
    }
    use tcpfec_sim::units;
    let _ = units::parse_duration(&text);
    let _ = units::parse_rate(&text);
    let _ = units::parse_probability(&text);
    let _ = units::parse_size(&text);
    let _ = units::parse_range(&text, units::parse_duration);
    let _ = tcpfec_sim::LossSpec::parse_ge(&text);
    let _ = tcpfec_sim::LossSpec::parse_switching(&text);
    let _ = tcpfec_proto::fec::tfec::parse_table(&text);
    let _ = tcpfec_net::Psk::from_hex(&text);
}

/// A few kilobytes each way with `s` on both sides, every fifth datagram lost.
fn scheme_transfer(s: &Scheme) {
    let setup = pair::Setup {
        client_scheme: 0,
        server_scheme: 0,
        client_bytes: 3000,
        server_bytes: 700,
        mss: 536,
        write_chunk: 0,
        delayed_ack: false,
        small_send_buffer: false,
        insecure: false,
        long_rto: false,
        data_seed: 1,
    };
    let mut schedule = Vec::new();
    for i in 0..200 {
        let fate = if i % 5 == 4 {
            pair::Fate::Drop
        } else {
            pair::Fate::Deliver(core::time::Duration::from_millis(10))
        };
        fate.encode(&mut schedule);
    }
    let out = pair::run_schemes(&setup, s, s, &schedule);
    assert!(
        out.failure.is_none(),
        "scheme {}: {:?}",
        s.name,
        out.failure
    );
}

/// `fec`: each erasure decoder fed arbitrary symbols. The first byte picks the decoder:
///
/// * XOR: members and a repair from the input; removing any one member and recovering
///   it from the repair gives it back exactly, and garbage repairs never panic;
/// * Reed-Solomon: a group of k members and m repairs from the input; any pattern of at
///   most m erasures decodes to exactly the lost members; garbage repairs (any lengths)
///   never panic;
/// * RaptorQ: a block from the input, its symbols with input-chosen losses decode to the
///   block; arbitrary parameters and symbols never panic;
/// * the stream receiver's group decoder: arbitrary source and repair arrivals with
///   arbitrary group options (groups of retransmissions too, overlapping or not) never
///   panic, and every segment it rebuilds lies in a group it was told about;
/// * the sliding-window code: a stream's source packets, repairs over input-chosen
///   windows, input-chosen losses and late arrivals; every segment rebuilt is the one
///   sent, and repairs off the wire (any window, key or bytes) never panic.
pub fn fec(data: &[u8]) {
    let mut input = Input::new(data);
    let selector = input.u8();
    match selector % 4 {
        0 => fec_xor(&mut input),
        1 => fec_rs(&mut input),
        2 => fec_fountain(&mut input),
        // Bit 6 picks the window code (later than the others: the committed inputs keep
        // their meaning), bit 2 a group decoder whose groups may overlap.
        _ if selector & 0x40 != 0 => fec_window(&mut input),
        _ => fec_stream_decoder(&mut input, selector & 4 != 0),
    }
}

/// The source payload of segment `seg` in [`fec_window`]: its length from the input.
fn window_payload(seg: u64, len: usize) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (seg as usize * 31 + i * 7) as u8)
            .collect::<Vec<u8>>(),
    )
}

fn fec_window(input: &mut Input) {
    let mut enc = WindowEncoder::default();
    let mut dec = WindowDecoder::default();
    let mut sent: Vec<Bytes> = Vec::new();
    let mut have = std::collections::BTreeSet::new();
    let mut late: Vec<u64> = Vec::new();
    let rcv_nxt =
        |have: &std::collections::BTreeSet<u64>| (0..).find(|n| !have.contains(n)).unwrap();
    while !input.is_empty() && sent.len() < 2000 {
        let op = input.u8();
        let got = match op % 4 {
            // A source packet, lost or not.
            0 | 1 => {
                let seg = sent.len() as u64;
                let p = window_payload(seg, 1 + input.u8() as usize * 5);
                enc.add(seg, &p);
                sent.push(p.clone());
                if op & 0x80 != 0 {
                    late.push(seg);
                    Vec::new()
                } else {
                    have.insert(seg);
                    dec.on_source(seg, &p)
                }
            }
            // A repair over the last packets, lost or not.
            2 => {
                let back = input.u8() as u64;
                let from = (sent.len() as u64).saturating_sub(back);
                match enc.repair(from) {
                    Some(r) if op & 0x80 == 0 => {
                        let n = rcv_nxt(&have);
                        dec.on_repair(r.first, r.count, r.key, &r.payload, n)
                    }
                    _ => Vec::new(),
                }
            }
            // A lost packet arrives late after all (a retransmission), or garbage.
            _ => {
                if op & 0x80 == 0 {
                    match late.pop() {
                        Some(seg) if !have.contains(&seg) => {
                            have.insert(seg);
                            dec.on_source(seg, &sent[seg as usize])
                        }
                        _ => Vec::new(),
                    }
                } else {
                    // Off the wire: any window, key and bytes. Whatever it "rebuilds" is
                    // not checked; the honest decoder below continues from scratch.
                    let mut junk = WindowDecoder::default();
                    let l = input.u8() as usize;
                    let body = input.bytes(l).to_vec();
                    let _ = junk.on_repair(
                        input.u64() % 4096,
                        input.u16(),
                        input.u16(),
                        &body,
                        input.u8() as u64,
                    );
                    Vec::new()
                }
            }
        };
        for (seg, p) in got {
            assert_eq!(p, sent[seg as usize], "segment {seg} rebuilt wrong");
            assert!(have.insert(seg), "segment {seg} delivered twice");
        }
    }
}

/// Up to `max` payloads of up to `len` bytes each from the input.
fn payloads(input: &mut Input, max: u8, len: u8) -> Vec<Bytes> {
    let n = 1 + input.u8() % max;
    (0..n)
        .map(|_| {
            let l = input.u8() % len.max(1);
            Bytes::copy_from_slice(input.bytes(l as usize))
        })
        .collect()
}

fn fec_xor(input: &mut Input) {
    let members = payloads(input, 16, 80);
    let mut all = XorAccumulator::default();
    for m in &members {
        all.add(m);
    }
    let lost = input.u8() as usize % members.len();
    let mut acc = XorAccumulator::default();
    for (i, m) in members.iter().enumerate() {
        if i != lost {
            acc.add(m);
        }
    }
    assert_eq!(acc.recover(all.bytes(), all.len_xor()), members[lost]);
    let n = input.u8() as usize;
    let garbage = input.bytes(n);
    let _ = acc.recover(garbage, input.u16());
}

fn fec_rs(input: &mut Input) {
    let mut rs = RsCache::default();
    // The engine groups only non-empty payloads (an all-empty group has nothing to code).
    let mut members = payloads(input, 32, 80);
    if members.iter().all(|m| m.is_empty()) {
        members[0] = Bytes::from_static(b"x");
    }
    let m = 1 + input.u8() as usize % 8;
    let Some(repairs) = rs.encode(&members, m) else {
        panic!("encode refused k = {}, m = {m}", members.len());
    };
    // Erase up to m of the k + m packets, as the input says.
    let k = members.len();
    let mut data: Vec<Option<Bytes>> = members.iter().cloned().map(Some).collect();
    let mut reps: Vec<Option<Bytes>> = repairs.into_iter().map(|r| Some(r.into())).collect();
    let erasures = input.u8() as usize % (m + 1);
    for _ in 0..erasures {
        let i = input.u8() as usize % (k + m);
        if i < k {
            data[i] = None;
        } else {
            reps[i - k] = None;
        }
    }
    let lost: Vec<usize> = (0..k).filter(|&i| data[i].is_none()).collect();
    // Decoding is asked for only when a member is missing (then a repair is left).
    if !lost.is_empty() {
        let got = rs.decode(&data, &reps).expect("at most m erasures decode");
        let rebuilt: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
        assert_eq!(rebuilt, lost);
        for (i, p) in got {
            assert_eq!(p, members[i], "member {i} rebuilt wrong");
        }
    }
    // Repairs off the wire can be any length: never a panic.
    for r in reps.iter_mut() {
        if input.u8() & 1 == 1 {
            let l = input.u8() as usize;
            *r = Some(Bytes::copy_from_slice(input.bytes(l)));
        }
    }
    let _ = rs.decode(&data, &reps);
}

fn fec_fountain(input: &mut Input) {
    if input.u8() & 1 == 0 {
        // Arbitrary parameters and symbols.
        let mut oti = [0u8; 12];
        for b in oti.iter_mut() {
            *b = input.u8();
        }
        let max_payload = 5 + input.u16() as usize % 1500;
        let Ok(mut dec) = FountainDecoder::new(&oti, max_payload) else {
            return;
        };
        while !input.is_empty() {
            let l = input.u16() as usize % (max_payload + 1);
            let _ = dec.add(input.bytes(l));
        }
        return;
    }
    // At most 64 source symbols: decoding cost grows with the symbol count, and inputs
    // with thousands of 16-byte symbols took 10-27 s each under coverage instrumentation
    // without reaching code a smaller block does not (the block is split the same way).
    let max_payload = 20 + input.u8() as usize * 4;
    let len = 1 + input.u16() as usize % (64 * (max_payload - 4));
    let block: Vec<u8> = (0..len).map(|i| (i * 7 + i / 13) as u8).collect();
    let enc = FountainEncoder::new(block.clone(), parameters(len as u64, max_payload));
    let mut dec = FountainDecoder::new(&enc.oti(), max_payload).expect("own parameters");
    let k = enc.source_symbol_count();
    // Every symbol is lost or not as the input's bits say (none once it runs out).
    let mut bits = 0u32;
    for n in 0..4 * k + 64 {
        if n % 8 == 0 {
            bits = input.u8() as u32;
        }
        if bits >> (n % 8) & 1 == 1 && n < 3 * k {
            continue;
        }
        if let Some(got) = dec.add(&enc.symbol(n)) {
            assert!(got == block, "RaptorQ rebuilt a different block");
            return;
        }
    }
    panic!(
        "RaptorQ did not rebuild {len} bytes from {} symbols",
        4 * k + 64
    );
}

fn fec_stream_decoder(input: &mut Input, overlapping: bool) {
    let mut d = if overlapping {
        Decoder::with_overlapping_groups()
    } else {
        Decoder::default()
    };
    let mut groups: Vec<FecGroup> = Vec::new();
    let mut rcv_nxt = 0u64;
    while !input.is_empty() {
        let op = input.u8();
        let seg = input.u8() as u64;
        let group = (op & 0x10 != 0).then(|| {
            let count = 1 + input.u8() as u16 % 40;
            let stride = 1 + input.u8() as u16 % 4;
            FecGroup {
                first: input.u8() as u64,
                count,
                stride,
                repairs: 1 + input.u8() % 6,
                // Bits 5-6 of the operation: a group of first transmissions or one of three
                // groups of retransmissions.
                retransmission_group: (op >> 5 & 3) as u32,
            }
        });
        if let Some(g) = group {
            groups.push(g);
        }
        let rebuilt = match op % 4 {
            0 => {
                let l = 1 + input.u8() as usize % 64;
                d.on_source(seg, group, &Bytes::copy_from_slice(input.bytes(l)))
            }
            1 => match group {
                Some(g) => {
                    let total = g.repairs;
                    let info = RepairInfo {
                        len_xor: input.u16(),
                        index: input.u8() % total,
                        total,
                    };
                    let l = input.u8() as usize % 70;
                    d.on_repair(g, info, Bytes::copy_from_slice(input.bytes(l)), rcv_nxt)
                }
                None => Vec::new(),
            },
            2 => {
                let _ = d.gap_repairable(seg, seg + input.u8() as u64);
                Vec::new()
            }
            _ => {
                rcv_nxt = rcv_nxt.max(seg);
                d.forget_below(rcv_nxt);
                Vec::new()
            }
        };
        for (s, _) in rebuilt {
            assert!(
                groups.iter().any(|g| g.index_of(s).is_some()),
                "rebuilt segment {s} is in no group"
            );
        }
    }
}

/// `engine`: one endpoint (client or server, any scheme) fed packets, time and
/// application calls in any order. Packets are either raw bytes (through the parser) or
/// built field by field near the engine's own sequence numbers (so they get past the
/// handshake and into recovery, FEC and FECTCP decoding). Oracle: no panic, and every
/// packet the engine emits parses back to itself.
pub fn engine(data: &[u8]) {
    let mut input = Input::new(data);
    let scheme = pair::scheme(input.u8() as usize);
    let role = input.u8();
    let cfg = Config {
        scheme: scheme.clone(),
        mss: *input.pick(&pair::MSS_CHOICES),
        delayed_ack: role & 2 != 0,
        // What one input may make the engine hold (FECTCP blocks and decoders, reorder
        // slots) is bounded by the window; with the default 64 MiB, inputs that fill it
        // took libFuzzer's process past its 2 GB, where a bound is no finding.
        recv_window: 4 << 20,
        ..Config::default()
    };
    let mut e = if role & 1 == 0 {
        Endpoint::server(cfg)
    } else {
        Endpoint::client(cfg)
    };
    if role & 4 != 0 {
        e.set_peer_scheme(&pair::scheme(input.u8() as usize));
    }
    let mut now = 0u64;
    let mut at = Anchors::default();
    let mut buf = [0u8; 700];
    while !input.is_empty() {
        match input.u8() % 8 {
            0 => {
                let n = input.u16() as usize % 20_000;
                let taken = e.write(Bytes::from(vec![0x5a; n]));
                assert!(taken <= n);
            }
            1 => e.finish(),
            2 => {
                e.read(&mut buf);
                while e.read_chunk().is_some() {}
            }
            3 => now += input.u16() as u64 * 1_000 * (1 + input.u8() as u64 % 64),
            4 => {
                for _ in 0..256 {
                    let Some(p) = e.poll_packet(Instant(now)) else {
                        break;
                    };
                    let bytes = p.to_vec().expect("the engine emits valid packets");
                    assert_eq!(Packet::parse(&bytes), Ok(p.clone()));
                    at.their_ack = p.ack;
                    at.their_ts = p.ts_val;
                    at.their_seg = at.their_seg.max(p.seg);
                }
            }
            5 => {
                let p = packet_from(&mut input, &at);
                if let Ok(bytes) = p.to_vec() {
                    let _ = e.handle_datagram(Instant(now), &bytes);
                }
            }
            6 => {
                let l = input.u16() as usize % 2000;
                let raw = input.bytes(l);
                let _ = e.handle_datagram(Instant(now), raw);
            }
            _ => {
                if let Some(t) = e.poll_timeout() {
                    now = now.max(t.0);
                    e.handle_timeout(Instant(now));
                }
            }
        }
        // The observers must hold up in every state too.
        let _ = (e.readable(), e.is_closed(), e.stats(), e.poll_timeout());
    }
}

/// `pair`: a client and a server over a fuzzer-scheduled channel ([`crate::pair`]).
/// Oracle: the server's stream is an exact prefix of the client's at every moment (and
/// the other way round), and all of it after a clean drain; no stall, no hang.
pub fn pair(data: &[u8]) {
    let out = pair::run_input(data);
    if let Some(why) = out.failure {
        panic!("pair: {why}");
    }
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target by name (the names of `fuzz/fuzz_targets/*.rs` and `fuzz/corpus/*`).
pub const TARGETS: &[(&str, Target)] = &[
    ("wire", wire),
    ("envelope", envelope),
    ("config", config),
    ("fec", fec),
    ("engine", engine),
    ("pair", pair),
];
