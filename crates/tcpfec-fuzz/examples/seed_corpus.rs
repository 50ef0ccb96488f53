//! Writes seed inputs for every fuzz target into `fuzz/corpus/<target>/seed-*`, made from
//! real traffic: datagrams of client/server runs of every scheme over lossy schedules,
//! real envelopes and Noise messages, the names and values the CLI documents.
//!
//! `cargo run --release -p tcpfec-fuzz --example seed_corpus`, then fuzz and minimise
//! (`cargo fuzz cmin`) as docs/guide/fuzzing.md describes.

use core::time::Duration;
use std::path::{Path, PathBuf};
use tcpfec_fuzz::pair::{self, Delivery, Setup, MSS_CHOICES, SCHEMES};
use tcpfec_fuzz::schedule;
use tcpfec_net::crypto::Cipher;
use tcpfec_net::crypto::{first_message, Credentials, Pattern};
use tcpfec_net::envelope::{self, RejectReason};
use tcpfec_net::params::{ClientParams, Opening, ServerParams};
use tcpfec_proto::fec::fountain::{parameters, FountainEncoder};
use tcpfec_proto::{Packet, Scheme};

fn corpus() -> PathBuf {
    tcpfec_fuzz::corpus::dir().join("corpus")
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus().join(target);
    std::fs::create_dir_all(&dir).expect("corpus directory");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed file");
}

/// A short lossy run of `scheme` both ways; the datagrams delivered.
fn trace(scheme: usize, seed: u64) -> (Setup, Vec<Delivery>) {
    let (mut setup, _) = schedule::generate(seed, scheme);
    setup.server_scheme = scheme;
    setup.client_bytes = setup.client_bytes.min(6000);
    setup.server_bytes = setup.server_bytes.min(2000);
    // Every fourth datagram lost, every ninth held back: recovery and FEC at work.
    let mut sched = Vec::new();
    for i in 0..400 {
        let f = match i % 36 {
            3 | 7 | 11 | 15 | 19 | 23 | 27 | 31 | 35 => pair::Fate::Drop,
            9 | 18 => pair::Fate::Deliver(Duration::from_millis(300)),
            _ => pair::Fate::Deliver(Duration::from_millis(10)),
        };
        f.encode(&mut sched);
    }
    let s = pair::scheme(scheme);
    let mut got = Vec::new();
    let out = pair::run_traced(&setup, &s, &s, &sched, |d| got.push(d));
    assert!(
        out.failure.is_none(),
        "{}: {:?}",
        SCHEMES[scheme],
        out.failure
    );
    (setup, got)
}

/// An engine input replaying what one side of a trace received, with the time between.
fn engine_input(scheme: usize, setup: &Setup, trace: &[Delivery], server: bool) -> Vec<u8> {
    let mss = MSS_CHOICES
        .iter()
        .position(|&m| m == setup.mss)
        .unwrap_or(0) as u8;
    let role = if server { 0 } else { 1 } | (setup.delayed_ack as u8) << 1;
    let mut v = vec![scheme as u8, role, mss];
    // The application: write and finish at once.
    let n = if server {
        setup.server_bytes
    } else {
        setup.client_bytes
    } as u16;
    v.extend_from_slice(&[0, (n >> 8) as u8, n as u8, 1, 4]);
    let mut now = Duration::ZERO;
    for d in trace.iter().filter(|d| d.to_server == server) {
        let micros = (d.at - now).as_micros() as u64;
        now = d.at;
        let mult = micros.div_ceil(65_535).saturating_sub(1).min(63);
        let units = (micros / (mult + 1)).min(65_535) as u16;
        v.extend_from_slice(&[3, (units >> 8) as u8, units as u8, mult as u8, 7]);
        let len = d.bytes.len() as u16;
        v.extend_from_slice(&[6, (len >> 8) as u8, len as u8]);
        v.extend_from_slice(&d.bytes);
        v.extend_from_slice(&[4, 2]);
    }
    v
}

