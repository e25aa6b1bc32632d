//! Encoding a row's key columns (a primary key, a secondary index's columns) into a key, with the
//! work of finding each column done once per table instead of once per row.
//!
//! Every insert encodes its row's primary key, every point-cache hit checks the row it found
//! against the key asked for, and every secondary entry is built from its row. Reading a column
//! through [`RowRef`] looks up its slot and checks its type each time (~65 instructions per
//! column, ~240 per Stock-Level stock row checked); integer-like columns (all of TPC-C's key
//! columns) are here read straight from the fixed offset the layout gives them.
//!
//! Must encode exactly what [`KeyBuf::push_column`] encodes for the same column: keys built
//! either way are compared with each other.

use crate::storage::key::{IntCode, KeyBuf, NOT_NULL, NULL};
use crate::storage::row::{RowLayout, RowRef, read_array};
use crate::storage::schema::ColumnType;

/// One key column, as found in the row.
#[derive(Clone, Copy, Debug)]
enum Part {
    /// An integer-like column at a fixed offset.
    Int(IntAt),
    /// Any other column, read through the row.
    Column { col: usize, ty: ColumnType },
    /// A column that may be NULL: a marker, then (unless NULL) the value (see `key`).
    Nullable { col: usize, ty: ColumnType },
}

/// A little-endian integer at a fixed byte offset: an `i64` if `wide` (`Int64`, a decimal's
/// units, a timestamp), else an `i32`.
#[derive(Clone, Copy, Debug)]
struct IntAt {
    at: usize,
    wide: bool,
}

impl IntAt {
    #[inline(always)]
    fn read(self, row: &[u8]) -> i64 {
        if self.wide {
            i64::from_le_bytes(read_array(row, self.at))
        } else {
            i32::from_le_bytes(read_array(row, self.at)).into()
        }
    }
}

/// How to encode a list of columns of one table's rows into a key (see the module comment).
#[derive(Clone, Debug)]
pub(crate) struct KeyColumns {
    parts: Box<[Part]>,
}

impl KeyColumns {
    /// The encoding of columns `cols` of rows laid out by `layout`.
    pub(crate) fn new(layout: &RowLayout, cols: &[usize]) -> Self {
        let parts = cols
            .iter()
            .map(|&col| (col, &layout.columns()[col]))
            .map(|(col, column)| (col, column.ty, column.nullable))
            .map(|(col, ty, nullable)| match (ty, layout.fixed_offset(col)) {
                _ if nullable => Part::Nullable { col, ty },
                (ColumnType::Int32, Some(at)) => Part::Int(IntAt { at, wide: false }),
                (
                    ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp,
                    Some(at),
                ) => Part::Int(IntAt { at, wide: true }),
                _ => Part::Column { col, ty },
            })
            .collect();
        KeyColumns { parts }
    }

    /// Appends the columns of `row` to `key`. Lengths were bounded when the schema was validated,
    /// so the pushes cannot overflow.
    #[inline]
    pub(crate) fn push(&self, key: &mut KeyBuf, row: &RowRef<'_>) {
        let bytes = row.as_bytes();
        for &part in self.parts.iter() {
            match part {
                Part::Int(int) => key.push_int(int.read(bytes)),
                Part::Column { col, ty } => key.push_column(row, col, ty),
                Part::Nullable { col, ty } => push_nullable(key, row, col, ty),
            };
        }
    }

