//! `numeric`: decimal numbers of any precision, computed as PostgreSQL computes them. A number is
//! an integer of any size (`num-bigint`) scaled by a power of ten, its display scale: the digits
//! shown after the point, which arithmetic chooses by PostgreSQL's rules (a sum keeps the larger
//! scale, a product the sum of scales, a quotient at least 16 significant digits).
//!
//! What this module must never do: round where PostgreSQL is exact, or build a number past
//! PostgreSQL's limits (131,072 digits before the point, 16,383 after), which a statement could
//! otherwise use to exhaust the server.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use overtake_engine::NumericParts;

use crate::error::{Result, SqlError, sqlstate};

/// Most digits before the point a number may have (PostgreSQL's).
const MAX_INTEGER_DIGITS: i64 = 131_072;
/// Most digits after the point a number may have (PostgreSQL's).
pub const MAX_SCALE: u16 = 16_383;
/// Largest display scale a quotient is given (PostgreSQL's `NUMERIC_MAX_DISPLAY_SCALE`).
const MAX_DISPLAY_SCALE: i64 = 1000;
/// Fewest significant digits a quotient keeps (PostgreSQL's `NUMERIC_MIN_SIG_DIGITS`).
const MIN_SIG_DIGITS: i64 = 16;
/// Most places `round` and `trunc` round to, either side of the point (PostgreSQL's
/// `NUMERIC_MAX_RESULT_SCALE`).
const MAX_RESULT_SCALE: i64 = 2000;
/// Largest precision a `numeric(p, s)` may declare (PostgreSQL's).
pub const MAX_PRECISION: u16 = 1000;
/// Largest scale a `numeric(p, s)` may declare, and the negative of the smallest (PostgreSQL's).
pub const MAX_TYPMOD_SCALE: i64 = 1000;

/// A decimal number: `units * 10^-scale`, shown with `scale` digits after the point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Num {
    units: BigInt,
    scale: u16,
}

fn overflow() -> SqlError {
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "value overflows numeric format",
    )
}

fn pow10(n: u64) -> BigInt {
    // Scales differ by a few digits almost always: those powers fit a machine word.
    match 10u64.checked_pow(n as u32) {
        Some(p) if n <= 19 => BigInt::from(p),
        _ => num_traits::pow(BigInt::from(10u8), n as usize),
    }
}

/// `units` divided by `divisor`, rounded half away from zero (PostgreSQL's rounding).
fn div_round(units: &BigInt, divisor: &BigInt) -> BigInt {
    let (q, r) = units.div_rem(divisor);
    if r.abs() * 2u8 >= divisor.abs() {
        if units.sign() == divisor.sign() {
            q + 1u8
        } else {
            q - 1u8
        }
    } else {
        q
    }
}

impl Num {
    /// Zero, shown with no digits after the point.
    pub fn zero() -> Num {
        Num::from_i64(0)
    }

    pub fn from_i64(v: i64) -> Num {
        Num {
            units: BigInt::from(v),
            scale: 0,
        }
    }

    /// `units * 10^-scale` (a fixed-point column's value).
    pub fn from_units(units: i64, scale: u8) -> Num {
        Num {
            units: BigInt::from(units),
            scale: u16::from(scale),
        }
    }

    /// Digits shown after the point.
    /// Bytes it holds on the heap (an estimate, for memory budgets).
    pub fn heap_bytes(&self) -> usize {
        (self.units.bits() as usize).div_ceil(64) * 8
    }

    pub fn scale(&self) -> u16 {
        self.scale
    }

    pub fn is_zero(&self) -> bool {
        self.units.is_zero()
    }

    pub fn is_negative(&self) -> bool {
        self.units.is_negative()
    }

    pub fn abs(&self) -> Num {
        Num {
            units: self.units.abs(),
            scale: self.scale,
        }
    }

    pub fn neg(&self) -> Num {
        Num {
            units: -&self.units,
            scale: self.scale,
        }
    }

    /// Decimal digits of the integer `|units|` (0 for zero).
    fn unit_digits(&self) -> i64 {
        if self.units.is_zero() {
            0
        } else {
            // bits * log10(2) is within one of the digit count; settle it exactly.
            let estimate = (self.units.bits() as f64 * std::f64::consts::LOG10_2) as u64;
            let mut digits = estimate.max(1);
            let abs = self.units.abs();
            while abs >= pow10(digits) {
                digits += 1;
            }
            while digits > 1 && abs < pow10(digits - 1) {
                digits -= 1;
            }
            digits as i64
        }
    }

