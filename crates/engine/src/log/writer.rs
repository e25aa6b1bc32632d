//! Group commit: committing transactions append their records to one shared buffer (inside their
//! commit regions: a copy under a region latch), and a log writer thread writes the buffer out and
//! makes it durable, in batches bounded by an interval and a size.
//!
//! A position in the log (an LSN) is the number of bytes appended before a record's end, over the
//! log's whole life. A `sync` commit waits, outside any region, until the durable LSN reaches its
//! record's end: a task parks (its worker runs others), a plain thread sleeps. Priority reaches the
//! log: a waiter above the lowest level asks for a flush at once instead of waiting for the
//! interval, and joins the flush in flight if there is one.
//!
//! The log is a series of segment files; a checkpoint asks the writer to start the next one
//! ([`LogWriter::rotate`]), which cuts the log at an exact point: every record appended before the
//! cut is in the old segment, durable, and every later one in the new segment.
//!
//! The writer thread is the only place that blocks in the kernel for the log; it must never run
//! on a worker. A batch that cannot be written (or made durable, or given a segment) is written
//! again, whole, a few times over about a second and a half, its waiters still waiting; if it
//! still fails, the log stops for good (PostgreSQL PANICs): every waiter and every later one is
//! told why, and nothing more is written (a waiter's record is in doubt: a write or sync that
//! failed may have reached the disk all the same, and then a restart keeps it), and a restart
//! recovers the durable prefix.
//!
//! Parts: this module (the shared buffer, waits for durability, cuts, statistics), `thread`
//! (the writer thread's loop: batches, flushes, segments, failures) and `overlap` (the helper
//! that lets a second flush, an urgent commit's, start while one is in flight).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::RegionMutex;
use overtake_runtime::os::thread::ServiceClass;

use overtake_runtime::park::{self, Unparker};

use wait::Waiter;
pub(crate) use wait::{Progress, Target};

/// Bytes of a segment: the writer moves on to the next segment when a batch does not fit in
/// this one (the batch goes whole to the next), and segments are prepared this long.
pub(crate) const SEGMENT_BYTES: u64 = 64 << 20;

/// Where the log's bytes go: a file, or a test's stand-in that fails or delays.
pub(crate) trait LogFile: Send {
    /// Appends `bytes` (all of them, or an error).
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file back to `len` bytes (after a failed append, before it is retried), so that
    /// a half-written batch never stays in the middle of the log.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
    /// A handle that syncs this file from another thread while it is appended to, so that a
    /// second flush can start while one is in flight; `None`: one sync at a time.
    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        None
    }
}

/// Makes durable everything appended to a log file before the call; callable from any thread,
/// also while the file is appended to.
pub(crate) trait Syncer: Send + Sync {
    fn sync(&self) -> io::Result<()>;
}

/// Where new segments come from when the log is cut for a checkpoint.
pub(crate) trait Segments: Send {
    /// Creates segment `n` (its header and name durable) and returns it for appending; leaves
    /// nothing behind when it fails.
    fn create(&mut self, n: u64) -> io::Result<Box<dyn LogFile>>;
}

/// How the writer batches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batching {
    /// Longest time appended bytes wait for a flush nobody urgent asked for.
    pub(crate) interval: Duration,
    /// Pending bytes that start a flush at once.
    pub(crate) bytes: usize,
}

/// What the writer did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WriterStats {
    pub(crate) flushes: u64,
    pub(crate) bytes: u64,
    pub(crate) durable_lsn: u64,
    /// Time spent writing and syncing.
    pub(crate) flush_time: Duration,
    /// Flushes started while another was in flight.
    pub(crate) overlapped: u64,
    /// Flushes by duration (see `Shared::flush_buckets`).
    pub(crate) flush_buckets: [u64; FLUSH_BUCKETS],
    /// Urgent parked waits, split (see `Shared::asked_to_durable`).
    pub(crate) asked_to_durable: [u64; FLUSH_BUCKETS],
    pub(crate) durable_to_resumed: [u64; FLUSH_BUCKETS],
    /// The segment appends go to.
    pub(crate) segment: u64,
    /// How the operating system schedules the writer (`None` until it started).
    pub(crate) class: Option<ServiceClass>,
}

/// Flushes remembered for splitting urgent waits.
const PUBLISHED: usize = 256;

/// Buckets per power of two of the time histograms: a time is known to within an eighth.
const SUB_BUCKETS: usize = 8;

/// Buckets of the time histograms: exact below 8 us, then eight per power of two up to 2^25 us
/// (the last holds everything from about 30 s up).
pub(crate) const FLUSH_BUCKETS: usize = SUB_BUCKETS * 23;

