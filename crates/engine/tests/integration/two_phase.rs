//! Two-phase commit: a prepared transaction's writes stay invisible and its rows locked until it
//! is committed or rolled back, its identifier is unique, and it survives being dropped, the
//! database being closed and opened again, and checkpoints that remove the segment its record
//! was first written to.

use overtake_engine::{
    AbortReason, CommitError, Database, Durability, Error, Isolation, Priority, Table,
};

use crate::common::kept::{Dir, accounts, options, rows};

fn row(t: &Table, id: i64, balance: i64, owner: &str) -> overtake_engine::Row {
    t.row_builder()
        .int(0, id)
        .int(1, balance)
        .str(2, owner)
        .finish()
        .expect("row")
}

fn key(t: &Table, id: i64) -> overtake_engine::KeyBuf {
    t.key().int(id).finish().expect("key")
}

/// Accounts 1 (100, "ann") and 2 (200, "bob"), committed.
fn seeded(db: &Database) -> std::sync::Arc<Table> {
    let t = accounts(db);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    txn.insert(&t, row(&t, 1, 100, "ann")).expect("insert");
    txn.insert(&t, row(&t, 2, 200, "bob")).expect("insert");
    txn.commit().expect("commit");
    t
}

/// Prepares, as `gid`, a transaction that changes account 1 to 150, deletes account 2 and
/// inserts account 3 (300, "cy"); its rows are locked as SQL's writers lock them.
fn prepare_changes<'db>(
    db: &'db Database,
    t: &Table,
    gid: &str,
) -> overtake_engine::Transaction<'db> {
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    txn.lock_rows_it_writes();
    assert!(
        txn.update(t, &key(t, 1), |r| {
            r.int(1, 150);
        })
        .expect("update")
    );
    assert!(txn.delete(t, &key(t, 2)).expect("delete"));
    txn.insert(t, row(t, 3, 300, "cy")).expect("insert");
    txn.prepare(gid, b"note").expect("prepare");
    assert!(txn.is_prepared());
    txn
}

fn before() -> Vec<(i64, (i64, String))> {
    vec![(1, (100, "ann".into())), (2, (200, "bob".into()))]
}

fn after() -> Vec<(i64, (i64, String))> {
    vec![(1, (150, "ann".into())), (3, (300, "cy".into()))]
}

fn listed(db: &Database) -> Vec<(i64, (i64, String))> {
    rows(db).into_iter().collect()
}

#[test]
fn a_prepared_transaction_is_invisible_and_locks_its_rows_until_it_commits() {
    let dir = Dir::new("2pc-visible");
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
    let t = seeded(&db);
    let mut prepared = prepare_changes(&db, &t, "g1");
    assert_eq!(
        listed(&db),
        before(),
        "readers see the rows below its writes"
    );
    assert_eq!(db.prepared_count(), 1);
    assert!(db.in_doubt().is_empty(), "a live transaction holds it");
    // Its statements are over.
    assert_eq!(
        prepared.insert(&t, row(&t, 9, 9, "x")),
        Err(Error::NotActive)
    );
    // A writer of one of its rows cannot take the row's lock.
    let mut writer = db
        .begin(Priority::HIGH, Isolation::ReadCommitted)
        .expect("begin");
    assert_eq!(writer.try_lock_row(&t, &key(&t, 1)), Ok(false));
    assert_eq!(writer.try_lock_row(&t, &key(&t, 3)), Ok(false));
    drop(writer);
    // Its identifier is taken: another transaction prepared under it rolls back.
    let mut other = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    other.lock_rows_it_writes();
    other.insert(&t, row(&t, 7, 7, "dup")).expect("insert");
    assert_eq!(
        other.prepare("g1", b""),
        Err(CommitError::PreparedIdInUse("g1".into()))
    );
    assert!(!other.is_active() && !other.is_prepared());
    drop(other);
    prepared.commit().expect("commit prepared");
    drop(prepared);
    assert_eq!(listed(&db), after());
    assert_eq!(db.prepared_count(), 0);
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open again");
    assert_eq!(listed(&db), after(), "its commit was logged");
    assert!(db.in_doubt().is_empty());
}

