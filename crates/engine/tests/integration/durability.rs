//! A database opened in a directory keeps what committed: reopened, it holds exactly the committed
//! rows; a log cut anywhere (a crash) recovers a prefix of the commits; damage is refused.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use overtake_engine::{
    AbortReason, ColumnType, CommitError, Database, Durability, Isolation, KeyRange, Priority,
    RecoveryError, ScanOptions, TableSchema,
};

use crate::common;
use common::kept::{Dir, Model, accounts, options, random_commits, rows, segment};

fn log_file(dir: &Path) -> PathBuf {
    segment(dir, 1)
}

#[test]
fn a_reopened_database_holds_exactly_what_committed() {
    let dir = Dir::new("reopen");
    let mut model = Model::new();
    {
        let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 60, 7);
        assert_eq!(rows(&db), model);
    }
    // Reopened, it continues: more commits, appended after the recovered ones.
    {
        let db = Database::open(&dir.0, options(Durability::Async)).expect("reopen");
        let recovered = db.recovered().expect("recovered");
        assert_eq!((recovered.tables, recovered.torn_bytes), (1, 0));
        assert_eq!(rows(&db), model);
        let t = db.table("accounts").expect("table");
        random_commits(&db, &t, &mut model, 40, 11);
    }
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen again");
    assert_eq!(rows(&db), model);
    // The secondary index was rebuilt with the rows.
    let t = db.table("accounts").expect("table");
    let by_owner = t.index("by_owner").expect("index");
    assert_eq!(common::index_entries(&db, &t, by_owner), model.len());
    // Recovery writes storage directly: one version per row, an entry per row and index, and
    // nothing left of the rows it deleted or replaced.
    let census = db.census();
    let n = model.len() as u64;
    assert_eq!(
        (
            census.live_records,
            census.linked_versions,
            census.index_entries
        ),
        (n, n, 2 * n),
        "{census:?}"
    );
    assert_eq!(census.dangling_index_entries, 0, "{census:?}");
    // And it goes on: the recovered rows are written, deleted and read like any others.
    random_commits(&db, &t, &mut model, 40, 13);
    assert_eq!(rows(&db), model);
}

#[test]
fn a_log_cut_at_any_byte_recovers_a_prefix_of_the_commits() {
    let dir = Dir::new("cut");
    let mut model = Model::new();
    let after = {
        let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 25, 3)
    };
    let mut bytes = std::fs::read(log_file(&dir.0)).expect("log");
    // The zeros written ahead of the log writer end the log; cuts fall in what was written.
    let written = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes.truncate(written);
    let copy = Dir::new("cut-copy");
    // Every byte of the last records, and a stride through the rest.
    let tail = bytes.len().saturating_sub(400);
    let cuts = (0..tail).step_by(37).chain(tail..=bytes.len());
    let mut prefixes_seen = std::collections::BTreeSet::new();
    for cut in cuts {
        let _ = std::fs::remove_dir_all(&copy.0);
        std::fs::create_dir_all(&copy.0).expect("dir");
        std::fs::write(log_file(&copy.0), &bytes[..cut]).expect("copy");
        let opened = Database::open(&copy.0, options(Durability::Off));
        if cut < 20 {
            // Not even a whole header: not a log.
            assert!(opened.is_err(), "cut at {cut}");
            continue;
        }
        let db = opened.unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let recovered = db.recovered().expect("recovered");
        let committed = recovered.transactions as usize;
        assert!(committed < after.len(), "cut at {cut}");
        if recovered.tables == 0 {
            assert_eq!(committed, 0);
            continue;
        }
        assert_eq!(rows(&db), after[committed], "cut at {cut}");
        prefixes_seen.insert(committed);
    }
    assert!(prefixes_seen.contains(&(after.len() - 1)), "the whole log");
}