/// The bucket of a time of `micros` microseconds.
fn bucket(micros: u64) -> usize {
    if micros < SUB_BUCKETS as u64 {
        return micros as usize;
    }
    // The top bit says which power of two, the three below it which eighth of it.
    let power = micros.ilog2() as usize;
    let eighth = ((micros >> (power - 3)) & 7) as usize;
    (SUB_BUCKETS * (power - 2) + eighth).min(FLUSH_BUCKETS - 1)
}

/// The end (exclusive, in microseconds) of bucket `i`.
pub(crate) fn bucket_end(i: usize) -> u64 {
    if i < SUB_BUCKETS {
        return i as u64 + 1;
    }
    let (power, eighth) = (i / SUB_BUCKETS + 2, i % SUB_BUCKETS);
    ((SUB_BUCKETS + eighth + 1) as u64) << (power - 3)
}

struct Pending {
    bytes: Vec<u8>,
    /// The LSN at the end of `bytes`.
    end: u64,
    /// The newest commit timestamp appended so far (ever, not only in `bytes`).
    newest_ts: u64,
}

struct Shared {
    pending: RegionMutex<Pending>,
    durable: AtomicU64,
    /// Per transaction slot, while its commit has (or is about to draw) a timestamp but has not
    /// appended its record: a lower bound of that timestamp; 0 otherwise. Cleared under the
    /// `pending` latch as the record is appended, and read under it (see `durable_ts`).
    unlogged: Box<[AtomicU64]>,
    /// Every commit with a timestamp at or before this one is durable. At each batch the
    /// writer takes, under the `pending` latch, the newest timestamp appended, lowered below
    /// any commit still between its timestamp and its append; once the batch is durable, that
    /// is durable through.
    durable_ts: AtomicU64,
    /// Readers waiting for `durable_ts` to reach theirs.
    ts_waiters: RegionMutex<Vec<(u64, Waiter)>>,
    /// Why the log stopped, once it has: set once, by the writer, which then writes nothing
    /// more; every waiter is told.
    stopped: OnceLock<String>,
    waiters: RegionMutex<Vec<(u64, Waiter)>>,
    flush_now: AtomicBool,
    /// An urgent commit asked for the flush (`flush_now` is set too).
    urgent_now: AtomicBool,
    stop: AtomicBool,
    thread: OnceLock<Thread>,
    batching: Batching,
    flushes: AtomicU64,
    /// Flushes started while another was in the disk (see `overlap`).
    overlapped: AtomicU64,
    bytes: AtomicU64,
    /// Time spent writing and syncing, over all flushes.
    flush_nanos: AtomicU64,
    /// Flushes by how long they took (see [`bucket`]).
    flush_buckets: [AtomicU64; FLUSH_BUCKETS],
    /// The last flushes: the durable LSN each made, and when (nanoseconds since `epoch`).
    published: RegionMutex<std::collections::VecDeque<(u64, u64)>>,
    epoch: std::time::Instant,
    /// Urgent waits that parked, split where the durable LSN passed theirs: from asking for the
    /// flush to then, and from then until the waiter ran again (same buckets as flushes).
    asked_to_durable: [AtomicU64; FLUSH_BUCKETS],
    durable_to_resumed: [AtomicU64; FLUSH_BUCKETS],
    segment: AtomicU64,
    rotation: RegionMutex<Rotation>,
    /// How the operating system schedules the writer thread.
    class: OnceLock<ServiceClass>,
}

/// A cut of the log asked for, and its answer.
#[derive(Default)]
struct Rotation {
    /// Who asked, not yet taken up by the writer.
    requested: Option<Unparker>,
    /// The new segment's number, or why there is none.
    done: Option<Result<u64, String>>,
}

