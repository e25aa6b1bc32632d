//! Checkpoints of a logged database, on request or in the background.
//!
//! A checkpoint first cuts the log (every record appended before the cut is durable in the old
//! segments), then takes a snapshot (which therefore sees every commit those segments hold) and
//! writes every row it sees. Recovery loads it and replays the segments from the cut on, skipping
//! the commits at or before its snapshot; the older segments and checkpoints are removed once it
//! is durable. No transaction waits for it: it reads a snapshot, like any reader.
//!
//! Must never run on a scheduler worker: it blocks in the kernel for as long as writing the
//! database takes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use overtake_priority::Priority;
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::Database;
use crate::log::checkpoint::CheckpointWriter;
use crate::log::files;
use crate::txn::shared::Engine;
use crate::txn::{Isolation, Joins, Transaction};

/// A checkpoint written, from [`Database::checkpoint`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checkpointed {
    /// Its file.
    pub file: PathBuf,
    /// The log segment replay starts at after it (earlier ones were removed).
    pub segment: u64,
    /// The snapshot it holds: every commit at or before this timestamp.
    pub snapshot: u64,
    /// Tables and rows it holds.
    pub tables: u32,
    /// Rows it holds.
    pub rows: u64,
    /// Its size.
    pub bytes: u64,
    /// Time to write it.
    pub elapsed: Duration,
}

/// Checkpoints taken since the database was opened, from [`Database::checkpoint_stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointStats {
    /// Checkpoints written.
    pub taken: u64,
    /// Checkpoints that failed (each left the previous one in place).
    pub failed: u64,
    /// The last one written.
    pub last: Option<Checkpointed>,
    /// Why the last failed one failed, if the one after it has not succeeded.
    pub last_error: Option<String>,
}

/// Why a checkpoint was not written. The database, its log and its previous checkpoint are as
/// they were.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The database has no log: in memory, or opened with durability `off`.
    #[error("the database keeps no log, so there is nothing to checkpoint")]
    NotLogged,
    /// A file could not be written.
    #[error("{file}: {reason}")]
    Io {
        /// The file.
        file: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// Called from a scheduler task: writing a checkpoint blocks in the kernel for as long as it
    /// takes, and one task paused while it holds the checkpoint would block every later one on
    /// its worker. Call it from a thread of your own.
    #[error(
        "a checkpoint blocks its thread: call it from a thread of your own, not a scheduler task"
    )]
    InTask,
    /// No transaction could be begun for its snapshot.
    #[error("cannot take a snapshot: {0}")]
    Snapshot(String),
}

/// A logged database's checkpoints: their record, and the background thread.
pub(crate) struct Checkpoints {
    state: Arc<State>,
    every: Option<u64>,
    thread: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

struct State {
    dir: PathBuf,
    /// Held while one is written (seconds, by a thread of its own or the caller's): one at a
    /// time. Never taken by `checkpoint_stats`, which a scheduler task may call.
    writing: Mutex<()>,
    /// Held only to read or update the numbers, inside a region: a task paused while it reads
    /// them cannot hold them (the rule every engine latch follows).
    stats: RegionMutex<CheckpointStats>,
    /// The log's length (see [`State::logged`]) when the last one began.
    logged_at_last: AtomicU64,
    /// Bytes of log found at open after the checkpoint loaded: they count towards the next
    /// one as much as bytes logged since (a database restarted often must checkpoint too).
    found_at_open: u64,
}

impl State {
    /// The log's length: what was found at open and what was logged since.
    fn logged(&self, engine: &Engine) -> u64 {
        self.found_at_open + engine.log.as_ref().map_or(0, |l| l.stats().bytes)
    }
}

/// How often the background thread looks at the log's size.
const LOOK_EVERY: Duration = Duration::from_millis(20);

impl Checkpoints {
    /// Starts checkpointing `engine`'s log (which it has) in `dir`, in the background every
    /// `every` bytes logged if that is set, counting the `found` bytes of log that recovery
    /// replayed.
    pub(crate) fn start(engine: &Arc<Engine>, dir: &Path, every: Option<u64>, found: u64) -> Self {
        let mut checkpoints = Checkpoints {
            state: Arc::new(State {
                dir: dir.to_owned(),
                writing: Mutex::new(()),
                stats: RegionMutex::new(CheckpointStats::default()),
                logged_at_last: AtomicU64::new(0),
                found_at_open: found,
            }),
            every,
            thread: None,
        };
        checkpoints.resume(engine);
        checkpoints
    }

    /// Stops the background thread, after the checkpoint it is writing, if any.
    pub(crate) fn pause(&mut self) {
        if let Some((stop, thread)) = self.thread.take() {
            stop.store(true, Ordering::Release);
            thread.thread().unpark();
            // A panic in the checkpointer was already reported on its thread.
            let _ = thread.join();
        }
    }