#[test]
fn damage_before_intact_records_is_refused_naming_the_file_and_offset() {
    let dir = Dir::new("damage");
    {
        let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut Model::new(), 10, 5);
    }
    let path = log_file(&dir.0);
    let mut bytes = std::fs::read(&path).expect("log");
    // In the middle of the records (the zeros after them are the space ahead of the writer).
    let written = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes[written / 2] ^= 0xFF;
    std::fs::write(&path, &bytes).expect("damage");
    match Database::open(&dir.0, options(Durability::Sync)) {
        Err(e @ RecoveryError::Damaged { .. }) => {
            assert!(e.to_string().contains("log.00000001"), "{e}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("opened a damaged log"),
    }
}

#[test]
fn without_logging_nothing_new_is_kept_and_rows_without_a_key_are_only_inserted() {
    let dir = Dir::new("off");
    {
        let db = Database::open(&dir.0, options(Durability::Off)).expect("open");
        accounts(&db);
    }
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen");
    assert!(db.table("accounts").is_err(), "nothing was logged");
    let unkeyed = TableSchema::builder("events")
        .column("at", ColumnType::Int64)
        .build()
        .expect("schema");
    let events = db
        .create_table(unkeyed)
        .expect("a table without a key is logged");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for at in [5, 5, 7] {
        let row = events.row_builder().int(0, at).finish().expect("row");
        txn.insert(&events, row).expect("insert");
    }
    let some_row_id = events.key().int(1).finish().expect("key");
    assert!(matches!(
        txn.delete(&events, &some_row_id),
        Err(overtake_engine::Error::NotLogged { .. })
    ));
    txn.commit().expect("commit");
    drop(txn);
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen");
    let events = db.table("events").expect("table");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut seen = Vec::new();
    txn.scan(&events, &KeyRange::all(), ScanOptions::forward(), |r| {
        seen.push(r.int(0));
        ControlFlow::Continue(())
    })
    .expect("scan");
    seen.sort_unstable();
    assert_eq!(seen, [5, 5, 7]);
}

#[test]
fn a_promoted_attempt_waits_for_the_log_after_its_region() {
    // A promoted attempt holds a region through its commit; a sync commit must not park in it.
    let dir = Dir::new("promoted");
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
    let t = accounts(&db);
    let retry = overtake_engine::RetryPolicy::default().promoting_after(0);
    let attempts = db.run(Priority::LOW, Isolation::Snapshot, &retry, |txn| {
        let row = t.row_builder().int(0, 1).int(1, 5).str(2, "o1").finish()?;
        txn.insert(&t, row)
    });
    assert_eq!(attempts.promoted, 1);
    assert_eq!(attempts.result, Ok(()));
    drop(t);
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen");
    assert_eq!(rows(&db), Model::from([(1, (5, "o1".to_owned()))]));
}

#[test]
fn a_directory_is_written_by_one_process_at_a_time() {
    let dir = Dir::new("lock");
    let writer = Database::open(&dir.0, options(Durability::Sync)).expect("open");
    for durability in [Durability::Sync, Durability::Off] {
        match Database::open(&dir.0, options(durability)) {
            Err(e @ RecoveryError::InUse { .. }) => {
                assert!(e.to_string().contains("open in another process"), "{e}");
            }
            Err(other) => panic!("another error: {other}"),
            Ok(_) => panic!("opened a directory another holder writes"),
        }
    }
    drop(writer);
    // Readers (no log) share it; a writer waits for them to go.
    let reader = Database::open(&dir.0, options(Durability::Off)).expect("read");
    let second_reader = Database::open(&dir.0, options(Durability::Off)).expect("read too");
    assert!(matches!(
        Database::open(&dir.0, options(Durability::Async)),
        Err(RecoveryError::InUse { .. })
    ));
    drop((reader, second_reader));
    Database::open(&dir.0, options(Durability::Async)).expect("write again");
}

#[test]
fn an_update_logs_only_what_it_changed_and_replays_onto_the_rows_before_it() {
    let dir = Dir::new("patches");
    let wide = TableSchema::builder("stock")
        .column("id", ColumnType::Int64)
        .column("quantity", ColumnType::Int64)
        .column("info", ColumnType::Char(200))
        .column("ytd", ColumnType::Int64)
        .primary_key(&["id"])
        .build()
        .expect("schema");
    let info = |id: i64| format!("{id:0>200}");
    let (updates, logged) = {
        let db = Database::open(&dir.0, options(Durability::Async)).expect("open");
        let t = db.create_table(wide.clone()).expect("table");
        // Inserted and updated in one commit, then updated in many small ones: replay meets
        // patches over its own inserts and over each other in one batch.
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        for id in 0..20 {
            let mut row = t.row_builder();
            row.int(0, id).int(1, 0).str(2, &info(id)).int(3, 0);
            txn.insert(&t, row.finish().expect("row")).expect("insert");
            let key = t.key().int(id).finish().expect("key");
            txn.update(&t, &key, |r| {
                r.int(1, 100);
            })
            .expect("update");
        }
        txn.commit().expect("commit");
        let before = db.log_stats().expect("logged").bytes;
        let updates = 400;
        for i in 0..updates {
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            let key = t.key().int(i % 20).finish().expect("key");
            txn.update(&t, &key, |r| {
                let (quantity, ytd) = (r.as_ref().int(1), r.as_ref().int(3));
                r.int(1, quantity - 1).int(3, ytd + i);
            })
            .expect("update");
            txn.commit().expect("commit");
        }
        drop(t);
        let logged = db.log_stats().expect("logged").bytes - before;
        (updates, logged)
    };
    // Each update's record holds its two changed columns, not the 230-byte row.
    assert!(
        logged < 100 * updates as u64,
        "{logged} bytes for {updates} updates"
    );
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen");
    let t = db.table("stock").expect("table");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for id in 0..20 {
        let key = t.key().int(id).finish().expect("key");
        let ytd: i64 = (0..updates).filter(|i| i % 20 == id).sum();
        let row = txn.get(&t, &key, |r| (r.int(1), r.str(2).to_owned(), r.int(3)));
        assert_eq!(row.expect("get"), Some((80, info(id), ytd)));
    }
}

#[test]
fn a_commit_too_large_to_log_is_refused_before_it_is_seen_and_the_log_still_opens() {
    let dir = Dir::new("too-large");
    let limited = || options(Durability::Sync).max_log_record(4096);
    {
        let db = Database::open(&dir.0, limited()).expect("open");
        let t = accounts(&db);
        let mut small = db
            .begin(Priority::HIGH, Isolation::Snapshot)
            .expect("begin");
        let row = t
            .row_builder()
            .int(0, 1)
            .int(1, 10)
            .str(2, "ann")
            .finish()
            .expect("row");
        small.insert(&t, row).expect("insert");
        small.commit().expect("a small commit");
        // About 100 rows of ~40 bytes each: past the 4 KiB the log takes.
        let mut big = db
            .begin(Priority::HIGH, Isolation::Snapshot)
            .expect("begin");
        for id in 2..200 {
            let row = t
                .row_builder()
                .int(0, id)
                .int(1, id)
                .str(2, "bob")
                .finish()
                .expect("row");
            big.insert(&t, row).expect("insert");
        }
        assert_eq!(
            big.commit(),
            Err(CommitError::Aborted(AbortReason::TooLarge)),
            "refused, not acknowledged"
        );
        assert_eq!(rows(&db).len(), 1, "none of its rows is visible");
        let mut after = db
            .begin(Priority::HIGH, Isolation::Snapshot)
            .expect("begin");
        let row = t
            .row_builder()
            .int(0, 7)
            .int(1, 70)
            .str(2, "cy")
            .finish()
            .expect("row");
        after.insert(&t, row).expect("insert");
        after.commit().expect("commits go on");
    }
    let db = Database::open(&dir.0, limited()).expect("the log opens");
    let kept: Vec<i64> = rows(&db).into_keys().collect();
    assert_eq!(kept, vec![1, 7]);
}
