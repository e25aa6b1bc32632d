//! Under a `sync` log no answer shows a commit a crash could take back: a transaction that read
//! a commit not yet durable is answered (its own commit returns) only once that commit is. A
//! child process (this test binary) commits a row whose flush is far off, reads it from another
//! transaction and tries to commit that one; the parent kills the child as soon as the row was
//! read: the reader was never answered, and the row is not there after recovery.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use overtake_engine::{Database, Durability, Isolation, Priority};

use crate::common;
use common::kept::{Dir, accounts, options, rows};

const CHILD_DIR: &str = "OVERTAKE_HELD_ANSWERS_DIR";

/// Commits nobody urgent waits for are flushed this long after they are appended: the row stays
/// not durable for the whole test.
const GROUP_COMMIT: Duration = Duration::from_secs(30);

#[test]
fn child_reads_a_commit_that_is_not_durable_yet() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let db =
        Database::open(&dir, options(Durability::Sync).group_commit(GROUP_COMMIT)).expect("open");
    // Created (and durable: table creation asks for its flush at once) before the row.
    let t = accounts(&db);
    println!("table durable");
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            let row = t.row_builder().int(0, 1).int(1, 100).str(2, "o").finish();
            txn.insert(&t, row.expect("row")).expect("insert");
            // Visible at once, durable only at the group's flush.
            txn.commit().expect("commit");
            println!("writer answered");
        });
        let key = t.key().int(1).finish().expect("key");
        loop {
            let mut reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            if let Some(balance) = reader.get(&t, &key, |r| r.int(1)).expect("get") {
                println!("read {balance}");
                reader.commit().expect("commit");
                println!("reader answered");
                return;
            }
            drop(reader);
            std::thread::yield_now();
        }
    });
}

#[test]
fn a_reader_of_a_commit_not_yet_durable_is_not_answered_before_a_crash_takes_it_back() {
    let dir = Dir::new("held-answers");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            &common::test_name(
                module_path!(),
                "child_reads_a_commit_that_is_not_durable_yet",
            ),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, &dir.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    // Killed the moment the reader has read the row (and begun its commit).
    for line in lines.by_ref() {
        let line = line.expect("line");
        let read = line.contains("read 100");
        seen.push(line);
        if read {
            child.kill().expect("kill");
            break;
        }
    }
    let _ = child.wait();
    seen.extend(lines.map_while(Result::ok));
    assert!(seen.iter().any(|l| l.contains("read 100")), "{seen:?}");
    assert!(
        !seen.iter().any(|l| l.contains("answered")),
        "an answer left before the commit it showed was durable: {seen:?}"
    );
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("reopen");
    assert!(db.table("accounts").is_ok());
    assert!(rows(&db).is_empty(), "the row was never durable");
}

#[test]
fn a_reader_is_answered_once_what_it_read_is_durable() {
    let dir = Dir::new("held-answers-flushed");
    let db = Database::open(
        &dir.0,
        options(Durability::Sync).group_commit(Duration::from_millis(100)),
    )
    .expect("open");
    let t = accounts(&db);
    let flushed = db.log_stats().expect("logged").bytes;
    let key = t.key().int(1).finish().expect("key");
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            let row = t.row_builder().int(0, 1).int(1, 100).str(2, "o").finish();
            txn.insert(&t, row.expect("row")).expect("insert");
            txn.commit().expect("commit");
        });
        loop {
            let mut reader = db
                .begin(Priority::HIGH, Isolation::Snapshot)
                .expect("begin");
            if reader.get(&t, &key, |r| r.int(1)).expect("get") == Some(100) {
                assert_eq!(reader.commit(), Ok(()));
                // Answered: the commit it read was flushed first (an urgent reader asks for
                // the flush instead of waiting for the group).
                assert!(db.log_stats().expect("logged").bytes > flushed);
                return;
            }
            drop(reader);
            std::thread::yield_now();
        }
    });
    // A reader of nothing new waits for nothing.
    let mut reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(reader.get(&t, &key, |r| r.int(1)), Ok(Some(100)));
    assert_eq!(reader.commit(), Ok(()));
    assert_eq!(reader.durable_wait(), Duration::ZERO);
}
