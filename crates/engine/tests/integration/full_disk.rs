//! A data directory removed under a running database acknowledges nothing more; one made
//! read-only refuses checkpoints, with the reason, and keeps its commits. A disk that
//! fills up under a durable log: the log retries, then stops; the commit it could
//! not write fails and later writers are refused; the part of a batch the disk took is cut back,
//! and the directory opens afterwards with exactly the acknowledged commits. The full disk is a file size limit (`prlimit --fsize`) on a child
//! process running this same test binary, with SIGXFSZ ignored so that a write past the limit
//! fails as on a full disk (EFBIG) instead of killing the process.

use std::path::Path;
use std::process::Command;

use overtake_engine::{AbortReason, CommitError, Database, Durability, Isolation, Priority};

use crate::common;
use common::kept::{Dir, accounts, options, rows};

/// Where the child works; set only in the child.
const CHILD_DIR: &str = "OVERTAKE_FULL_DISK_DIR";
/// Where the read-only test's child works; set only in that child.
const READ_ONLY_DIR: &str = "OVERTAKE_READ_ONLY_DIR";
/// The size limit: inside a record (records here are a few dozen bytes), well after the header.
const LIMIT: u64 = 20_011;

/// The child: sync commits of one row each until the log, having retried the write the disk
/// refused, stops and refuses the next transaction before it commits; prints the ids it
/// acknowledged, and how far the segment file reaches.
#[test]
fn child_commits_until_the_disk_is_full() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let db = Database::open(&dir, options(Durability::Sync)).expect("open");
    let t = accounts(&db);
    let mut not_durable = 0;
    for id in 0..100_000i64 {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let row = t.row_builder().int(0, id).int(1, id).str(2, "o").finish();
        txn.insert(&t, row.expect("row")).expect("insert");
        match txn.commit() {
            Ok(_) => println!("acknowledged {id}"),
            // The commit whose record met the full disk.
            Err(CommitError::NotDurable(why)) => {
                assert!(why.contains("File too large"), "{why}");
                not_durable += 1;
            }
            Err(CommitError::Aborted(AbortReason::LogStopped)) => break,
            Err(e) => panic!("commit {id}: {e}"),
        }
    }
    assert_eq!(
        not_durable, 1,
        "one commit met the full disk, then the log stopped"
    );
    assert!(
        db.log_stopped()
            .is_some_and(|why| why.contains("File too large"))
    );
    // DDL is refused too, before it changes anything.
    let schema = overtake_engine::TableSchema::builder("later")
        .column("k", overtake_engine::ColumnType::Int64)
        .primary_key(&["k"])
        .build()
        .expect("schema");
    assert_eq!(
        db.create_table(schema).err(),
        Some(overtake_engine::Error::Aborted(AbortReason::LogStopped))
    );
    assert!(db.table("later").is_err());
    // Reads go on: a read-only transaction commits.
    let mut read = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let key = t.key().int(0).finish().expect("key");
    assert_eq!(read.get(&t, &key, |r| r.int(1)), Ok(Some(0)));
    assert_eq!(read.commit(), Ok(()));
    let size = std::fs::metadata(common::kept::segment(Path::new(&dir), 1))
        .expect("segment")
        .len();
    println!("file {size}");
}

#[test]
fn a_full_disk_fails_the_commits_it_refuses_and_the_database_opens_with_the_acknowledged_ones() {
    let dir = Dir::new("full-disk");
    let Some(stdout) = run_child(
        r#"trap '' XFSZ; exec prlimit --fsize="$1" -- "$2" --exact "$TEST_NAME" --nocapture --test-threads=1"#,
        "child_commits_until_the_disk_is_full",
        &[LIMIT.to_string().as_ref()],
        (CHILD_DIR, &dir.0),
        "bash and prlimit are needed to limit a child's file size",
    ) else {
        return;
    };
    let acknowledged = acknowledged(&stdout);
    let file: u64 = stdout
        .lines()
        .find_map(|l| l.split_once("file ").map(|(_, size)| size))
        .expect("file size")
        .parse()
        .expect("size");
    assert!(!acknowledged.is_empty());
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("opens after a full disk");
    let recovered = db.recovered().expect("recovered");
    // The disk took part of a refused record (the file reached the limit), and it was zeroed:
    // nothing torn is left, and no refused commit came back.
    assert_eq!(file, LIMIT, "the refused record was partly written");
    assert_eq!(recovered.torn_bytes, 0, "{recovered:?}");
    let ids: Vec<i64> = rows(&db).into_keys().collect();
    assert_eq!(ids, acknowledged);
}