/// A stream-decoder input (fec target, mode 3) from the FEC packets a server received.
fn decoder_input(trace: &[Delivery]) -> Vec<u8> {
    let mut v = vec![3];
    for d in trace.iter().filter(|d| d.to_server) {
        let Ok(p) = Packet::parse(&d.bytes) else {
            continue;
        };
        let Some(g) = p.fec else { continue };
        let repair = p.repair.is_some();
        v.push(repair as u8 | 0x10);
        v.push(p.seg as u8);
        v.extend_from_slice(&[
            (g.count - 1) as u8,
            (g.stride - 1) as u8,
            g.first as u8,
            g.repairs - 1,
        ]);
        let body = &p.payload[..p.payload.len().min(63)];
        if let Some(r) = p.repair {
            v.extend_from_slice(&r.len_xor.to_be_bytes());
            v.push(r.index);
        }
        v.push((body.len() as u8).saturating_sub((!repair) as u8));
        v.extend_from_slice(body);
    }
    v
}

fn traces() {
    for (scheme, &name) in SCHEMES.iter().enumerate() {
        let (setup, t) = trace(scheme, 3 + scheme as u64);
        // Wire: a handful of distinct datagrams of each scheme (SYN, data, ACK, repair).
        for (i, d) in t.iter().step_by((t.len() / 6).max(1)).enumerate() {
            write("wire", &format!("{name}-{i}"), &d.bytes);
        }
        write(
            "engine",
            &format!("{name}-server"),
            &engine_input(scheme, &setup, &t, true),
        );
        write(
            "engine",
            &format!("{name}-client"),
            &engine_input(scheme, &setup, &t, false),
        );
        if pair::scheme(scheme).fec.is_some() {
            write("fec", &format!("stream-{name}"), &decoder_input(&t));
        }
        // Pair: the seeded schedules the bench runs, two per scheme.
        for seed in 0..2 {
            let mut input = schedule::input(seed, scheme);
            input.truncate(pair::SETUP_LEN + 1500);
            write("pair", &format!("{name}-{seed}"), &input);
        }
        // Envelope: a data packet carrying a real (unsealed, insecure) datagram.
        if let Some(d) = t.first() {
            let mut b = vec![0u8; envelope::DATA_HEADER];
            envelope::data_header(&mut b, 7, scheme as u64);
            b.extend_from_slice(&d.bytes);
            write("envelope", &format!("data-{name}"), &b);
        }
    }
}

/// What a real engine's handshake parameters announce (MSS, window, SACK).
const OPENING: Opening = Opening {
    mss: 1316,
    window: 64 << 20,
    sack: true,
};

fn envelopes() {
    let (psk, server_pair) = tcpfec_fuzz::targets::fuzz_server_keys();
    let client_pair = tcpfec_net::KeyPair::from_private([3; 32]);
    let params = |send: &str, want: Option<&str>| {
        ClientParams {
            sent_at_ms: 1_800_000_000_000,
            send: Scheme::parse(send).expect("scheme"),
            want: want.map(|w| Scheme::parse(w).expect("scheme")),
            opening: OPENING,
        }
        .encode()
    };
    let plain = params("anker-16-2", Some("sack"));
    write(
        "envelope",
        "initial-insecure",
        &envelope::initial(false, Cipher::ChaChaPoly, Pattern::Psk, 9, b"", &plain),
    );
    // Secure: Noise message 1 under the keys the target's responder holds, with each
    // cipher and each pattern (the pre-shared key, key pairs, both).
    let token = [5u8; 24];
    let patterns = [
        ("psk", Some(&psk), None),
        ("ik", None, Some(&client_pair)),
        ("ikpsk2", Some(&psk), Some(&client_pair)),
    ];
    for (cipher, name) in [(Cipher::ChaChaPoly, "chacha"), (Cipher::AesGcm, "aes")] {
        for (pname, psk, own) in patterns {
            let creds = Credentials {
                psk,
                own,
                server: own.map(|_| &server_pair.public),
            };
            let (m1, _, pattern) = first_message(&creds, cipher, &params("fectcp", None));
            let name = match pname {
                "psk" => name.to_string(),
                p => format!("{p}-{name}"),
            };
            write(
                "envelope",
                &format!("initial-secure-{name}"),
                &envelope::initial(true, cipher, pattern, 9, &[], &m1),
            );
            write(
                "envelope",
                &format!("initial-secure-token-{name}"),
                &envelope::initial(true, cipher, pattern, 9, &token, &m1),
            );
        }
    }
    write("envelope", "retry", &envelope::retry(9, &token));
    let server = ServerParams {
        server_id: 77,
        send: Scheme::parse("dfec").expect("scheme"),
        opening: OPENING,
    };
    write(
        "envelope",
        "handshake",
        &envelope::handshake(9, &server.encode()),
    );
    write(
        "envelope",
        "reject",
        &envelope::reject(9, RejectReason::BadParams, None),
    );
    write(
        "envelope",
        "reject-server-key",
        &envelope::reject(9, RejectReason::WrongServerKey, Some(&server_pair.public)),
    );
    write(
        "envelope",
        "client-params",
        &params("tfec", Some("fec-il-g3-l10-r0.7")),
    );
    write("envelope", "server-params", &server.encode());
    // Replay-window walks: small steps back and forth, then a jump.
    write(
        "envelope",
        "replay-walk",
        &[1, 1, 2, 0x7e, 3, 0x7f, 0x81, 5, 9, 0, 0, 0, 0, 0, 0, 1],
    );
}

