//! The row writers' tests: the plain store against the general path, numeric columns, and
//! rows past the size limit.

use super::*;
use crate::storage::schema::TableSchema;

fn layout() -> RowLayout {
    let schema = TableSchema::builder("t")
        .column("id", ColumnType::Int32)
        .column("big", ColumnType::Int64)
        .column("name", ColumnType::VarChar(10))
        .nullable_column("carrier", ColumnType::Int32)
        .column("code", ColumnType::Char(4))
        .nullable_column("note", ColumnType::VarChar(20))
        .column(
            "amount",
            ColumnType::Decimal {
                precision: 6,
                scale: 2,
            },
        )
        .column("at", ColumnType::Timestamp)
        .primary_key(&["id"])
        .build()
        .expect("schema");
    RowLayout::new(&schema)
}

/// The one-step store of plain values agrees with the general check and write: same bytes
/// when it takes a value, and it never takes one the general path refuses.
#[test]
fn plain_stores_agree_with_the_general_path() {
    let layout = layout();
    let edges = crate::storage::value::INTEGER_EDGES;
    let mut values = Vec::new();
    for &v in &edges {
        values.push(Value::Int(v));
        values.push(Value::Timestamp(v));
        for scale in [0, 2, 3] {
            values.push(Value::Decimal(Decimal::from_parts(v, scale)));
        }
    }
    values.push(Value::Null);
    for s in ["", "x", "abcd", "abcde", "ab\u{e9}", "\u{e9}\u{e9}\u{e9}"] {
        values.push(Value::Str(s));
    }
    let mut plain_taken = 0;
    // Every null bit clear, and every one set (a column set NULL before).
    for fill in [0u8, 0xFF] {
        for col in 0..layout.len() + 1 {
            for value in &values {
                let mut fast = vec![fill; layout.fixed_end];
                let took = layout.store_plain(&mut fast, col, value);
                let general = layout.check(col, *value);
                if !took {
                    continue;
                }
                plain_taken += 1;
                let checked = general.unwrap_or_else(|e| {
                    panic!("column {col}: {value:?} stored plainly but refused: {e}")
                });
                let mut slow = vec![fill; layout.fixed_end];
                write_fixed(&layout, &mut slow, col, &checked);
                assert_eq!(fast, slow, "column {col}, {value:?}, fill {fill:#x}");
            }
        }
    }
    assert!(plain_taken > 40, "the fast path was exercised");
}

#[test]
fn build_and_read_every_type() {
    let layout = layout();
    let mut b = RowBuilder::new(&layout);
    b.int(0, 7)
        .int(1, -5_000_000_000)
        .str(2, "héllo")
        .str(4, "AB")
        .decimal_units(6, 12_345)
        .timestamp(7, 1_700_000_000_000_000);
    let row = b.finish().expect("valid row");
    let r = row.view(&layout);
    assert_eq!(r.i32(0), 7);
    assert_eq!(r.int(1), -5_000_000_000);
    assert_eq!(r.str(2), "héllo");
    assert!(r.is_null(3));
    assert_eq!(r.get(3), Value::Null);
    assert_eq!(r.str(4), "AB");
    assert!(r.is_null(5));
    assert_eq!(r.decimal(6), Decimal::new(12_345, 2).expect("scale"));
    assert_eq!(r.timestamp(7), 1_700_000_000_000_000);
    assert_eq!(r.get(2), Value::Str("héllo"));
}

#[test]
fn builder_reports_the_first_invalid_value_and_resets() {
    let layout = layout();
    let mut b = RowBuilder::new(&layout);
    b.int(0, i64::from(i32::MAX) + 1).str(2, "ok");
    let err = b.finish().expect_err("out of range");
    assert!(matches!(err, Error::InvalidValue { ref column, .. } if column == "id"));
    b.int(0, 1).str(2, "this is far too long for ten bytes");
    let long = b.finish().expect_err("too long");
    assert!(
        matches!(long, Error::StringTooLong { bytes: 34, .. }),
        "{long:?}"
    );
    // String columns hold no NUL (keys of them then need no escapes): VARCHAR and CHAR alike.
    for col in [2, 4] {
        b.int(0, 1)
            .int(1, 1)
            .str(2, "x")
            .str(4, "y")
            .str(col, "a\0");
        let nul = b.finish().expect_err("NUL");
        assert!(matches!(nul, Error::InvalidValue { .. }), "{nul:?}");
    }
    b.int(0, 1).int(1, 1).str(2, "x").str(4, "y");
    b.decimal_units(6, 1_000_000); // 10000.00 exceeds DECIMAL(6,2)
    assert!(b.finish().is_err());
    b.int(0, 1)
        .int(1, 1)
        .str(2, "x")
        .str(4, "y")
        .timestamp(7, 0);
    let missing = b.finish().expect_err("amount missing");
    assert!(matches!(missing, Error::InvalidValue { ref column, .. } if column == "amount"));
    b.int(0, 1)
        .int(1, 1)
        .str(2, "x")
        .str(4, "y")
        .decimal_units(6, 1)
        .timestamp(7, 0);
    b.null(0);
    assert!(b.finish().is_err(), "NULL in a NOT NULL column");
}

