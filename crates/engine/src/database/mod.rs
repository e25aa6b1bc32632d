//! The database: the public entry points (tables, transactions, retries, statistics) over the
//! shared state in `engine`.
//!
//! Parts: `open` (opening a directory: recovery), `checkpoint` (checkpoints, and the thread that
//! takes them in the background), `retry` (how `run` retries).

mod checkpoint;
mod fold;
mod open;
mod restore;
mod retry;

pub use checkpoint::{CheckpointError, CheckpointStats, Checkpointed};
pub use open::Recovered;
pub use retry::{Attempts, RetryPolicy};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use overtake_runtime::NoPreemptGuard;

use crate::catalog::table::Table;
use crate::error::{Error, Result};
use crate::lock::{LockMode, LockPolicy};
use crate::log::record;
use crate::log::{Log, LogStats};
use crate::mvcc::gc::{self, VersionCensus};
use crate::options::{Concurrency, Options};
use crate::storage::schema::TableSchema;
use crate::txn::shared::Engine;
use crate::txn::{Isolation, Joins, LockStats, Transaction};
use overtake_priority::Priority;

/// Source of database identities (so a table of one database is refused by another).
static NEXT_DATABASE_ID: AtomicU64 = AtomicU64::new(1);

/// A database: in memory ([`Database::in_memory`]), or kept in a directory with a redo log
/// ([`Database::open`]).
pub struct Database {
    /// Shared with the background checkpointer.
    pub(crate) engine: Arc<Engine>,
    /// What opening it in a directory recovered.
    recovered: Option<Recovered>,
    /// Checkpoints of a logged database.
    checkpoints: Option<checkpoint::Checkpoints>,
    /// The lock on its directory, released last.
    _directory_lock: Option<std::fs::File>,
}

impl Drop for Database {
    /// Stops the background checkpointer first, so that the engine (and its log's last flush)
    /// ends on the thread that drops the database.
    fn drop(&mut self) {
        self.checkpoints.take();
    }
}

/// Counters describing the engine's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EngineStats {
    /// The latest commit timestamp.
    pub commit_clock: u64,
    /// Versions created since the database was opened.
    pub versions_created: u64,
    /// Versions unlinked by the collector since the database was opened.
    pub versions_reclaimed: u64,
    /// The oldest snapshot still in use when the stats were taken.
    pub watermark: u64,
}

impl Database {
    /// An empty database that lives in memory only: nothing is logged, and everything is gone
    /// when it is dropped.
    pub fn in_memory(options: Options) -> Self {
        let id = NEXT_DATABASE_ID.fetch_add(1, Ordering::Relaxed);
        Database {
            engine: Arc::new(Engine::new(id, &options)),
            recovered: None,
            checkpoints: None,
            _directory_lock: None,
        }
    }

    /// What [`open`](Self::open) recovered (`None` for an in-memory database).
    pub fn recovered(&self) -> Option<&Recovered> {
        self.recovered.as_ref()
    }

    /// What the log writer did (`None` without a log).
    pub fn log_stats(&self) -> Option<LogStats> {
        self.engine.log.as_ref().map(Log::stats)
    }

    /// Why the log stopped, if it has: a write it could not complete, tried again for about a
    /// second and a half. From then on nothing is logged, every transaction that would write
    /// is refused ([`AbortReason::LogStopped`](crate::AbortReason::LogStopped)) and reads go on;
    /// opening the database again recovers what was durable.
    pub fn log_stopped(&self) -> Option<String> {
        self.engine.log.as_ref()?.stopped().map(str::to_owned)
    }

    /// Creates a table. In a logged database its creation is logged (before anyone can write to
    /// it) and, under `sync`, durable when this returns. There, rows of a table without a
    /// primary key can be inserted but not updated or deleted ([`Error::NotLogged`]).
    pub fn create_table(&self, schema: TableSchema) -> Result<Arc<Table>> {
        let Some(log) = &self.engine.log else {
            return self.engine.catalog.create(self.engine.id, schema);
        };
        if log.stopped().is_some() {
            return Err(Error::Aborted(crate::AbortReason::LogStopped));
        }
        let mut end = 0;
        let table = self.engine.catalog.create_announced(
            self.engine.id,
            schema,
            |id, schema, region| {
                let mut bytes = Vec::new();
                record::encode_create_table(&mut bytes, id, schema);
                end = log.append(&bytes, None, region);
            },
        )?;
        log.ticket(end, Priority::HIGH).wait().0?;
        Ok(table)
    }

