//! Opening a database directory: the newest complete checkpoint is loaded, the log segments
//! after it are replayed in order (skipping the commits the checkpoint already holds), and the
//! log goes on from where the last segment's whole records end.
//!
//! Must never open a directory whose files do not add up: a missing segment, a damaged
//! checkpoint, or damage before good records is an error naming the file, never a silent loss.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Database;
use super::checkpoint::Checkpoints;
use super::fold::Folded;
use super::restore::Restorer;
use crate::log::checkpoint::{Checkpoint, Item};
use crate::log::files;
use crate::log::record::{self, LoggedWrite, Record};
use crate::log::recovery::{self, ReadLog};
use crate::log::segment::{SegmentFile, SegmentFiles};
use crate::log::{Durability, Log, RecoveryError};
use crate::options::Options;
use crate::txn::two_phase::PreparedRecord;

/// What [`Database::open`] found in its directory and replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovered {
    /// The directory.
    pub dir: PathBuf,
    /// The checkpoint loaded, if there was one.
    pub checkpoint: Option<PathBuf>,
    /// Rows loaded from it.
    pub checkpoint_rows: u64,
    /// Log segments replayed after it.
    pub segments: usize,
    /// Bytes of whole records read from them.
    pub log_bytes: u64,
    /// Tables re-created.
    pub tables: usize,
    /// Transactions replayed from the log (commits the checkpoint held are not counted).
    pub transactions: u64,
    /// Bytes cut from the end of the log: a record a crash tore (never acknowledged under
    /// `sync`).
    pub torn_bytes: u64,
    /// Prepared transactions found undecided (see [`Database::in_doubt`]).
    pub in_doubt: usize,
    /// Time to read and replay it all.
    pub elapsed: Duration,
    /// The part of it spent reading and replaying the log (after the checkpoint).
    pub log_elapsed: Duration,
}

/// How far a replay got: what a checkpoint already holds is skipped.
struct Replay {
    /// The commit timestamp of every row restored (see [`Restorer`]).
    stamp: u64,
    /// Commits at or before this timestamp are in the loaded checkpoint.
    covered_up_to: u64,
    /// The newest commit timestamp seen.
    newest: u64,
    tables: usize,
    transactions: u64,
    /// The prepared transactions no record has decided yet.
    in_doubt: HashMap<String, PreparedRecord>,
}