    /// Digits before the point (0 for numbers below one).
    fn integer_digits(&self) -> i64 {
        (self.unit_digits() - i64::from(self.scale)).max(0)
    }

    /// This number if it is within PostgreSQL's limits.
    fn checked(self) -> Result<Num> {
        // A number of fewer bits than the limit's digits can hold is within it (a bit is
        // under a third of a digit), which spares counting digits after every sum.
        let surely_within = self.units.bits() < MAX_INTEGER_DIGITS as u64;
        if self.scale > MAX_SCALE || (!surely_within && self.integer_digits() > MAX_INTEGER_DIGITS)
        {
            return Err(overflow());
        }
        Ok(self)
    }

    /// The same value shown with `scale` digits after the point (rounded half away from zero
    /// when digits are dropped).
    pub fn rescale(&self, scale: u16) -> Num {
        let units = match scale.cmp(&self.scale) {
            Ordering::Equal => self.units.clone(),
            Ordering::Greater => &self.units * pow10(u64::from(scale - self.scale)),
            Ordering::Less => div_round(&self.units, &pow10(u64::from(self.scale - scale))),
        };
        Num { units, scale }
    }

    /// The value rounded to `places` after the point (before it when negative), shown with
    /// `max(places, 0)` digits after the point: PostgreSQL's `round(numeric, int)`.
    pub fn round(&self, places: i64) -> Num {
        let places = places.clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
        if places >= 0 {
            return self.rescale(places as u16);
        }
        let unit = pow10(i64::from(self.scale).saturating_sub(places) as u64);
        Num {
            units: div_round(&self.units, &unit) * &unit / pow10(u64::from(self.scale)),
            scale: 0,
        }
    }

    /// The value with digits past `places` after the point (before it when negative) cut off,
    /// toward zero, shown with `max(places, 0)` digits after the point: PostgreSQL's
    /// `trunc(numeric, int)`.
    pub fn truncate(&self, places: i64) -> Num {
        let places = places.clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
        let drop = i64::from(self.scale) - places;
        if drop <= 0 {
            return self.rescale(places as u16);
        }
        let cut = &self.units / pow10(drop as u64);
        if places >= 0 {
            Num {
                units: cut,
                scale: places as u16,
            }
        } else {
            Num {
                units: cut * pow10(places.unsigned_abs()),
                scale: 0,
            }
        }
    }

    /// The least integer not below the value (`ceil`), or the greatest not above it (`floor`).
    pub fn integral(&self, up: bool) -> Num {
        let unit = pow10(u64::from(self.scale));
        let units = if up {
            -(-&self.units).div_floor(&unit)
        } else {
            self.units.div_floor(&unit)
        };
        Num { units, scale: 0 }
    }

