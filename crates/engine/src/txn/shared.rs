//! The shared state of one open database, which every transaction of it works on: the commit
//! clock and transaction slots, the catalog, the collector's retire queues and the pool of
//! transaction footprints.
//!
//! `Database` (the public API) owns one; a `Transaction` borrows it. Keeping it apart from both
//! is what lets dependencies run one way: `db` -> `txn` -> `engine` -> the parts below.

use crate::catalog::Catalog;
use crate::lock::{LockManager, OsHints};
use crate::log::{Acknowledgement, Log};
use crate::mvcc::TxnTable;
use crate::mvcc::gc::Collector;
use crate::options::Options;
use crate::txn::footprint::FootprintPool;

pub(crate) struct Engine {
    /// Identity of the database (so a table of one database is refused by another).
    pub(crate) id: u64,
    pub(crate) txns: TxnTable,
    pub(crate) catalog: Catalog,
    pub(crate) collector: Collector,
    pub(crate) footprints: FootprintPool,
    /// The lock table, in the two-phase-locking mode.
    pub(crate) locks: Option<LockManager>,
    /// The write locks of READ COMMITTED transactions in an MVCC database (under two-phase
    /// locking, `locks` serves them).
    pub(crate) row_locks: LockManager,
    /// The redo log, for a database opened in a directory with logging on.
    pub(crate) log: Option<Log>,
    /// Per transaction slot: the newest commit timestamp its transaction has read (see
    /// `Transaction::reads`). Outside the transaction, so that a statement streaming rows can
    /// wait on it while a scan holds the transaction.
    pub(crate) read_marks: Box<[overtake_runtime::CachePadded<std::sync::atomic::AtomicU64>]>,
    /// The transactions prepared for two-phase commit (see `txn::two_phase`).
    pub(crate) prepared: crate::txn::two_phase::PreparedSet,
}

impl Engine {
    /// What the commit whose record ends at `lsn` (`None`: it wrote none) waits for before it
    /// is acknowledged, as the log's mode says.
    pub(crate) fn ticket(
        &self,
        lsn: Option<u64>,
        priority: overtake_priority::Priority,
    ) -> Acknowledgement {
        match (lsn, &self.log) {
            (Some(lsn), Some(log)) => log.ticket(lsn, priority),
            _ => Acknowledgement::immediate(),
        }
    }

    pub(crate) fn new(id: u64, options: &Options) -> Self {
        // A worker thread that ran transactions frees what they retired before it exits (see
        // `release_thread_garbage`); the scheduler runs this hook without knowing the engine.
        overtake_runtime::exit_hooks::at_worker_exit(|| {
            crate::mvcc::epoch::release_thread_garbage();
        });
        let hints = options.lock_observer.clone().map(OsHints::new);
        let txns = TxnTable::new(options.max_transactions);
        let slots = txns.capacity();
        Engine {
            id,
            txns,
            catalog: Catalog::new(),
            collector: Collector::new(slots),
            footprints: FootprintPool::new(slots),
            locks: options
                .concurrency
                .lock_manager()
                .map(|m| m.with_hints(hints.clone())),
            row_locks: LockManager::new(options.row_lock_policy).with_hints(hints),
            log: None,
            read_marks: (0..slots)
                .map(|_| overtake_runtime::CachePadded(std::sync::atomic::AtomicU64::new(0)))
                .collect(),
            prepared: Default::default(),
        }
    }
}
