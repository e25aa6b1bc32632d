//! Overtake's storage engine: an in-memory, multi-version transactional store.
//!
//! - Tables have declared schemas ([`TableSchema`]) with typed columns, a primary key and secondary
//!   indexes. Rows use a compact encoding read without allocation ([`RowRef`]), built with
//!   [`RowBuilder`] and changed with [`RowMut`]. Keys use an order-preserving encoding
//!   ([`KeyBuilder`], [`KeyRange`]).
//! - Every record keeps a chain of versions. Transactions read a snapshot without taking locks,
//!   buffer their writes until commit (first committer wins), and [`Isolation::Serializable`] adds
//!   commit-time validation of reads and scanned ranges. A paused transaction therefore holds
//!   nothing another one could wait for. Old versions are reclaimed as soon as no snapshot needs them.
//! - A database may instead use strict two-phase locking ([`Concurrency::TwoPhaseLocking`]):
//!   shared and exclusive record locks, key-range locks against phantoms, deadlock detection, and
//!   a [`LockPolicy`] that orders each lock's waiters by priority and may abort or raise holders.
//! - Each transaction carries a [`Priority`]. The engine only records it: scheduling is the job of
//!   `overtake-sched`. What the engine guarantees the scheduler is that every place where a paused
//!   transaction could block others (index calls, commit, allocation) is a non-preemptible region.
//!
//! This crate contains no `unsafe` code.
//!
//! ```
//! use overtake_engine::{ColumnType, Database, Isolation, Options, Priority, TableSchema};
//!
//! let db = Database::in_memory(Options::default());
//! let accounts = db.create_table(
//!     TableSchema::builder("accounts")
//!         .column("id", ColumnType::Int64)
//!         .column("balance", ColumnType::Decimal { precision: 12, scale: 2 })
//!         .primary_key(&["id"])
//!         .build()?,
//! )?;
//! let mut txn = db.begin(Priority::HIGH, Isolation::Serializable)?;
//! let row = accounts.row_builder().int(0, 1).decimal_units(1, 100_00).finish()?;
//! txn.insert(&accounts, row)?;
//! txn.commit()?;
//! # Ok::<(), overtake_engine::Error>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Parts, lowest first: `limits` and `error`; `storage` (rows, keys, records); `index` (ordered
// indexes); `catalog` (tables and their indexes); `mvcc` (versions seen by snapshots, epochs,
// reclamation); `lock` (two-phase locking's lock manager and policies) and `options`; `log` (the
// redo log: records, group commit, recovery); `txn`
// (transactions and the state they share); `database` (the public entry points).

mod catalog;
mod database;
mod error;
mod index;
mod limits;
mod lock;
mod log;
mod mvcc;
mod options;
mod storage;
mod txn;

pub use catalog::MAX_TABLES;
pub use catalog::table::{IndexId, Table, TableId};
pub use database::{
    Attempts, CheckpointError, CheckpointStats, Checkpointed, Database, EngineStats, LockWait,
    Recovered, RetryPolicy,
};
pub use error::{AbortReason, CommitError, DecimalError, Error, Result, SchemaError};
pub use limits::{MAX_COLUMNS, MAX_DECIMAL_PRECISION, MAX_KEY_LEN, MAX_ROW_LEN};
pub use lock::{LockObserver, LockPolicy};
pub use log::{Acknowledgement, Durability, LogStats, RecoveryError};
pub use mvcc::MAX_TRANSACTION_SLOTS;
pub use mvcc::epoch::release_thread_garbage;
pub use mvcc::gc::VersionCensus;
pub use options::{
    Concurrency, DEFAULT_CHECKPOINT_AFTER, DEFAULT_GROUP_COMMIT, MAX_LOG_RECORD, Options,
};
pub use overtake_priority::Priority;
pub use storage::key::{KeyBuf, KeyBuilder, KeyRange};
pub use storage::numeric::NumericParts;
pub use storage::row::{Row, RowBuilder, RowLayout, RowMut, RowRef};
pub use storage::schema::{Column, ColumnType, IndexDef, TableSchema, TableSchemaBuilder};
pub use storage::value::{Decimal, Value};
pub use txn::{
    InDoubt, Isolation, KeyLock, LockStats, Reads, RecordId, Savepoint, ScanOptions, TableLock,
    Transaction,
};
