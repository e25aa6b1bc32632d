//! Scalar values: the fixed-point [`Decimal`] used for money, and the borrowed [`Value`] used by the
//! generic (column-by-column) row interface. Money is never a float anywhere in the engine.

use std::cmp::Ordering;
use std::fmt;

/// Largest scale a decimal column may declare; `10^18` still fits an `i64`.
pub const MAX_DECIMAL_PRECISION: u8 = 18;

/// A fixed-point decimal number: `units / 10^scale`, e.g. `Decimal::new(1250, 2)` is 12.50.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    units: i64,
    scale: u8,
}

impl Decimal {
    /// `units / 10^scale`.
    pub const fn new(units: i64, scale: u8) -> Self {
        Decimal { units, scale }
    }

    /// The integer number of `10^-scale` units.
    pub const fn units(self) -> i64 {
        self.units
    }

    /// Number of digits after the decimal point.
    pub const fn scale(self) -> u8 {
        self.scale
    }

    /// The same number at another scale, if that is exact and fits (never rounds silently).
    pub fn rescale(self, scale: u8) -> Option<Decimal> {
        if scale > MAX_DECIMAL_PRECISION {
            return None;
        }
        match scale.cmp(&self.scale) {
            Ordering::Equal => Some(self),
            Ordering::Greater => {
                let factor = 10i64.checked_pow(u32::from(scale - self.scale))?;
                Some(Decimal::new(self.units.checked_mul(factor)?, scale))
            }
            Ordering::Less => {
                let factor = 10i64.checked_pow(u32::from(self.scale - scale))?;
                if self.units % factor != 0 {
                    return None;
                }
                Some(Decimal::new(self.units / factor, scale))
            }
        }
    }

    /// Parses `-12.5`, `0.0001`, `42`. The scale is the number of digits written after the point.
    pub fn parse(text: &str) -> Option<Decimal> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() && frac.is_empty() {
            return None;
        }
        if !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let scale = u8::try_from(frac.len())
            .ok()
            .filter(|s| *s <= MAX_DECIMAL_PRECISION)?;
        let mut units: i64 = 0;
        for b in whole.bytes().chain(frac.bytes()) {
            units = units.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
        }
        Some(Decimal::new(if negative { -units } else { units }, scale))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scale == 0 {
            return write!(f, "{}", self.units);
        }
        let factor = 10u64.pow(u32::from(self.scale));
        let magnitude = self.units.unsigned_abs();
        let sign = if self.units < 0 { "-" } else { "" };
        write!(
            f,
            "{sign}{}.{:0width$}",
            magnitude / factor,
            magnitude % factor,
            width = usize::from(self.scale)
        )
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        // Compare exactly at the finer scale; i128 cannot overflow for scales <= 18.
        let scale = self.scale.max(other.scale);
        let widen = |d: &Decimal| i128::from(d.units) * 10i128.pow(u32::from(scale - d.scale));
        widen(self).cmp(&widen(other))
    }
}

/// A column value as seen by the generic row interface. Strings are borrowed from the row, so reading
/// a value never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// SQL NULL.
    Null,
    /// Any integer column (`Int32` or `Int64`).
    Int(i64),
    /// A decimal column.
    Decimal(Decimal),
    /// A `Char` or `VarChar` column (a `Char` is returned without its trailing padding).
    Str(&'a str),
    /// Microseconds since the Unix epoch.
    Timestamp(i64),
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Str(s) => f.write_str(s),
            Value::Timestamp(t) => write!(f, "@{t}us"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        for (text, units, scale) in [
            ("12.50", 1250, 2),
            ("-0.05", -5, 2),
            ("42", 42, 0),
            ("0.0001", 1, 4),
        ] {
            let d = Decimal::parse(text).expect("parses");
            assert_eq!((d.units(), d.scale()), (units, scale));
            assert_eq!(d.to_string(), text);
        }
        assert!(Decimal::parse("1.2.3").is_none());
        assert!(Decimal::parse("abc").is_none());
        assert!(Decimal::parse("-").is_none());
        assert!(Decimal::parse("99999999999999999999").is_none());
    }

    #[test]
    fn rescale_is_exact_or_refuses() {
        assert_eq!(
            Decimal::new(125, 1).rescale(3),
            Some(Decimal::new(12500, 3))
        );
        assert_eq!(
            Decimal::new(12500, 3).rescale(1),
            Some(Decimal::new(125, 1))
        );
        assert_eq!(Decimal::new(12501, 3).rescale(1), None);
        assert_eq!(Decimal::new(i64::MAX, 0).rescale(1), None);
    }

    #[test]
    fn ordering_across_scales() {
        assert!(Decimal::new(1, 0) > Decimal::new(99, 2));
        assert_eq!(
            Decimal::new(10, 1).cmp(&Decimal::new(100, 2)),
            Ordering::Equal
        );
        assert!(Decimal::new(-1, 0) < Decimal::new(0, 4));
    }
}
