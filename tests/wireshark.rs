//! The Wireshark dissector (`contrib/wireshark/tcpfec.lua`) read through tshark over a
//! capture the simulator wrote: every packet is decoded, with the segment number, payload
//! length and kind the same run's qlog trace records for it. Skips, saying so, where
//! tshark is not installed (`.ci/run` installs it where it can).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn the_dissector_decodes_a_simulated_capture_as_the_trace_records_it() {
    let Ok(v) = Command::new("tshark").arg("-v").output() else {
        eprintln!("SKIPPED: tshark is not installed; the dissector is not checked");
        return;
    };
    assert!(v.status.success());
    let dir = std::env::temp_dir().join(format!("tcpfec-wireshark-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (q, p) = (dir.join("qlog"), dir.join("pcap"));
    let o = common::tcpfec()
        .args([
            "sim",
            "--delay",
            "20ms",
            "--loss",
            "2%",
            "--transfer",
            "300KB",
        ])
        .args(["--scheme", "anker-8-2", "--seed", "3", "--json", "--qlog"])
        .arg(&q)
        .arg("--pcap")
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // What the client sent and received, in order, as the trace has it.
    let trace = std::fs::read(q.join("run0000-flow0-client.sqlog")).unwrap();
    let want: Vec<String> = tcpfec_qlog::records(&trace)
        .unwrap()
        .into_iter()
        .filter(|e| {
            e["name"] == "transport:packet_sent" || e["name"] == "transport:packet_received"
        })
        .map(|e| {
            let d = &e["data"];
            let repair = (d["tcpfec"]["kind"] == "repair") as u8;
            format!(
                "{},{},{}",
                d["header"]["packet_number"], d["raw"]["payload_length"], repair
            )
        })
        .collect();
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/wireshark/tcpfec.lua");
    let o = Command::new("tshark")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .arg("-r")
        .arg(p.join("run0000-flow0.pcapng"))
        .args(["-T", "fields", "-E", "separator=,"])
        .args([
            "-e",
            "tcpfec.seg",
            "-e",
            "tcpfec.payload_len",
            "-e",
            "tcpfec.type",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(want.len() > 300, "{} packets", want.len());
    assert!(want.iter().any(|w| w.ends_with(",1")), "repairs in the run");
    assert_eq!(got.len(), want.len(), "every packet captured and decoded");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "packet {}", i + 1);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