/// The log writer: the shared buffer, and the thread that flushes it.
pub(crate) struct LogWriter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LogWriter {
    /// Starts the writer thread appending to segment `number`, `file`, which holds `len` durable
    /// bytes; `lsn` is the log's position so far (a record's LSN counts the bytes of every record
    /// before it, over all segments); `slots` is how many transactions may commit at once, and
    /// every commit at or before timestamp `durable_ts` is durable already.
    pub(crate) fn start(
        segments: Box<dyn Segments>,
        (file, number, len): (Box<dyn LogFile>, u64, u64),
        (lsn, slots, durable_ts): (u64, usize, u64),
        batching: Batching,
    ) -> io::Result<LogWriter> {
        let shared = Arc::new(Shared {
            pending: RegionMutex::new(Pending {
                bytes: Vec::with_capacity(batching.bytes * 2),
                end: lsn,
                newest_ts: durable_ts,
            }),
            durable: AtomicU64::new(lsn),
            unlogged: (0..slots.max(1)).map(|_| AtomicU64::new(0)).collect(),
            durable_ts: AtomicU64::new(durable_ts),
            ts_waiters: RegionMutex::new(Vec::new()),
            stopped: OnceLock::new(),
            waiters: RegionMutex::new(Vec::new()),
            flush_now: AtomicBool::new(false),
            urgent_now: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            thread: OnceLock::new(),
            batching,
            flushes: AtomicU64::new(0),
            overlapped: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            flush_nanos: AtomicU64::new(0),
            flush_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            published: RegionMutex::new(std::collections::VecDeque::with_capacity(PUBLISHED)),
            epoch: std::time::Instant::now(),
            asked_to_durable: std::array::from_fn(|_| AtomicU64::new(0)),
            durable_to_resumed: std::array::from_fn(|_| AtomicU64::new(0)),
            segment: AtomicU64::new(number),
            rotation: RegionMutex::new(Rotation::default()),
            class: OnceLock::new(),
        });
        let current = thread::Current {
            file,
            number,
            len,
            segments,
            next: None,
        };
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || {
                // Known before its first look at the flag: a request made before this is seen
                // by that look, one made after finds the thread to unpark.
                let _ = for_thread.thread.set(std::thread::current());
                // Committers wait for it: it must run as soon as it wakes (see
                // `serve_promptly`), not at the next tick after a spinning thread's.
                let _ = for_thread
                    .class
                    .set(overtake_runtime::os::thread::serve_promptly());
                thread::write_loop(&for_thread, current)
            })?;
        Ok(LogWriter {
            shared,
            thread: Some(thread),
        })
    }

    /// Appends one framed record (called inside the commit region): a commit's, at timestamp
    /// `ts` of transaction slot `slot`, or a table's (`None`); returns the LSN at its end.
    pub(crate) fn append(
        &self,
        record: &[u8],
        commit: Option<(u64, usize)>,
        region: &NoPreemptGuard,
    ) -> u64 {
        let mut pending = self.shared.pending.lock(region);
        pending.bytes.extend_from_slice(record);
        pending.end += record.len() as u64;
        if let Some((ts, slot)) = commit {
            pending.newest_ts = pending.newest_ts.max(ts);
            self.shared.unlogged[slot].store(0, Ordering::SeqCst);
        }
        let end = pending.end;
        let full = pending.bytes.len() >= self.shared.batching.bytes;
        drop(pending);
        if full {
            self.shared.ask_for_flush();
        }
        end
    }

    /// Returns once the log is durable up to `lsn`, or with the I/O error that kept it from being.
    /// `urgent`: flush at once rather than at the end of the interval. Must not be called inside a
    /// region (it parks).
    #[cfg(test)]
    pub(crate) fn wait_durable(&self, lsn: u64, urgent: bool) -> Result<(), String> {
        self.progress().wait(Target::Lsn(lsn), urgent)
    }

    /// Its progress, to wait on apart from the writer (see [`Progress`]).
    pub(crate) fn progress(&self) -> Progress {
        Progress(Arc::clone(&self.shared))
    }

    /// Cuts the log: the records appended so far are made durable in the current segment, and
    /// later ones go to a new one, whose number it returns. Parks until then (never call it
    /// inside a region); one cut at a time.
    pub(crate) fn rotate(&self) -> Result<u64, String> {
        let shared = &self.shared;
        let me = park::current_unparker();
        {
            let region = NoPreemptGuard::new();
            let mut rotation = shared.rotation.lock(&region);
            assert!(
                rotation.requested.is_none() && rotation.done.is_none(),
                "the log is cut by one checkpoint at a time"
            );
            rotation.requested = Some(me);
        }
        shared.ask_for_flush();
        loop {
            {
                let region = NoPreemptGuard::new();
                if let Some(done) = shared.rotation.lock(&region).done.take() {
                    return done;
                }
            }
            park::park();
        }
    }

    /// What it did so far.
    /// Commits waiting for their records to be durable.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.shared.waiters.lock(&NoPreemptGuard::new()).len()
    }

    /// The commit of transaction slot `slot` is about to draw its timestamp, which will be at
    /// least `bound`: until its record is appended (or [`logged`](Self::logged) says it failed),
    /// commits from `bound` on are not known to be in the log.
    pub(crate) fn unlogged(&self, slot: usize, bound: u64) {
        self.shared.unlogged[slot].store(bound, Ordering::SeqCst);
    }

    /// The commit of slot `slot` failed before appending: see [`unlogged`](Self::unlogged).
    pub(crate) fn logged(&self, slot: usize) {
        self.shared.unlogged[slot].store(0, Ordering::SeqCst);
    }

    /// Every commit with a timestamp at or before this is durable.
    pub(crate) fn durable_ts(&self) -> u64 {
        self.shared.durable_ts.load(Ordering::Acquire)
    }

    /// Returns once every commit with a timestamp at or before `ts` is durable, or with the
    /// reason the log stopped. `urgent`: flush at once rather than at the end of the interval.
    /// Must not be called inside a region (it parks).
    #[cfg(test)]
    pub(crate) fn wait_durable_ts(&self, ts: u64, urgent: bool) -> Result<(), String> {
        self.progress().wait(Target::Ts(ts), urgent)
    }

    /// The log is durable up to here.
    pub(crate) fn durable_lsn(&self) -> u64 {
        self.shared.durable.load(Ordering::Acquire)
    }

    /// Why the log stopped, if it has (see the module's description).
    pub(crate) fn stopped(&self) -> Option<&str> {
        self.shared.stopped.get().map(String::as_str)
    }

    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            flushes: self.shared.flushes.load(Ordering::Relaxed),
            bytes: self.shared.bytes.load(Ordering::Relaxed),
            durable_lsn: self.shared.durable.load(Ordering::Acquire),
            flush_time: Duration::from_nanos(self.shared.flush_nanos.load(Ordering::Relaxed)),
            overlapped: self.shared.overlapped.load(Ordering::Relaxed),
            flush_buckets: load_all(&self.shared.flush_buckets),
            asked_to_durable: load_all(&self.shared.asked_to_durable),
            durable_to_resumed: load_all(&self.shared.durable_to_resumed),
            segment: self.shared.segment.load(Ordering::Acquire),
            class: self.shared.class.get().copied(),
        }
    }
}

