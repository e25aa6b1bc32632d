//! The writer thread: takes the committers' bytes in batches, writes and syncs them, moves on to
//! the next segment when one is full or a checkpoint cuts the log, and, when a batch cannot be
//! written, tries again and finally stops the log (see the parent module).
//!
//! Must never run on a worker, and never report a batch durable before its sync returned.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::os::thread as os_thread;
use overtake_runtime::park::Unparker;

use super::SEGMENT_BYTES;
use super::{LogFile, PUBLISHED, Segments, Shared, count, overlap};

/// The pauses before a failed batch is written again; after the last try the log stops.
pub(super) const RETRIES: [Duration; 5] = [
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
    Duration::from_millis(1000),
];

/// The segment the writer appends to.
pub(super) struct Current {
    pub(super) file: Box<dyn LogFile>,
    pub(super) number: u64,
    /// Bytes of the file that are written and durable (where a failed write is cut back to).
    pub(super) len: u64,
    /// Makes the next one.
    pub(super) segments: Box<dyn Segments>,
    /// The next one, made but not yet named at the end of this one (that write failed).
    pub(super) next: Option<Box<dyn LogFile>>,
}

pub(super) fn write_loop(shared: &Shared, mut current: Current) {
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
    // Bytes taken for a second flush while the first was in flight (kept apart so that taking
    // them under the committers' latch is a swap, not a copy).
    let mut more: Vec<u8> = Vec::new();
    // Without it, flushes are one at a time (slower for urgent commits, as correct).
    let helper = overlap::SyncThread::start().ok();
    let helper = helper.as_ref();
    loop {
        off_workers.refresh();
        let stopping = shared.stop.load(Ordering::Acquire);
        if !shared.flush_now.swap(false, Ordering::SeqCst) && !stopping {
            std::thread::park_timeout(shared.batching.interval);
        }
        // An urgent commit waits for this batch: a second flush beside it would only delay the
        // next one (urgent commits arrive together), so they join the next as before.
        let for_urgent = shared.urgent_now.swap(false, Ordering::SeqCst);
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
            && current.len > crate::log::record::HEADER_LEN as u64
            && current.len + batch.len() as u64 > SEGMENT_BYTES
            && let Err(e) = next_segment(shared, &mut current)
        {
            // The segment is full (everything in it durable): the batch goes whole to the next,
            // and waits for one. Growing this one instead would hide the failure, and write on
            // into a file that may be gone (its directory removed: every commit acknowledged,
            // none kept).
            let why = format!("creating log segment {}: {}", current.number + 1, e.why());
            match e {
                NotMoved::Retry(_) => {
                    if !retry_later(shared, why, stopping, &mut failed, &mut cutting) {
                        return;
                    }
                    continue;
                }
                NotMoved::Torn(_) => {
                    stop(shared, why, &mut cutting);
                    return;
                }
            }
        }
        if !batch.is_empty() {
            let outcome = flush(
                shared,
                &mut current,
                &mut Taken {
                    batch: &mut batch,
                    more: &mut more,
                    end: &mut batch_end,
                    ts: &mut batch_ts,
                },
                // A cut taken up ends the batch: nothing after it may go to this segment.
                helper.filter(|_| cutting.is_none() && !for_urgent),
            );
            match outcome {
                Ok(()) => {
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
                    if let Err(cut) = current.file.truncate(current.len) {
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
            match next_segment(shared, &mut current) {
                Ok(n) => shared.answer_rotation(requester, Ok(n)),
                Err(NotMoved::Retry(e)) => shared.answer_rotation(requester, Err(e.to_string())),
                Err(torn @ NotMoved::Torn(_)) => {
                    stop(shared, torn.why(), &mut Some(requester));
                    return;
                }
            }
        }
        if stopping {
            let region = NoPreemptGuard::new();
            if shared.pending.lock(&region).bytes.is_empty() {
                return;
            }
        }
    }
}

/// What the writer took from the committers' buffer and has not yet made durable.
struct Taken<'a> {
    batch: &'a mut Vec<u8>,
    /// Empty, except while `flush` writes a second part.
    more: &'a mut Vec<u8>,
    /// The LSN at the end of `batch`.
    end: &'a mut u64,
    /// Every commit at or before it is in `batch` or durable already.
    ts: &'a mut Option<u64>,
}

/// Writes `taken.batch` at the end of the current segment and makes it durable. While its sync
/// is in the disk (on the `helper`), an urgent commit that asks for a flush does not queue
/// behind it: the bytes appended since are taken, written after the batch and synced at once,
/// and join the batch; it is durable when both syncs are done. On an error the batch (both
/// parts) is for the caller to cut back and write again. Without a helper (none could be
/// started, a cut ends the batch, or the batch is an urgent commit's), one sync at a time.
fn flush(
    shared: &Shared,
    current: &mut Current,
    taken: &mut Taken<'_>,
    helper: Option<&overlap::SyncThread>,
) -> io::Result<()> {
    let started = Instant::now();
    current.file.append(taken.batch)?;
    let (Some(helper), Some(syncer)) = (helper, current.file.syncer()) else {
        current.file.sync()?;
        flushed(shared, started.elapsed());
        return Ok(());
    };
    let appended = started.elapsed();
    helper.begin(syncer);
    loop {
        if let Some((outcome, took)) = helper.finished() {
            return outcome.map(|()| flushed(shared, appended + took));
        }
        // Other requests (a full buffer, a cut, stopping) wait for this flush: their flag stays.
        if shared.urgent_now.swap(false, Ordering::SeqCst) {
            // What the urgent commit appended is in the batch, or pending: then it is taken.
            if take_more(shared, current, taken) {
                let second = Instant::now();
                let written = current
                    .file
                    .append(taken.more)
                    .and_then(|()| current.file.sync());
                let second = second.elapsed();
                let (first, took) = helper.wait();
                // The second part joins the batch whatever happened: a retry writes both.
                taken.batch.append(taken.more);
                // Both or neither: after a failed sync the first part may be lost even though
                // the second sync succeeded (a failed sync may drop the pages it could not write).
                return first.and(written).map(|()| {
                    flushed(shared, appended + took);
                    flushed(shared, second);
                    shared.overlapped.fetch_add(1, Ordering::Relaxed);
                });
            }
        }
        std::thread::park();
    }
}

/// Takes what committers appended since the batch into `taken.more`, if there is any and it fits
/// in the segment; says whether it did.
fn take_more(shared: &Shared, current: &Current, taken: &mut Taken<'_>) -> bool {
    let region = NoPreemptGuard::new();
    let mut pending = shared.pending.lock(&region);
    let after = current.len + (taken.batch.len() + pending.bytes.len()) as u64;
    if pending.bytes.is_empty() || after > SEGMENT_BYTES {
        return false;
    }
    std::mem::swap(taken.more, &mut pending.bytes);
    *taken.end = pending.end;
    *taken.ts = Some(shared.appended_through(&pending));
    true
}

/// Counts a flush (a write and its sync) that took `took`.
fn flushed(shared: &Shared, took: Duration) {
    let nanos = took.as_nanos() as u64;
    shared.flush_nanos.fetch_add(nanos, Ordering::Relaxed);
    count(&shared.flush_buckets, nanos);
    shared.flushes.fetch_add(1, Ordering::Relaxed);
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
    for (_, waiter) in shared.ts_waiters.lock(&region).drain(..) {
        waiter.wake();
    }
}

/// Why the log could not move on to the next segment.
enum NotMoved {
    /// Nothing of the attempt stayed in the current segment: it may be tried again.
    Retry(io::Error),
    /// The record that ends the current segment failed, and so did cutting it back: part of it
    /// may be in the file, and anything written after it would bury it in the middle of the
    /// log (which recovery then refuses to open). The log must stop.
    Torn(String),
}

impl NotMoved {
    fn why(&self) -> String {
        match self {
            NotMoved::Retry(e) => e.to_string(),
            NotMoved::Torn(why) => why.clone(),
        }
    }
}

/// Moves `current` on to the next segment; returns its number. The next segment is made
/// (durable) first, then named by a record that ends this one (durable too), so that recovery
/// knows a segment that ends so must be followed: a newest segment lost later is noticed.
fn next_segment(shared: &Shared, current: &mut Current) -> Result<u64, NotMoved> {
    let next = current.number + 1;
    let file = match current.next.take() {
        Some(file) => file,
        None => current.segments.create(next).map_err(NotMoved::Retry)?,
    };
    let mut end = Vec::new();
    crate::log::record::encode_continued(&mut end, next);
    let ended = current.file.append(&end).and_then(|()| current.file.sync());
    if let Err(e) = ended {
        // Tried again with the same next segment; what reached this one is cut back.
        current.next = Some(file);
        return Err(match current.file.truncate(current.len) {
            Ok(()) => NotMoved::Retry(e),
            Err(cut) => NotMoved::Torn(format!("{e}; then cutting the log back failed: {cut}")),
        });
    }
    current.file = file;
    current.number = next;
    current.len = crate::log::record::HEADER_LEN as u64;
    shared.segment.store(next, Ordering::Release);
    Ok(next)
}
