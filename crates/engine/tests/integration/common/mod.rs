//! Shared fixtures for the engine's integration tests.

// Not every part is used by the binary without the others (`paused_scans`).
#![allow(dead_code)]

pub mod kept;
pub mod preempted;
pub mod sessions;
pub mod steps;

use std::sync::Arc;

use overtake_engine::{
    ColumnType, Database, Isolation, KeyBuf, Options, Priority, Table, TableSchema,
};

/// The name libtest knows a test by, for a child process that runs only it: `module` is the
/// test's `module_path!()`, whose first part is the binary's crate and not in the name.
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

pub const ID: usize = 0;
pub const OWNER: usize = 1;
pub const BALANCE: usize = 2;

/// `accounts(id INT64 PK, owner VARCHAR(16) indexed, balance DECIMAL(12,2))`.
pub fn accounts(db: &Database) -> Arc<Table> {
    db.create_table(
        TableSchema::builder("accounts")
            .column("id", ColumnType::Int64)
            .column("owner", ColumnType::VarChar(16))
            .column(
                "balance",
                ColumnType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            )
            .primary_key(&["id"])
            .index("by_owner", &["owner"])
            .build()
            .expect("schema"),
    )
    .expect("create")
}

pub fn key(t: &Table, id: i64) -> KeyBuf {
    t.key().int(id).finish().expect("key")
}

/// A database with accounts `0..n`, each holding `balance` cents, owned by `owner{id % 3}`.
pub fn with_accounts(n: i64, balance: i64) -> (Database, Arc<Table>) {
    let db = Database::in_memory(Options::default());
    let t = accounts(&db);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for id in 0..n {
        let row = account_row(&t, id, &format!("owner{}", id % 3), balance);
        txn.insert(&t, row).expect("insert");
    }
    txn.commit().expect("commit");
    drop(txn);
    (db, t)
}

/// An accounts row `(id, owner, balance cents)`.
pub fn account_row(t: &Table, id: i64, owner: &str, balance: i64) -> overtake_engine::Row {
    t.row_builder()
        .int(ID, id)
        .str(OWNER, owner)
        .decimal_units(BALANCE, balance)
        .finish()
        .expect("row")
}

pub fn balance(txn: &mut overtake_engine::Transaction<'_>, t: &Table, id: i64) -> Option<i64> {
    txn.get(t, &key(t, id), |r| r.decimal_units(BALANCE))
        .expect("get")
}

/// Sets account `id`'s balance to `cents`; `Ok(false)` if there is no such account.
pub fn set_balance(
    txn: &mut overtake_engine::Transaction<'_>,
    t: &Table,
    id: i64,
    cents: i64,
) -> overtake_engine::Result<bool> {
    txn.update(t, &key(t, id), |r| {
        r.decimal_units(BALANCE, cents);
    })
}

/// Prefetches the accounts `ids` in `txn`.
pub fn prefetch_accounts(txn: &mut overtake_engine::Transaction<'_>, t: &Table, ids: &[i64]) {
    let keys: Vec<_> = ids.iter().map(|&id| key(t, id)).collect();
    let rows: Vec<_> = keys.iter().map(|k| (t, k)).collect();
    txn.prefetch_rows(&rows);
}

/// Column positions of the Hermitage table.
pub const HERMITAGE_ID: usize = 0;
pub const HERMITAGE_VALUE: usize = 1;

/// A row `(id, value)` of the Hermitage table.
pub fn hermitage_row(t: &Table, id: i64, value: i64) -> overtake_engine::Row {
    t.row_builder()
        .int(HERMITAGE_ID, id)
        .int(HERMITAGE_VALUE, value)
        .finish()
        .expect("row")
}

/// `test(id INT64 PK, value INT64)` with an index `by_value`, holding {(1, 10), (2, 20)}: the
/// table every Hermitage test starts from.
pub fn hermitage_table(db: &Database) -> Arc<Table> {
    hermitage_table_named(db, "test")
}

/// [`hermitage_table`] under another name.
#[allow(dead_code)] // Not every test binary needs a second table.
pub fn hermitage_table_named(db: &Database, name: &str) -> Arc<Table> {
    let t = db
        .create_table(
            TableSchema::builder(name)
                .column("id", ColumnType::Int64)
                .column("value", ColumnType::Int64)
                .primary_key(&["id"])
                .index("by_value", &["value"])
                .build()
                .expect("schema"),
        )
        .expect("create");
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    for (id, value) in [(1, 10), (2, 20)] {
        txn.insert(&t, hermitage_row(&t, id, value))
            .expect("insert");
    }
    txn.commit().expect("commit");
    t
}

/// Entries of secondary index `index` of `t` in a fresh snapshot.
pub fn index_entries(db: &Database, t: &Table, index: overtake_engine::IndexId) -> usize {
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut entries = 0;
    txn.scan_index(
        t,
        index,
        &overtake_engine::KeyRange::all(),
        overtake_engine::ScanOptions::forward(),
        |_| {
            entries += 1;
            std::ops::ControlFlow::Continue(())
        },
    )
    .expect("scan");
    entries
}
