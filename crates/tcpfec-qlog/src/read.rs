//! Reading a JSON-SEQ trace back (`tcpfec trace show`, and the tests that check traces).

use serde_json::Value;

/// The records of a JSON-SEQ file (RFC 7464: each begins with the record separator and
/// holds one JSON text), in order: the header first, then one per event. A record that
/// is not JSON is an error naming its position (0: the header).
pub fn records(bytes: &[u8]) -> Result<Vec<Value>, String> {
    bytes
        .split(|&b| b == 0x1e)
        .filter(|r| !r.iter().all(u8::is_ascii_whitespace))
        .enumerate()
        .map(|(i, r)| serde_json::from_slice(r).map_err(|e| format!("record {i}: {e}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_at_the_separator_and_refuse_what_is_not_json() {
        let r = records(b"\x1e{\"a\":1}\n\x1e{\"b\":2}\n").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1]["b"], 2);
        assert!(records(b"\x1e{\"a\":1}\n\x1enot json\n")
            .unwrap_err()
            .starts_with("record 1"));
        assert!(records(b"").unwrap().is_empty());
    }
}