impl Database {
    /// Opens the database kept in directory `dir`, creating both if there is none: loads its
    /// newest checkpoint, replays the log after it (cutting a record a crash tore at its end,
    /// refusing damage anywhere before), and logs every later commit and table as
    /// `options.durability` says, checkpointing as `options.checkpoint_after` says.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Database, RecoveryError> {
        let dir = dir.as_ref();
        let started = Instant::now();
        let io_at = |file: &Path| {
            let file = file.to_owned();
            move |e: std::io::Error| RecoveryError::Io {
                file: file.clone(),
                reason: e.to_string(),
            }
        };
        std::fs::create_dir_all(dir).map_err(io_at(dir))?;
        let logging = options.durability != Durability::Off;
        let directory_lock = lock_directory(dir, logging)?;
        let listing = files::list(dir).map_err(io_at(dir))?;
        if logging {
            // A checkpoint a crash interrupted: never complete, never read.
            for temporary in &listing.temporary {
                std::fs::remove_file(temporary).map_err(io_at(temporary))?;
            }
        }
        let checkpoint = listing.checkpoints.last().copied();
        let first = checkpoint.unwrap_or(1);
        let segments: Vec<u64> = listing
            .segments
            .iter()
            .copied()
            .filter(|&s| s >= first)
            .collect();
        let fresh = checkpoint.is_none() && listing.segments.is_empty();
        if !fresh {
            // Every segment from the checkpoint's on, without a gap: each was created (and its
            // name made durable) before anything that depends on it.
            let gap = (first..)
                .zip(&segments)
                .find_map(|(want, &have)| (want != have).then_some(want));
            if let Some(missing) = gap.or(segments.is_empty().then_some(first)) {
                return Err(RecoveryError::Io {
                    file: files::segment_path(dir, missing),
                    reason: match checkpoint {
                        Some(c) => format!(
                            "missing: checkpoint {} replays the log from segment {c} on",
                            files::checkpoint_path(dir, c).display()
                        ),
                        None => "missing: the log has no checkpoint, so it must start at segment 1"
                            .into(),
                    },
                });
            }
        }
        let mut db = Database::in_memory(options.clone());
        db._directory_lock = Some(directory_lock);
        // Restored rows carry one timestamp, below every later snapshot's.
        let stamp = db.engine.txns.now() + 1;
        db.engine.txns.advance_clock(stamp);
        let mut replay = Replay {
            stamp,
            covered_up_to: 0,
            newest: 0,
            tables: 0,
            transactions: 0,
            in_doubt: HashMap::new(),
        };
        let mut checkpoint_rows = 0;
        if let Some(n) = checkpoint {
            let loaded = Checkpoint::read(dir, n)?;
            checkpoint_rows = loaded.rows;
            db.load(&loaded, &mut replay)?;
        }
        let (mut log_bytes, mut torn_bytes, mut valid_len) = (0, 0, 0);
        let log_started = Instant::now();
        for (i, &s) in segments.iter().enumerate() {
            let path = files::segment_path(dir, s);
            let read = recovery::read(&path, s, i + 1 == segments.len())?;
            log_bytes += read.valid_len;
            (torn_bytes, valid_len) = (read.torn_bytes, read.valid_len);
            let continued = db
                .replay(&read, &mut replay)
                .map_err(|reason| RecoveryError::Replay { file: path, reason })?;
            if let Some(next) = continued
                && i + 1 == segments.len()
            {
                return Err(RecoveryError::Io {
                    file: files::segment_path(dir, next),
                    reason: format!(
                        "missing: segment {s}, the newest found, ends by naming it as the next"
                    ),
                });
            }
        }
        let log_elapsed = log_started.elapsed();
        let in_doubt = replay.in_doubt.len();
        Arc::get_mut(&mut db.engine)
            .expect("nothing shares the engine before it is opened")
            .prepared
            .recovered(std::mem::take(&mut replay.in_doubt));
        // Later commits are ordered after every logged one, across restarts: a checkpoint's
        // snapshot compares with the timestamps in the segments after it.
        db.engine.txns.advance_clock(replay.newest);
        if logging {
            if checkpoint.is_some() {
                // Left by a crash between a checkpoint's completion and the removal it allows.
                files::remove_before(dir, first).map_err(io_at(dir))?;
            }
            let (number, len) = match segments.last() {
                Some(&s) => (s, valid_len),
                None => (first, record::HEADER_LEN as u64),
            };
            let path = files::segment_path(dir, number);
            let file = if segments.is_empty() {
                let file = files::create_segment(dir, number).map_err(io_at(&path))?;
                SegmentFile::new(file, len)
            } else {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .map_err(io_at(&path))?;
                // Appending continues after the last whole record, in place.
                SegmentFile::resume(file, len, torn_bytes).map_err(io_at(&path))?
            };
            let segments = Box::new(SegmentFiles::new(dir).map_err(io_at(dir))?);
            let log = Log::start(
                segments,
                (Box::new(file), number, len),
                (
                    options.durability,
                    options.group_commit,
                    options.max_log_record,
                ),
                // Everything committed so far was recovered: durable.
                (db.engine.txns.capacity(), db.engine.txns.now()),
            )
            .map_err(io_at(&path))?;
            Arc::get_mut(&mut db.engine)
                .expect("nothing shares the engine before it is opened")
                .log = Some(log);
            db.checkpoints = Some(Checkpoints::start(
                &db.engine,
                dir,
                options.checkpoint_after,
                log_bytes,
            ));
        }
        db.recovered = Some(Recovered {
            dir: dir.to_owned(),
            checkpoint: checkpoint.map(|c| files::checkpoint_path(dir, c)),
            checkpoint_rows,
            segments: segments.len(),
            log_bytes,
            tables: replay.tables,
            transactions: replay.transactions,
            torn_bytes,
            in_doubt,
            elapsed: started.elapsed(),
            log_elapsed,
        });
        Ok(db)
    }

    /// Loads a checkpoint into this (empty) database: its tables, then its rows, frames of rows
    /// on as many threads as the machine has cores (rows of one snapshot never conflict, so
    /// their order does not matter).
    fn load(&self, checkpoint: &Checkpoint, replay: &mut Replay) -> Result<(), RecoveryError> {
        let mut frames = Vec::new();
        checkpoint.load(|item| match item {
            Item::Table { id, schema } => self.recreate_table(id, schema, replay),
            Item::Dropped { id } => self.engine.catalog.redrop(id).map_err(|e| e.to_string()),
            Item::Rows { table, rows } => {
                frames.push((table, rows));
                Ok(())
            }
        })?;
        let next = AtomicUsize::new(0);
        on_every_core(frames.len(), |_, stop| {
            let mut restorer = Restorer::new(replay.stamp);
            while let Some((table, rows)) = frames.get(next.fetch_add(1, Ordering::Relaxed)) {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Some(t) = self.engine.catalog.get(*table) else {
                    return Err(format!("rows of table {table}, which it does not hold"));
                };
                for &row in rows {
                    restorer
                        .insert(t, row.into())
                        .map_err(|e| format!("table {}: {e}", t.name()))?;
                }
            }
            Ok(())
        })
        .map_err(|reason| RecoveryError::Replay {
            file: checkpoint.path().to_owned(),
            reason,
        })?;
        replay.covered_up_to = checkpoint.snapshot;
        replay.newest = checkpoint.snapshot;
        Ok(())
    }

    /// Creates table `id` as the log or a checkpoint says, unless it exists already (a table
    /// created while a checkpoint was taken is both in the checkpoint and in the log after it).
    fn recreate_table(
        &self,
        id: u32,
        schema: crate::storage::schema::TableSchema,
        replay: &mut Replay,
    ) -> Result<(), String> {
        if let Some(existing) = self.engine.catalog.get(id) {
            return if existing.name() == schema.name() {
                Ok(())
            } else {
                Err(format!(
                    "table {id} is {} here and {} before",
                    schema.name(),
                    existing.name()
                ))
            };
        }
        let table = self.create_table(schema).map_err(|e| e.to_string())?;
        if table.id() != id {
            return Err(format!("table {} was logged as table {id}", table.name()));
        }
        replay.tables += 1;
        Ok(())
    }

    /// Re-applies a segment's logged tables and commits, but for the commits a loaded
    /// checkpoint holds. Its tables are created first (a table's writes all follow its
    /// creation, so creating it early changes nothing). Its writes are then replayed on as many
    /// threads as the machine has cores, each taking the records whose primary keys hash to it,
    /// in log order: a record's images stay in order, and images of different records never
    /// depend on each other (a patch applies to its own record's row; no other constraint spans
    /// records).
    /// Returns the segment this one names as the next at its end, if it ends so.
    fn replay(&self, read: &ReadLog, replay: &mut Replay) -> Result<Option<u64>, String> {
        let covered = replay.covered_up_to;
        let mut continued = None;
        let mut logged_writes = 0;
        for (i, r) in read.records().enumerate() {
            let committed = r.committed().map(|(ts, writes)| (ts, writes.len()));
            if let Some(next) = continued {
                return Err(format!(
                    "record {i} follows the end of the segment (which names segment {next} as the next)"
                ));
            }
            match r {
                Record::Continued { next } => continued = Some(next),
                Record::CreateTable { id, schema } => self
                    .recreate_table(id, schema, replay)
                    .map_err(|e| format!("record {i}: {e}"))?,
                // Marked before the segment's writes are replayed: those to a table dropped
                // later in it are skipped too (nothing reads them).
                Record::DropTable { id } => self
                    .engine
                    .catalog
                    .redrop(id)
                    .map_err(|e| format!("record {i}: {e}"))?,
                Record::Commit { .. } => {}
                // In doubt until a later record decides it (one a checkpoint logs again after
                // its cut replaces an earlier one).
                Record::Prepared {
                    gid, note, body, ..
                } => {
                    let prepared = PreparedRecord::in_doubt(note, body);
                    replay.in_doubt.insert(gid.to_owned(), prepared);
                }
                Record::CommitPrepared { gid, .. } | Record::RollbackPrepared { gid } => {
                    replay.in_doubt.remove(gid);
                }
            }
            if let Some((ts, writes)) = committed
                && ts > covered
            {
                replay.transactions += 1;
                replay.newest = replay.newest.max(ts);
                logged_writes += writes;
            }
        }
        on_every_core(usize::MAX, |part, stop| {
            // About half of TPC-C's writes fold into an earlier one of their record.
            let records = logged_writes / 2 / part.1;
            self.replay_part(read, (covered, replay.stamp), (part, records), stop)
        })?;
        Ok(continued)
    }

    /// Replays the writes of `read` after the commits `covered` by a checkpoint whose keys
    /// hash to partition `part` of `parts`: folded to what each record ends with (see the
    /// `fold` module; room for about `records`), then written straight into storage, records
    /// in key order (restored rows carry `stamp`).
    fn replay_part(
        &self,
        read: &ReadLog,
        (covered, stamp): (u64, u64),
        ((part, parts), records): ((usize, usize), usize),
        stop: &AtomicBool,
    ) -> Result<(), String> {
        let mut folded = Folded::with_capacity(records);
        for (i, r) in read.records().enumerate() {
            let Some((ts, writes)) = r.committed() else {
                continue;
            };
            if ts <= covered {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            for w in writes.iter().filter(|w| partition(w, parts) == part) {
                let Some(table) = self.engine.catalog.get(w.table) else {
                    return Err(format!("record {i}: no table {}", w.table));
                };
                if table.is_dropped() {
                    continue;
                }
                folded
                    .add(table, w.key, w.image)
                    .map_err(|e| format!("record {i}: {e}"))?;
            }
        }
        let mut restorer = Restorer::new(stamp);
        let (keyless, changes) = folded.into_changes();
        for (table, row) in keyless {
            restorer.insert(table, row.into())?;
        }
        for (n, (table, key, change)) in changes.into_iter().enumerate() {
            if n % STOP_CHECK == 0 && stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            restorer.change(table, key, change)?;
        }
        Ok(())
    }
}

