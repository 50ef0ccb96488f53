//! Tests of `wire`.

use super::*;

/// Where the option with this type and length byte starts in `bytes`.
fn option_at(bytes: &[u8], kind: u8, len: u8) -> Option<usize> {
    bytes.windows(2).position(|w| w == [kind, len])
}

fn sample() -> Packet {
    let mut sack = SackBlocks::default();
    sack.push(SackBlock { start: 10, end: 12 });
    sack.push(SackBlock { start: 20, end: 25 });
    Packet {
        conn_id: 7,
        flags: Flags::ACK | Flags::ECE,
        seg: 1 << 40,
        ack: 9,
        window: 65535,
        ts_val: 123,
        ts_ecr: 456,
        mss: Some(1460),
        sack,
        fec: Some(FecGroup {
            first: 100,
            count: 8,
            stride: 2,
            repairs: 1,
            retransmission_group: 0,
        }),
        repair: None,
        window_repair: None,
        transfer: None,
        fec_feedback: Some(FecFeedback {
            recovered: 3,
            failed: u32::MAX,
            repairs_lost: 0,
            received: 77,
            loss: None,
        }),
        number: None,
        payload: Bytes::from_static(b"hello"),
    }
}

#[test]
fn packet_numbers_and_loss_counters_round_trip() {
    let mut p = sample();
    let plain = p.encoded_len();
    p.number = Some(u32::MAX - 1);
    p.fec_feedback.as_mut().unwrap().loss = Some(LossCounters {
        lost: 5,
        runs: 2,
        congestion_lost: u32::MAX,
        congestion_received: 7,
    });
    assert_eq!(p.encoded_len(), plain + 6 + 16);
    let bytes = p.to_vec().unwrap();
    assert_eq!(Packet::parse(&bytes).unwrap(), p);
    // A feedback option of any other length is refused.
    let at = option_at(&bytes, OPT_FEC_FEEDBACK, 32).unwrap();
    let mut bad = bytes.clone();
    bad[at + 1] = 20;
    assert!(Packet::parse(&bad).is_err());
}

#[test]
fn a_block_of_consecutive_segments_travels_in_the_compact_option() {
    let mut p = sample();
    let full = p.encoded_len(); // stride 2: the full option
    p.fec = Some(FecGroup {
        first: p.seg - 5,
        count: 128,
        stride: 1,
        repairs: 6,
        retransmission_group: 0,
    });
    assert_eq!(p.encoded_len(), full - 10);
    let bytes = p.to_vec().unwrap();
    assert_eq!(Packet::parse(&bytes).unwrap(), p);
    let at = option_at(&bytes, OPT_FEC_BLOCK, 3).unwrap();
    assert_eq!(bytes[at + 2..at + 5], [5, 128, 6]);
    // An index at or past the count is refused, as is a block before segment 0.
    let mut bad = bytes.clone();
    bad[at + 2] = 128;
    assert!(Packet::parse(&bad).is_err());
    let mut early = p.clone();
    early.seg = 3;
    early.fec.as_mut().unwrap().first = 0;
    let mut bad = early.to_vec().unwrap();
    let at = option_at(&bad, OPT_FEC_BLOCK, 3).unwrap();
    bad[at + 2] = 4;
    assert!(Packet::parse(&bad).is_err());
    // The full option is refused for a group the compact one carries: the same packet
    // with its group, its only option, written in option 3.
    let only_group = Packet {
        mss: None,
        sack: SackBlocks::default(),
        fec_feedback: None,
        ..p.clone()
    };
    let short = only_group.to_vec().unwrap();
    let mut option = [0u8; 2 + FEC_GROUP_LEN];
    let n = write_full_group_option(&mut option, &p.fec.unwrap());
    let mut long = short[..FIXED_HEADER_LEN].to_vec();
    long[38] = n as u8;
    long.extend_from_slice(&option[..n]);
    long.extend_from_slice(&short[FIXED_HEADER_LEN + only_group.options_len()..]);
    assert_eq!(
        Packet::parse(&long),
        Err(WireError::BadOption(
            "FEC group option for a group the compact block option carries"
        ))
    );
    // Groups the compact option cannot say keep the full one: more than 255 members,
    // a retransmission group, or a packet that is not a member.
    for g in [
        FecGroup {
            count: 300,
            ..p.fec.unwrap()
        },
        FecGroup {
            retransmission_group: 9,
            ..p.fec.unwrap()
        },
        FecGroup {
            first: p.seg + 1,
            ..p.fec.unwrap()
        },
    ] {
        let mut q = p.clone();
        q.fec = Some(g);
        let bytes = q.to_vec().unwrap();
        assert_eq!(option_at(&bytes, OPT_FEC_BLOCK, 3), None);
        assert_eq!(Packet::parse(&bytes).unwrap(), q);
    }
}

