//! Property tests of the wire format: no input panics the parser, and every packet the
//! emitter writes parses back to itself.

use bytes::Bytes;
use proptest::prelude::*;
use tcpfec_proto::wire::{
    FecFeedback, FecGroup, Flags, LossCounters, Packet, RepairInfo, SackBlock, SackBlocks,
    TransferInfo, WindowInfo,
};

fn arb_packet() -> impl Strategy<Value = Packet> {
    (
        any::<u32>(),
        0u16..0x200,
        any::<u64>(),
        any::<u64>(),
        any::<(u32, u32, u32)>(),
        proptest::option::of(any::<u16>()),
        proptest::collection::vec((0u64..u64::MAX - 1, 1u64..1000), 0..=4),
        proptest::collection::vec(any::<u8>(), 0..2000),
        proptest::option::of((0u64..1 << 40, 1u16..300, 1u16..8)),
        proptest::option::of((any::<u16>(), 0u8..3)),
        proptest::option::of(any::<(u32, u32, u32, u32)>()),
        (
            proptest::option::of((any::<u32>(), any::<[u8; 12]>())),
            proptest::option::of((1u16..=u16::MAX, any::<u16>())),
        ),
    )
        .prop_map(
            |(
                conn_id,
                flags,
                seg,
                ack,
                (window, ts_val, ts_ecr),
                mss,
                blocks,
                payload,
                fec,
                repair,
                feedback,
                (transfer, win),
            )| {
                let mut sack = SackBlocks::default();
                for (start, len) in blocks {
                    sack.push(SackBlock {
                        start,
                        end: start.saturating_add(len).max(start + 1),
                    });
                }
                Packet {
                    conn_id,
                    flags: Flags(flags),
                    seg,
                    ack,
                    window,
                    ts_val,
                    ts_ecr,
                    mss,
                    sack,
                    // A window repair carries no block-code option, and its window
                    // must fit the segment space.
                    window_repair: win
                        .filter(|_| fec.is_none() && repair.is_none())
                        .filter(|&(count, _)| seg.checked_add(u64::from(count)).is_some())
                        .map(|(count, key)| WindowInfo { count, key }),
                    fec: fec
                        .or(repair.map(|_| (0, 1, 1)))
                        .map(|(first, count, stride)| FecGroup {
                            repairs: 1,
                            first,
                            count,
                            stride,
                            // Groups of retransmissions too (their number is never 0).
                            retransmission_group: (first % 3) as u32 * count as u32,
                        }),
                    repair: repair.map(|(len_xor, index)| RepairInfo {
                        len_xor,
                        index,
                        total: index + 1,
                    }),
                    fec_feedback: feedback.map(|(recovered, failed, repairs_lost, received)| {
                        FecFeedback {
                            recovered,
                            failed,
                            repairs_lost,
                            received,
                            // The loss counters ride along whenever the low bit says so.
                            loss: (received & 1 == 1).then_some(LossCounters {
                                lost: recovered,
                                runs: failed,
                                congestion_lost: repairs_lost,
                                congestion_received: received,
                            }),
                        }
                    }),
                    transfer: transfer.map(|(id, oti)| TransferInfo { id, oti }),
                    number: (ts_val & 1 == 1).then_some(ts_ecr),
                    payload: Bytes::from(payload),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Packet::parse(&bytes);
    }

    #[test]
    fn emitted_packets_round_trip(p in arb_packet()) {
        let bytes = p.to_vec().unwrap();
        prop_assert_eq!(Packet::parse(&bytes).unwrap(), p);
    }

    #[test]
    fn mutated_packets_never_panic(p in arb_packet(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut bytes = p.to_vec().unwrap();
        for (i, v) in flips {
            let at = i.index(bytes.len());
            bytes[at] ^= v;
        }
        let _ = Packet::parse(&bytes);
    }
}