    /// Drops the table called `name`: the name is free at once; transactions that hold the
    /// table may still read and write it, but nothing written to it matters any more. In a
    /// logged database the drop is logged (durable when this returns, under `sync`), recovery
    /// replays no write to it after the drop and checkpoints hold none of its rows; its memory is
    /// released when the database is next opened after a checkpoint.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let Some(log) = &self.engine.log else {
            self.engine.catalog.drop_announced(name, |_, _| {})?;
            return Ok(());
        };
        if log.stopped().is_some() {
            return Err(Error::Aborted(crate::AbortReason::LogStopped));
        }
        let mut end = 0;
        self.engine.catalog.drop_announced(name, |id, region| {
            let mut bytes = Vec::new();
            record::encode_drop_table(&mut bytes, id);
            end = log.append(&bytes, None, region);
        })?;
        log.ticket(end, Priority::HIGH).wait().0?;
        Ok(())
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.engine.catalog.by_name(name)
    }

    /// Every table, in creation order (not the dropped ones).
    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut all = self.engine.catalog.all();
        all.retain(|t| !t.is_dropped());
        all
    }

    /// Whether reads take locks (two-phase locking), and so may wait for a writer: without,
    /// a read waits for no one (MVCC reads a snapshot; a writer committing the version it
    /// meets holds it up only for the commit's short region).
    pub fn reads_lock(&self) -> bool {
        self.engine.locks.is_some()
    }

    /// Begins a transaction.
    pub fn begin(&self, priority: Priority, isolation: Isolation) -> Result<Transaction<'_>> {
        self.begin_aged(priority, isolation, None)
    }

    /// Begins a transaction meant only to read (a point read, say): over MVCC it joins no lock
    /// manager at its begin, which every other transaction does (a shared latch's worth of
    /// work). It behaves as one [`begin`](Self::begin) gives all the same: should it lock or
    /// write after all, it joins the lock manager then, as the youngest transaction yet, and
    /// under READ COMMITTED its writes take row locks.
    pub fn begin_reader(
        &self,
        priority: Priority,
        isolation: Isolation,
    ) -> Result<Transaction<'_>> {
        if self.reads_lock() {
            return self.begin(priority, isolation);
        }
        self.begin_joining(priority, isolation, Joins::WhenItLocks)
    }

    /// Begins a transaction that the lock manager counts as begun the `lock_age`-th (`None`: the
    /// youngest yet), so that a retry keeps its first attempt's age.
    fn begin_aged(
        &self,
        priority: Priority,
        isolation: Isolation,
        lock_age: Option<u64>,
    ) -> Result<Transaction<'_>> {
        self.begin_joining(priority, isolation, Joins::AtBegin(lock_age))
    }

    /// Begins a transaction that joins the lock manager as `joins` says.
    fn begin_joining(
        &self,
        priority: Priority,
        isolation: Isolation,
        joins: Joins,
    ) -> Result<Transaction<'_>> {
        let lease = self.engine.txns.begin()?;
        Ok(Transaction::new(
            &self.engine,
            lease,
            (priority, isolation),
            joins,
        ))
    }

    /// Runs `body` in a transaction and commits it, retrying from scratch after conflicts and failed
    /// validations (as `policy` allows). User rollbacks and other errors are returned at once.
    ///
    /// With [`RetryPolicy::promote_after`] set, the attempts after that many failures are
    /// *promoted* so that the transaction cannot lose forever to a stream of urgent writers (a
    /// long low-priority writer otherwise conflicts with every one that commits while it runs):
    /// a promoted attempt runs inside a non-preemptible region, so nothing else runs on its worker
    /// until it ends, and reserves each record it updates or deletes as it goes (a pending version
    /// that makes other writers conflict), so writers on other workers cannot overtake it either.
    /// Its reservations are held only while it runs: a promoted attempt is never paused.
    ///
    /// Returns once the commit is acknowledged: under `sync`, once its log record is durable
    /// (a task parks meanwhile), and for a read-only transaction once every commit it read is
    /// (see [`Transaction::commit_pipelined`]); a log that stops first fails it with
    /// [`Error::NotDurable`].
    pub fn run<T>(
        &self,
        priority: Priority,
        isolation: Isolation,
        policy: &RetryPolicy,
        body: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Attempts<T> {
        let mut attempts = self.run_pipelined(priority, isolation, policy, body);
        if let Some(acknowledgement) = attempts.acknowledgement.take() {
            let (durable, waited) = acknowledgement.wait();
            attempts.durable_wait = waited;
            if let Err(e) = durable {
                attempts.result = Err(e.into());
            }
        }
        attempts
    }

    /// [`run`](Self::run) without the wait for the acknowledgement: the attempts end at the
    /// in-memory commit, and a committed one leaves in [`Attempts::acknowledgement`] what must
    /// resolve before anyone is told it committed or shown its result (ERMIA's pipelined
    /// commit: a task ends and frees its context; its scheduler keeps only this).
    pub fn run_pipelined<T>(
        &self,
        priority: Priority,
        isolation: Isolation,
        policy: &RetryPolicy,
        mut body: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Attempts<T> {
        let mut attempts = Attempts {
            result: Err(Error::NotActive),
            conflicts: 0,
            validation_failures: 0,
            deadlocks: 0,
            lock_preemptions: 0,
            promoted: 0,
            failed_time: Duration::ZERO,
            locks: LockStats::default(),
            durable_wait: Duration::ZERO,
            acknowledgement: None,
        };
        // Promotion holds a region for a whole attempt, and lock waits cannot park in one; under
        // two-phase locking the lock policies decide who goes first instead.
        let may_promote = self.engine.locks.is_none();
        let mut tries: u32 = 0;
        // Under two-phase locking every attempt keeps the first one's age, which lock policies
        // that protect older transactions (deadlock victims, `wdl1`) count on for progress.
        let mut lock_age = None;
        loop {
            tries += 1;
            let promoted = may_promote && policy.promote_after.is_some_and(|k| tries > k);
            // Taken before `begin`, dropped after the transaction ended: see above.
            let region = promoted.then(NoPreemptGuard::new);
            let started = Instant::now();
            let mut txn = match self.begin_aged(priority, isolation, lock_age) {
                Ok(txn) => {
                    lock_age = txn.lock_age();
                    txn
                }
                Err(e) => {
                    attempts.result = Err(e);
                    return attempts;
                }
            };
            if promoted {
                attempts.promoted += 1;
                txn.reserve_writes();
            }
            // A promoted attempt commits inside its region; its acknowledgement waits after it.
            let result = body(&mut txn)
                .and_then(|value| Ok(txn.commit_pipelined().map(|ack| (value, ack))?));
            attempts.locks.add(&txn.lock_stats());
            let restart_after = txn.take_restart_after();
            drop(txn);
            drop(region);
            let result = result.map(|(value, acknowledgement)| {
                attempts.acknowledgement = Some(acknowledgement);
                value
            });
            if let Err(e) = &result {
                attempts.failed_time += started.elapsed();
                attempts.count(e);
            }
            match result {
                Err(e)
                    if e.abort_reason().is_some()
                        && e.is_retryable()
                        && !policy.exhausted(tries) =>
                {
                    if let Some(locks) = &self.engine.locks
                        && !restart_after.is_empty()
                    {
                        // Holding nothing now, it waits out the holders that made it abort.
                        locks.await_end(&restart_after);
                    }
                    policy.back_off(tries);
                }
                result => {
                    attempts.result = result;
                    return attempts;
                }
            }
        }
    }

    /// Every transaction waiting for a lock now (under two-phase locking, or READ COMMITTED
    /// writers waiting for a row), longest wait first: who waits, for what, behind whom (like
    /// PostgreSQL's `pg_locks`).
    pub fn lock_waits(&self) -> Vec<LockWait> {
        let manager = self.engine.locks.as_ref().unwrap_or(&self.engine.row_locks);
        let waits = manager.waits();
        let names: Vec<_> = waits.iter().map(|w| w.lock).collect();
        let described = crate::txn::describe_locks(&self.engine.catalog, &names);
        waits
            .into_iter()
            .zip(described)
            .map(|(w, lock)| LockWait {
                waiter: w.waiter,
                level: w.level,
                lock,
                holders: w
                    .holders
                    .iter()
                    .map(|&(t, mode)| (t, mode == LockMode::Exclusive))
                    .collect(),
                waited: w.waited,
            })
            .collect()
    }

    /// Switches the concurrency control (a benchmark compares several on one loaded database).
    /// Taking `&mut self` guarantees no transaction is open; a background checkpoint in progress
    /// is waited for.
    pub fn set_concurrency(&mut self, concurrency: Concurrency) {
        if let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.pause();
        }
        Arc::get_mut(&mut self.engine)
            .expect("only the checkpointer shares the engine, and it is stopped")
            .locks = concurrency.lock_manager();
        if let Some(checkpoints) = &mut self.checkpoints {
            checkpoints.resume(&self.engine);
        }
    }

    /// The lock policy, under two-phase locking.
    pub fn lock_policy(&self) -> Option<LockPolicy> {
        self.engine.locks.as_ref().map(|m| m.policy())
    }

    /// Reclaims everything the current watermark allows (the collector otherwise works a little at
    /// every commit). Returns the number of retired items processed.
    pub fn collect_garbage(&self) -> usize {
        let engine = &self.engine;
        engine.collector.collect_all(&engine.txns, &engine.catalog)
    }

    /// Engine counters.
    pub fn stats(&self) -> EngineStats {
        let txns = &self.engine.txns;
        EngineStats {
            commit_clock: txns.now(),
            watermark: txns.refresh_watermark(),
            versions_created: txns.versions_created(),
            versions_reclaimed: self.engine.collector.reclaimed(),
        }
    }

    /// Walks every record of every table and counts versions (a diagnostic, O(records)).
    pub fn census(&self) -> VersionCensus {
        let watermark = self.engine.txns.refresh_watermark();
        let mut census = VersionCensus::default();
        for table in self.tables() {
            gc::census(&table, watermark, &mut census);
        }
        census
    }

    /// Maximum number of concurrently open transactions.
    pub fn max_transactions(&self) -> usize {
        self.engine.txns.capacity()
    }
}

