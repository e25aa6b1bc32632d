//! Pipelined commit: a transaction ends at its in-memory commit and hands back an
//! acknowledgement, which resolves only once its log record is durable (a read-only one's, once
//! what it read is). Polled as a future, it registers the poller's waker with the log writer,
//! which wakes it at the flush.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use overtake_engine::{Database, Durability, Isolation, Priority, RetryPolicy};

use crate::common;
use common::kept::{Dir, accounts, options};

/// Nothing nobody urgent asked for is flushed during a test.
const GROUP_COMMIT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn poll(ack: &mut overtake_engine::Acknowledgement, waker: &Waker) -> Poll<()> {
    std::pin::Pin::new(ack)
        .poll(&mut Context::from_waker(waker))
        .map(|r| r.expect("durable"))
}

fn open(dir: &Dir, durability: Durability) -> Database {
    Database::open(&dir.0, options(durability).group_commit(GROUP_COMMIT)).expect("open")
}

/// Commits an urgent transaction: it asks for the flush at once, and returns once durable.
fn flush_by_urgent_commit(db: &Database, t: &overtake_engine::Table, id: i64) {
    let mut txn = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    let row = t.row_builder().int(0, id).int(1, 1).str(2, "u").finish();
    txn.insert(t, row.expect("row")).expect("insert");
    txn.commit().expect("urgent commit");
}

#[test]
fn a_pipelined_commit_is_visible_at_once_and_acknowledged_only_after_its_flush() {
    let dir = Dir::new("pipelined");
    let db = open(&dir, Durability::Sync);
    let t = accounts(&db);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let row = t.row_builder().int(0, 1).int(1, 100).str(2, "o").finish();
    txn.insert(&t, row.expect("row")).expect("insert");
    let mut ack = txn.commit_pipelined().expect("commit");
    drop(txn);
    assert!(!ack.is_ready(), "durable with no flush");
    // Visible in memory to others...
    let key = t.key().int(1).finish().expect("key");
    let mut reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(reader.get(&t, &key, |r| r.int(1)), Ok(Some(100)));
    // ...whose answer is held too: what it read is not durable.
    let mut read = reader.commit_pipelined().expect("read-only commit");
    assert!(!read.is_ready(), "a read of a commit not durable answered");
    let (flag, read_flag) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    let (waker, read_waker) = (
        Waker::from(Arc::clone(&flag)),
        Waker::from(Arc::clone(&read_flag)),
    );
    assert_eq!(poll(&mut ack, &waker), Poll::Pending);
    assert_eq!(poll(&mut read, &read_waker), Poll::Pending);
    assert!(!flag.0.load(Ordering::SeqCst));
    flush_by_urgent_commit(&db, &t, 2);
    // The flush that made the urgent commit durable passed ours: both pollers are woken.
    while !(flag.0.load(Ordering::SeqCst) && read_flag.0.load(Ordering::SeqCst)) {
        std::thread::yield_now();
    }
    assert_eq!(poll(&mut ack, &waker), Poll::Ready(()));
    assert_eq!(poll(&mut read, &read_waker), Poll::Ready(()));
}

#[test]
fn a_pipelined_run_leaves_its_acknowledgement_and_a_waited_run_does_not() {
    let dir = Dir::new("pipelined-run");
    let db = open(&dir, Durability::Sync);
    let t = accounts(&db);
    let policy = RetryPolicy::default();
    let t = &*t;
    let insert = |id: i64| {
        move |txn: &mut overtake_engine::Transaction<'_>| {
            let row = t.row_builder().int(0, id).int(1, 7).str(2, "r").finish()?;
            txn.insert(t, row)
        }
    };
    let mut pipelined = db.run_pipelined(Priority::LOW, Isolation::Snapshot, &policy, insert(1));
    assert!(pipelined.result.is_ok());
    let ack = pipelined
        .acknowledgement
        .take()
        .expect("an acknowledgement");
    assert!(!ack.is_ready());
    // An urgent run waits for its own flush, which covers the earlier commit.
    let waited = db.run(Priority::HIGH, Isolation::Snapshot, &policy, insert(2));
    assert!(waited.result.is_ok());
    assert!(waited.acknowledgement.is_none());
    assert!(ack.is_ready());
    assert_eq!(ack.wait().0, Ok(()));
}

#[test]
fn in_memory_and_async_commits_are_acknowledged_at_once() {
    for durability in [Durability::Off, Durability::Async] {
        let dir = Dir::new("pipelined-async");
        let db = open(&dir, durability);
        let t = accounts(&db);
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let row = t.row_builder().int(0, 1).int(1, 100).str(2, "o").finish();
        txn.insert(&t, row.expect("row")).expect("insert");
        assert!(
            txn.commit_pipelined().expect("commit").is_ready(),
            "{durability:?}"
        );
    }
}
