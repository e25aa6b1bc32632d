//! The log writer's tests: urgent flushes, failed syncs, and cuts, over files in memory.

use super::SEGMENT_BYTES;
use super::thread::RETRIES;
use super::*;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

/// A file whose syncs the test holds, fails or lets through, and which says when a sync
/// starts; its syncs may run on the writer's helper, two at once.
struct Gated {
    written: Arc<Mutex<Vec<u8>>>,
    gate: Arc<Gate>,
}

struct Gate {
    sync_started: Sender<()>,
    /// `Ok` lets a sync through; `Err` fails it (in the order the syncs take them).
    verdicts: Mutex<Receiver<Result<(), ()>>>,
}

impl Syncer for Gate {
    fn sync(&self) -> io::Result<()> {
        let _ = self.sync_started.send(());
        match self.verdicts.lock().expect("test").recv() {
            Ok(Ok(())) | Err(_) => Ok(()),
            Ok(Err(())) => Err(io::Error::other("no space left on device")),
        }
    }
}

impl LogFile for Gated {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.written.lock().expect("test").extend_from_slice(bytes);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.gate.sync()
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.written.lock().expect("test").truncate(len as usize);
        Ok(())
    }
    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        Some(Arc::clone(&self.gate) as Arc<dyn Syncer>)
    }
}

struct NoSegments;

impl Segments for NoSegments {
    fn create(&mut self, _: u64) -> io::Result<Box<dyn LogFile>> {
        Err(io::Error::other("no segments here"))
    }
}

/// Segments in memory: each a buffer starting with its header.
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<Bytes>>>);

type Bytes = Arc<Mutex<Vec<u8>>>;

struct MemoryFile(Bytes);

impl LogFile for MemoryFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.0.lock().expect("test").extend_from_slice(bytes);
        Ok(())
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.0.lock().expect("test").truncate(len as usize);
        Ok(())
    }
}

impl Segments for Memory {
    fn create(&mut self, n: u64) -> io::Result<Box<dyn LogFile>> {
        let file = Arc::new(Mutex::new(crate::log::record::header(n).to_vec()));
        self.0.lock().expect("test").push(Arc::clone(&file));
        Ok(Box::new(MemoryFile(file)))
    }
}

#[test]
fn a_cut_puts_every_earlier_record_durably_in_the_old_segment_and_later_ones_in_the_new() {
    let mut memory = Memory::default();
    let first = memory.create(1).expect("segment");
    let first_len = crate::log::record::HEADER_LEN as u64;
    let batching = Batching {
        interval: Duration::from_secs(3600),
        bytes: 1 << 20,
    };
    let writer = LogWriter::start(
        Box::new(memory.clone()),
        (first, 1, first_len),
        (0, 1, 0),
        batching,
    )
    .expect("start");
    let before = append(&writer, b"before");
    assert_eq!(writer.rotate(), Ok(2));
    // The cut made what came before it durable without anyone waiting for it.
    assert_eq!(writer.stats().durable_lsn, before);
    assert_eq!(writer.stats().segment, 2);
    let after = append(&writer, b"after");
    assert_eq!(writer.wait_durable(after, true), Ok(()));
    let files: Vec<Vec<u8>> = memory
        .0
        .lock()
        .expect("test")
        .iter()
        .map(|f| f.lock().expect("test").clone())
        .collect();
    let header = |n| crate::log::record::header(n).to_vec();
    // The old segment ends naming the new one.
    let mut continued = Vec::new();
    crate::log::record::encode_continued(&mut continued, 2);
    assert_eq!(
        files,
        [
            [header(1), b"before".to_vec(), continued].concat(),
            [header(2), b"after".to_vec()].concat()
        ]
    );
    assert_eq!(writer.rotate(), Ok(3));
    drop(writer);
}

struct Harness {
    writer: Arc<LogWriter>,
    written: Arc<Mutex<Vec<u8>>>,
    sync_started: Receiver<()>,
    verdicts: Sender<Result<(), ()>>,
}

/// A writer whose interval is an hour: only a full buffer or an urgent waiter flushes.
fn harness() -> Harness {
    let (started_tx, started_rx) = channel();
    let (verdict_tx, verdict_rx) = channel();
    let written = Arc::new(Mutex::new(Vec::new()));
    let file = Gated {
        written: Arc::clone(&written),
        gate: Arc::new(Gate {
            sync_started: started_tx,
            verdicts: Mutex::new(verdict_rx),
        }),
    };
    let batching = Batching {
        interval: Duration::from_secs(3600),
        bytes: 1 << 20,
    };
    Harness {
        writer: Arc::new(
            LogWriter::start(
                Box::new(NoSegments),
                (Box::new(file), 1, 0),
                (0, 1, 0),
                batching,
            )
            .expect("start"),
        ),
        written,
        sync_started: started_rx,
        verdicts: verdict_tx,
    }
}

