//! Durability: a redo log of committed write sets, written by a group-committing log writer and
//! read back at open.
//!
//! A committing transaction encodes the after-images of what it changed into its own buffer (never
//! a thread-local one: a paused transaction and the urgent one that paused it share a thread) and
//! appends that record to the log's shared buffer inside its commit region, before its versions
//! become visible. Under [`Durability::Sync`] its commit then waits, outside the region, until the
//! writer has made the record durable (a task parks, so its worker runs others); above the lowest
//! priority it asks for the flush at once. Catalog changes are logged the same way.
//!
//! The log is split into segments where checkpoints begin; a checkpoint is a snapshot of every
//! table from which the segments after the cut are replayed, so older segments can be removed.
//!
//! Parts: `record` (the bytes), `writer` (group commit, and the cut), `segment` (a segment file
//! zero-filled ahead of the writer), `recovery` (reading a segment back), `checkpoint` (a
//! checkpoint's file), `files` (the directory's files).
//! Must never block inside a region, and never acknowledge a `sync` commit before its record is
//! on stable storage.

pub(crate) mod acknowledgement;
pub(crate) mod checkpoint;
pub(crate) mod failpoint;
pub(crate) mod files;
pub(crate) mod record;
pub(crate) mod recovery;
pub(crate) mod segment;
pub(crate) mod writer;

use std::time::Duration;

use overtake_priority::Priority;
use overtake_runtime::NoPreemptGuard;

pub use acknowledgement::Acknowledgement;
pub use recovery::RecoveryError;
use writer::{Batching, LogFile, LogWriter, Segments, Target};

use crate::error::CommitError;

/// How commits reach stable storage (a setting of [`Database::open`](crate::Database::open); an
/// in-memory database has no log whatever it says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Nothing is logged: the directory keeps only what was there when it was opened.
    Off,
    /// Logged, and acknowledged before the flush: a crash may lose the last few milliseconds of
    /// commits (each one whole or not at all), never part of a transaction.
    Async,
    /// Acknowledged only once the commit's record is on stable storage.
    #[default]
    Sync,
}

impl LogStats {
    /// What the writer did between `earlier` (stats of the same log) and these.
    pub fn since(&self, earlier: &LogStats) -> LogStats {
        let minus = |a: &[u64; writer::FLUSH_BUCKETS], b: &[u64; writer::FLUSH_BUCKETS]| {
            std::array::from_fn(|i| a[i].saturating_sub(b[i]))
        };
        LogStats {
            flushes: self.flushes.saturating_sub(earlier.flushes),
            overlapped_flushes: self
                .overlapped_flushes
                .saturating_sub(earlier.overlapped_flushes),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            flush_time: self.flush_time.saturating_sub(earlier.flush_time),
            flush_histogram: minus(&self.flush_histogram, &earlier.flush_histogram),
            asked_to_durable_histogram: minus(
                &self.asked_to_durable_histogram,
                &earlier.asked_to_durable_histogram,
            ),
            durable_to_resumed_histogram: minus(
                &self.durable_to_resumed_histogram,
                &earlier.durable_to_resumed_histogram,
            ),
            ..*self
        }
    }

    /// The mean time of a flush (zero if there was none).
    pub fn mean_flush(&self) -> Duration {
        self.flush_time / u32::try_from(self.flushes.max(1)).unwrap_or(u32::MAX)
    }

    /// The time that `q` (0 to 1) of what one of these histograms counts stayed under, to within
    /// an eighth (the upper end of its bucket).
    pub fn histogram_quantile(histogram: &[u64], q: f64) -> Duration {
        let total: u64 = histogram.iter().sum();
        let want = (total as f64 * q).ceil() as u64;
        let mut seen = 0;
        for (i, &n) in histogram.iter().enumerate() {
            seen += n;
            if seen >= want.max(1) {
                return Duration::from_micros(writer::bucket_end(i));
            }
        }
        Duration::ZERO
    }
}

impl Durability {
    /// A short, stable name: `off`, `async`, `sync`.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Off => "off",
            Durability::Async => "async",
            Durability::Sync => "sync",
        }
    }
}

