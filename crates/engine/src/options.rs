//! A database's settings: how many transactions it admits and how it keeps them apart. Below
//! `db` (which opens a database with them), `engine` and `lock` (which act on them); depends on
//! nothing of the engine but the lock policies it names.

use std::sync::Arc;
use std::time::Duration;

use crate::lock::{LockManager, LockObserver, LockPolicy};
use crate::log::Durability;

/// Settings for [`Database::in_memory`](crate::Database::in_memory) and
/// [`Database::open`](crate::Database::open).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// How many transactions may be open at once (paused ones included). Beginning one more fails
    /// with [`Error::TooManyTransactions`](crate::Error::TooManyTransactions).
    pub max_transactions: usize,
    /// How concurrent transactions are kept apart.
    pub concurrency: Concurrency,
    /// How commits reach stable storage, for a database opened in a directory
    /// ([`Database::open`](crate::Database::open); `sync` by default). An in-memory database has
    /// no log.
    pub durability: Durability,
    /// A logged database checkpoints in the background each time this many bytes were logged
    /// since the last checkpoint (`None`: only when [`Database::checkpoint`] is called). A
    /// checkpoint lets the log before it be removed and bounds what recovery replays.
    ///
    /// [`Database::checkpoint`]: crate::Database::checkpoint
    pub checkpoint_after: Option<u64>,
    /// Group commit: the longest time a logged commit waits for the flush that takes it, when no
    /// commit above the lowest priority asks for one at once (those are flushed without waiting,
    /// or join the flush in flight). Shorter: lower-priority commits are durable sooner, and
    /// the log is flushed more often in smaller batches.
    pub group_commit: Duration,
    /// The policy of the row write locks READ COMMITTED transactions take in an MVCC database
    /// (POW by default: a paused, less urgent holder loses its lock to a waiting urgent
    /// transaction). Under two-phase locking the concurrency's own policy applies.
    pub row_lock_policy: LockPolicy,
    /// Told of lock waits between OS threads (`None` by default): while a transaction running
    /// on a thread of its own waits for a lock, the observer learns which thread holds it (an
    /// OS-level scheduler such as `overtake-ufs` then runs that thread as time-sensitive until
    /// the wait ends). Transactions run as tasks on a scheduler's workers are not observed (they
    /// share threads).
    pub lock_observer: Option<Arc<dyn LockObserver>>,
    /// The largest log record one commit may write, in bytes ([`MAX_LOG_RECORD`], 1 GiB, by
    /// default, and at most): a transaction whose writes would log more is refused at commit
    /// ([`AbortReason::TooLarge`](crate::AbortReason::TooLarge)) before anyone sees them, never
    /// acknowledged and then lost to recovery.
    pub max_log_record: usize,
}

/// The largest log record a commit may write (a frame's payload).
pub const MAX_LOG_RECORD: usize = 1 << 30;

impl Options {
    /// Sets [`row_lock_policy`](Self::row_lock_policy).
    pub fn row_lock_policy(mut self, policy: LockPolicy) -> Self {
        self.row_lock_policy = policy;
        self
    }

    /// Sets [`concurrency`](Self::concurrency).
    pub fn concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Sets [`durability`](Self::durability).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets [`checkpoint_after`](Self::checkpoint_after).
    pub fn checkpoint_after(mut self, bytes: Option<u64>) -> Self {
        self.checkpoint_after = bytes;
        self
    }

    /// Sets [`group_commit`](Self::group_commit).
    pub fn group_commit(mut self, interval: Duration) -> Self {
        self.group_commit = interval;
        self
    }

    /// Sets [`lock_observer`](Self::lock_observer).
    pub fn lock_observer(mut self, observer: Arc<dyn LockObserver>) -> Self {
        self.lock_observer = Some(observer);
        self
    }

    /// Sets [`max_log_record`](Self::max_log_record) (capped at [`MAX_LOG_RECORD`]).
    pub fn max_log_record(mut self, bytes: usize) -> Self {
        self.max_log_record = bytes.min(MAX_LOG_RECORD);
        self
    }

    /// Sets [`max_transactions`](Self::max_transactions).
    pub fn max_transactions(mut self, max: usize) -> Self {
        self.max_transactions = max;
        self
    }
}

/// How long a low-priority commit waits for a flush by default: a few flushes' time on the
/// disks measured here (a flush of a busy TPC-C worker's batch takes 200-400 us), so the
/// batches stay large while the tasks parked on them stay few.
pub const DEFAULT_GROUP_COMMIT: Duration = Duration::from_micros(500);

/// Log bytes between background checkpoints by default: about ten seconds of replay at the
/// recovery speed measured here, and a few seconds of a busy TPC-C worker's log.
pub const DEFAULT_CHECKPOINT_AFTER: u64 = 1 << 30;

impl Default for Options {
    fn default() -> Self {
        Options {
            max_transactions: 1024,
            concurrency: Concurrency::Mvcc,
            durability: Durability::Sync,
            checkpoint_after: Some(DEFAULT_CHECKPOINT_AFTER),
            group_commit: DEFAULT_GROUP_COMMIT,
            row_lock_policy: LockPolicy::Pow,
            lock_observer: None,
            max_log_record: MAX_LOG_RECORD,
        }
    }
}

/// A database's concurrency control: one for all its transactions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Concurrency {
    /// Multi-version snapshots, reads without locks, writes buffered until commit (the default;
    /// see the crate documentation). Transactions choose snapshot or serializable isolation.
    #[default]
    Mvcc,
    /// Strict two-phase locking: shared locks on what a transaction reads, exclusive locks on what
    /// it writes, key-range (next-key) locks against phantoms, all held until it ends. Every
    /// transaction is serializable whatever isolation it asks for. A transaction that must wait
    /// for a lock parks (a task of `overtake-sched` lets its worker run others, a thread sleeps);
    /// the policy orders each lock's waiters and may abort or raise holders.
    TwoPhaseLocking(LockPolicy),
}

impl Concurrency {
    /// A short, stable name: `mvcc` or `2pl`.
    pub fn name(self) -> &'static str {
        match self {
            Concurrency::Mvcc => "mvcc",
            Concurrency::TwoPhaseLocking(_) => "2pl",
        }
    }

    /// The lock policy, under two-phase locking.
    pub fn lock_policy(self) -> Option<LockPolicy> {
        match self {
            Concurrency::Mvcc => None,
            Concurrency::TwoPhaseLocking(p) => Some(p),
        }
    }
}

impl Concurrency {
    /// The lock manager this concurrency control needs, if any.
    pub(crate) fn lock_manager(self) -> Option<LockManager> {
        match self {
            Concurrency::Mvcc => None,
            Concurrency::TwoPhaseLocking(policy) => Some(LockManager::new(policy)),
        }
    }
}
