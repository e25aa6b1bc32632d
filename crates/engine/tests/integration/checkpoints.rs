//! Checkpoints: a checkpoint plus the log after it recovers exactly what committed, with commits
//! running while it is taken and across restarts; the log before it is removed; a checkpoint a
//! crash interrupted is ignored; a missing segment or a damaged checkpoint is refused.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use overtake_engine::{
    ColumnType, Database, Durability, Options, RecoveryError, Table, TableSchema,
};

use crate::common;
use common::kept::{Dir, Model, accounts, random_commits, rows, segment};

/// Sync, checkpoints only on request.
fn options() -> Options {
    Options::default()
        .durability(Durability::Sync)
        .checkpoint_after(None)
}

fn checkpoint_file(dir: &Path, n: u64) -> std::path::PathBuf {
    dir.join(format!("checkpoint.{n:08}"))
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name != "LOCK" && !name.starts_with("log.spare"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_checkpoint_and_the_log_after_it_recover_what_committed_and_the_older_log_goes() {
    let dir = Dir::new("checkpoint");
    let mut model = Model::new();
    let after_checkpoint = {
        let db = Database::open(&dir.0, options()).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 40, 7);
        let done = db.checkpoint().expect("checkpoint");
        assert_eq!((done.segment, done.tables), (2, 1));
        assert_eq!(done.rows, model.len() as u64);
        assert_eq!(db.log_stats().expect("log").segment, 2);
        let after = random_commits(&db, &t, &mut model, 30, 9);
        // A table created after the checkpoint is in the log only.
        db.create_table(
            TableSchema::builder("later")
                .column("k", ColumnType::Int64)
                .primary_key(&["k"])
                .build()
                .expect("schema"),
        )
        .expect("table");
        after.len() - 1
    };
    assert_eq!(
        files(&dir.0),
        ["checkpoint.00000002", "log.00000002"],
        "segment 1 is no longer needed"
    );
    let db = Database::open(&dir.0, options()).expect("reopen");
    let recovered = db.recovered().expect("recovered");
    assert_eq!(
        recovered.checkpoint.as_deref(),
        Some(checkpoint_file(&dir.0, 2).as_path())
    );
    assert_eq!(recovered.transactions as usize, after_checkpoint);
    assert_eq!(recovered.tables, 2);
    assert_eq!(rows(&db), model);
    assert!(db.table("later").is_ok());
}

#[test]
fn commits_during_a_checkpoint_are_recovered_once() {
    let dir = Dir::new("concurrent");
    let mut model = Model::new();
    {
        let db = Database::open(&dir.0, options().durability(Durability::Async)).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 50, 3);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..3 {
                    db.checkpoint().expect("checkpoint");
                }
                done.store(true, Ordering::Release);
            });
            // Commits go on while the checkpoints cut the log and read their snapshots: each
            // lands in a checkpoint or in the log after it (or both: replay skips it then).
            let mut seed = 11;
            while !done.load(Ordering::Acquire) {
                random_commits(&db, &t, &mut model, 5, seed);
                seed += 2;
            }
        });
        random_commits(&db, &t, &mut model, 5, 1);
    }
    let db = Database::open(&dir.0, options()).expect("reopen");
    assert!(db.recovered().expect("recovered").checkpoint.is_some());
    assert_eq!(rows(&db), model);
}

#[test]
fn timestamps_keep_growing_across_restarts_so_later_commits_are_not_taken_for_checkpointed_ones() {
    let dir = Dir::new("restarts");
    let mut model = Model::new();
    {
        let db = Database::open(&dir.0, options()).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 60, 5);
        db.checkpoint().expect("checkpoint");
        random_commits(&db, &t, &mut model, 3, 7);
    }
    // Restarted, its commits land in the same segment after the checkpoint: they must all be
    // replayed next time, though this run's clock began far below the checkpoint's snapshot.
    for seed in [13, 17] {
        let db = Database::open(&dir.0, options()).expect("reopen");
        assert_eq!(rows(&db), model);
        let t = db.table("accounts").expect("table");
        random_commits(&db, &t, &mut model, 10, seed);
    }
    let db = Database::open(&dir.0, options()).expect("reopen");
    assert_eq!(rows(&db), model);
}