    /// The value without trailing zeros after the point (1.50 → 1.5): equal numbers have one
    /// normalized form.
    /// Hashes the number's value, whatever its scale: equal numbers (1.0, 1.00) hash alike.
    /// Numbers of up to 18 digits are hashed without a big-integer division.
    pub fn hash_value<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        let (units, scale) = match self.units.to_i64() {
            Some(u) => (u, self.scale),
            None => {
                let n = self.normalized();
                match n.units.to_i64() {
                    Some(u) => (u, n.scale),
                    None => {
                        n.units.hash(h);
                        n.scale.hash(h);
                        return;
                    }
                }
            }
        };
        let (mut units, mut scale) = (units, scale);
        if units == 0 {
            scale = 0;
        }
        while scale > 0 && units % 10 == 0 {
            units /= 10;
            scale -= 1;
        }
        units.hash(h);
        scale.hash(h);
    }

    pub fn normalized(&self) -> Num {
        let mut n = self.clone();
        let ten = BigInt::from(10u8);
        while n.scale > 0 && !n.units.is_zero() && (&n.units % &ten).is_zero() {
            n.units /= &ten;
            n.scale -= 1;
        }
        if n.units.is_zero() {
            n.scale = 0;
        }
        n
    }

    /// Both numbers' units at their larger scale.
    fn aligned(&self, other: &Num) -> (BigInt, BigInt, u16) {
        let scale = self.scale.max(other.scale);
        (self.rescale(scale).units, other.rescale(scale).units, scale)
    }

    pub fn add(&self, other: &Num) -> Result<Num> {
        if self.scale == other.scale {
            return Num {
                units: &self.units + &other.units,
                scale: self.scale,
            }
            .checked();
        }
        let (a, b, scale) = self.aligned(other);
        Num {
            units: a + b,
            scale,
        }
        .checked()
    }

    /// `self + other` in place: a running sum of numbers of one scale adds without
    /// allocating a new number per value.
    pub fn add_assign(&mut self, other: &Num) -> Result<()> {
        if self.scale != other.scale {
            *self = self.add(other)?;
            return Ok(());
        }
        self.units += &other.units;
        if self.units.bits() >= MAX_INTEGER_DIGITS as u64 {
            *self = std::mem::replace(self, Num::zero()).checked()?;
        }
        Ok(())
    }

    pub fn from_i128(v: i128) -> Num {
        Num {
            units: BigInt::from(v),
            scale: 0,
        }
    }

    pub fn sub(&self, other: &Num) -> Result<Num> {
        let (a, b, scale) = self.aligned(other);
        Num {
            units: a - b,
            scale,
        }
        .checked()
    }

    /// The exact product, shown with both scales' sum (at most 16,383).
    pub fn mul(&self, other: &Num) -> Result<Num> {
        let scale = u32::from(self.scale) + u32::from(other.scale);
        let product = Num {
            units: &self.units * &other.units,
            scale: 0,
        };
        let product = Num {
            scale: scale.min(u32::from(u16::MAX)) as u16,
            ..product
        };
        // Past the largest scale the product is rounded, as PostgreSQL's is.
        let product = if product.scale > MAX_SCALE {
            product.rescale(MAX_SCALE)
        } else {
            product
        };
        product.checked()
    }

    /// The quotient, rounded to the scale PostgreSQL gives it (at least 16 significant digits;
    /// see `division_scale`).
    pub fn div(&self, other: &Num) -> Result<Num> {
        if other.is_zero() {
            return Err(division_by_zero());
        }
        let scale = self.division_scale(other);
        // units = a.units * 10^(scale + b.scale - a.scale) / b.units, rounded.
        let shift = i64::from(scale) + i64::from(other.scale) - i64::from(self.scale);
        let numerator = &self.units * pow10(shift as u64);
        Num {
            units: div_round(&numerator, &other.units),
            scale,
        }
        .checked()
    }

    /// The remainder of truncating division, with the dividend's sign, shown with the larger
    /// scale.
    pub fn rem(&self, other: &Num) -> Result<Num> {
        if other.is_zero() {
            return Err(division_by_zero());
        }
        let (a, b, scale) = self.aligned(other);
        Ok(Num {
            units: a % b,
            scale,
        })
    }

    /// The base-10000 weight and leading base-10000 digit of the number, as PostgreSQL stores
    /// it: the quotient's scale depends on them.
    fn nbase_lead(&self) -> (i64, i64) {
        if self.is_zero() {
            return (0, 0);
        }
        let digits = self.unit_digits();
        // Power of ten of the leading decimal digit, and the base-10000 group holding it.
        let lead = digits - 1 - i64::from(self.scale);
        let weight = lead.div_euclid(4);
        let in_group = lead - 4 * weight + 1;
        // The group's digits: the number's leading ones, and zeros where it has fewer.
        let abs = self.units.abs();
        let first = if digits >= in_group {
            abs / pow10((digits - in_group) as u64)
        } else {
            abs * pow10((in_group - digits) as u64)
        };
        (weight, first.to_i64().unwrap_or(0))
    }

    /// The scale PostgreSQL gives `self / other` (its `select_div_scale`): at least 16
    /// significant digits, and no fewer digits after the point than either operand shows.
    fn division_scale(&self, other: &Num) -> u16 {
        let (w1, f1) = self.nbase_lead();
        let (w2, f2) = other.nbase_lead();
        let mut qweight = w1 - w2;
        if f1 <= f2 {
            qweight -= 1;
        }
        let scale = (MIN_SIG_DIGITS - qweight * 4)
            .max(i64::from(self.scale))
            .max(i64::from(other.scale))
            .clamp(0, MAX_DISPLAY_SCALE);
        scale as u16
    }

    /// The number as a double (PostgreSQL's `numeric::float8`: the nearest double; 22003 past
    /// a double's range).
    pub fn to_f64(&self) -> Result<f64> {
        let v: f64 = self.to_string().parse().map_err(|_| overflow())?;
        if v.is_infinite() {
            return Err(SqlError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                "value out of range: overflow",
            ));
        }
        Ok(v)
    }

    /// The number a double is, to its 15 significant digits (PostgreSQL's `float8::numeric`).
    pub fn from_f64(v: f64) -> Result<Num> {
        if !v.is_finite() {
            return Err(SqlError::unsupported("numeric NaN and infinity"));
        }
        let text = format!("{v:.14e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        Num::parse(&format!("{mantissa}e{exponent}"))?.ok_or_else(overflow)
    }

    /// The integer nearest the number (halves away from zero), if an `i64` holds it.
    pub fn to_i64(&self) -> Option<i64> {
        self.rescale(0).units.to_i64()
    }

    /// The number's units at `scale` (rounded), if an `i64` holds them: a fixed-point column's
    /// stored value.
    pub fn units_at(&self, scale: u8) -> Option<i64> {
        self.rescale(u16::from(scale)).units.to_i64()
    }

    /// The number as `numeric(precision, scale)` holds it: rounded to `scale` digits after the
    /// point (a negative scale rounds before it), or 22003 if it needs more than `precision`
    /// digits there.
    pub fn fit(&self, precision: u16, scale: i16) -> Result<Num> {
        let n = self.round(i64::from(scale));
        // At a negative scale the rounded-away places are zeros of the units.
        let allowed = i64::from(precision) - i64::from(scale.min(0));
        if n.unit_digits() > allowed {
            let limit = i64::from(precision) - i64::from(scale);
            let bound = if limit == 0 {
                "1".to_owned()
            } else {
                format!("10^{limit}")
            };
            return Err(SqlError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                "numeric field overflow",
            )
            .with_detail(format!(
                "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
            )));
        }
        Ok(n)
    }

    /// A number written in decimal, optionally with an exponent (`-12.50`, `1.5e-3`, `.5`),
    /// shown with the digits it is written with after the point: `Ok(None)` if the text is not
    /// a number, 22003 if it is one past PostgreSQL's limits.
    pub fn parse(text: &str) -> Result<Option<Num>> {
        let t = text.trim();
        let (negative, rest) = match t.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let (digits, exponent) = match rest.find(['e', 'E']) {
            Some(at) => match rest[at + 1..].parse::<i64>() {
                Ok(e) => (&rest[..at], e),
                Err(_) => return Ok(None),
            },
            None => (rest, 0),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if (int.is_empty() && frac.is_empty())
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
        {
            return Ok(None);
        }
        let all = format!("{int}{frac}");
        let mut units = BigInt::parse_bytes(all.as_bytes(), 10).unwrap_or_default();
        if negative {
            units = -units;
        }
        // value = units * 10^(exponent - frac.len()); an exponent past every limit is refused
        // before any power of ten is built.
        let shift = exponent.saturating_sub(frac.len() as i64);
        let reach = MAX_INTEGER_DIGITS + i64::from(MAX_SCALE) + all.len() as i64;
        if shift.abs() > reach {
            return if units.is_zero() {
                Ok(Some(Num::zero()))
            } else {
                Err(overflow())
            };
        }
        let n = if shift >= 0 {
            Num {
                units: units * pow10(shift as u64),
                scale: 0,
            }
        } else {
            Num {
                units,
                scale: u16::try_from(-shift).map_err(|_| overflow())?,
            }
        };
        n.checked().map(Some)
    }

    /// The number as the engine stores it.
    pub fn to_parts(&self) -> NumericParts {
        if self.is_zero() {
            return NumericParts {
                negative: false,
                digits: Vec::new(),
                exponent: 0,
                dscale: self.scale,
            };
        }
        let text = self.units.magnitude().to_str_radix(10);
        let exponent = text.len() as i64 - i64::from(self.scale);
        let digits = text
            .trim_end_matches('0')
            .bytes()
            .map(|b| b - b'0')
            .collect();
        NumericParts {
            negative: self.is_negative(),
            digits,
            exponent: exponent as i32,
            dscale: self.scale,
        }
    }

    /// The number the engine stored as `parts`.
    pub fn from_parts(parts: &NumericParts) -> Num {
        let text: String = parts.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let magnitude = BigInt::parse_bytes(text.as_bytes(), 10).unwrap_or_default();
        // value = 0.digits * 10^exponent = digits * 10^(exponent - len).
        let shift = i64::from(parts.exponent) + i64::from(parts.dscale) - parts.digits.len() as i64;
        let units = magnitude * pow10(shift.max(0) as u64);
        Num {
            units: if parts.negative { -units } else { units },
            scale: parts.dscale,
        }
    }

    /// The digits of `|self|` with `scale` of them after the point, as text (`"1250"` for
    /// 12.50): what the binary wire format regroups.
    pub fn magnitude_digits(&self) -> String {
        self.units.magnitude().to_str_radix(10)
    }

    /// The number `±digits * 10^-scale` (digits in decimal).
    pub fn from_digits(negative: bool, digits: &str, scale: u16) -> Option<Num> {
        let units = BigInt::parse_bytes(digits.as_bytes(), 10)?;
        Num {
            units: if negative { -units } else { units },
            scale,
        }
        .checked()
        .ok()
    }
}

