//! Decimal numbers of any precision as the engine stores them (a `Numeric` column): bytes whose
//! order is the numbers' order, so a key is the bytes themselves, followed by the display scale.
//!
//! ```text
//! zero:     [0x02]                                            [dscale: u16 BE]
//! positive: [0x03][exponent ^ 0x8000_0000: u32 BE][pairs][0x00] [dscale]
//! negative: [0x01][!(exponent ^ 0x8000_0000)][!pairs][0xFF]   [dscale]
//! ```
//!
//! A nonzero number is `0.d1 d2 d3 ... × 10^exponent` with `d1` nonzero and no trailing zero
//! digit; its digits are packed two to a byte (`10 * a + b + 1`, the last pair padded with a
//! zero), so a prefix sorts before its extensions and the terminator ends the sortable part. A
//! negative number's bytes are complemented, which reverses their order. Equal numbers have
//! equal sortable parts whatever their display scale (1.0 and 1.00 are one key, as PostgreSQL's
//! btree finds them equal); the display scale, the digits shown after the point, follows.
//!
//! This module only encodes, decodes and validates; arithmetic belongs to whoever computes.

/// A decimal number taken apart: `±0.d1 d2 ... × 10^exponent`, shown with `dscale` digits after
/// the point. Zero has no digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumericParts {
    /// Below zero (never for zero itself).
    pub negative: bool,
    /// Decimal digits (0..=9), the first and last nonzero; empty for zero.
    pub digits: Vec<u8>,
    /// The power of ten the digits scale: the number of digits before the point.
    pub exponent: i32,
    /// Digits shown after the point.
    pub dscale: u16,
}

const NEGATIVE: u8 = 0x01;
const ZERO: u8 = 0x02;
const POSITIVE: u8 = 0x03;

impl NumericParts {
    /// Whether the parts are a number in normal form that `dscale` can show in full.
    fn is_valid(&self) -> bool {
        match (self.digits.first(), self.digits.last()) {
            (None, _) => !self.negative && self.exponent == 0,
            (Some(&first), Some(&last)) => {
                first != 0
                    && last != 0
                    && self.digits.iter().all(|&d| d <= 9)
                    // Every digit lies before the point or within the display scale.
                    && i64::from(self.exponent) + i64::from(self.dscale)
                        >= self.digits.len() as i64
            }
            _ => false,
        }
    }

    /// Appends the stored form (`None` if the parts are not in normal form).
    pub fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        if !self.is_valid() {
            return None;
        }
        if self.digits.is_empty() {
            out.push(ZERO);
        } else {
            let flip = if self.negative { 0xFF } else { 0 };
            out.push(if self.negative { NEGATIVE } else { POSITIVE });
            let exponent = (self.exponent as u32) ^ 0x8000_0000;
            out.extend(exponent.to_be_bytes().iter().map(|b| b ^ flip));
            for pair in self.digits.chunks(2) {
                let byte = 10 * pair[0] + pair.get(1).copied().unwrap_or(0) + 1;
                out.push(byte ^ flip);
            }
            out.push(flip);
        }
        out.extend_from_slice(&self.dscale.to_be_bytes());
        Some(())
    }

    /// The number stored as `bytes`, if they are one stored form exactly.
    pub fn decode(bytes: &[u8]) -> Option<NumericParts> {
        let (mut parts, len) = decode_sortable(bytes)?;
        let dscale: [u8; 2] = bytes.get(len..)?.try_into().ok()?;
        parts.dscale = u16::from_be_bytes(dscale);
        parts.is_valid().then_some(parts)
    }
}

/// The number as SQL writes it, with `dscale` digits after the point (`-12.50`).
impl std::fmt::Display for NumericParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        let digit = |i: i64| -> char {
            let d = usize::try_from(i).ok().and_then(|i| self.digits.get(i));
            char::from(b'0' + d.copied().unwrap_or(0))
        };
        if self.negative {
            f.write_char('-')?;
        }
        let exponent = i64::from(self.exponent);
        if exponent <= 0 {
            f.write_char('0')?;
        }
        for i in 0..exponent {
            f.write_char(digit(i))?;
        }
        if self.dscale > 0 {
            f.write_char('.')?;
            for i in exponent..exponent + i64::from(self.dscale) {
                f.write_char(digit(i))?;
            }
        }
        Ok(())
    }
}

/// Length of the sortable part at the front of `bytes` (what a key holds), if there is one.
pub(crate) fn sortable_len(bytes: &[u8]) -> Option<usize> {
    decode_sortable(bytes).map(|(_, len)| len)
}

