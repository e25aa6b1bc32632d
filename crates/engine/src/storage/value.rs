//! Scalar values: the fixed-point [`Decimal`] used for money, and the borrowed [`Value`] used by the
//! generic (column-by-column) row interface. Money is never a float anywhere in the engine.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::error::DecimalError;
use crate::limits::MAX_DECIMAL_PRECISION;

/// A fixed-point decimal number: `units / 10^scale`, e.g. `Decimal::new(1250, 2)` is 12.50.
///
/// Equality, ordering and hashing are numeric: `1.0 == 1.00`, and equal numbers hash alike.
#[derive(Clone, Copy, Debug)]
pub struct Decimal {
    units: i64,
    /// At most [`MAX_DECIMAL_PRECISION`] (every constructor checks it).
    scale: u8,
}

impl Decimal {
    /// `units / 10^scale`. Refuses scales above [`MAX_DECIMAL_PRECISION`].
    pub fn new(units: i64, scale: u8) -> Result<Self, DecimalError> {
        if scale > MAX_DECIMAL_PRECISION {
            return Err(DecimalError::ScaleTooLarge(scale));
        }
        Ok(Decimal { units, scale })
    }

    /// `units / 10^scale` for a scale the caller knows is valid (a validated column's).
    pub(crate) const fn from_parts(units: i64, scale: u8) -> Self {
        debug_assert!(scale <= MAX_DECIMAL_PRECISION);
        Decimal { units, scale }
    }

    /// The same number with trailing fractional zeros removed: the one representation all equal
    /// decimals share.
    fn normalized(self) -> (i64, u8) {
        let (mut units, mut scale) = (self.units, self.scale);
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        (units, scale)
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
                Some(Decimal::from_parts(self.units.checked_mul(factor)?, scale))
            }
            Ordering::Less => {
                let factor = 10i64.checked_pow(u32::from(self.scale - scale))?;
                if self.units % factor != 0 {
                    return None;
                }
                Some(Decimal::from_parts(self.units / factor, scale))
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
        Some(Decimal::from_parts(
            if negative { -units } else { units },
            scale,
        ))
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

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl Hash for Decimal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.normalized().hash(state);
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
#[non_exhaustive]
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
    /// A `Numeric` column: the stored form [`NumericParts`](crate::NumericParts) encodes.
    Numeric(&'a [u8]),
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Str(s) => f.write_str(s),
            Value::Timestamp(t) => write!(f, "@{t}us"),
            Value::Numeric(bytes) => match crate::storage::numeric::NumericParts::decode(bytes) {
                Some(p) => write!(f, "{}", p),
                None => f.write_str("<bad numeric>"),
            },
        }
    }
}

/// Integers at the edges that tests of encodings and value checks care about: zero and one, byte
/// and decimal-digit boundaries, and the limits of `i32` and `i64`.
#[cfg(test)]
pub(crate) const INTEGER_EDGES: [i64; 18] = [
    0,
    1,
    -1,
    255,
    256,
    -256,
    9_999,
    -9_999,
    10_000,
    999_999,
    1_000_000,
    -1_000_000,
    i32::MAX as i64,
    i32::MAX as i64 + 1,
    i32::MIN as i64,
    i32::MIN as i64 - 1,
    i64::MAX,
    i64::MIN,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn d(units: i64, scale: u8) -> Decimal {
        Decimal::new(units, scale).expect("valid scale")
    }

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
        assert_eq!(d(125, 1).rescale(3), Some(d(12500, 3)));
        assert_eq!(d(12500, 3).rescale(1), Some(d(125, 1)));
        assert_eq!(d(12501, 3).rescale(1), None);
        assert_eq!(d(i64::MAX, 0).rescale(1), None);
    }

    #[test]
    fn ordering_across_scales() {
        assert!(d(1, 0) > d(99, 2));
        assert_eq!(d(10, 1).cmp(&d(100, 2)), Ordering::Equal);
        assert!(d(-1, 0) < d(0, 4));
    }

    #[test]
    fn equality_and_hashing_agree_with_ordering() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |x: Decimal| {
            let mut h = DefaultHasher::new();
            x.hash(&mut h);
            h.finish()
        };
        for (a, b) in [
            (d(10, 1), d(100, 2)),
            (d(1, 0), d(1_000_000, 6)),
            (d(0, 0), d(0, 18)),
            (d(-250, 2), d(-25, 1)),
        ] {
            assert_eq!(a.cmp(&b), Ordering::Equal);
            assert_eq!(a, b, "{a} and {b}");
            assert_eq!(hash(a), hash(b), "{a} and {b}");
        }
        assert_ne!(d(1, 0), d(11, 1));
        assert_ne!(d(1, 1), d(1, 2));
    }

    #[test]
    fn scales_above_the_maximum_are_refused() {
        assert_eq!(
            Decimal::new(1, MAX_DECIMAL_PRECISION + 1),
            Err(DecimalError::ScaleTooLarge(MAX_DECIMAL_PRECISION + 1))
        );
        assert_eq!(Decimal::new(5, 200), Err(DecimalError::ScaleTooLarge(200)));
        let max = d(i64::MAX, MAX_DECIMAL_PRECISION);
        assert!(
            max > d(i64::MIN, 0),
            "comparisons at the maximum scale do not overflow"
        );
        assert_eq!(max.to_string(), "9.223372036854775807");
    }
}
