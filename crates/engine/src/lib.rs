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
//! let db = Database::open(Options::default());
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

mod catalog;
mod db;
mod doubling;
mod engine;
mod epoch;
mod error;
mod footprint;
mod gc;
mod index;
mod key;
mod key_columns;
mod lock;
mod mvcc;
mod options;
mod point_cache;
mod prefetched;
mod record;
mod row;
mod schema;
mod table;
mod txn;
mod value;
mod writeset;

pub use catalog::MAX_TABLES;
pub use db::{Attempts, Database, EngineStats, LockWait, RetryPolicy};
pub use epoch::release_thread_garbage;
pub use error::{AbortReason, CommitError, Error, Result};
pub use gc::VersionCensus;
pub use key::{KeyBuf, KeyBuilder, KeyRange};
pub use lock::LockPolicy;
pub use mvcc::MAX_TRANSACTION_SLOTS;
pub use options::{Concurrency, Options};
pub use overtake_priority::Priority;
pub use row::{Row, RowBuilder, RowLayout, RowMut, RowRef};
pub use schema::{
    Column, ColumnType, IndexDef, MAX_COLUMNS, MAX_KEY_LEN, MAX_ROW_LEN, SchemaError, TableSchema,
    TableSchemaBuilder,
};
pub use table::{IndexId, Table, TableId};
pub use txn::{Isolation, LockStats, ScanOptions, Transaction};
pub use value::{Decimal, DecimalError, MAX_DECIMAL_PRECISION, Value};

// The README's example is compiled and run as a test of this crate.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
