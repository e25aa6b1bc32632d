//! Keys that group, deduplicate, count and join rows: a row of values hashed and compared as
//! SQL's grouping compares them, without formatting them per row. Two values are one key when
//! GROUP BY would put them in one group: NULL is NULL, 0.0 is -0.0, every NaN is one NaN, and
//! a numeric's scale does not count (1.0 and 1.00 are one group, as in PostgreSQL).
//!
//! Must never call two values one key that PostgreSQL's grouping keeps apart, nor hash two
//! equal keys differently. Values of different kinds are never one key: callers compare values
//! of one type (the binder casts both sides of a join key to one type).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use rustc_hash::FxBuildHasher;

use crate::values::datum::Datum;

/// A row of values as a hash key.
#[derive(Clone, Debug)]
pub struct Key(pub Vec<Datum>);

/// A hash table by [`Key`].
pub type KeyMap<V> = HashMap<Key, V, FxBuildHasher>;
/// A hash set of [`Key`]s.
pub type KeySet = HashSet<Key, FxBuildHasher>;

impl Key {
    /// The key of one value.
    pub fn one(v: Datum) -> Key {
        Key(vec![v])
    }

    /// Its values.
    pub fn into_values(self) -> Vec<Datum> {
        self.0
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, h: &mut H) {
        for v in &self.0 {
            hash_value(v, h);
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| same(a, b))
    }
}

impl Eq for Key {}

fn hash_value<H: Hasher>(v: &Datum, h: &mut H) {
    std::mem::discriminant(v).hash(h);
    match v {
        Datum::Null => {}
        Datum::Bool(b) => b.hash(h),
        Datum::Int(i)
        | Datum::Timestamp(i)
        | Datum::TimestampTz(i)
        | Datum::Date(i)
        | Datum::Time(i) => i.hash(h),
        Datum::Float(f) => canonical_bits(*f).hash(h),
        Datum::Numeric(n) => n.hash_value(h),
        Datum::Text(s) => s.hash(h),
        Datum::Interval(i) => (i.months, i.days, i.micros).hash(h),
        Datum::Tid(t) => t.hash(h),
        Datum::Array(items) => {
            items.len().hash(h);
            for item in items {
                hash_value(item, h);
            }
        }
    }
}

/// A float's bits, with every zero and every NaN one value.
fn canonical_bits(f: f64) -> u64 {
    if f == 0.0 {
        0
    } else if f.is_nan() {
        f64::NAN.to_bits()
    } else {
        f.to_bits()
    }
}

/// Whether `a` and `b` are one key value (see the module's rules).
#[inline]
fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Int(x), Datum::Int(y)) => x == y,
        (Datum::Float(x), Datum::Float(y)) => canonical_bits(*x) == canonical_bits(*y),
        (Datum::Numeric(x), Datum::Numeric(y)) => x == y || x.cmp(y).is_eq(),
        (Datum::Array(x), Datum::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::numeric::Num;

    fn hash_of(k: &Key) -> u64 {
        use std::hash::BuildHasher;
        FxBuildHasher.hash_one(k)
    }

    fn num(s: &str) -> Datum {
        Datum::Numeric(Num::parse(s).unwrap().unwrap())
    }

    #[test]
    fn values_grouping_calls_equal_are_one_key_with_one_hash() {
        let pairs = [
            (Datum::Float(0.0), Datum::Float(-0.0)),
            (Datum::Float(f64::NAN), Datum::Float(-f64::NAN)),
            (num("1.0"), num("1.00")),
            (num("0"), num("0.000")),
            (num("-12.500"), num("-12.5")),
            (
                num("123456789012345678901234567890.10"),
                num("123456789012345678901234567890.1"),
            ),
            (num("92233720368547758070"), num("92233720368547758070.0")),
            (Datum::Null, Datum::Null),
            (
                Datum::Array(vec![num("2.0"), Datum::Null]),
                Datum::Array(vec![num("2"), Datum::Null]),
            ),
        ];
        for (a, b) in pairs {
            let (a, b) = (Key(vec![Datum::Int(1), a]), Key(vec![Datum::Int(1), b]));
            assert_eq!(a, b, "{a:?} and {b:?}");
            assert_eq!(hash_of(&a), hash_of(&b), "{a:?} and {b:?}");
        }
    }

    #[test]
    fn values_grouping_keeps_apart_are_different_keys() {
        let pairs = [
            (Datum::Float(1.0), Datum::Float(1.0000001)),
            (num("1.01"), num("1.1")),
            (Datum::Int(1), Datum::Float(1.0)),
            (Datum::Text("a".into()), Datum::Text("a ".into())),
            (Datum::Null, Datum::Int(0)),
            (Datum::Date(1), Datum::Int(1)),
        ];
        for (a, b) in pairs {
            assert_ne!(Key::one(a.clone()), Key::one(b.clone()), "{a:?} and {b:?}");
        }
        assert_ne!(
            Key(vec![Datum::Int(1), Datum::Int(2)]),
            Key(vec![Datum::Int(1)])
        );
    }
}
