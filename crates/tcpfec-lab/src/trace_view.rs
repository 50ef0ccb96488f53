//! `tcpfec trace show FILE.sqlog`: a qlog trace of one connection end read back into a
//! summary (totals, then rate, RTT, losses, repairs and rebuilt segments per interval)
//! and a time-sequence plot (segments sent, acknowledged, repaired, lost, rebuilt over
//! time), as the papers draw them.

use std::fmt::Write as _;
use std::path::Path;

/// Per-interval counts of a trace.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Interval {
    /// Start of the interval, seconds.
    pub start_s: f64,
    /// Wire bytes sent.
    pub bytes_sent: u64,
    /// Wire bytes received.
    pub bytes_received: u64,
    /// Segments declared lost (retransmitted).
    pub lost: u64,
    /// Repair packets sent.
    pub repairs: u64,
    /// Segments rebuilt from repairs.
    pub rebuilt: u64,
    /// Smoothed RTT at the interval's end, ms.
    pub srtt_ms: Option<f64>,
}

/// What a trace holds, read back.
#[derive(Debug, Default, Clone)]
pub struct TraceSummary {
    /// The file's title.
    pub title: String,
    /// client or server.
    pub vantage: String,
    /// Time of the last event, seconds.
    pub duration_s: f64,
    /// Events by name.
    pub counts: std::collections::BTreeMap<String, u64>,
    /// Per-interval counts.
    pub intervals: Vec<Interval>,
    /// (seconds, segment) of data segments sent.
    pub sent: Vec<(f64, f64)>,
    /// (seconds, cumulative ACK) of ACKs received.
    pub acked: Vec<(f64, f64)>,
    /// (seconds, first segment covered) of repair packets sent.
    pub repairs: Vec<(f64, f64)>,
    /// (seconds, segment) declared lost.
    pub lost: Vec<(f64, f64)>,
    /// (seconds, segment) of data segments received.
    pub received: Vec<(f64, f64)>,
    /// (seconds, segment) rebuilt from repairs.
    pub rebuilt: Vec<(f64, f64)>,
}

/// Reads the JSON-SEQ trace at `path`, counting per `interval_s` seconds.
pub fn read(path: &Path, interval_s: f64) -> Result<TraceSummary, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |what: &str| format!("{}: {what}", path.display());
    let records = tcpfec_qlog::records(&bytes)
        .map_err(|e| bad(&format!("not a qlog JSON-SEQ file ({e})")))?;
    let (header, events) = records
        .split_first()
        .ok_or_else(|| bad("not a qlog JSON-SEQ file (no header record)"))?;
    if header["qlog_format"] != "JSON-SEQ" {
        return Err(bad(
            "not a qlog JSON-SEQ file (qlog_format is not JSON-SEQ)",
        ));
    }
    let mut s = TraceSummary {
        title: header["title"].as_str().unwrap_or_default().to_string(),
        vantage: header["trace"]["vantage_point"]["type"]
            .as_str()
            .unwrap_or("?")
            .to_string(),
        ..TraceSummary::default()
    };
    let mut srtt = None;
    for e in events {
        let t = e["time"].as_f64().unwrap_or(0.0) / 1e3;
        let name = e["name"].as_str().unwrap_or("?");
        *s.counts.entry(name.to_string()).or_default() += 1;
        s.duration_s = s.duration_s.max(t);
        let slot = (t / interval_s) as usize;
        while s.intervals.len() <= slot {
            let start_s = s.intervals.len() as f64 * interval_s;
            s.intervals.push(Interval {
                start_s,
                srtt_ms: srtt,
                ..Interval::default()
            });
        }
        let iv = &mut s.intervals[slot];
        let d = &e["data"];
        let seg = d["header"]["packet_number"].as_f64();
        match name {
            "transport:packet_sent" => {
                iv.bytes_sent += d["raw"]["length"].as_u64().unwrap_or(0);
                if d["tcpfec"]["kind"] == "data" {
                    s.sent.extend(seg.map(|g| (t, g)));
                }
            }
            "transport:packet_received" => {
                iv.bytes_received += d["raw"]["length"].as_u64().unwrap_or(0);
                if d["tcpfec"]["kind"] == "data" {
                    s.received.extend(seg.map(|g| (t, g)));
                }
                // The cumulative ACK is the range that starts at segment 0; an ACK that
                // carries only SACK blocks acknowledges nothing cumulatively.
                let ack = d["frames"]
                    .as_array()
                    .and_then(|f| f.iter().find(|f| f["frame_type"] == "ack"))
                    .map(|a| &a["acked_ranges"][0])
                    .filter(|r| r[0] == 0)
                    .and_then(|r| r[1].as_f64());
                s.acked.extend(ack.map(|a| (t, a + 1.0)));
            }
            "recovery:packet_lost" => {
                iv.lost += 1;
                s.lost.extend(seg.map(|g| (t, g)));
            }
            "tcpfec:repair_sent" => {
                iv.repairs += 1;
                let first = d["group"]["first"].as_f64().or(d["window_first"].as_f64());
                s.repairs.extend(first.map(|g| (t, g)));
            }
            "tcpfec:segment_rebuilt" => {
                iv.rebuilt += 1;
                s.rebuilt.extend(d["segment"].as_f64().map(|g| (t, g)));
            }
            "recovery:metrics_updated" => {
                if let Some(r) = d["smoothed_rtt"].as_f64() {
                    srtt = Some(r);
                    iv.srtt_ms = srtt;
                }
            }
            _ => {}
        }
    }
    Ok(s)
}

