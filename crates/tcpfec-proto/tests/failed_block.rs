//! A block FEC cannot rebuild, under `auto`: the sender retransmits what was lost, not the
//! segments that arrived while the receiver withheld its duplicate ACKs.

mod common;

use common::upload;
use tcpfec_proto::{Config, Scheme};

/// Sends 4 MB from client to server under `auto` over a wire (10 ms each way) that loses
/// every 20th data packet, so that blocks carry several repairs, and every 4th from the
/// 2000th to the 2100th, more than one block's repairs rebuild; `report_runs` sets whether
/// the receiver reports the withheld runs when it stops withholding. Returns
/// (retransmissions, segments the server received twice). Panics unless the stream
/// arrives intact.
fn transfer_with_a_failed_block(report_runs: bool) -> (u64, u64) {
    let mut scheme = Scheme::parse("auto").unwrap();
    scheme.fec.as_mut().unwrap().replay_withheld_runs = report_runs;
    let cfg = Config {
        scheme,
        initial_window: 10,
        ..Config::default()
    };
    let data: Vec<u8> = (0..4_000_000u32).map(|i| (i * 13) as u8).collect();
    let mut data_packets = 0u32;
    let p = upload(cfg, &data, 10_000_000, |pk| {
        if pk.is_repair() || pk.payload.is_empty() {
            return false;
        }
        data_packets += 1;
        let burst = (2000..2100).contains(&data_packets);
        data_packets.is_multiple_of(20) || (burst && data_packets.is_multiple_of(4))
    });
    let (c, s) = (p.client.stats(), p.server.stats());
    (c.retransmissions, s.duplicate_segments)
}

#[test]
fn segments_that_arrived_behind_a_failed_block_are_not_sent_again() {
    let (retransmitted, twice) = transfer_with_a_failed_block(true);
    let (retransmitted_before, twice_before) = transfer_with_a_failed_block(false);
    // Without the report, the ACKs that ended the withholding carried the three most
    // recent runs only, and the sender took the runs it never heard of for lost: 62
    // retransmissions, 47 of them of segments that had arrived. With it, 26: the holes of
    // the failed block. Half of those still arrive twice, since once enough of them are
    // in, the block's repairs rebuild the rest before their retransmissions land.
    assert!(
        twice_before >= 30,
        "the case this guards: {twice_before} segments received twice without the report"
    );
    assert!(
        twice * 3 <= twice_before,
        "{twice} segments received twice (without the report: {twice_before})"
    );
    assert!(
        retransmitted * 2 <= retransmitted_before,
        "{retransmitted} retransmissions (without the report: {retransmitted_before})"
    );
}