/// What the log writer did since the database was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogStats {
    /// Flushes (a write and an `fdatasync` each).
    pub flushes: u64,
    /// Of those, flushes started while another was in flight (for a commit that asked for its
    /// flush at once).
    pub overlapped_flushes: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Time the writer spent writing and syncing (over `flushes`: the mean flush time).
    pub flush_time: Duration,
    /// Flushes by how long they took, in microseconds: exact below 8, then eight buckets per
    /// power of two (read it with [`LogStats::histogram_quantile`]).
    pub flush_histogram: [u64; writer::FLUSH_BUCKETS],
    /// Urgent commits that parked for their flush, by the time from asking for it until the
    /// log was durable past their record (buckets as `flush_histogram`).
    pub asked_to_durable_histogram: [u64; writer::FLUSH_BUCKETS],
    /// The same commits, by the time from then until they ran again (the wake and the worker).
    pub durable_to_resumed_histogram: [u64; writer::FLUSH_BUCKETS],
    /// The segment being written (one more after each checkpoint).
    pub segment: u64,
    /// How the operating system schedules the log writer: `realtime` (it runs as soon as a
    /// flush completes or is asked for), `raised`, or `ordinary` (the process may not raise it:
    /// flushes may then wait for a scheduler tick behind busy threads).
    pub writer_class: &'static str,
}

/// Pending bytes that start a flush at once.
const FLUSH_BYTES: usize = 1 << 20;

/// How far behind the appended records the durable log may be under `async` before a commit
/// waits for its flush.
const MAX_BEHIND: u64 = 64 << 20;

/// An open log: its writer and the mode commits wait by.
pub(crate) struct Log {
    writer: LogWriter,
    mode: Durability,
    /// The largest record a commit may append (its frame's payload); a larger commit is refused
    /// before anyone can see it, as the reader would take its frame for damage.
    max_record: usize,
    /// Under `async`, how far the durable log may fall behind the appended records before a
    /// commit waits for its flush ([`MAX_BEHIND`]).
    max_behind: u64,
}

impl Log {
    /// Starts logging to segment `number`, `file`, whose first `len` bytes hold whole records;
    /// `segments` makes the next ones.
    /// `interval`: how long appended records wait for a flush nobody urgent asked for.
    pub(crate) fn start(
        segments: Box<dyn Segments>,
        (file, number, len): (Box<dyn LogFile>, u64, u64),
        (mode, interval, max_record): (Durability, Duration, usize),
        (slots, durable_ts): (usize, u64),
    ) -> std::io::Result<Log> {
        let batching = Batching {
            interval,
            bytes: FLUSH_BYTES,
        };
        Ok(Log {
            // A record's LSN only orders waits within this run: it starts where the file ends.
            writer: LogWriter::start(
                segments,
                (file, number, len),
                (len, slots, durable_ts),
                batching,
            )?,
            mode,
            max_record: max_record.min(record::MAX_PAYLOAD),
            max_behind: MAX_BEHIND,
        })
    }

    /// Cuts the log for a checkpoint (see [`LogWriter::rotate`]); returns the new segment.
    pub(crate) fn cut(&self) -> Result<u64, String> {
        self.writer.rotate()
    }

    /// Whether a framed record of `len` bytes is too long to append.
    pub(crate) fn too_long(&self, len: usize) -> bool {
        len.saturating_sub(record::FRAME_HEADER) > self.max_record
    }

    /// Why the log stopped, if it has: nothing more may be appended.
    pub(crate) fn stopped(&self) -> Option<&str> {
        self.writer.stopped()
    }

    /// Appends a framed record inside the committing region (a commit's, at timestamp `ts` of
    /// slot `slot`, or a table's: `None`); returns where it ends.
    pub(crate) fn append(
        &self,
        record: &[u8],
        commit: Option<(u64, usize)>,
        region: &NoPreemptGuard,
    ) -> u64 {
        self.writer.append(record, commit, region)
    }

    /// What a commit whose record ends at `lsn` waits for before it is acknowledged: under
    /// `sync`, its record durable (a transaction above the lowest level asks for the flush at
    /// once); under `async`, nothing while the log keeps up.
    pub(crate) fn ticket(&self, lsn: u64, priority: Priority) -> Acknowledgement {
        let behind = lsn.saturating_sub(self.writer.durable_lsn());
        // Under `async` the log may fall behind by a bounded amount only: past it, a commit
        // waits for its flush as a `sync` one does (a slow or failing disk would otherwise grow
        // the buffer without end).
        if self.mode == Durability::Off
            || (self.mode == Durability::Async && behind <= self.max_behind)
        {
            return Acknowledgement::immediate();
        }
        Acknowledgement::after(
            self.writer.progress(),
            Target::Lsn(lsn),
            priority > Priority::LOW,
        )
    }