fn append(w: &LogWriter, bytes: &[u8]) -> u64 {
    let region = NoPreemptGuard::new();
    w.append(bytes, None, &region)
}

#[test]
fn an_urgent_commit_is_flushed_at_once_and_acknowledged_only_after_the_sync() {
    let h = harness();
    let lsn = append(&h.writer, b"record");
    let (done, waiter) = waiter(&h.writer, lsn, true);
    // The flush started without waiting for the hour-long interval.
    h.sync_started.recv().expect("a flush started");
    assert_eq!(&*h.written.lock().expect("test"), b"record");
    assert!(
        !done.load(Ordering::Acquire),
        "acknowledged before the sync"
    );
    h.verdicts.send(Ok(())).expect("writer alive");
    assert_eq!(waiter.join().expect("waiter"), Ok(()));
    assert_eq!(h.writer.stats().durable_lsn, lsn);
}

/// A waiting commit: whether it was told, and what.
type Waiter = (Arc<AtomicBool>, std::thread::JoinHandle<Result<(), String>>);

/// Waits on another thread for `lsn` to be durable, as an `urgent` commit or not; the flag says
/// when it was told.
fn waiter(w: &Arc<LogWriter>, lsn: u64, urgent: bool) -> Waiter {
    let done = Arc::new(AtomicBool::new(false));
    let (w, d) = (Arc::clone(w), Arc::clone(&done));
    let waiter = std::thread::spawn(move || {
        let r = w.wait_durable(lsn, urgent);
        d.store(true, Ordering::Release);
        r
    });
    (done, waiter)
}

/// Two flushes in flight, their syncs held: a batch of background commits (a full buffer
/// starts its flush) and, beside it, an urgent commit's. Returns what the two wrote, the urgent
/// commit's LSN, and the two waiters (the batch's, then the urgent one).
fn two_flushes_in_flight(h: &Harness) -> (Vec<u8>, u64, [Waiter; 2]) {
    let batch = vec![b'b'; 1 << 20];
    let first = append(&h.writer, &batch);
    let background = waiter(&h.writer, first, false);
    h.sync_started.recv().expect("the first flush started");
    // The first sync is in the disk; an urgent commit arrives.
    let second = append(&h.writer, b"second");
    let urgent = waiter(&h.writer, second, true);
    // Its flush starts without waiting for the first. (Without it the test would wait for
    // ever: a minute is far more than it takes.)
    h.sync_started
        .recv_timeout(Duration::from_secs(60))
        .expect("a second flush started while the first was in flight");
    let both = [&batch[..], b"second"].concat();
    assert_eq!(*h.written.lock().expect("test"), both);
    (both, second, [background, urgent])
}

#[test]
fn an_urgent_commit_during_a_batchs_flush_gets_its_own_at_once_and_is_acknowledged_after_both_syncs()
 {
    let h = harness();
    let (_, second, [(first_done, first_waiter), (second_done, second_waiter)]) =
        two_flushes_in_flight(&h);
    // One sync is let through; until the other is, the second commit is not acknowledged.
    h.verdicts.send(Ok(())).expect("writer alive");
    assert!(
        !second_done.load(Ordering::Acquire),
        "acknowledged before its sync"
    );
    h.verdicts.send(Ok(())).expect("writer alive");
    assert_eq!(first_waiter.join().expect("waiter"), Ok(()));
    assert_eq!(second_waiter.join().expect("waiter"), Ok(()));
    assert!(first_done.load(Ordering::Acquire));
    let stats = h.writer.stats();
    assert_eq!((stats.durable_lsn, stats.overlapped), (second, 1));
}

