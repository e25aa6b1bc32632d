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
//! told why, nothing more is written, so a commit reported as failed never becomes durable, and
//! a restart recovers the durable prefix.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::RegionMutex;
use overtake_runtime::os_thread::{self, ServiceClass};

use super::segment::SEGMENT_BYTES;
use overtake_runtime::park::{self, Unparker};

/// Where the log's bytes go: a file, or a test's stand-in that fails or delays.
pub(crate) trait LogFile: Send {
    /// Appends `bytes` (all of them, or an error).
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file back to `len` bytes (after a failed append, before it is retried), so that
    /// a half-written batch never stays in the middle of the log.
    fn truncate(&mut self, len: u64) -> io::Result<()>;
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriterStats {
    pub(crate) flushes: u64,
    pub(crate) bytes: u64,
    pub(crate) durable_lsn: u64,
    /// Time spent writing and syncing.
    pub(crate) flush_time: Duration,
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

/// Buckets of the flush-time histogram (the last holds everything from about 8 s up).
pub(crate) const FLUSH_BUCKETS: usize = 24;

/// The pauses before a failed batch is written again; after the last try the log stops.
const RETRIES: [Duration; 5] = [
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
    Duration::from_millis(1000),
];

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
    ts_waiters: RegionMutex<Vec<(u64, Unparker)>>,
    /// Why the log stopped, once it has: set once, by the writer, which then writes nothing
    /// more; every waiter is told.
    stopped: OnceLock<String>,
    waiters: RegionMutex<Vec<(u64, Unparker)>>,
    flush_now: AtomicBool,
    stop: AtomicBool,
    thread: OnceLock<Thread>,
    batching: Batching,
    flushes: AtomicU64,
    bytes: AtomicU64,
    /// Time spent writing and syncing, over all flushes.
    flush_nanos: AtomicU64,
    /// Flushes by how long they took: bucket `i` counts those of `[2^i, 2^(i+1))` microseconds.
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

/// The segment the writer appends to.
struct Current {
    file: Box<dyn LogFile>,
    number: u64,
    /// Bytes of the file that are written and durable (where a failed write is cut back to).
    len: u64,
    /// Makes the next one.
    segments: Box<dyn Segments>,
    /// The next one, made but not yet named at the end of this one (that write failed).
    next: Option<Box<dyn LogFile>>,
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
            stop: AtomicBool::new(false),
            thread: OnceLock::new(),
            batching,
            flushes: AtomicU64::new(0),
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
        let current = Current {
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
                    .set(overtake_runtime::os_thread::serve_promptly());
                write_loop(&for_thread, current)
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
    pub(crate) fn wait_durable(&self, lsn: u64, urgent: bool) -> Result<(), String> {
        let shared = &self.shared;
        if shared.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        let asked = urgent.then(|| {
            shared.ask_for_flush();
            shared.nanos()
        });
        let me = park::current_unparker();
        {
            let region = NoPreemptGuard::new();
            shared.waiters.lock(&region).push((lsn, me.clone()));
        }
        loop {
            // Returning leaves its entry for the writer to drop at the next flush (an unpark
            // then is a spurious wake, which parking allows): cheaper than a second latch here.
            if shared.durable.load(Ordering::Acquire) >= lsn {
                if let Some(asked) = asked {
                    let now = shared.nanos();
                    let region = NoPreemptGuard::new();
                    // The flush that passed our record (if it is still remembered).
                    let published = {
                        let published = shared.published.lock(&region);
                        // Ordered by LSN: the first flush that reached ours.
                        let i = published.partition_point(|&(durable, _)| durable < lsn);
                        published.get(i).map(|&(_, at)| at.max(asked))
                    };
                    drop(region);
                    if let Some(published) = published {
                        count(&shared.asked_to_durable, published - asked);
                        count(&shared.durable_to_resumed, now.saturating_sub(published));
                    }
                }
                return Ok(());
            }
            {
                let region = NoPreemptGuard::new();
                if let Some(why) = shared.stopped.get() {
                    let why = why.clone();
                    let mut waiters = shared.waiters.lock(&region);
                    waiters.retain(|(_, u)| !u.wakes_same(&me));
                    return Err(why);
                }
            }
            park::park();
        }
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
    pub(crate) fn wait_durable_ts(&self, ts: u64, urgent: bool) -> Result<(), String> {
        let shared = &self.shared;
        if shared.durable_ts.load(Ordering::Acquire) >= ts {
            return Ok(());
        }
        let me = park::current_unparker();
        {
            let region = NoPreemptGuard::new();
            shared.ts_waiters.lock(&region).push((ts, me.clone()));
        }
        if urgent {
            shared.ask_for_flush();
        }
        loop {
            if shared.durable_ts.load(Ordering::Acquire) >= ts {
                return Ok(());
            }
            if let Some(why) = shared.stopped.get() {
                let region = NoPreemptGuard::new();
                shared
                    .ts_waiters
                    .lock(&region)
                    .retain(|(_, u)| !u.wakes_same(&me));
                return Err(why.clone());
            }
            park::park();
        }
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

/// Counts a duration of `nanos` in a log2-of-microseconds histogram.
fn count(buckets: &[AtomicU64; FLUSH_BUCKETS], nanos: u64) {
    let micros = (nanos / 1000).max(1);
    buckets[(micros.ilog2() as usize).min(FLUSH_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
}

fn load_all(buckets: &[AtomicU64; FLUSH_BUCKETS]) -> [u64; FLUSH_BUCKETS] {
    std::array::from_fn(|i| buckets[i].load(Ordering::Relaxed))
}

impl Shared {
    fn nanos(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
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
        self.ts_waiters.lock(&region).retain(|(wanted, unparker)| {
            let done = *wanted <= ts;
            if done {
                unparker.unpark();
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
        waiters.retain(|(lsn, unparker)| {
            let done = *lsn <= upto;
            if done {
                unparker.unpark();
            }
            !done
        });
    }
}

fn write_loop(shared: &Shared, mut current: Current) {
    let mut batch: Vec<u8> = Vec::with_capacity(shared.batching.bytes * 2);
    // What was taken from the buffer but not yet written (kept across failures).
    let mut batch_end = shared.durable.load(Ordering::Acquire);
    // A cut taken up: the batch ends at it, so no more bytes are taken until the next segment
    // exists.
    let mut cutting: Option<Unparker> = None;
    // Tries of the batch that failed so far.
    let mut failed = 0;
    // Real-time, it would take a worker's core whenever it wakes: it keeps to the others.
    let mut off_workers = os_thread::OffPinnedCores::new();
    loop {
        off_workers.refresh();
        let stopping = shared.stop.load(Ordering::Acquire);
        if !shared.flush_now.swap(false, Ordering::SeqCst) && !stopping {
            std::thread::park_timeout(shared.batching.interval);
        }
        // The timestamp every commit at or before which is in `batch` or durable already.
        let mut batch_ts = None;
        if cutting.is_none() {
            let region = NoPreemptGuard::new();
            let mut pending = shared.pending.lock(&region);
            if !pending.bytes.is_empty() {
                // Committers append under this latch: take their bytes by swapping buffers, not
                // by copying up to a megabyte while they spin. Only a batch kept after a failed
                // write is extended.
                if batch.is_empty() {
                    std::mem::swap(&mut batch, &mut pending.bytes);
                } else {
                    batch.extend_from_slice(&pending.bytes);
                    pending.bytes.clear();
                }
                batch_end = pending.end;
            }
            batch_ts = Some(shared.appended_through(&pending));
            // Under the latch appends take: the cut falls exactly after what was just taken.
            cutting = shared.rotation.lock(&region).requested.take();
        }
        if !batch.is_empty()
            && current.len > super::record::HEADER_LEN as u64
            && current.len + batch.len() as u64 > SEGMENT_BYTES
            && let Err(e) = next_segment(shared, &mut current)
        {
            // The segment is full (everything in it durable): the batch goes whole to the next,
            // and waits for one. Growing this one instead would hide the failure, and write on
            // into a file that may be gone (its directory removed: every commit acknowledged,
            // none kept).
            let why = format!("creating log segment {}: {e}", current.number + 1);
            if !retry_later(shared, why, stopping, &mut failed, &mut cutting) {
                return;
            }
            continue;
        }
        if !batch.is_empty() {
            let file = &mut current.file;
            let started = std::time::Instant::now();
            match file.append(&batch).and_then(|()| file.sync()) {
                Ok(()) => {
                    let took = started.elapsed();
                    shared
                        .flush_nanos
                        .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
                    count(&shared.flush_buckets, took.as_nanos() as u64);
                    shared.flushes.fetch_add(1, Ordering::Relaxed);
                    shared
                        .bytes
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    current.len += batch.len() as u64;
                    batch.clear();
                    failed = 0;
                    let region = NoPreemptGuard::new();
                    {
                        let mut published = shared.published.lock(&region);
                        if published.len() == PUBLISHED {
                            published.pop_front();
                        }
                        published.push_back((batch_end, shared.nanos()));
                    }
                    shared.durable.store(batch_end, Ordering::Release);
                    drop(region);
                    // Before the committers are woken: one that reads next finds it.
                    if let Some(ts) = batch_ts.take() {
                        shared.durable_through(ts);
                    }
                    shared.wake(batch_end);
                }
                Err(e) => {
                    // The batch is written again in full at the next try, over whatever part
                    // of it reached the file (cut back to what is durable).
                    if let Err(cut) = file.truncate(current.len) {
                        // The file may now hold half a batch: writing after it would bury it
                        // in the middle of the log. Recovery cuts the torn tail.
                        stop(
                            shared,
                            format!("{e}; then cutting the log back failed: {cut}"),
                            &mut cutting,
                        );
                        return;
                    }
                    if !retry_later(shared, e.to_string(), stopping, &mut failed, &mut cutting) {
                        return;
                    }
                    continue;
                }
            }
        }
        // Nothing to write: everything appended is durable.
        if let Some(ts) = batch_ts.filter(|_| batch.is_empty()) {
            shared.durable_through(ts);
        }
        if let Some(requester) = cutting.take() {
            let done = next_segment(shared, &mut current);
            shared.answer_rotation(requester, done.map_err(|e| e.to_string()));
        }
        if stopping {
            let region = NoPreemptGuard::new();
            if shared.pending.lock(&region).bytes.is_empty() {
                return;
            }
        }
    }
}

/// After the batch failed (`why`): pauses and returns true for it to be written again, or,
/// once it has failed as many times as there are [`RETRIES`] (or the writer is `stopping`),
/// stops the log and returns false.
fn retry_later(
    shared: &Shared,
    why: String,
    stopping: bool,
    failed: &mut usize,
    cutting: &mut Option<Unparker>,
) -> bool {
    match RETRIES.get(*failed) {
        Some(&pause) if !stopping => {
            *failed += 1;
            // Not at once: a full disk would otherwise be retried as fast as urgent commits ask.
            // But then without waiting for the interval or for someone to ask.
            std::thread::sleep(pause);
            shared.flush_now.store(true, Ordering::SeqCst);
            true
        }
        _ => {
            stop(shared, why, cutting);
            false
        }
    }
}

/// Stops the log for good, because of `why`: every waiter, now and later, is told, and a cut
/// asked for fails.
fn stop(shared: &Shared, why: String, cutting: &mut Option<Unparker>) {
    let why = format!(
        "{why} (the log has stopped: nothing more is written, and the database takes no more writes until it is restarted)"
    );
    if let Some(requester) = cutting.take() {
        shared.answer_rotation(requester, Err(why.clone()));
    }
    let _ = shared.stopped.set(why);
    shared.wake(u64::MAX);
    let region = NoPreemptGuard::new();
    for (_, unparker) in shared.ts_waiters.lock(&region).drain(..) {
        unparker.unpark();
    }
}

/// Moves `current` on to the next segment; returns its number. The next segment is made
/// (durable) first, then named by a record that ends this one (durable too), so that recovery
/// knows a segment that ends so must be followed: a newest segment lost later is noticed.
fn next_segment(shared: &Shared, current: &mut Current) -> io::Result<u64> {
    let next = current.number + 1;
    let file = match current.next.take() {
        Some(file) => file,
        None => current.segments.create(next)?,
    };
    let mut end = Vec::new();
    super::record::encode_continued(&mut end, next);
    let ended = current.file.append(&end).and_then(|()| current.file.sync());
    if let Err(e) = ended {
        // Tried again with the same next segment; what reached this one is cut back.
        current.next = Some(file);
        return Err(match current.file.truncate(current.len) {
            Ok(()) => e,
            Err(cut) => io::Error::other(format!("{e}; then cutting the log back failed: {cut}")),
        });
    }
    current.file = file;
    current.number = next;
    current.len = super::record::HEADER_LEN as u64;
    shared.segment.store(next, Ordering::Release);
    Ok(next)
}

#[cfg(test)]
mod tests;