#[test]
fn a_prepared_transaction_rolled_back_leaves_nothing() {
    let dir = Dir::new("2pc-rollback");
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
    let t = seeded(&db);
    let mut prepared = prepare_changes(&db, &t, "g2");
    prepared.rollback_prepared().expect("rollback prepared");
    assert_eq!(prepared.commit(), Err(CommitError::NotActive));
    drop(prepared);
    assert_eq!(listed(&db), before());
    let mut writer = db
        .begin(Priority::HIGH, Isolation::ReadCommitted)
        .expect("begin");
    assert_eq!(
        writer.try_lock_row(&t, &key(&t, 1)),
        Ok(true),
        "its locks went"
    );
    drop(writer);
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open again");
    assert_eq!(listed(&db), before());
    assert!(db.in_doubt().is_empty(), "its rollback was logged");
}

/// Closed with the transaction prepared (as a crash would leave it), it is in doubt when the
/// database opens again, with its note; resumed, it holds its row locks again and commits.
#[test]
fn a_prepared_transaction_outlives_its_process_and_commits_after() {
    let dir = Dir::new("2pc-restart");
    {
        let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
        let t = seeded(&db);
        let prepared = prepare_changes(&db, &t, "g3");
        // Committed after it: recovery replays them, and the prepared writes on top.
        let mut later = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        later.insert(&t, row(&t, 4, 400, "di")).expect("insert");
        later.commit().expect("commit");
        drop(later);
        drop(prepared);
        assert_eq!(db.in_doubt().len(), 1, "dropped undecided: in doubt");
    }
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open again");
    assert_eq!(db.recovered().map(|r| r.in_doubt), Some(1));
    let in_doubt = db.in_doubt();
    assert_eq!(in_doubt.len(), 1);
    assert_eq!(
        (in_doubt[0].gid.as_str(), &in_doubt[0].note[..]),
        ("g3", &b"note"[..])
    );
    let with_di = |mut rows: Vec<(i64, (i64, String))>| {
        rows.push((4, (400, "di".into())));
        rows.sort();
        rows
    };
    assert_eq!(listed(&db), with_di(before()));
    let t = db.table("accounts").expect("table");
    let mut resumed = db.resume_prepared("g3", Priority::LOW).expect("resume");
    assert!(resumed.is_prepared());
    assert!(matches!(
        db.resume_prepared("g3", Priority::LOW),
        Err(Error::NoSuchPrepared(_))
    ));
    let mut writer = db
        .begin(Priority::HIGH, Isolation::ReadCommitted)
        .expect("begin");
    assert_eq!(
        writer.try_lock_row(&t, &key(&t, 2)),
        Ok(false),
        "locked again"
    );
    drop(writer);
    assert_eq!(listed(&db), with_di(before()));
    resumed.commit().expect("commit prepared");
    drop(resumed);
    assert_eq!(listed(&db), with_di(after()));
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open a third time");
    assert_eq!(listed(&db), with_di(after()));
    assert!(db.in_doubt().is_empty());
}

/// Checkpoints remove the segment that first held the prepared record: it is logged again
/// after each cut, so the transaction is still in doubt after a restart.
#[test]
fn checkpoints_keep_a_prepared_transaction() {
    let dir = Dir::new("2pc-checkpoint");
    {
        let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
        let t = seeded(&db);
        let prepared = prepare_changes(&db, &t, "g4");
        db.checkpoint().expect("checkpoint");
        db.checkpoint().expect("second checkpoint");
        drop(prepared);
    }
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open again");
    assert_eq!(db.in_doubt().len(), 1);
    assert_eq!(
        listed(&db),
        before(),
        "the checkpoints hold none of its writes"
    );
    let mut resumed = db.resume_prepared("g4", Priority::LOW).expect("resume");
    resumed.rollback_prepared().expect("rollback prepared");
    drop(resumed);
    db.checkpoint().expect("checkpoint after");
    drop(db);
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open a third time");
    assert!(db.in_doubt().is_empty());
    assert_eq!(listed(&db), before());
}

/// A serializable transaction is validated when it prepares: a change committed since its
/// snapshot to what it read fails the prepare, as it would fail the commit.
#[test]
fn a_serializable_transaction_is_validated_when_it_prepares() {
    let db = Database::in_memory(options(Durability::Off));
    let t = seeded(&db);
    let mut reader = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    assert_eq!(
        reader.get(&t, &key(&t, 1), |r| r.int(1)).expect("get"),
        Some(100)
    );
    reader.insert(&t, row(&t, 5, 100, "copy")).expect("insert");
    let mut writer = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert!(
        writer
            .update(&t, &key(&t, 1), |r| {
                r.int(1, 101);
            })
            .expect("update")
    );
    writer.commit().expect("commit");
    drop(writer);
    assert_eq!(
        reader.prepare("g5", b""),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
    assert_eq!(db.prepared_count(), 0);
}
