//! `bytea`: binary strings. A value is held as PostgreSQL's hex output (`\x` and two lowercase
//! hex digits per byte) in a `Datum::Text`, so that the engine stores, compares, hashes and
//! indexes it as any text: two lowercase hex strings order as their bytes do (memcmp, a prefix
//! first), which is PostgreSQL's order of bytea. Input reads both of PostgreSQL's forms (hex
//! and escape); `encode`/`decode` convert to and from hex, base64 and escape text.
//!
//! Must never hold a value in any other form: every comparison relies on the one spelling.

use crate::error::{Result, SqlError, sqlstate};
use base64::Engine as _;

/// The held form of `bytes`: `\x` and their lowercase hex digits.
pub fn from_bytes(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + 2 * bytes.len());
    s.push_str("\\x");
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// The bytes of a held value (`\x` and hex digits; anything else gives no bytes for what is
/// not hex, which a held value never has).
pub fn to_bytes(held: &str) -> Vec<u8> {
    let hex = held.strip_prefix("\\x").unwrap_or(held).as_bytes();
    hex.chunks_exact(2)
        .map(|p| (hex_value(p[0]).unwrap_or(0) << 4) | hex_value(p[1]).unwrap_or(0))
        .collect()
}

/// How many bytes a held value has.
pub fn len(held: &str) -> usize {
    held.len().saturating_sub(2) / 2
}

/// Two held values, one after the other (`||`).
pub fn concat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b.strip_prefix("\\x").unwrap_or(b));
    s
}

/// A value from PostgreSQL's bytea input: `\x` followed by pairs of hex digits (whitespace
/// between pairs), or else the escape form, where `\\` is a backslash, `\` and three octal
/// digits a byte, and any other character its own UTF-8 bytes.
pub fn parse(text: &str) -> Result<String> {
    match text.strip_prefix("\\x") {
        Some(hex) => Ok(from_bytes(&hex_decode(hex)?)),
        None => Ok(from_bytes(&escape_decode(text)?)),
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Hex digits in pairs, whitespace between pairs skipped (`decode(.., 'hex')` and `\x` input),
/// as PostgreSQL reads them: a space inside a pair is an invalid digit.
fn hex_decode(hex: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(hex.len() / 2);
    let mut chars = hex.chars();
    let digit = |c: char| {
        u8::try_from(c).ok().and_then(hex_value).ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("invalid hexadecimal digit: \"{c}\""),
            )
        })
    };
    while let Some(high) = chars.next() {
        if matches!(high, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        let high = digit(high)?;
        let Some(low) = chars.next() else {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "invalid hexadecimal data: odd number of digits",
            ));
        };
        out.push((high << 4) | digit(low)?);
    }
    Ok(out)
}

/// The escape form (input and `decode(.., 'escape')`).
fn escape_decode(text: &str) -> Result<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if let [d1 @ b'0'..=b'3', d2 @ b'0'..=b'7', d3 @ b'0'..=b'7', ..] = b[i + 1..] {
            out.push(((d1 - b'0') << 6) | ((d2 - b'0') << 3) | (d3 - b'0'));
            i += 4;
        } else {
            return Err(SqlError::new(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                "invalid input syntax for type bytea",
            ));
        }
    }
    Ok(out)
}

fn unrecognized(format: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unrecognized encoding: \"{format}\""),
    )
}

/// `encode(bytes, format)`: hex digits, base64 (a line break after each 76 characters, as
/// PostgreSQL writes it), or escape text (a backslash doubled, bytes outside printable ASCII
/// as `\` and three octal digits).
pub fn encode(held: &str, format: &str) -> Result<String> {
    let bytes = to_bytes(held);
    Ok(match format.to_ascii_lowercase().as_str() {
        "hex" => held.strip_prefix("\\x").unwrap_or(held).to_owned(),
        "base64" => {
            let flat = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let mut lines = String::with_capacity(flat.len() + flat.len() / 76);
            for (i, c) in flat.chars().enumerate() {
                if i > 0 && i % 76 == 0 {
                    lines.push('\n');
                }
                lines.push(c);
            }
            lines
        }
        "escape" => {
            let mut s = String::with_capacity(bytes.len());
            for &b in &bytes {
                match b {
                    b'\\' => s.push_str("\\\\"),
                    0x20..=0x7e => s.push(b as char),
                    _ => s.push_str(&format!("\\{b:03o}")),
                }
            }
            s
        }
        _ => return Err(unrecognized(format)),
    })
}

/// `decode(text, format)`: the inverse of [`encode`] (base64 ignoring whitespace).
pub fn decode(text: &str, format: &str) -> Result<String> {
    let bytes = match format.to_ascii_lowercase().as_str() {
        "hex" => hex_decode(text)?,
        "base64" => {
            let flat: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(flat)
                .map_err(|e| {
                    SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("invalid base64 data: {e}"),
                    )
                })?
        }
        "escape" => escape_decode(text)?,
        _ => return Err(unrecognized(format)),
    };
    Ok(from_bytes(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_input_forms_give_the_one_held_form() {
        assert_eq!(parse("\\x4A6b").unwrap(), "\\x4a6b");
        assert_eq!(parse("\\x 4a 6b ").unwrap(), "\\x4a6b");
        assert_eq!(parse("Jk").unwrap(), "\\x4a6b");
        assert_eq!(parse("a\\\\b\\000").unwrap(), "\\x615c6200");
        assert_eq!(parse("é").unwrap(), "\\xc3a9");
        assert_eq!(parse("").unwrap(), "\\x");
        // Held values read back as themselves (casts re-read them).
        assert_eq!(parse("\\x615c6200").unwrap(), "\\x615c6200");
        assert!(parse("\\x4").is_err());
        assert!(parse("\\xzz").is_err());
        assert!(parse("a\\9").is_err());
        assert!(parse("a\\").is_err());
    }

    #[test]
    fn held_values_order_as_their_bytes() {
        let values: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0, 255],
            vec![9],
            vec![10],
            vec![15, 1],
            vec![16],
            vec![255],
        ];
        for a in &values {
            for b in &values {
                assert_eq!(
                    from_bytes(a).cmp(&from_bytes(b)),
                    a.cmp(b),
                    "{a:?} against {b:?}"
                );
            }
            assert_eq!(to_bytes(&from_bytes(a)), *a);
            assert_eq!(len(&from_bytes(a)), a.len());
        }
    }

    #[test]
    fn encodings_round_trip() {
        let held =
            from_bytes(b"\x00a\\\xffhello world, long enough to wrap a base64 line at seventy-six");
        for format in ["hex", "base64", "escape", "HEX"] {
            let text = encode(&held, format).unwrap();
            assert_eq!(decode(&text, format).unwrap(), held, "{format}");
        }
        assert_eq!(
            encode(&from_bytes(b"\x00a\\"), "escape").unwrap(),
            "\\000a\\\\"
        );
        assert!(encode(&held, "base64").unwrap().contains('\n'));
        assert!(encode(&held, "rot13").is_err());
        assert!(decode("!!", "base64").is_err());
        assert_eq!(concat("\\x01", "\\x02"), "\\x0102");
    }
}
