//! What a user of the engine's API meets: builders that report errors instead of panicking, and
//! aborts that stay reported.

use crate::common;

use common::*;
use overtake_engine::CommitError;
use overtake_engine::{
    AbortReason, ColumnType, Decimal, DecimalError, Error, Isolation, Priority, TableSchema,
    TableSchemaBuilder,
};

#[test]
fn the_schema_builder_is_a_public_type() {
    let builder: TableSchemaBuilder = TableSchema::builder("t").column("id", ColumnType::Int64);
    let schema = builder.primary_key(&["id"]).build().expect("schema");
    assert_eq!(schema.name(), "t");
}

#[test]
fn setters_report_a_column_the_table_does_not_have() {
    let (db, t) = with_accounts(1, 1);
    let mut b = t.row_builder();
    b.int(ID, 1).str(OWNER, "x").decimal_units(BALANCE, 1);
    b.int(99, 5).decimal_units(42, 1).str(7, "no");
    assert!(matches!(
        b.finish(),
        Err(Error::InvalidValue { ref column, .. }) if column == "#99"
    ));
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let bad = txn.update(&t, &key(&t, 0), |r| {
        r.decimal_units(17, 5);
    });
    assert!(matches!(bad, Err(Error::InvalidValue { .. })), "{bad:?}");
    assert!(
        txn.is_active(),
        "a user error leaves the transaction active"
    );
    txn.commit().expect("commit");
}

#[test]
fn an_update_cannot_change_the_primary_key() {
    let (db, t) = with_accounts(2, 1);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let moved = txn.update(&t, &key(&t, 0), |r| {
        r.int(ID, 1);
    });
    assert!(
        matches!(moved, Err(Error::InvalidValue { ref column, .. }) if column == "id"),
        "{moved:?}"
    );
    assert!(txn.is_active());
    assert_eq!(balance(&mut txn, &t, 0), Some(1), "nothing was written");
    txn.commit().expect("commit");
}

#[test]
fn an_aborted_transaction_keeps_reporting_why() {
    let (db, t) = with_accounts(1, 1);
    let mut first = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut second = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    first
        .update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, 2);
        })
        .expect("first updater");
    // Writes are buffered: both may write; the first to commit wins.
    second
        .update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, 3);
        })
        .expect("second updater");
    first.commit().expect("first committer");
    assert_eq!(
        first.commit(),
        Err(CommitError::NotActive),
        "committed already"
    );
    let conflict = Error::Aborted(AbortReason::Conflict);
    assert_eq!(
        second.commit(),
        Err(CommitError::Aborted(AbortReason::Conflict)),
        "first committer wins"
    );
    assert_eq!(
        second.commit(),
        Err(CommitError::Aborted(AbortReason::Conflict)),
        "commit says again what ended it"
    );
    assert_eq!(second.get(&t, &key(&t, 0), |_| ()), Err(conflict));
    let mut rolled = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let _ = rolled.rollback();
    assert_eq!(
        rolled.commit(),
        Err(CommitError::Aborted(AbortReason::UserRollback))
    );
    let mut dropped = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    dropped.abort();
    assert_eq!(
        dropped.commit(),
        Err(CommitError::NotActive),
        "ended by abort()"
    );
}

#[test]
fn decimals_compare_and_convert_numerically() {
    let ten = Decimal::new(10, 1).expect("scale");
    let ten_hundredths = Decimal::new(100, 2).expect("scale");
    assert_eq!(ten, ten_hundredths);
    assert_eq!(Decimal::new(1, 200), Err(DecimalError::ScaleTooLarge(200)));
    let as_engine_error: Error = DecimalError::ScaleTooLarge(19).into();
    assert!(as_engine_error.to_string().contains("19"));
}

/// A secondary index over a column that may be NULL holds every row: NULLs after every value
/// (as in an ascending PostgreSQL index), found by a NULL key part, and moved in and out of
/// NULL by updates.
#[test]
fn a_secondary_index_holds_nulls_after_every_value() {
    use overtake_engine::{KeyRange, ScanOptions, Value};
    use std::ops::ControlFlow;
    let db = overtake_engine::Database::in_memory(overtake_engine::Options::default());
    let schema = TableSchema::builder("people")
        .column("id", ColumnType::Int64)
        .nullable_column("name", ColumnType::VarChar(20))
        .nullable_column("age", ColumnType::Int32)
        .primary_key(&["id"])
        .index("by_name_age", &["name", "age"])
        .build()
        .expect("a nullable index column is allowed");
    let t = db.create_table(schema).expect("table");
    let index = t.index("by_name_age").expect("index");
    let rows: [(i64, Option<&str>, Option<i64>); 5] = [
        (1, Some("b"), None),
        (2, None, Some(3)),
        (3, Some("a"), Some(7)),
        (4, None, None),
        (5, Some("b"), Some(1)),
    ];
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for (id, name, age) in rows {
        let mut b = t.row_builder();
        b.int(0, id);
        match name {
            Some(n) => b.str(1, n),
            None => b.null(1),
        };
        match age {
            Some(a) => b.int(2, a),
            None => b.null(2),
        };
        txn.insert(&t, b.finish().expect("row")).expect("insert");
    }
    let ids = |txn: &mut overtake_engine::Transaction<'_>, range: &KeyRange| {
        let mut ids = Vec::new();
        txn.scan_index(&t, index, range, ScanOptions::forward(), |r| {
            ids.push(r.int(0));
            ControlFlow::Continue(())
        })
        .expect("scan");
        ids
    };
    assert_eq!(ids(&mut txn, &KeyRange::all()), vec![3, 5, 1, 2, 4]);
    let nulls = KeyRange::prefix(t.index_key(index).value(Value::Null).prefix().expect("key"));
    assert_eq!(ids(&mut txn, &nulls), vec![2, 4]);
    let b_null = t
        .index_key(index)
        .str("b")
        .value(Value::Null)
        .prefix()
        .expect("key");
    assert_eq!(ids(&mut txn, &KeyRange::prefix(b_null)), vec![1]);
    txn.update(&t, &t.key().int(1).finish().expect("key"), |r| {
        r.int(2, 0);
    })
    .expect("update");
    txn.update(&t, &t.key().int(3).finish().expect("key"), |r| {
        r.set(1, Value::Null);
    })
    .expect("update");
    assert_eq!(ids(&mut txn, &KeyRange::all()), vec![1, 5, 2, 3, 4]);
    txn.commit().expect("commit");
}