#[test]
fn when_either_of_two_flushes_in_flight_fails_both_are_written_again_and_nothing_is_acknowledged_before()
 {
    let h = harness();
    let (both, second, [(first_done, first_waiter), (second_done, second_waiter)]) =
        two_flushes_in_flight(&h);
    // One sync fails (its pages may be lost), the other succeeds: neither counts.
    h.verdicts.send(Err(())).expect("writer alive");
    h.verdicts.send(Ok(())).expect("writer alive");
    // Both parts are written again, once, as one batch.
    h.sync_started.recv().expect("the retry started");
    assert!(!first_done.load(Ordering::Acquire) && !second_done.load(Ordering::Acquire));
    assert_eq!(h.writer.stats().durable_lsn, 0);
    assert_eq!(*h.written.lock().expect("test"), both);
    h.verdicts.send(Ok(())).expect("writer alive");
    assert_eq!(first_waiter.join().expect("waiter"), Ok(()));
    assert_eq!(second_waiter.join().expect("waiter"), Ok(()));
    assert_eq!(h.writer.stats().durable_lsn, second);
    assert_eq!(*h.written.lock().expect("test"), both);
}

#[test]
fn a_failed_sync_is_retried_and_its_waiter_told_only_of_the_success() {
    let h = harness();
    let lsn = append(&h.writer, b"first");
    let w = Arc::clone(&h.writer);
    let waiter = std::thread::spawn(move || w.wait_durable(lsn, true));
    // Two failures (a disk full for a moment), then space returns.
    for verdict in [Err(()), Err(()), Ok(())] {
        h.sync_started.recv().expect("a flush started");
        h.verdicts.send(verdict).expect("writer alive");
    }
    assert_eq!(waiter.join().expect("waiter"), Ok(()));
    assert_eq!(h.writer.stopped(), None);
    // Each try wrote the batch again over what the failed one left: it is there once.
    assert_eq!(&*h.written.lock().expect("test"), b"first");
}

#[test]
fn a_batch_that_keeps_failing_stops_the_log_for_good() {
    let h = harness();
    let lsn = append(&h.writer, b"first");
    let w = Arc::clone(&h.writer);
    let waiter = std::thread::spawn(move || w.wait_durable(lsn, true));
    for _ in 0..=RETRIES.len() {
        h.sync_started.recv().expect("a flush started");
        h.verdicts.send(Err(())).expect("writer alive");
    }
    let failed = waiter.join().expect("waiter");
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.contains("no space") && e.contains("the log has stopped")),
        "{failed:?}"
    );
    assert_eq!(h.writer.stopped(), failed.err().as_deref());
    // The writer has ended (its file, and so the channel, are dropped) without another try.
    assert!(h.sync_started.recv().is_err(), "tried again after stopping");
    // A later commit is told at once, and nothing was made durable.
    let later = append(&h.writer, b"later");
    assert!(h.writer.wait_durable(later, true).is_err());
    assert_eq!(h.writer.stats().durable_lsn, 0);
    assert_eq!(&*h.written.lock().expect("test"), b"");
}

/// Segments in memory, the first `failures` of which cannot be made (as in a removed
/// directory).
struct Breakable {
    memory: Memory,
    failures: Arc<std::sync::atomic::AtomicUsize>,
}

impl Segments for Breakable {
    fn create(&mut self, n: u64) -> io::Result<Box<dyn LogFile>> {
        let left = self.failures.load(Ordering::Acquire);
        if left > 0 {
            self.failures.store(left - 1, Ordering::Release);
            return Err(io::Error::other("No such file or directory"));
        }
        self.memory.create(n)
    }
}

/// A writer whose segment 1 is full, with segments that fail to be made `failures` times.
fn full_segment(failures: usize) -> (LogWriter, Memory) {
    let memory = Memory::default();
    let segments = Breakable {
        memory: memory.clone(),
        failures: Arc::new(failures.into()),
    };
    let first: Box<dyn LogFile> = Box::new(MemoryFile(Arc::default()));
    let batching = Batching {
        interval: Duration::from_secs(3600),
        bytes: 1 << 20,
    };
    let writer = LogWriter::start(
        Box::new(segments),
        (first, 1, SEGMENT_BYTES),
        (0, 1, 0),
        batching,
    )
    .expect("start");
    (writer, memory)
}

#[test]
fn a_full_segment_waits_for_the_next_one_and_never_grows() {
    let (writer, memory) = full_segment(2);
    let lsn = append(&writer, b"record");
    assert_eq!(writer.wait_durable(lsn, true), Ok(()));
    let files = memory.0.lock().expect("test");
    assert_eq!(files.len(), 1);
    let header = crate::log::record::header(2).to_vec();
    assert_eq!(
        *files[0].lock().expect("test"),
        [header, b"record".to_vec()].concat()
    );
}

#[test]
fn a_full_segment_without_a_next_one_stops_the_log() {
    let (writer, memory) = full_segment(usize::MAX);
    let lsn = append(&writer, b"record");
    let failed = writer.wait_durable(lsn, true);
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.contains("creating log segment 2")
                && e.contains("No such file")
                && e.contains("the log has stopped")),
        "{failed:?}"
    );
    assert_eq!(writer.stats().durable_lsn, 0, "nothing written");
    assert!(memory.0.lock().expect("test").is_empty());
}

