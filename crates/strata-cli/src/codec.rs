//! How keys and values are given on the command line and shown: as text with escapes
//! (`\xNN`, `\\`, `\n`, `\t`, `\r`), or as hex with `--hex`; and JSON string quoting.

use std::fmt::Write as _;

/// How bytes are read from arguments and written to output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Printable ASCII as is, anything else escaped (`\xNN`); arguments may use the same
    /// escapes.
    Text,
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
            Encoding::Text => unescape(arg),
        }
    }

    /// `bytes` shown this way.
    pub fn show(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Hex => bytes.iter().fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            }),
            Encoding::Text => escape(bytes),
        }
    }
}

fn parse_hex(arg: &str) -> Result<Vec<u8>, String> {
    let digits = arg.strip_prefix("0x").unwrap_or(arg);
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
        let shown = Encoding::Text.show(&all);
        assert!(shown.is_ascii());
        assert_eq!(Encoding::Text.parse(&shown).unwrap(), all);
        assert_eq!(Encoding::Hex.parse(&Encoding::Hex.show(&all)).unwrap(), all);
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