/// Builds the state a crash leaves while checkpoint 3 is written: checkpoint 2 with segments 2
/// and 3 (commits after the cut included), and a part of checkpoint 3 under its temporary name.
/// Returns the model.
fn crash_during_second_checkpoint(dir: &Path) -> Model {
    let mut model = Model::new();
    let db = Database::open(dir, options()).expect("open");
    let t: std::sync::Arc<Table> = accounts(&db);
    random_commits(&db, &t, &mut model, 20, 3);
    db.checkpoint().expect("first checkpoint");
    random_commits(&db, &t, &mut model, 20, 5);
    let keep: Vec<(String, Vec<u8>)> = files(dir)
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).expect("read");
            (name, bytes)
        })
        .collect();
    db.checkpoint().expect("second checkpoint");
    random_commits(&db, &t, &mut model, 20, 7);
    drop(t);
    drop(db);
    for (name, bytes) in keep {
        std::fs::write(dir.join(name), bytes).expect("restore");
    }
    let second = checkpoint_file(dir, 3);
    let bytes = std::fs::read(&second).expect("checkpoint");
    std::fs::write(
        dir.join("checkpoint.00000003.tmp"),
        &bytes[..bytes.len() / 2],
    )
    .expect("part");
    std::fs::remove_file(second).expect("remove");
    model
}

#[test]
fn a_checkpoint_a_crash_interrupted_is_ignored() {
    let dir = Dir::new("interrupted");
    let model = crash_during_second_checkpoint(&dir.0);
    assert_eq!(
        files(&dir.0),
        [
            "checkpoint.00000002",
            "checkpoint.00000003.tmp",
            "log.00000002",
            "log.00000003"
        ]
    );
    let db = Database::open(&dir.0, options()).expect("reopen");
    let recovered = db.recovered().expect("recovered");
    assert_eq!(recovered.segments, 2);
    assert_eq!(rows(&db), model);
    assert_eq!(
        files(&dir.0),
        ["checkpoint.00000002", "log.00000002", "log.00000003"],
        "the temporary file is removed"
    );
}

#[test]
fn a_missing_segment_or_a_damaged_checkpoint_is_refused_by_name() {
    let dir = Dir::new("missing");
    crash_during_second_checkpoint(&dir.0);
    let second = segment(&dir.0, 2);
    let kept = std::fs::read(&second).expect("segment");
    std::fs::remove_file(&second).expect("remove");
    match Database::open(&dir.0, options()) {
        Err(e @ RecoveryError::Io { .. }) => {
            let e = e.to_string();
            assert!(e.contains("log.00000002") && e.contains("missing"), "{e}");
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("opened without segment 2"),
    }
    std::fs::write(&second, kept).expect("restore");
    let checkpoint = checkpoint_file(&dir.0, 2);
    let mut bytes = std::fs::read(&checkpoint).expect("checkpoint");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&checkpoint, &bytes).expect("damage");
    match Database::open(&dir.0, options()) {
        Err(e @ RecoveryError::Format { .. }) => {
            let e = e.to_string();
            assert!(
                e.contains("checkpoint.00000002") && e.contains("damaged"),
                "{e}"
            );
        }
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("opened a damaged checkpoint"),
    }
}

#[test]
fn background_checkpoints_follow_the_log_and_checkpoints_need_a_log() {
    let dir = Dir::new("background");
    let mut model = Model::new();
    {
        let db = Database::open(
            &dir.0,
            options()
                .durability(Durability::Async)
                .checkpoint_after(Some(4096)),
        )
        .expect("open");
        let t = accounts(&db);
        // Commits until the checkpointer (which looks every few milliseconds) has taken one.
        let mut seed = 1;
        while db.checkpoint_stats().expect("logged").taken == 0 {
            random_commits(&db, &t, &mut model, 10, seed);
            seed += 2;
            assert!(
                seed < 200_000,
                "no background checkpoint after {seed} rounds"
            );
        }
    }
    let db = Database::open(&dir.0, options()).expect("reopen");
    assert!(db.recovered().expect("recovered").checkpoint.is_some());
    assert_eq!(rows(&db), model);
    let memory = Database::in_memory(Options::default());
    assert_eq!(
        memory.checkpoint().err(),
        Some(overtake_engine::CheckpointError::NotLogged)
    );
}

#[test]
fn the_log_found_at_open_counts_towards_the_next_background_checkpoint() {
    let dir = Dir::new("backlog");
    let mut model = Model::new();
    let logged = {
        let db = Database::open(&dir.0, options()).expect("open");
        let t = accounts(&db);
        random_commits(&db, &t, &mut model, 60, 13);
        db.log_stats().expect("logged").bytes
    };
    // Reopened with a threshold below the log already there: nothing more is committed, and a
    // checkpoint is taken all the same.
    let db = Database::open(&dir.0, options().checkpoint_after(Some(logged / 2))).expect("reopen");
    let taken = (0..60_000).find(|_| {
        std::thread::sleep(std::time::Duration::from_millis(1));
        db.checkpoint_stats().expect("logged").taken > 0
    });
    assert!(taken.is_some(), "no checkpoint of the log found at open");
    drop(db);
    let db = Database::open(&dir.0, options()).expect("reopen");
    assert!(db.recovered().expect("recovered").checkpoint.is_some());
    assert_eq!(rows(&db), model);
}