/// The summary as text: totals, then one line per interval.
pub fn text(s: &TraceSummary, interval_s: f64) -> String {
    let mut out = String::new();
    let n = |k: &str| s.counts.get(k).copied().unwrap_or(0);
    let _ = writeln!(out, "{} ({}), {:.3} s", s.title, s.vantage, s.duration_s);
    let _ = writeln!(
        out,
        "packets sent {} received {}; lost (retransmitted) {}; repairs sent {}; rebuilt {}; \
         FEC groups failed in {} events; code changes {}",
        n("transport:packet_sent"),
        n("transport:packet_received"),
        n("recovery:packet_lost"),
        n("tcpfec:repair_sent"),
        n("tcpfec:segment_rebuilt"),
        n("tcpfec:block_failed"),
        n("tcpfec:code_resized"),
    );
    let _ = writeln!(
        out,
        "{:>8} {:>10} {:>10} {:>7} {:>8} {:>8} {:>9}",
        "t [s]", "sent Mb/s", "recv Mb/s", "lost", "repairs", "rebuilt", "srtt ms"
    );
    let mbps = |b: u64| b as f64 * 8.0 / interval_s / 1e6;
    for iv in &s.intervals {
        let _ = writeln!(
            out,
            "{:>8.2} {:>10.2} {:>10.2} {:>7} {:>8} {:>8} {:>9}",
            iv.start_s,
            mbps(iv.bytes_sent),
            mbps(iv.bytes_received),
            iv.lost,
            iv.repairs,
            iv.rebuilt,
            iv.srtt_ms.map_or("-".into(), |r| format!("{r:.1}"))
        );
    }
    out
}

/// Draws the time-sequence plot of `s` into the SVG file `path`.
pub fn svg(s: &TraceSummary, path: &Path) -> Result<(), String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = [
        ("data sent", &s.sent),
        ("acknowledged", &s.acked),
        ("repairs sent (first segment covered)", &s.repairs),
        ("lost (sent again)", &s.lost),
        ("data received", &s.received),
        ("rebuilt from repairs", &s.rebuilt),
    ]
    .into_iter()
    .filter(|(_, pts)| !pts.is_empty())
    .map(|(label, pts)| (label.to_string(), pts.clone()))
    .collect();
    let axes = crate::plot::Axes {
        x_desc: "time [s]",
        y_desc: "segment number",
        x_log: false,
        y_log: false,
    };
    crate::plot::dot_chart(path, &s.title, &axes, &series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_is_read_back_into_counts_per_interval() {
        let dir = std::env::temp_dir().join(format!("tcpfec-trace-view-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.sqlog");
        let rec = |v: &str| format!("\u{1e}{v}\n");
        let file = [
            rec(r#"{"qlog_format":"JSON-SEQ","qlog_version":"0.3","title":"t","trace":{"vantage_point":{"type":"client"}}}"#),
            rec(r#"{"time":10.0,"name":"transport:packet_sent","data":{"header":{"packet_number":0},"raw":{"length":1500},"tcpfec":{"kind":"data"}}}"#),
            rec(r#"{"time":20.0,"name":"recovery:metrics_updated","data":{"smoothed_rtt":40.5}}"#),
            rec(r#"{"time":1500.0,"name":"recovery:packet_lost","data":{"header":{"packet_number":0}}}"#),
            rec(r#"{"time":1600.0,"name":"transport:packet_received","data":{"header":{"packet_number":0},"raw":{"length":40},"frames":[{"frame_type":"ack","acked_ranges":[[0,0]]}],"tcpfec":{"kind":"ack"}}}"#),
            // SACK blocks alone: nothing more is acknowledged cumulatively.
            rec(r#"{"time":1700.0,"name":"transport:packet_received","data":{"header":{"packet_number":0},"raw":{"length":40},"frames":[{"frame_type":"ack","acked_ranges":[[5,9]]}],"tcpfec":{"kind":"ack"}}}"#),
        ]
        .concat();
        std::fs::write(&f, file).unwrap();
        let s = read(&f, 1.0).unwrap();
        assert_eq!(s.intervals.len(), 2);
        assert_eq!(s.intervals[0].bytes_sent, 1500);
        assert_eq!(s.intervals[0].srtt_ms, Some(40.5));
        assert_eq!(s.intervals[1].lost, 1);
        assert_eq!(
            s.intervals[1].srtt_ms,
            Some(40.5),
            "carried into the next interval"
        );
        assert_eq!(s.acked, vec![(1.6, 1.0)]);
        assert!(text(&s, 1.0).contains("lost (retransmitted) 1"));
        svg(&s, &dir.join("t.svg")).unwrap();
        assert!(std::fs::read_to_string(dir.join("t.svg"))
            .unwrap()
            .contains("<svg"));
        std::fs::write(&f, "not a trace").unwrap();
        assert!(read(&f, 1.0)
            .unwrap_err()
            .contains("not a qlog JSON-SEQ file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