    /// What a record ending at `lsn` that must be durable before anyone is told of it waits
    /// for, whatever the durability setting (a prepared transaction's, as PostgreSQL flushes
    /// `PREPARE TRANSACTION` even without `synchronous_commit`). The flush is asked for at once.
    pub(crate) fn durable_ticket(&self, lsn: u64) -> Acknowledgement {
        Acknowledgement::after(self.writer.progress(), Target::Lsn(lsn), true)
    }

    /// What an answer showing commits up to timestamp `ts` waits for: under `sync`, every one
    /// of them durable (`urgent`: asking for the flush at once); nothing otherwise.
    pub(crate) fn ticket_through(&self, ts: u64, urgent: bool) -> Acknowledgement {
        if self.mode != Durability::Sync || self.writer.durable_ts() >= ts {
            return Acknowledgement::immediate();
        }
        Acknowledgement::after(self.writer.progress(), Target::Ts(ts), urgent)
    }

    /// Under `sync`: waits until every commit with a timestamp at or before `ts` is durable
    /// (`urgent`: asking for the flush at once); returns how long that took. Never inside a
    /// region (it parks).
    pub(crate) fn wait_through(&self, ts: u64, urgent: bool) -> Result<Duration, String> {
        match self.ticket_through(ts, urgent).wait() {
            (Ok(()), waited) => Ok(waited),
            (Err(CommitError::NotDurable(why)), _) => Err(why),
            (Err(other), _) => unreachable!("a wait for the log ends durable or stopped: {other}"),
        }
    }

    /// The commit of transaction slot `slot` is about to draw its timestamp, at least `bound`
    /// (see [`LogWriter::unlogged`]).
    pub(crate) fn unlogged(&self, slot: usize, bound: u64) {
        self.writer.unlogged(slot, bound);
    }

    /// The commit of slot `slot` failed before appending its record.
    pub(crate) fn logged(&self, slot: usize) {
        self.writer.logged(slot);
    }

    pub(crate) fn stats(&self) -> LogStats {
        let s = self.writer.stats();
        LogStats {
            flushes: s.flushes,
            overlapped_flushes: s.overlapped,
            bytes: s.bytes,
            flush_time: s.flush_time,
            flush_histogram: s.flush_buckets,
            asked_to_durable_histogram: s.asked_to_durable,
            durable_to_resumed_histogram: s.durable_to_resumed,
            segment: s.segment,
            writer_class: s.class.map_or("starting", |c| c.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A file whose syncs wait until the test lets one through.
    struct Held(Arc<Mutex<Receiver<()>>>);

    impl LogFile for Held {
        fn append(&mut self, _: &[u8]) -> std::io::Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> std::io::Result<()> {
            let _ = self.0.lock().expect("test").recv();
            Ok(())
        }
        fn truncate(&mut self, _: u64) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct NoSegments;

    impl Segments for NoSegments {
        fn create(&mut self, _: u64) -> std::io::Result<Box<dyn LogFile>> {
            Err(std::io::Error::other("no segments here"))
        }
    }

    fn async_log(max_behind: u64) -> (Log, Sender<()>) {
        let (release, held) = channel();
        let file = Box::new(Held(Arc::new(Mutex::new(held))));
        let mut log = Log::start(
            Box::new(NoSegments),
            (file, 1, 0),
            (Durability::Async, Duration::from_millis(1), 1 << 20),
            (1, 0),
        )
        .expect("start");
        log.max_behind = max_behind;
        (log, release)
    }

    #[test]
    fn async_commits_wait_for_the_disk_only_once_the_log_is_too_far_behind() {
        let (log, release) = async_log(100);
        let append = |bytes: &[u8]| log.append(bytes, None, &NoPreemptGuard::new());
        // Within the bound: acknowledged at once, although no sync has completed.
        let lsn = append(&[7; 60]);
        assert_eq!(log.ticket(lsn, Priority::LOW).wait().0, Ok(()));
        assert_eq!(log.writer.durable_lsn(), 0);
        // Past it: the commit waits until its record is durable.
        let lsn = append(&[7; 60]);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let acknowledged = log.ticket(lsn, Priority::LOW).wait().0;
                (acknowledged, log.writer.durable_lsn())
            });
            // No sync completes until the test lets one through: it must be waiting.
            while log.writer.waiting() == 0 {
                assert!(!waiter.is_finished(), "acknowledged before it was durable");
                std::thread::yield_now();
            }
            while !waiter.is_finished() {
                let _ = release.send(());
                std::thread::yield_now();
            }
            let (acknowledged, durable) = waiter.join().expect("waiter");
            assert_eq!(acknowledged, Ok(()));
            assert!(durable >= lsn, "{durable} < {lsn}");
        });
        drop(release);
    }
}