/// A transaction waiting for a lock, from [`Database::lock_waits`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockWait {
    /// The waiting transaction ([`Transaction::id`]).
    pub waiter: u64,
    /// Its priority level, inheritance included.
    pub level: u8,
    /// The lock: its table, index and key (as a hash: the lock table keeps no key bytes), e.g.
    /// `accounts primary key, key hash 0x1f...`.
    pub lock: String,
    /// The holders, each with true if it holds the lock exclusive.
    pub holders: Vec<(u64, bool)>,
    /// How long it has waited.
    pub waited: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AbortReason;
    use crate::{LockPolicy, Options};

    /// Lock policies that protect older transactions need a retry to stay as old as its first
    /// attempt, or a transaction aborted at every attempt would never become the oldest.
    #[test]
    fn a_retry_keeps_its_first_attempts_lock_age() {
        let db = Database::in_memory(Options {
            concurrency: Concurrency::TwoPhaseLocking(LockPolicy::Wdl1),
            ..Options::default()
        });
        let mut ages = Vec::new();
        let mut younger = Vec::new();
        let attempts = db.run(
            Priority::LOW,
            Isolation::Serializable,
            &RetryPolicy::default(),
            |txn| {
                ages.push(txn.lock_age().expect("locking"));
                let other = db.begin(Priority::LOW, Isolation::Serializable)?;
                younger.push(other.lock_age().expect("locking"));
                if ages.len() < 3 {
                    return Err(Error::Aborted(AbortReason::WaitDepth));
                }
                Ok(())
            },
        );
        assert_eq!(attempts.result, Ok(()));
        assert_eq!(ages, [ages[0]; 3]);
        assert!(younger.iter().all(|&y| y > ages[0]), "{younger:?}");
        assert_eq!(younger, {
            let mut sorted = younger.clone();
            sorted.sort_unstable();
            sorted
        });
        // Without locking there is no age.
        let mvcc = Database::in_memory(Options::default());
        let txn = mvcc
            .begin(Priority::LOW, Isolation::Snapshot)
            .expect("begin");
        assert_eq!(txn.lock_age(), None);
    }
}
