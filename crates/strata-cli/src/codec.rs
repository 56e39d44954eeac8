//! How keys and values are given on the command line and shown: as text with escapes
//! (`\xNN`, `\\`, `\n`, `\t`, `\r`), or as hex with `--hex`; and as JSON fields.

use std::fmt::Write as _;

/// How bytes are read from arguments and written to output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Valid UTF-8 as is (so `Zürich` prints as `Zürich`), control characters and the
    /// backslash escaped, bytes that are not UTF-8 as `\xNN`; arguments may use the same
    /// escapes.
    Text,
    /// Printable ASCII as is, every other byte escaped (`--escape`: output that is ASCII
    /// whatever the data).
    Escaped,
    /// Lowercase hex digits, two per byte.
    Hex,
}

impl Encoding {
    /// The bytes an argument stands for.
    ///
    /// # Errors
    /// A message naming what is wrong (odd hex length, a bad digit, a bad escape).
    pub fn parse(self, arg: &str) -> Result<Vec<u8>, String> {
        match self {
            Encoding::Hex => parse_hex(arg),
            Encoding::Text | Encoding::Escaped => unescape(arg),
        }
    }

    /// `bytes` shown this way.
    pub fn show(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Hex => bytes.iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            }),
            Encoding::Text => escape_utf8(bytes),
            Encoding::Escaped => escape(bytes),
        }
    }

    /// `bytes` as the JSON field `name`: a string where they are UTF-8 (and the output is
    /// not hex), else `name_hex` with hex digits. Valid JSON either way.
    pub fn json_field(self, name: &str, bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes) {
            Ok(s) if self != Encoding::Hex => format!("\"{name}\":{}", json_string(s)),
            _ => format!("\"{name}_hex\":\"{}\"", Encoding::Hex.show(bytes)),
        }
    }
}

fn parse_hex(arg: &str) -> Result<Vec<u8>, String> {
    let digits = arg.strip_prefix("0x").unwrap_or(arg);
    if !digits.is_ascii() {
        // (Slicing it by two bytes would split a character: it once panicked here.)
        return Err(format!(
            "{arg:?} is not hex: it has characters other than 0-9a-f"
        ));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(format!("{arg:?} is not hex: an odd number of digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("{arg:?} is not hex: {:?}", &digits[i..i + 2]))
        })
        .collect()
}

fn unescape(arg: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(arg.len());
    let mut bytes = arg.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'r') => out.push(b'\r'),
            Some(b'0') => out.push(0),
            Some(b'x') => {
                let hi = bytes.next();
                let lo = bytes.next();
                let pair = [hi.unwrap_or(b' '), lo.unwrap_or(b' ')];
                let s = std::str::from_utf8(&pair).unwrap_or("  ");
                let v = u8::from_str_radix(s, 16)
                    .map_err(|_| format!("{arg:?}: \\x needs two hex digits"))?;
                out.push(v);
            }
            Some(other) => {
                return Err(format!(
                    "{arg:?}: unknown escape \\{} (use \\\\ for a backslash)",
                    other as char
                ))
            }
            None => return Err(format!("{arg:?}: ends in a lone backslash")),
        }
    }
    Ok(out)
}

/// Valid UTF-8 as is, but control characters, DEL and `\` escaped as `escape` does; the
/// bytes of invalid sequences as `\xNN`.
fn escape_utf8(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_ascii() {
                s.push_str(&escape(&[c as u8]));
            } else if c.is_control() {
                let mut buf = [0u8; 4];
                s.push_str(&escape(c.encode_utf8(&mut buf).as_bytes()));
            } else {
                s.push(c);
            }
        }
        s.push_str(&escape(chunk.invalid()));
    }
    s
}

fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The smallest key greater than every key starting with `prefix` (`None`: no bound,
/// the prefix is all 0xff or empty).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last != 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        for enc in [Encoding::Text, Encoding::Escaped, Encoding::Hex] {
            assert_eq!(enc.parse(&enc.show(&all)).unwrap(), all, "{enc:?}");
        }
        assert!(Encoding::Escaped.show(&all).is_ascii());
        let mixed = "Zürich \u{1f600}\t\u{85}".as_bytes().to_vec();
        let mut odd = mixed.clone();
        odd.extend_from_slice(b"\xc3(\xff");
        for bytes in [mixed, odd] {
            for enc in [Encoding::Text, Encoding::Escaped] {
                let shown = enc.show(&bytes);
                assert!(!shown.contains('\t'), "{shown}");
                assert_eq!(enc.parse(&shown).unwrap(), bytes, "{enc:?}: {shown}");
            }
        }
        // UTF-8 prints as it is; what is not UTF-8 (and control characters) as escapes.
        assert_eq!(Encoding::Text.show("Zürich".as_bytes()), "Zürich");
        assert_eq!(Encoding::Escaped.show("Zü".as_bytes()), "Z\\xc3\\xbc");
        assert_eq!(Encoding::Text.show(b"a\xffb\n"), "a\\xffb\\n");
    }

    #[test]
    fn json_fields_are_strings_where_utf8_and_hex_where_not() {
        assert_eq!(
            Encoding::Text.json_field("key", "Zü\"".as_bytes()),
            "\"key\":\"Zü\\\"\""
        );
        assert_eq!(
            Encoding::Text.json_field("value", b"\xff"),
            "\"value_hex\":\"ff\""
        );
        assert_eq!(Encoding::Hex.json_field("key", b"k"), "\"key_hex\":\"6b\"");
    }

    #[test]
    fn non_ascii_hex_is_refused_not_a_panic() {
        assert!(Encoding::Hex.parse("aé").unwrap_err().contains("not hex"));
        assert!(Encoding::Hex.parse("éé").is_err());
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        assert!(Encoding::Hex.parse("abc").unwrap_err().contains("odd"));
        assert!(Encoding::Hex.parse("zz").is_err());
        assert!(Encoding::Text
            .parse("a\\q")
            .unwrap_err()
            .contains("unknown escape"));
        assert!(Encoding::Text.parse("a\\").is_err());
        assert!(Encoding::Text.parse("\\x4").is_err());
        assert_eq!(Encoding::Text.parse("a\\x41\\\\").unwrap(), b"aA\\");
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
        assert_eq!(json_string("a\"b\\\u{1}"), "\"a\\\"b\\\\\\u0001\"");
    }
}