    /// True if `key` is exactly what [`push`](Self::push) would build from `row`, found by
    /// comparing each column's encoding with the key in place: a point-cache hit checks the row
    /// it found this way, without building the row's key first.
    #[inline]
    pub(crate) fn matches(&self, row: &RowRef<'_>, key: &[u8]) -> bool {
        let bytes = row.as_bytes();
        let mut rest = key;
        for &part in self.parts.iter() {
            let after = match part {
                Part::Int(int) => IntCode::of(int.read(bytes)).strip_from(rest),
                // Every column's encoding ends itself (a length code, a terminator, a NULL's
                // marker), so a prefix match is a match of this column.
                Part::Column { col, ty } => {
                    let mut one = KeyBuf::new();
                    one.push_column(row, col, ty);
                    rest.strip_prefix(one.as_bytes())
                }
                Part::Nullable { col, ty } => {
                    let mut one = KeyBuf::new();
                    push_nullable(&mut one, row, col, ty);
                    rest.strip_prefix(one.as_bytes())
                }
            };
            let Some(after) = after else {
                return false;
            };
            rest = after;
        }
        rest.is_empty()
    }
}

/// Appends a nullable column's marker and, unless it is NULL, its value.
fn push_nullable(key: &mut KeyBuf, row: &RowRef<'_>, col: usize, ty: ColumnType) -> bool {
    if row.is_null(col) {
        key.push_marker(NULL)
    } else {
        key.push_marker(NOT_NULL) && key.push_column(row, col, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::row::RowBuilder;
    use crate::storage::schema::TableSchema;
    use crate::storage::value::{Decimal, Value};

    /// Every column type, some nullable (so that fixed offsets start after the NULL bitmap).
    fn schema() -> TableSchema {
        TableSchema::builder("t")
            .column("a", ColumnType::Int32)
            .nullable_column("n", ColumnType::Int32)
            .column("b", ColumnType::Int64)
            .column("s", ColumnType::VarChar(12))
            .column(
                "d",
                ColumnType::Decimal {
                    precision: 9,
                    scale: 2,
                },
            )
            .column("c", ColumnType::Char(5))
            .column("t", ColumnType::Timestamp)
            .primary_key(&["a", "b", "s", "d", "c", "t"])
            .build()
            .expect("schema")
    }

    #[test]
    fn encodes_what_reading_each_column_encodes() {
        let schema = schema();
        let layout = RowLayout::new(&schema);
        let cols = schema.primary_key();
        let types: Vec<ColumnType> = cols.iter().map(|&c| schema.columns()[c].ty).collect();
        let plan = KeyColumns::new(&layout, cols);
        let values: [(i64, i64, &str, i64, &str, i64); 4] = [
            (0, 0, "", 0, "", 0),
            (-7, 1 << 40, "x\u{1}y", -12_345, "ab", 1_700_000_000_000_000),
            (
                i64::from(i32::MAX),
                i64::MIN,
                "longer text",
                99,
                "abcde",
                -1,
            ),
            (i64::from(i32::MIN), i64::MAX, "z", -999_999_999, "e  ", 5),
        ];
        for (a, b, s, d, c, t) in values {
            let row = RowBuilder::new(&layout)
                .set(0, Value::Int(a))
                .set(1, Value::Null)
                .set(2, Value::Int(b))
                .set(3, Value::Str(s))
                .set(4, Value::Decimal(Decimal::from_parts(d, 2)))
                .set(5, Value::Str(c))
                .set(6, Value::Timestamp(t))
                .finish()
                .expect("row");
            let row = row.view(&layout);
            let mut planned = KeyBuf::new();
            plan.push(&mut planned, &row);
            let mut read = KeyBuf::new();
            for (&col, &ty) in cols.iter().zip(&types) {
                read.push_column(&row, col, ty);
            }
            assert_eq!(planned, read, "row {a} {b} {s:?} {d} {c:?} {t}");
            assert!(plan.matches(&row, planned.as_bytes()), "its own key");
            let whole = planned.as_bytes();
            assert!(
                !plan.matches(&row, &whole[..whole.len() - 1]),
                "a prefix of it"
            );
            let mut longer = whole.to_vec();
            longer.push(0x80);
            assert!(!plan.matches(&row, &longer), "more than it");
            for i in 0..whole.len() {
                let mut changed = whole.to_vec();
                changed[i] ^= 1;
                assert!(!plan.matches(&row, &changed), "byte {i} changed");
            }
        }
    }
}