#[test]
fn row_mut_updates_fixed_and_variable_columns() {
    let layout = layout();
    let mut b = RowBuilder::new(&layout);
    b.int(0, 1)
        .int(1, 2)
        .str(2, "abc")
        .str(4, "WXYZ")
        .str(5, "note")
        .decimal_units(6, 100)
        .timestamp(7, 9);
    let row = b.finish().expect("row");
    let mut m = row.view(&layout).to_mut();
    m.str(2, "longer name").int(3, 42).str(5, "n2");
    assert!(m.error.is_some(), "11 bytes exceed VARCHAR(10)");
    let mut m = row.view(&layout).to_mut();
    m.str(2, "longer nam")
        .int(3, 42)
        .str(5, "n2")
        .decimal_units(6, -250);
    let bytes = m.into_bytes().expect("valid");
    let r = RowRef::new(&layout, &bytes);
    assert_eq!(r.str(2), "longer nam");
    assert_eq!(r.i32(3), 42);
    assert_eq!(r.str(5), "n2");
    assert_eq!(r.str(4), "WXYZ");
    assert_eq!(r.decimal(6).to_string(), "-2.50");
    let mut m = r.to_mut();
    m.null(5).null(3).str(2, "");
    let bytes = m.into_bytes().expect("valid");
    let r = RowRef::new(&layout, &bytes);
    assert!(r.is_null(5) && r.is_null(3));
    assert_eq!(r.str(2), "");
}

#[test]
#[should_panic(expected = "column name has type")]
fn typed_access_to_the_wrong_type_names_the_column() {
    let layout = layout();
    let mut b = RowBuilder::new(&layout);
    b.int(0, 1)
        .int(1, 2)
        .str(2, "abc")
        .str(4, "WXYZ")
        .decimal_units(6, 100)
        .timestamp(7, 9);
    let row = b.finish().expect("row");
    let _ = row.view(&layout).i32(2);
}

fn stored(negative: bool, digits: &[u8], exponent: i32, dscale: u16) -> Vec<u8> {
    let mut out = Vec::new();
    NumericParts {
        negative,
        digits: digits.to_vec(),
        exponent,
        dscale,
    }
    .encode(&mut out)
    .expect("normal form");
    out
}

/// A numeric column is written, read back, replaced by a longer one and set NULL beside a
/// string column, and values past its digits or not in the stored form are refused.
#[test]
fn numeric_columns_store_their_bytes_and_check_them() {
    let schema = TableSchema::builder("t")
        .column("id", ColumnType::Int32)
        .nullable_column("n", ColumnType::Numeric(6))
        .column("s", ColumnType::VarChar(8))
        .primary_key(&["id"])
        .build()
        .expect("schema");
    let layout = RowLayout::new(&schema);
    let short = stored(false, &[1, 2, 5], 2, 1); // 12.5
    let long = stored(true, &[9, 8, 7, 6, 5, 4], 3, 3); // -987.654
    let row = RowBuilder::new(&layout)
        .set(0, Value::Int(1))
        .set(1, Value::Numeric(&short))
        .set(2, Value::Str("after"))
        .finish()
        .expect("row");
    let view = row.view(&layout);
    assert_eq!(view.get(1), Value::Numeric(&short));
    assert_eq!(view.get(2), Value::Str("after"));
    assert_eq!(view.get(1).to_string(), "12.5");

    let mut changed = view.to_mut();
    changed.set(1, Value::Numeric(&long));
    let bytes = changed.into_bytes().expect("update");
    let again = RowRef::new(&layout, &bytes);
    assert_eq!(again.get(1).to_string(), "-987.654");
    assert_eq!(again.get(2), Value::Str("after"));
    let mut cleared = again.to_mut();
    cleared.set(1, Value::Null);
    let bytes = cleared.into_bytes().expect("NULL");
    assert_eq!(RowRef::new(&layout, &bytes).get(1), Value::Null);

    let too_many = stored(false, &[1, 2, 3, 4, 5, 6, 7], 7, 0);
    assert!(layout.check(1, Value::Numeric(&too_many)).is_err());
    assert!(layout.check(1, Value::Numeric(&[0x03, 1])).is_err());
    assert!(layout.check(1, Value::Str("12.5")).is_err());
}

/// Variable-length columns may declare more than a row holds; a row whose values pass
/// the limit is refused when built or updated, and one just under it is kept.
#[test]
fn rows_past_the_limit_are_refused_when_written() {
    let schema = TableSchema::builder("t")
        .column("id", ColumnType::Int32)
        .column("a", ColumnType::VarChar(60_000))
        .column("b", ColumnType::VarChar(60_000))
        .primary_key(&["id"])
        .build()
        .expect("schema");
    let layout = RowLayout::new(&schema);
    let big = "x".repeat(40_000);
    let too_big = RowBuilder::new(&layout)
        .set(0, Value::Int(1))
        .set(1, Value::Str(&big))
        .set(2, Value::Str(&big))
        .finish();
    assert!(
        matches!(too_big, Err(Error::RowTooBig { .. })),
        "{too_big:?}"
    );
    let row = RowBuilder::new(&layout)
        .set(0, Value::Int(1))
        .set(1, Value::Str(&big))
        .set(2, Value::Str("small"))
        .finish()
        .expect("fits");
    let mut grown = row.view(&layout).to_mut();
    grown.set(2, Value::Str(&big));
    assert!(matches!(grown.into_bytes(), Err(Error::RowTooBig { .. })));
    let mut swapped = row.view(&layout).to_mut();
    swapped.set(1, Value::Str("small")).set(2, Value::Str(&big));
    let bytes = swapped.into_bytes().expect("fits again");
    assert_eq!(RowRef::new(&layout, &bytes).get(2), Value::Str(&big));
}