/// The number whose sortable part starts `bytes` (its display scale the least that shows every
/// digit), and that part's length.
pub(crate) fn decode_sortable(bytes: &[u8]) -> Option<(NumericParts, usize)> {
    let (&class, rest) = bytes.split_first()?;
    let flip = match class {
        ZERO => {
            let zero = NumericParts {
                negative: false,
                digits: Vec::new(),
                exponent: 0,
                dscale: 0,
            };
            return Some((zero, 1));
        }
        POSITIVE => 0,
        NEGATIVE => 0xFF,
        _ => return None,
    };
    let exponent: [u8; 4] = rest.get(..4)?.try_into().ok()?;
    let exponent = (u32::from_be_bytes(exponent.map(|b| b ^ flip)) ^ 0x8000_0000) as i32;
    let mut digits = Vec::new();
    let mut at = 5;
    loop {
        let byte = bytes.get(at)? ^ flip;
        at += 1;
        if byte == 0 {
            break;
        }
        if byte > 100 {
            return None;
        }
        digits.extend([(byte - 1) / 10, (byte - 1) % 10]);
    }
    if digits.last() == Some(&0) {
        digits.pop();
    }
    let parts = NumericParts {
        negative: flip != 0,
        dscale: (digits.len() as i64 - i64::from(exponent)).clamp(0, i64::from(u16::MAX)) as u16,
        digits,
        exponent,
    };
    Some((parts, at))
}

/// Bytes a number of at most `digits` significant digits may take in a key.
pub(crate) fn max_sortable_len(digits: u16) -> usize {
    1 + 4 + usize::from(digits).div_ceil(2) + 1
}

/// Significant digits of the stored number `bytes` (which passed [`NumericParts::decode`]).
pub(crate) fn significant_digits(bytes: &[u8]) -> usize {
    match bytes.first() {
        Some(&ZERO) | None => 0,
        // Class, exponent, pairs, terminator, display scale; the last pair may hold one digit.
        _ => {
            let pairs = bytes.len() - 8;
            let last = bytes[5 + pairs - 1] ^ if bytes[0] == NEGATIVE { 0xFF } else { 0 };
            2 * pairs - usize::from((last - 1).is_multiple_of(10))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str, dscale: u16) -> NumericParts {
        let negative = text.starts_with('-');
        let t = text.trim_start_matches('-');
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let all: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        let lead = all.iter().position(|&d| d != 0).unwrap_or(all.len());
        let exponent = int.len() as i32 - lead as i32;
        let mut digits = all[lead..].to_vec();
        while digits.last() == Some(&0) {
            digits.pop();
        }
        NumericParts {
            negative: negative && !digits.is_empty(),
            exponent: if digits.is_empty() { 0 } else { exponent },
            digits,
            dscale,
        }
    }

    fn stored(text: &str, dscale: u16) -> Vec<u8> {
        let mut out = Vec::new();
        parts(text, dscale).encode(&mut out).expect("valid");
        out
    }

    #[test]
    fn bytes_order_as_the_numbers_do() {
        let ordered = [
            "-1000", "-999.5", "-12.5", "-12.25", "-12", "-1", "-0.5", "-0.05", "0", "0.001",
            "0.05", "0.5", "1", "1.05", "1.5", "12", "12.25", "12.5", "99", "100", "1000.01",
        ];
        let keys: Vec<Vec<u8>> = ordered
            .iter()
            .map(|t| {
                let s = stored(t, 5);
                s[..sortable_len(&s).expect("sortable")].to_vec()
            })
            .collect();
        for (w, t) in keys.windows(2).zip(ordered.windows(2)) {
            assert!(w[0] < w[1], "{} < {}", t[0], t[1]);
        }
    }

    #[test]
    fn equal_numbers_share_a_sortable_part_whatever_their_scale() {
        let a = stored("1.5", 1);
        let b = stored("1.5", 4);
        assert_ne!(a, b);
        assert_eq!(
            a[..sortable_len(&a).unwrap()],
            b[..sortable_len(&b).unwrap()]
        );
    }

    #[test]
    fn round_trips_and_counts_digits() {
        for (text, dscale, count) in [
            ("0.000", 3, 0),
            ("123.45", 2, 5),
            ("-0.0012", 4, 2),
            ("1234", 0, 4),
            ("-98765432109876543210987654321", 0, 29),
        ] {
            let s = stored(text, dscale);
            assert_eq!(
                NumericParts::decode(&s),
                Some(parts(text, dscale)),
                "{text}"
            );
            assert_eq!(parts(text, dscale).to_string(), text);
            assert_eq!(significant_digits(&s), count, "{text}");
            assert!(s.len() <= max_sortable_len(count as u16) + 2);
        }
    }

    #[test]
    fn malformed_bytes_are_refused() {
        let good = stored("12.5", 1);
        assert!(NumericParts::decode(&good[..good.len() - 1]).is_none());
        let mut longer = good.clone();
        longer.push(0);
        assert!(NumericParts::decode(&longer).is_none());
        let mut bad_pair = good.clone();
        bad_pair[5] = 200;
        assert!(NumericParts::decode(&bad_pair).is_none());
        assert!(NumericParts::decode(&[7, 0, 0]).is_none());
        // A display scale too small to show the digits.
        let mut short = stored("12.5", 1);
        let n = short.len();
        short[n - 1] = 0;
        assert!(NumericParts::decode(&short).is_none());
        // Not normal form: a leading zero digit.
        let mut out = Vec::new();
        let p = NumericParts {
            negative: false,
            digits: vec![0, 1],
            exponent: 2,
            dscale: 0,
        };
        assert!(p.encode(&mut out).is_none());
    }
}