#[test]
fn a_dropped_table_stays_dropped_through_the_log_and_checkpoints_and_frees_its_name() {
    let dir = Dir::new("dropped");
    let mut model = Model::new();
    {
        let db = Database::open(&dir.0, options()).expect("open");
        let old = accounts(&db);
        random_commits(&db, &old, &mut Model::new(), 30, 3);
        // A transaction that began before the drop commits a write to the dropped table after
        // it: nothing reads it again.
        let mut late = db
            .begin(
                overtake_engine::Priority::LOW,
                overtake_engine::Isolation::Snapshot,
            )
            .expect("begin");
        db.drop_table("accounts").expect("drop");
        assert!(old.is_dropped());
        assert!(db.table("accounts").is_err());
        assert_eq!(
            db.drop_table("accounts").err(),
            Some(overtake_engine::Error::NoSuchTable("accounts".into()))
        );
        let row = old
            .row_builder()
            .int(0, 1000)
            .int(1, 1)
            .str(2, "late")
            .finish();
        late.insert(&old, row.expect("row")).expect("insert");
        late.commit().expect("commit");
        // The name is free: a new table takes it (a new id).
        let new = accounts(&db);
        assert_ne!(new.id(), old.id());
        random_commits(&db, &new, &mut model, 20, 5);
        assert_eq!(rows(&db), model);
    }
    let names = |db: &Database| -> Vec<String> {
        db.tables().iter().map(|t| t.name().to_owned()).collect()
    };
    {
        let db = Database::open(&dir.0, options()).expect("replay");
        assert_eq!(names(&db), ["accounts"]);
        assert_eq!(rows(&db), model, "the log replays into the new table only");
        let done = db.checkpoint().expect("checkpoint");
        assert_eq!(done.tables, 2, "the dropped table keeps its id");
        assert_eq!(done.rows, model.len() as u64, "and has no rows");
    }
    let db = Database::open(&dir.0, options()).expect("from the checkpoint");
    assert_eq!(names(&db), ["accounts"]);
    assert_eq!(rows(&db), model);
    let later = db
        .create_table(
            TableSchema::builder("later")
                .column("k", ColumnType::Int64)
                .primary_key(&["k"])
                .build()
                .expect("schema"),
        )
        .expect("a table after a dropped one");
    assert_eq!(later.id(), 2);
}

/// Recovery enters a checkpoint's rows, which come in key order, into the leaf the row before
/// went to while the key belongs there: with many leaves, rows spread over frames that every
/// core loads, and keys written between them later, each row is where a lookup finds it.
#[test]
fn a_large_checkpoint_is_loaded_where_lookups_find_every_row() {
    use overtake_engine::{Isolation, Priority};
    let dir = Dir::new("large-checkpoint");
    let insert = |db: &Database, t: &Table, ids: &mut dyn Iterator<Item = i64>| {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        for id in ids {
            let row = t.row_builder().int(0, id).int(1, id).str(2, "o").finish();
            txn.insert(t, row.expect("row")).expect("insert");
        }
        txn.commit().expect("commit");
    };
    {
        let db = Database::open(&dir.0, options()).expect("open");
        let t = accounts(&db);
        for chunk in 0..20 {
            insert(
                &db,
                &t,
                &mut (chunk * 500..(chunk + 1) * 500).map(|i| i * 2),
            );
        }
        db.checkpoint().expect("checkpoint");
    }
    let db = Database::open(&dir.0, options()).expect("reopen");
    assert_eq!(db.recovered().expect("recovered").checkpoint_rows, 10_000);
    let t = db.table("accounts").expect("table");
    // The odd keys go between the loaded ones, into every leaf.
    insert(&db, &t, &mut (0..10_000).map(|i| i * 2 + 1));
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for id in 0..20_000 {
        let key = t.key().int(id).finish().expect("key");
        let found = txn.get(&t, &key, |r| r.int(1)).expect("get");
        assert_eq!(found, Some(id), "row {id}");
    }
    drop(txn);
    let census = db.census();
    assert_eq!(
        (
            census.live_records,
            census.index_entries,
            census.dangling_index_entries
        ),
        (20_000, 40_000, 0),
        "{census:?}"
    );
}