#[test]
fn repair_packets_round_trip_and_need_a_group() {
    let mut p = sample();
    p.repair = Some(RepairInfo {
        len_xor: 77,
        index: 0,
        total: 1,
    });
    let bytes = p.to_vec().unwrap();
    assert_eq!(bytes[1], TYPE_REPAIR);
    assert_eq!(Packet::parse(&bytes).unwrap(), p);
    assert!(!p.occupies_segment());
    p.fec = None;
    assert!(p.to_vec().is_err());
}

#[test]
fn round_trip_keeps_every_field() {
    let p = sample();
    let bytes = p.to_vec().unwrap();
    assert_eq!(bytes.len(), p.encoded_len());
    assert_eq!(Packet::parse(&bytes).unwrap(), p);
    assert_eq!(Packet::parse_bytes(&Bytes::from(bytes)).unwrap(), p);
}

#[test]
fn a_retransmission_group_carries_its_number_and_never_number_0() {
    let mut p = sample();
    let original = p.encoded_len();
    p.fec.as_mut().unwrap().retransmission_group = 70_000;
    assert_eq!(p.encoded_len(), original + 4);
    let bytes = p.to_vec().unwrap();
    assert_eq!(Packet::parse(&bytes).unwrap(), p);
    // The long form with number 0 would give one group two encodings: refused.
    let at = option_at(&bytes, OPT_FEC_GROUP, 17).unwrap();
    let mut bad = bytes.clone();
    bad[at + 15..at + 19].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(Packet::parse(&bad), Err(WireError::BadOption(_))));
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample().to_vec().unwrap();
    for n in 0..bytes.len() {
        assert!(Packet::parse(&bytes[..n]).is_err(), "prefix {n} parsed");
    }
}

#[test]
fn bad_fields_are_rejected() {
    let good = sample().to_vec().unwrap();
    let mut b = good.clone();
    b[0] = 2;
    assert_eq!(Packet::parse(&b), Err(WireError::UnknownVersion(2)));
    let mut b = good.clone();
    b[1] = 9;
    assert_eq!(Packet::parse(&b), Err(WireError::UnknownType(9)));
    let mut b = good.clone();
    b[2] = 0x80;
    assert!(matches!(
        Packet::parse(&b),
        Err(WireError::ReservedFlags(_))
    ));
    let mut b = good.clone();
    b.push(0);
    assert_eq!(Packet::parse(&b), Err(WireError::TrailingBytes));
    let mut b = good;
    // First SACK block start (after the MSS, FEC group and FEC feedback options and the
    // 2-byte SACK header).
    let at = FIXED_HEADER_LEN + 4 + 15 + 18 + 2;
    b[at..at + 8].copy_from_slice(&100u64.to_be_bytes());
    assert!(matches!(Packet::parse(&b), Err(WireError::BadOption(_))));
}

#[test]
fn a_window_repair_round_trips_and_stands_alone() {
    let w = Packet {
        conn_id: 3,
        seg: 1000,
        ts_val: 5,
        window_repair: Some(WindowInfo { count: 12, key: 7 }),
        number: Some(42),
        payload: Bytes::from_static(&[1, 2, 3, 4]),
        ..Packet::default()
    };
    let bytes = w.to_vec().unwrap();
    assert_eq!(bytes[1], TYPE_REPAIR);
    let back = Packet::parse(&bytes).unwrap();
    assert_eq!(back, w);
    assert!(back.is_repair() && !back.occupies_segment());
    let at = option_at(&bytes, OPT_WINDOW, 4).unwrap();
    // No segments covered.
    let mut b = bytes.clone();
    b[at + 2..at + 4].copy_from_slice(&0u16.to_be_bytes());
    assert!(matches!(Packet::parse(&b), Err(WireError::BadOption(_))));
    // A window past the end of the segment space.
    let mut b = bytes.clone();
    b[8..16].copy_from_slice(&(u64::MAX - 3).to_be_bytes());
    assert!(matches!(Packet::parse(&b), Err(WireError::BadOption(_))));
    // On a segment (type 0), or beside a block code's options.
    let mut b = bytes;
    b[1] = TYPE_SEGMENT;
    assert!(matches!(Packet::parse(&b), Err(WireError::BadOption(_))));
    let mixed = Packet {
        fec: sample().fec,
        ..w
    };
    assert!(mixed.to_vec().is_err());
}