impl Drop for LogWriter {
    /// Flushes what is pending and stops the thread.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.ask_for_flush();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Counts a duration of `nanos` in a histogram of microseconds (see [`bucket`]).
fn count(buckets: &[AtomicU64; FLUSH_BUCKETS], nanos: u64) {
    buckets[bucket(nanos / 1000)].fetch_add(1, Ordering::Relaxed);
}

fn load_all(buckets: &[AtomicU64; FLUSH_BUCKETS]) -> [u64; FLUSH_BUCKETS] {
    std::array::from_fn(|i| buckets[i].load(Ordering::Relaxed))
}

impl Shared {
    fn nanos(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// For an urgent commit: a flush at once, and, if one is in flight for commits nobody
    /// urgent waits for, a second beside it (see `thread::flush`).
    fn ask_for_urgent_flush(&self) {
        self.urgent_now.store(true, Ordering::SeqCst);
        self.ask_for_flush();
    }

    fn ask_for_flush(&self) {
        self.flush_now.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// Answers the cut `requester` asked for.
    fn answer_rotation(&self, requester: Unparker, done: Result<u64, String>) {
        let region = NoPreemptGuard::new();
        self.rotation.lock(&region).done = Some(done);
        drop(region);
        requester.unpark();
    }

    /// Every commit at or before `ts` is durable: wakes, and forgets, the readers waiting for
    /// that.
    fn durable_through(&self, ts: u64) {
        let before = self.durable_ts.fetch_max(ts, Ordering::AcqRel);
        if ts <= before {
            return;
        }
        let region = NoPreemptGuard::new();
        self.ts_waiters.lock(&region).retain(|(wanted, waiter)| {
            let done = *wanted <= ts;
            if done {
                waiter.wake();
            }
            !done
        });
    }

    /// The newest timestamp every commit at or before which has appended its record (read
    /// under the `pending` latch, which appends take).
    fn appended_through(&self, pending: &Pending) -> u64 {
        let in_flight = self
            .unlogged
            .iter()
            .map(|b| b.load(Ordering::SeqCst))
            .filter(|&b| b != 0)
            .min();
        match in_flight {
            Some(bound) => pending.newest_ts.min(bound - 1),
            None => pending.newest_ts,
        }
    }

    /// Wakes, and forgets, every waiter at or below `upto` (durable now, or failed: each looks
    /// which).
    fn wake(&self, upto: u64) {
        let region = NoPreemptGuard::new();
        let mut waiters = self.waiters.lock(&region);
        waiters.retain(|(lsn, waiter)| {
            let done = *lsn <= upto;
            if done {
                waiter.wake();
            }
            !done
        });
    }
}

mod overlap;
mod thread;
mod wait;

#[cfg(test)]
mod tests;