impl Ord for Num {
    fn cmp(&self, other: &Num) -> Ordering {
        // Different signs decide at once; otherwise compare at the larger scale.
        match self.units.sign().cmp(&other.units.sign()) {
            Ordering::Equal if self.units.sign() != Sign::NoSign => {
                let (a, b, _) = self.aligned(other);
                a.cmp(&b)
            }
            order => order,
        }
    }
}

impl PartialOrd for Num {
    fn partial_cmp(&self, other: &Num) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.magnitude_digits();
        let scale = usize::from(self.scale);
        let sign = if self.is_negative() { "-" } else { "" };
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

pub(crate) fn division_by_zero() -> SqlError {
    SqlError::new(sqlstate::DIVISION_BY_ZERO, "division by zero")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(text: &str) -> Num {
        Num::parse(text).expect("in range").expect("a number")
    }

    #[test]
    fn reads_and_shows_numbers_with_their_scale() {
        for (text, shown) in [
            ("12.50", "12.50"),
            ("-0.001", "-0.001"),
            (".5", "0.5"),
            ("5.", "5"),
            ("1e3", "1000"),
            ("1.5e-3", "0.0015"),
            ("1.50e1", "15.0"),
            ("  +7 ", "7"),
            (
                "0.123456789012345678901234567890",
                "0.123456789012345678901234567890",
            ),
        ] {
            assert_eq!(n(text).to_string(), shown, "{text}");
        }
        for bad in ["", "-", ".", "1.2.3", "abc", "1e", "NaN", "1 2", "1_000"] {
            assert!(matches!(Num::parse(bad), Ok(None)), "{bad}");
        }
        for past in ["1e131072", "1e-16384", "1e1000000", "-1e99999999999"] {
            assert!(Num::parse(past).is_err(), "{past}");
        }
        assert_eq!(n("1e131071").to_string().len(), 131_072);
        assert_eq!(n("0e99999999").to_string(), "0");
    }

    #[test]
    fn arithmetic_is_exact_with_postgresql_scales() {
        assert_eq!(n("0.1").add(&n("0.20")).unwrap().to_string(), "0.30");
        assert_eq!(n("1.5").mul(&n("2.25")).unwrap().to_string(), "3.375");
        assert_eq!(
            n("99999999999999999999")
                .mul(&n("99999999999999999999"))
                .unwrap()
                .to_string(),
            "9999999999999999999800000000000000000001"
        );
        assert_eq!(n("-7.5").rem(&n("2")).unwrap().to_string(), "-1.5");
        assert!(n("1").div(&n("0")).is_err());
    }

    #[test]
    fn quotients_keep_postgresql_digits() {
        // What PostgreSQL 15 prints for each.
        for (a, b, q) in [
            ("1", "3", "0.33333333333333333333"),
            ("2", "3", "0.66666666666666666667"),
            ("10", "4", "2.5000000000000000"),
            ("3", "2", "1.5000000000000000"),
            ("1", "7.000", "0.14285714285714285714"),
            ("100000", "3", "33333.333333333333"),
            ("1.0000000000000000000001", "1", "1.0000000000000000000001"),
            ("-1", "3", "-0.33333333333333333333"),
            ("0", "5", "0.00000000000000000000"),
            // Numbers below one, whose leading base-10000 group holds fewer of their digits.
            ("0.000001", "-2.125", "-0.000000470588235294117647"),
            ("0.00012", "7", "0.000017142857142857142857"),
            ("1.5", "0.0003", "5000.0000000000000000"),
            ("0.05", "0.7", "0.07142857142857142857"),
        ] {
            assert_eq!(n(a).div(&n(b)).unwrap().to_string(), q, "{a} / {b}");
        }
    }

    #[test]
    fn rounding_and_fitting_a_typmod() {
        assert_eq!(n("2.5").to_i64(), Some(3));
        assert_eq!(n("-2.5").to_i64(), Some(-3));
        assert_eq!(n("1.005").rescale(2).to_string(), "1.01");
        assert_eq!(n("1234.5").round(-2).to_string(), "1200");
        assert_eq!(n("12.3456").round(10).to_string(), "12.3456000000");
        assert_eq!(n("-0.4").round(0).to_string(), "0");
        assert_eq!(n("1.999").truncate(2).to_string(), "1.99");
        assert_eq!(n("-1.99").truncate(0).to_string(), "-1");
        assert_eq!(n("1234.5").truncate(-2).to_string(), "1200");
        assert_eq!(n("1.99").truncate(5).to_string(), "1.99000");
        for (x, ceil, floor) in [
            ("1.2", "2", "1"),
            ("-1.2", "-1", "-2"),
            ("-0.4", "0", "-1"),
            ("3", "3", "3"),
        ] {
            assert_eq!(n(x).integral(true).to_string(), ceil, "ceil {x}");
            assert_eq!(n(x).integral(false).to_string(), floor, "floor {x}");
        }
        assert_eq!(n("123.456").fit(5, 2).unwrap().to_string(), "123.46");
        assert!(n("999.995").fit(5, 2).is_err());
        assert!(n("0.5").fit(2, 2).is_ok());
        assert_eq!(n("0.00012").fit(2, 5).unwrap().to_string(), "0.00012");
        assert_eq!(n("1234").fit(5, -2).unwrap().to_string(), "1200");
        let e = n("12345678").fit(5, -2).unwrap_err();
        assert_eq!(
            e.about.and_then(|a| a.detail).as_deref(),
            Some(
                "A field with precision 5, scale -2 must round to an absolute value less than 10^7."
            )
        );
        assert!(n("1").fit(5, 6).is_err());
    }

    #[test]
    fn orders_by_value_and_normalizes() {
        assert_eq!(n("1.0").cmp(&n("1.00")), Ordering::Equal);
        assert!(n("-2") < n("-1.5"));
        assert!(n("0.001") > n("0"));
        assert_eq!(n("1.500").normalized().to_string(), "1.5");
        assert_eq!(n("0.000").normalized().to_string(), "0");
    }

    #[test]
    fn converts_to_doubles_and_the_engine_form() {
        assert_eq!(Num::from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(
            Num::from_f64(1e20).unwrap().to_string(),
            "100000000000000000000"
        );
        assert_eq!(Num::from_f64(1.5e-7).unwrap().to_string(), "0.00000015");
        assert_eq!(n("-12.5").to_f64().unwrap(), -12.5);
        assert!(n("1e400").to_f64().is_err());
        for text in [
            "0",
            "0.000",
            "-12.50",
            "123456789012345678901234567890.5",
            "0.0001",
        ] {
            let parts = n(text).to_parts();
            assert_eq!(Num::from_parts(&parts).to_string(), text);
            let mut stored = Vec::new();
            parts.encode(&mut stored).expect("normal form");
        }
    }

    #[test]
    fn limits_are_postgresql_limits() {
        let big = n("1e10000");
        let mut x = big.clone();
        let mut products = 0;
        while let Ok(next) = x.mul(&big) {
            x = next;
            products += 1;
            assert!(products < 20, "1e10000^n passes 131,072 digits by n = 14");
        }
        assert_eq!(products, 12, "1e130000 is the last power that fits");
        assert!(n("1e-1000").mul(&n("1e-1000")).is_ok());
    }
}