/// Records restored between looks at whether another replay thread failed.
const STOP_CHECK: usize = 4096;

/// Runs `work` on as many threads as the machine has cores (at most `most`), each told its
/// part (`(i, parts)`); the first error is returned, and the others are asked to `stop`.
fn on_every_core<W>(most: usize, work: W) -> Result<(), String>
where
    W: Fn((usize, usize), &AtomicBool) -> Result<(), String> + Sync,
{
    let parts = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(most)
        .max(1);
    let (failure, stop) = (Mutex::new(None), AtomicBool::new(false));
    std::thread::scope(|s| {
        for part in 0..parts {
            let (work, failure, stop) = (&work, &failure, &stop);
            s.spawn(move || {
                if let Err(e) = work((part, parts), stop) {
                    stop.store(true, Ordering::Relaxed);
                    let mut failure = failure.lock().unwrap_or_else(PoisonError::into_inner);
                    failure.get_or_insert(e);
                }
                // Recovery's threads end here: what they retired is freed now.
                crate::mvcc::epoch::release_thread_garbage();
            });
        }
    });
    match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The replay partition of a logged write: by its table and primary key, so that every image
/// of one record is replayed by one thread.
fn partition(w: &LoggedWrite<'_>, parts: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    (w.table, w.key).hash(&mut h);
    // The high bits mix best.
    ((h.finish() >> 32) as usize) % parts
}

/// Locks `dir` for this process: exclusively to write (one writer, no readers), shared to
/// read without logging (several readers). The operating system releases it when the process
/// ends, however it ends.
fn lock_directory(dir: &Path, write: bool) -> Result<std::fs::File, RecoveryError> {
    let path = dir.join(files::LOCK);
    let io = |e: std::io::Error| RecoveryError::Io {
        file: path.clone(),
        reason: e.to_string(),
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    let locked = if write {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match locked {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(RecoveryError::InUse {
            dir: dir.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use crate::log::{Durability, RecoveryError, files, record};
    use crate::storage::schema::{ColumnType, TableSchema};
    use crate::{Database, Isolation, Options, Priority};

    /// A directory holding table `t` with one row, in segment 1, whose end gets `tail` appended
    /// after its records.
    fn segment_ending_with(dir: &std::path::Path, tail: &[u8]) {
        {
            let db =
                Database::open(dir, Options::default().durability(Durability::Sync)).expect("open");
            let schema = TableSchema::builder("t")
                .column("k", ColumnType::Int64)
                .primary_key(&["k"])
                .build()
                .expect("schema");
            let t = db.create_table(schema).expect("table");
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            txn.insert(&t, t.row_builder().int(0, 7).finish().expect("row"))
                .expect("insert");
            txn.commit().expect("commit");
        }
        let path = files::segment_path(dir, 1);
        let at = crate::log::recovery::read(&path, 1, true)
            .expect("read")
            .valid_len as usize;
        let mut bytes = std::fs::read(&path).expect("segment");
        // Over the zeros after the records, if the file has them.
        bytes.truncate(at);
        bytes.extend_from_slice(tail);
        std::fs::write(&path, bytes).expect("write");
    }

    #[test]
    fn a_newest_segment_named_by_the_end_of_the_one_before_is_missed_if_gone() {
        let dir = files::scratch_dir("continued");
        let mut ended = Vec::new();
        record::encode_continued(&mut ended, 2);
        segment_ending_with(&dir, &ended);
        let options = || Options::default().durability(Durability::Sync);
        match Database::open(&dir, options()) {
            Err(RecoveryError::Io { file, reason }) => {
                assert_eq!(file, files::segment_path(&dir, 2));
                assert!(
                    reason.contains("missing") && reason.contains("segment 1"),
                    "{reason}"
                );
            }
            other => panic!(
                "opened without the segment segment 1 names: {:?}",
                other.err()
            ),
        }
        // With it there (empty: a crash came before anything was written to it), all is well.
        std::fs::write(files::segment_path(&dir, 2), record::header(2)).expect("segment 2");
        let db = Database::open(&dir, options()).expect("open");
        let t = db.table("t").expect("table");
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let key = t.key().int(7).finish().expect("key");
        assert_eq!(txn.get(&t, &key, |r| r.int(0)), Ok(Some(7)));
        drop(txn);
        drop(db);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn a_record_after_the_end_of_a_segment_is_refused() {
        let dir = files::scratch_dir("after-end");
        let mut ended = Vec::new();
        record::encode_continued(&mut ended, 2);
        record::encode_continued(&mut ended, 3);
        segment_ending_with(&dir, &ended);
        std::fs::write(files::segment_path(&dir, 2), record::header(2)).expect("segment 2");
        match Database::open(&dir, Options::default().durability(Durability::Sync)) {
            Err(RecoveryError::Replay { reason, .. }) => {
                assert!(
                    reason.contains("follows the end of the segment"),
                    "{reason}"
                );
            }
            other => panic!("{:?}", other.err()),
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
