//! Faults injected at every step of the log's and checkpoints' file operations (see the engine's
//! `log::failpoint`): a child process (this test binary) commits rows one by one under a `sync`
//! log, checkpointing twice on the way, with one failpoint armed to crash the process or fail the
//! operation; the parent then opens the directory, which must open, hold every commit the child
//! saw acknowledged (and at most the one in flight after them), and take new commits.

use std::process::Command;

use overtake_engine::{CommitError, Database, Durability, Isolation, Priority};

use crate::common;
use common::kept::{Dir, accounts, options, rows};

const CHILD_DIR: &str = "OVERTAKE_FAILPOINTS_DIR";
const COMMITS: i64 = 80;
/// The child checkpoints after these commits.
const CHECKPOINTS: [i64; 2] = [25, 55];

/// The child: as the module says; prints `ack N` for each acknowledged commit.
#[test]
fn child_commits_with_a_failpoint_armed() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let db = match Database::open(&dir, options(Durability::Sync).checkpoint_after(None)) {
        Ok(db) => db,
        Err(e) => return println!("open failed: {e}"),
    };
    let t = match db.table("accounts") {
        Ok(t) => t,
        Err(_) => {
            let schema = overtake_engine::TableSchema::builder("accounts")
                .column("id", overtake_engine::ColumnType::Int64)
                .column("balance", overtake_engine::ColumnType::Int64)
                .column("owner", overtake_engine::ColumnType::VarChar(16))
                .primary_key(&["id"])
                .index("by_owner", &["owner"])
                .build()
                .expect("schema");
            match db.create_table(schema) {
                Ok(t) => t,
                Err(e) => return println!("table refused: {e}"),
            }
        }
    };
    for id in 0..COMMITS {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let row = t.row_builder().int(0, id).int(1, id).str(2, "o").finish();
        txn.insert(&t, row.expect("row")).expect("insert");
        match txn.commit() {
            Ok(()) => println!("ack {id}"),
            Err(e @ (CommitError::NotDurable(_) | CommitError::Aborted(_))) => {
                return println!("refused {id}: {e}");
            }
            Err(e) => panic!("commit {id}: {e}"),
        }
        if CHECKPOINTS.contains(&id) {
            match db.checkpoint() {
                Ok(_) => println!("checkpoint after {id}"),
                Err(e) => println!("checkpoint after {id} failed: {e}"),
            }
        }
    }
    println!("done");
}

/// Runs the child with `failpoint` armed; returns the ids it saw acknowledged.
fn child(dir: &std::path::Path, failpoint: &str) -> Vec<i64> {
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            &common::test_name(module_path!(), "child_commits_with_a_failpoint_armed"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir)
        .env("OVERTAKE_FAILPOINT", failpoint)
        .output()
        .expect("child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let crashed = String::from_utf8_lossy(&out.stderr).contains("crashing at hit");
    assert!(
        out.status.success() || crashed,
        "{failpoint}: the child failed otherwise: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // A crash asked for is one that happened: every point listed is reached in every run.
    assert_eq!(
        crashed,
        failpoint.contains(":crash:"),
        "{failpoint}: {}\n{stdout}",
        out.status
    );
    stdout
        .lines()
        .filter_map(|l| l.split_once("ack ").map(|(_, id)| id.parse().expect("id")))
        .collect()
}

/// The parent's checks after a run with `failpoint` armed.
fn recovers_what_was_acknowledged(failpoint: &str) {
    let dir = Dir::new(&format!("failpoint-{}", failpoint.replace(':', "-")));
    let acknowledged = child(&dir.0, failpoint);
    let db = Database::open(&dir.0, options(Durability::Sync).checkpoint_after(None))
        .unwrap_or_else(|e| panic!("{failpoint}: the directory does not open: {e}"));
    let kept = match db.table("accounts") {
        Ok(_) => rows(&db),
        Err(_) => Default::default(),
    };
    let ids: Vec<i64> = kept.keys().copied().collect();
    // Every acknowledged commit, then at most the one in flight.
    let next = acknowledged.len() as i64;
    assert!(
        ids.len() as i64 == next || ids.len() as i64 == next + 1,
        "{failpoint}: acknowledged {next}, recovered {ids:?}"
    );
    assert_eq!(&ids[..acknowledged.len()], &acknowledged[..], "{failpoint}");
    assert!(
        kept.iter().all(|(id, (balance, _))| id == balance),
        "{failpoint}"
    );
    // And it goes on.
    let t = accounts_or_existing(&db);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let row = t
        .row_builder()
        .int(0, 1_000)
        .int(1, 1_000)
        .str(2, "o")
        .finish();
    txn.insert(&t, row.expect("row")).expect("insert");
    assert_eq!(txn.commit(), Ok(()), "{failpoint}: a commit after recovery");
}

fn accounts_or_existing(db: &Database) -> std::sync::Arc<overtake_engine::Table> {
    db.table("accounts").unwrap_or_else(|_| accounts(db))
}

#[test]
fn a_crash_at_any_step_of_the_log_or_a_checkpoint_loses_nothing_acknowledged() {
    let points: &[(&str, &[u64])] = &[
        ("segment.write", &[1, 2, 3, 20, 60]),
        ("segment.sync", &[1, 2, 40]),
        ("segment.create", &[1, 2, 3]),
        ("dir.sync", &[1, 2, 3, 4, 5, 6]),
        ("checkpoint.create", &[1, 2]),
        ("checkpoint.write", &[1, 3]),
        ("checkpoint.sync", &[1, 2]),
        ("checkpoint.rename", &[1, 2]),
        ("log.remove", &[1, 2]),
    ];
    for (point, hits) in points {
        for hit in *hits {
            recovers_what_was_acknowledged(&format!("{point}:crash:{hit}"));
        }
    }
}

#[test]
fn a_failing_step_of_the_log_or_a_checkpoint_loses_nothing_acknowledged() {
    let points: &[(&str, &[u64])] = &[
        ("segment.write", &[1, 30]),
        ("segment.sync", &[1, 30]),
        ("segment.create", &[2, 3]),
        ("dir.sync", &[2, 4]),
        ("checkpoint.create", &[1]),
        ("checkpoint.write", &[1, 2]),
        ("checkpoint.sync", &[1]),
        ("checkpoint.rename", &[1]),
        ("log.remove", &[1]),
        ("spare.write", &[1]),
        ("spare.rename", &[1]),
    ];
    for (point, hits) in points {
        for hit in *hits {
            recovers_what_was_acknowledged(&format!("{point}:error:{hit}"));
        }
    }
}