/// A file that takes nothing: every append fails, and so does cutting back what it may have
/// kept (a disk that failed mid-write).
struct Broken(Arc<std::sync::atomic::AtomicUsize>);

impl LogFile for Broken {
    fn append(&mut self, _: &[u8]) -> io::Result<()> {
        self.0.fetch_add(1, Ordering::AcqRel);
        Err(io::Error::other("Input/output error"))
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn truncate(&mut self, _: u64) -> io::Result<()> {
        Err(io::Error::other("Read-only file system"))
    }
}

#[test]
fn a_segment_end_that_fails_and_cannot_be_cut_back_stops_the_log_at_once() {
    let appends = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let first: Box<dyn LogFile> = Box::new(Broken(Arc::clone(&appends)));
    let memory = Memory::default();
    let batching = Batching {
        interval: Duration::from_secs(3600),
        bytes: 1 << 20,
    };
    // Segment 1 is full: the next batch first ends it with a record naming segment 2.
    let writer = LogWriter::start(
        Box::new(memory.clone()),
        (first, 1, SEGMENT_BYTES),
        (0, 1, 0),
        batching,
    )
    .expect("start");
    let lsn = append(&writer, b"record");
    let failed = writer.wait_durable(lsn, true);
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.contains("Input/output error")
                && e.contains("cutting the log back failed")
                && e.contains("the log has stopped")),
        "{failed:?}"
    );
    // Not tried again: a second end record would follow the first's remains.
    assert_eq!(appends.load(Ordering::Acquire), 1);
    assert_eq!(writer.stats().durable_lsn, 0);
    // Segment 2 was made but holds nothing beyond its header.
    let files = memory.0.lock().expect("test");
    assert_eq!(
        *files[0].lock().expect("test"),
        crate::log::record::header(2).to_vec()
    );
}

#[test]
fn durable_through_a_timestamp_waits_for_commits_that_drew_one_before_appending() {
    let memory = Memory::default();
    let mut segments = memory.clone();
    let first = segments.create(1).expect("segment");
    let batching = Batching {
        interval: Duration::from_secs(3600),
        bytes: 1 << 20,
    };
    let len = crate::log::record::HEADER_LEN as u64;
    let writer =
        LogWriter::start(Box::new(memory), (first, 1, len), (0, 2, 3), batching).expect("start");
    // Everything through 3 was durable at the start.
    assert_eq!(writer.wait_durable_ts(3, true), Ok(()));
    // Slot 0 is about to commit at 5 or later; slot 1 commits at 7 and is flushed.
    writer.unlogged(0, 5);
    let region = NoPreemptGuard::new();
    let seven = writer.append(b"seven", Some((7, 1)), &region);
    drop(region);
    assert_eq!(writer.wait_durable(seven, true), Ok(()));
    // Durable through 4 only: 5 and 6 may be slot 0's, not in the log yet.
    assert_eq!(writer.durable_ts(), 4);
    let w = &writer;
    std::thread::scope(|s| {
        let reader = s.spawn(move || w.wait_durable_ts(7, true));
        // Slot 0 appends its commit at 6: then the log holds everything through 7.
        let region = NoPreemptGuard::new();
        let six = w.append(b"six", Some((6, 0)), &region);
        drop(region);
        assert_eq!(w.wait_durable(six, true), Ok(()));
        assert_eq!(reader.join().expect("reader"), Ok(()));
    });
    assert_eq!(writer.durable_ts(), 7);
}

#[test]
fn a_time_falls_in_the_bucket_that_holds_it_and_buckets_are_an_eighth_wide() {
    let start = |i: usize| if i == 0 { 0 } else { bucket_end(i - 1) };
    for micros in (0..70_000).chain([1 << 20, (1 << 25) - 1]) {
        let i = bucket(micros);
        assert!(
            start(i) <= micros && micros < bucket_end(i),
            "{micros} us in bucket {i}: [{}, {})",
            start(i),
            bucket_end(i)
        );
        assert!(
            bucket_end(i) - start(i) <= (start(i) / 8).max(1),
            "bucket {i} too wide"
        );
    }
    assert_eq!(bucket(u64::MAX), FLUSH_BUCKETS - 1);
    assert_eq!(bucket(1 << 25), FLUSH_BUCKETS - 1);
}