#[test]
fn a_removed_data_directory_acknowledges_nothing_more() {
    let dir = Dir::new("removed");
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("open");
    let t = accounts(&db);
    let insert = |id: i64| {
        let mut txn = db
            .begin(Priority::HIGH, Isolation::Snapshot)
            .expect("begin");
        let row = t.row_builder().int(0, id).int(1, id).str(2, "o").finish();
        txn.insert(&t, row.expect("row")).expect("insert");
        txn.commit()
    };
    assert_eq!(insert(1), Ok(()));
    remove_while_the_spare_helper_writes(&dir.0);
    // The segment's file is still open and takes the write and the sync: nothing is kept,
    // so nothing is acknowledged.
    match insert(2) {
        Err(CommitError::NotDurable(why)) => assert!(why.contains("was removed"), "{why}"),
        other => panic!("acknowledged into a removed directory: {other:?}"),
    }
    assert_eq!(
        insert(3),
        Err(CommitError::Aborted(AbortReason::LogStopped))
    );
}

/// `rm -rf` of a live log directory: the helper that keeps a spare segment ready may create
/// its file between the listing and the `rmdir`, as it could under a user's `rm -rf`; like the
/// user, try again.
fn remove_while_the_spare_helper_writes(dir: &std::path::Path) {
    for _ in 0..100 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
            Err(e) => panic!("remove the directory: {e}"),
        }
    }
    panic!("the directory kept filling while it was removed");
}

/// Commits `ids` of one row each (sync); prints each acknowledged.
fn commit_rows(db: &Database, ids: std::ops::Range<i64>) {
    let t = db.table("accounts").expect("table");
    for id in ids {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let row = t.row_builder().int(0, id).int(1, id).str(2, "o").finish();
        txn.insert(&t, row.expect("row")).expect("insert");
        txn.commit().expect("commit");
        println!("acknowledged {id}");
    }
}

/// The read-only test's child, which the directory's mode binds as it binds any user (it runs
/// as root without the capabilities that override permissions): commits, loses write
/// permission to its directory, fails to checkpoint (a checkpoint makes files), goes on
/// committing into the segment it has open, and checkpoints once the permission is back.
#[test]
fn child_loses_write_permission_to_its_directory() {
    use std::os::unix::fs::PermissionsExt;
    let Some(dir) = std::env::var_os(READ_ONLY_DIR) else {
        return;
    };
    let db = Database::open(&dir, options(Durability::Sync)).expect("open");
    accounts(&db);
    commit_rows(&db, 0..100);
    let mode = |mode| {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    mode(0o500);
    let refused = db
        .checkpoint()
        .expect_err("a checkpoint in a read-only directory");
    assert!(
        refused.to_string().contains("Permission denied"),
        "{refused}"
    );
    commit_rows(&db, 100..200);
    assert_eq!(db.log_stopped(), None);
    mode(0o700);
    db.checkpoint()
        .expect("a checkpoint once the directory is writable");
    commit_rows(&db, 200..250);
}

#[test]
fn a_read_only_data_directory_refuses_checkpoints_and_keeps_every_commit() {
    let dir = Dir::new("read-only");
    std::fs::create_dir_all(&dir.0).expect("directory");
    // Root ignores a directory's mode unless it gives up the capabilities that override it.
    let Some(stdout) = run_child(
        r#"if [ "$(id -u)" = 0 ]; then set -- setpriv --bounding-set=-dac_override,-dac_read_search -- "$@"; fi; exec "$@" --exact "$TEST_NAME" --nocapture --test-threads=1"#,
        "child_loses_write_permission_to_its_directory",
        &[],
        (READ_ONLY_DIR, &dir.0),
        "bash (and, as root, setpriv) are needed",
    ) else {
        return;
    };
    assert_eq!(acknowledged(&stdout), (0..250).collect::<Vec<_>>());
    let db = Database::open(&dir.0, options(Durability::Sync)).expect("opens");
    let recovered = db.recovered().expect("recovered");
    assert!(recovered.checkpoint.is_some(), "{recovered:?}");
    let ids: Vec<i64> = rows(&db).into_keys().collect();
    assert_eq!(ids, (0..250).collect::<Vec<_>>());
}

/// Runs this test binary as a child through the bash `script`, which gets `args` and then the
/// binary as its positional parameters, with `env` set and `$TEST_NAME` naming the child's
/// `test` as libtest knows it; returns its output once it succeeded,
/// or `None` (saying why: `needs`) if it could not be started.
fn run_child(
    script: &str,
    test: &str,
    args: &[&std::ffi::OsStr],
    env: (&str, &Path),
    needs: &str,
) -> Option<String> {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .args(args)
        .arg(&exe)
        .env(env.0, env.1)
        .env("TEST_NAME", common::test_name(module_path!(), test))
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: {needs} ({e})");
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(stdout)
}

/// The ids a child printed as acknowledged.
fn acknowledged(stdout: &str) -> Vec<i64> {
    stdout
        .lines()
        // The first may follow the harness's "test ... " on its line.
        .filter_map(|l| l.split_once("acknowledged ").map(|(_, id)| id))
        .map(|id| id.parse().expect("id"))
        .collect()
}
