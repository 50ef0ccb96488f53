//! Text from the network made safe to print: a peer chooses file names and error texts,
//! and printing them raw would let it forge log lines (a newline) or drive the
//! operator's terminal (escape sequences).

use std::fmt::Write;

/// `s` with every control character, and every Unicode format character that can reorder
/// or hide text (bidirectional overrides, zero-width characters), shown as an escape:
/// `\n`, `\r`, `\t`, `\\`, `\x1b`, `\u{202e}`. Plain text is unchanged.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || is_invisible_format(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Unicode format characters that change how surrounding text is shown.
fn is_invisible_format(c: char) -> bool {
    matches!(c as u32,
        0x00ad | 0x061c | 0x180e | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x2069 | 0xfeff)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_and_reordering_characters_are_escaped() {
        assert_eq!(printable("plain-name_1.txt"), "plain-name_1.txt");
        assert_eq!(printable("é中.bin"), "é中.bin");
        assert_eq!(
            printable("a\nfake: stored\r\x1b[2J\x07\\"),
            "a\\nfake: stored\\r\\x1b[2J\\x07\\\\"
        );
        assert_eq!(printable("x\u{202e}txt.exe"), "x\\u{202e}txt.exe");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(printable("\u{7f}"), "\\x7f");
    }
}