fn config() {
    let mut names: Vec<String> = SCHEMES.iter().map(|s| s.to_string()).collect();
    names.extend(
        [
            "FEC-IL-G3-L30-R0.7",
            " fec-dup-cwnd-o2 ",
            "anker-1-255",
            "tcp-ir-1",
        ]
        .map(String::from),
    );
    for (i, n) in names.iter().enumerate() {
        write("config", &format!("scheme-{i}"), n.as_bytes());
    }
    let values = [
        "200ms",
        "1.5s",
        "10us",
        "2min",
        "100mbit",
        "50Mbps",
        "0.05%",
        "0.0005",
        "1080KiB",
        "4GiB",
        "20s..220s",
        "0.01,0.3,0,1",
        "0.1%/10%@10s",
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    ];
    for (i, v) in values.iter().enumerate() {
        write("config", &format!("value-{i}"), v.as_bytes());
    }
    write(
        "config",
        "tfec-table",
        tcpfec_proto::fec::tfec::CALIBRATION.as_bytes(),
    );
}

fn fec() {
    // XOR: four members of different lengths, the second lost.
    let mut x = vec![0, 3];
    for (i, len) in [40u8, 17, 63, 5].iter().enumerate() {
        x.push(*len);
        x.extend((0..*len).map(|j| j.wrapping_mul(31) ^ i as u8));
    }
    x.extend_from_slice(&[1, 3, 9, 9, 9, 0, 12]);
    write("fec", "xor", &x);
    // Reed-Solomon: eight members, three repairs, three erasures.
    let mut r = vec![1, 7];
    for i in 0..8u8 {
        r.push(30 + i);
        r.extend((0..30 + i).map(|j| j ^ i));
    }
    r.extend_from_slice(&[2, 3, 1, 4, 9, 1, 20, 0, 0]);
    write("fec", "rs", &r);
    // RaptorQ: a 3000-byte block in 100-byte symbols, every other symbol of the first
    // byte's pattern lost; and a real symbol under its real parameters.
    write("fec", "fountain", &[2, 1, 0x0b, 0xb7, 20, 0x55, 0xaa, 0x0f]);
    let block: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let enc = FountainEncoder::new(block, parameters(3000, 104));
    let mut f = vec![2, 0];
    f.extend_from_slice(&enc.oti());
    f.extend_from_slice(&(104u16 - 5).to_be_bytes());
    for n in [0, 5, 40] {
        let s = enc.symbol(n);
        f.extend_from_slice(&(s.len() as u16).to_be_bytes());
        f.extend_from_slice(&s);
    }
    write("fec", "fountain-symbols", &f);
    // The window code: 40 source packets of 100-odd bytes, every 7th lost (then arriving
    // late), a repair over the last 10 after every 5th, every 4th repair lost.
    let mut w = vec![0x43];
    for i in 0..40u8 {
        let lost = i % 7 == 3;
        w.extend_from_slice(&[if lost { 0x80 } else { 0 }, 20 + i % 3]);
        if i % 5 == 4 {
            w.extend_from_slice(&[if i % 20 == 9 { 0x82 } else { 2 }, 10]);
        }
        if i % 9 == 8 {
            w.push(3);
        }
    }
    write("fec", "window", &w);
}

fn main() {
    traces();
    envelopes();
    config();
    fec();
    for t in tcpfec_fuzz::TARGETS {
        let n = std::fs::read_dir(corpus().join(t.0)).map_or(0, |d| d.count());
        println!(
            "{:<9} {n} files in {}",
            t.0,
            Path::new("fuzz/corpus").join(t.0).display()
        );
    }
}