    /// Starts the background thread again (if checkpoints are taken in the background).
    pub(crate) fn resume(&mut self, engine: &Arc<Engine>) {
        let Some(every) = self.every else {
            return;
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, state, stopped) = (
            Arc::clone(engine),
            Arc::clone(&self.state),
            Arc::clone(&stop),
        );
        let thread = std::thread::Builder::new()
            .name("checkpointer".into())
            .spawn(move || {
                // Background work: it takes only what the workers leave.
                overtake_runtime::os::thread::run_in_background();
                // Even at nice 10 it would take a slice of a worker's core now and then.
                let mut off_workers = overtake_runtime::os::thread::OffPinnedCores::new();
                while !stopped.load(Ordering::Acquire) {
                    std::thread::park_timeout(LOOK_EVERY);
                    off_workers.refresh();
                    let since = state
                        .logged(&engine)
                        .saturating_sub(state.logged_at_last.load(Ordering::Acquire));
                    if since >= every && !stopped.load(Ordering::Acquire) {
                        // A failure is kept in the stats; the next one is tried after as many
                        // bytes again.
                        let _ = take(&engine, &state);
                    }
                }
            });
        // Without the thread, checkpoints are still taken on request.
        self.thread = thread.ok().map(|t| (stop, t));
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.pause();
    }
}

impl Database {
    /// Writes a checkpoint now (after the one being written in the background, if any) and
    /// removes the log it makes unnecessary. Blocks until it is durable: call it from a thread
    /// of your own; inside a scheduler task it returns [`CheckpointError::InTask`].
    pub fn checkpoint(&self) -> Result<Checkpointed, CheckpointError> {
        let checkpoints = self
            .checkpoints
            .as_ref()
            .ok_or(CheckpointError::NotLogged)?;
        if overtake_runtime::park::in_task() {
            return Err(CheckpointError::InTask);
        }
        take(&self.engine, &checkpoints.state)
    }

    /// Checkpoints taken since the database was opened (`None` without a log).
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        let checkpoints = self.checkpoints.as_ref()?;
        let region = NoPreemptGuard::new();
        let stats = checkpoints.state.stats.lock(&region).clone();
        Some(stats)
    }
}

/// Writes a checkpoint of `engine` into `state`'s directory, and records how it went.
fn take(engine: &Engine, state: &State) -> Result<Checkpointed, CheckpointError> {
    // A checkpoint that panicked left nothing half-done that the next one depends on.
    let _one_at_a_time = state.writing.lock().unwrap_or_else(PoisonError::into_inner);
    if engine.log.is_none() {
        return Err(CheckpointError::NotLogged);
    }
    state
        .logged_at_last
        .store(state.logged(engine), Ordering::Release);
    let result = write(engine, &state.dir);
    let region = NoPreemptGuard::new();
    let mut stats = state.stats.lock(&region);
    match &result {
        Ok(done) => {
            stats.taken += 1;
            stats.last = Some(done.clone());
            stats.last_error = None;
        }
        Err(e) => {
            stats.failed += 1;
            stats.last_error = Some(e.to_string());
        }
    }
    drop(stats);
    drop(region);
    result
}

/// Rows read per region (each row is copied into the checkpoint's buffer there).
const RECORDS_PER_REGION: u64 = 256;

fn write(engine: &Engine, dir: &Path) -> Result<Checkpointed, CheckpointError> {
    let started = Instant::now();
    let log = engine.log.as_ref().ok_or(CheckpointError::NotLogged)?;
    let next = log.stats().segment + 1;
    let segment = log.cut().map_err(|reason| CheckpointError::Io {
        file: files::segment_path(dir, next),
        reason,
    })?;
    // The prepared transactions' records may be in the segments about to go: they are logged
    // again after the cut.
    engine.prepared.log_again(log);
    let temporary = files::temporary_checkpoint_path(dir, segment);
    let io = |file: &Path| {
        let file = file.to_owned();
        move |e: std::io::Error| CheckpointError::Io {
            file: file.clone(),
            reason: e.to_string(),
        }
    };
    // Begun after the cut: it sees every commit logged before it.
    let lease = engine
        .txns
        .begin()
        .map_err(|e| CheckpointError::Snapshot(e.to_string()))?;
    let txn = Transaction::new(
        engine,
        lease,
        (Priority::LOW, Isolation::Snapshot),
        Joins::AtBegin(None),
    );
    let snapshot = txn.snapshot();
    let written = (|| {
        let mut out = CheckpointWriter::create(dir, segment, snapshot)?;
        for table in engine.catalog.all() {
            out.table(table.id(), table.schema())?;
            if table.is_dropped() {
                out.dropped(table.id())?;
                continue;
            }
            let mut next = Some(0);
            while let Some(from) = next {
                next =
                    txn.visible_rows(&table, from..from + RECORDS_PER_REGION, |row| out.row(row));
                out.write_if_full()?;
            }
        }
        out.finish()
    })();
    drop(txn);
    let written = written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        io(&temporary)(e)
    })?;
    files::remove_before(dir, segment).map_err(io(dir))?;
    Ok(Checkpointed {
        file: files::checkpoint_path(dir, segment),
        segment,
        snapshot,
        tables: written.tables,
        rows: written.rows,
        bytes: written.bytes,
        elapsed: started.elapsed(),
    })
}
