//! The engine's error type. Aborts are typed so that a caller's retry policy can tell a transient
//! conflict (retry) from a deliberate rollback or a user error (do not retry).

use thiserror::Error;

use crate::limits::{MAX_COLUMNS, MAX_DECIMAL_PRECISION, MAX_KEY_LEN, MAX_ROW_LEN};

/// Why a transaction was aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AbortReason {
    /// A write-write conflict: another transaction updated the record after this transaction's
    /// snapshot, or holds an uncommitted version of it (first updater wins).
    Conflict,
    /// Serializable validation failed at commit: something this transaction read, or a range it
    /// scanned, changed before it could commit.
    Validation,
    /// The transaction's own logic asked to roll back.
    UserRollback,
    /// Two-phase locking: the transaction closed a cycle of lock waits and was chosen as the
    /// victim (the least urgent, then the youngest, of the cycle).
    Deadlock,
    /// Two-phase locking: a more urgent transaction's lock policy aborted it to take a lock it
    /// held (`pabort`, `pow`, `cr`).
    Preempted,
    /// Two-phase locking: waiting would have made a chain of waits longer than the policy allows
    /// (`wdl1`).
    WaitDepth,
    /// A lock wait lasted the time limit the transaction set
    /// ([`Transaction::set_lock_timeout`](crate::Transaction::set_lock_timeout)). Not retried.
    LockTimeout,
    /// A lock wait was interrupted by the flag the transaction set
    /// ([`Transaction::set_interrupt`](crate::Transaction::set_interrupt)): its statement was
    /// cancelled. Not retried.
    Interrupted,
    /// Its writes would log a record longer than the log takes
    /// ([`Options::max_log_record`](crate::Options::max_log_record)). Not retryable.
    TooLarge,
    /// It would write, but the log has stopped after a write it could not complete
    /// ([`Database::log_stopped`](crate::Database::log_stopped) says why): nothing more is
    /// logged until the database is opened again. Not retryable.
    LogStopped,
}

impl AbortReason {
    /// A short, stable name (used in reports).
    pub fn as_str(self) -> &'static str {
        match self {
            AbortReason::Conflict => "conflict",
            AbortReason::Validation => "validation",
            AbortReason::UserRollback => "user rollback",
            AbortReason::Deadlock => "deadlock",
            AbortReason::Preempted => "preempted by a more urgent transaction",
            AbortReason::WaitDepth => "wait depth",
            AbortReason::TooLarge => "too large to log",
            AbortReason::LogStopped => "the log has stopped",
            AbortReason::LockTimeout => "lock timeout",
            AbortReason::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for AbortReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a schema declaration was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// A table, column or index name is empty.
    #[error("names must not be empty")]
    EmptyName,
    /// The table declares no columns.
    #[error("table {0} has no columns")]
    NoColumns(String),
    /// More than [`MAX_COLUMNS`] columns.
    #[error("{0} columns is more than the limit of {MAX_COLUMNS}")]
    TooManyColumns(usize),
    /// Two columns share a name.
    #[error("column {0} is declared twice")]
    DuplicateColumn(String),
    /// A key or index names a column that does not exist.
    #[error("no column named {0}")]
    UnknownColumn(String),
    /// A key column is nullable.
    #[error("key column {0} must be NOT NULL")]
    NullableKeyColumn(String),
    /// A key lists the same column twice.
    #[error("column {0} appears twice in one key")]
    DuplicateKeyColumn(String),
    /// Two indexes share a name.
    #[error("index {0} is declared twice")]
    DuplicateIndex(String),
    /// An index has no columns.
    #[error("index {0} has no columns")]
    EmptyIndex(String),
    /// A column type is malformed.
    #[error("column {column}: {reason}")]
    BadType {
        /// The column.
        column: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An encoded key could exceed [`MAX_KEY_LEN`].
    #[error("{index} can be {bytes} bytes long once encoded; the limit is {MAX_KEY_LEN}")]
    KeyTooLong {
        /// Which key.
        index: String,
        /// Its worst-case encoded length.
        bytes: usize,
    },
    /// Every row would need more than [`MAX_ROW_LEN`] bytes (fixed-width fields and the offsets
    /// of variable-length ones).
    #[error("rows need {0} bytes before any variable-length value; the limit is {MAX_ROW_LEN}")]
    RowTooLong(usize),
}

/// A decimal that cannot be represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecimalError {
    /// More digits after the point than any decimal may have.
    #[error("a decimal scale of {0} exceeds the maximum of {MAX_DECIMAL_PRECISION}")]
    ScaleTooLarge(u8),
}

/// Everything that can go wrong in the engine's operations on data (commit has its own, narrower
/// [`CommitError`], which converts into this one).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The transaction was aborted and its writes undone.
    #[error("transaction aborted ({0})")]
    Aborted(AbortReason),
    /// An insert found a visible row with the same primary key.
    #[error("duplicate primary key in table {table}")]
    DuplicateKey {
        /// The table.
        table: String,
    },
    /// A schema declaration was refused.
    #[error("invalid schema: {0}")]
    Schema(#[from] SchemaError),
    /// A row that the transaction requires does not exist (in its snapshot).
    #[error("no such row in table {table}")]
    RowNotFound {
        /// The table.
        table: String,
    },
    /// A table with this name already exists.
    #[error("table {0} already exists")]
    TableExists(String),
    /// No table with this name.
    #[error("no table named {0}")]
    NoSuchTable(String),
    /// The catalog cannot hold more tables.
    #[error("the catalog is full ({0} tables)")]
    TooManyTables(usize),
    /// A value does not fit its column (type, length, precision, NULL).
    #[error("invalid value for column {column}: {reason}")]
    InvalidValue {
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A string is longer than its column's declared length.
    #[error("invalid value for column {column}: {bytes} bytes is longer than the declared {max}")]
    StringTooLong {
        /// The column.
        column: String,
        /// The string's length in bytes.
        bytes: usize,
        /// The column's declared length in bytes.
        max: u16,
    },
    /// A row's values together take more than [`MAX_ROW_LEN`] bytes.
    #[error("row is too big: size {bytes}, maximum size {MAX_ROW_LEN}")]
    RowTooBig {
        /// The row's encoded size.
        bytes: usize,
    },
    /// A decimal that cannot be represented.
    #[error(transparent)]
    Decimal(#[from] DecimalError),
    /// A key was built with the wrong number or types of parts.
    #[error("invalid key for {index}: {reason}")]
    InvalidKey {
        /// The index the key was built for.
        index: String,
        /// What is wrong.
        reason: String,
    },
    /// The table was replaced (a transaction holding its rebuild lock committed) before this
    /// transaction could take its write lock; the transaction is still active, with nothing
    /// written to the table (see `Transaction::lock_table`).
    #[error("table {0} was replaced by a concurrent transaction")]
    TableReplaced(String),
    /// The table belongs to another database.
    #[error("table {0} belongs to another database")]
    ForeignTable(String),
    /// Every transaction slot is in use.
    #[error("too many concurrent transactions (the limit is {0})")]
    TooManyTransactions(usize),
    /// The transaction has already committed or aborted.
    #[error("the transaction is no longer active")]
    NotActive,
    /// An update or delete of a row of a table without a primary key, in a logged database (the
    /// log could not name the row again at recovery).
    #[error(
        "table {table} has no primary key: in a logged database its rows can be inserted, not updated or deleted"
    )]
    NotLogged {
        /// The table.
        table: String,
    },
    /// A change committed in memory was not made durable: the log stopped (its I/O error says
    /// why) before its record was known to be on disk. It is in doubt: a write or sync that
    /// failed may have reached the disk all the same, and then the change is there once the
    /// database is opened again.
    #[error("committed in memory, not known to be durable (in doubt after a restart): {0}")]
    NotDurable(String),
    /// A transaction was to be prepared under a global identifier that a prepared transaction
    /// already has; it was rolled back.
    #[error("transaction identifier \"{0}\" is already in use")]
    PreparedIdInUse(String),
    /// No prepared transaction has this global identifier (or one that no transaction holds,
    /// for [`Database::resume_prepared`](crate::Database::resume_prepared)).
    #[error("prepared transaction with identifier \"{0}\" does not exist")]
    NoSuchPrepared(String),
    /// A prepared transaction could not be decided now (the log has stopped): it stays prepared.
    #[error("the prepared transaction stays prepared: {0}")]
    StillPrepared(String),
}

impl Error {
    /// True for conditions a later try may get past: aborts (conflicts, failed validation, the
    /// lock manager's aborts) and every transaction slot being in use; false for user rollbacks
    /// and user errors. ([`Database::run`](crate::Database::run) retries aborts only: a full
    /// slot table frees up when other transactions end, which a retry loop on a worker could
    /// keep from happening.)
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Aborted(reason) => !matches!(
                reason,
                AbortReason::UserRollback
                    | AbortReason::TooLarge
                    | AbortReason::LockTimeout
                    | AbortReason::Interrupted
                    | AbortReason::LogStopped
            ),
            Error::TooManyTransactions(_) => true,
            _ => false,
        }
    }

    /// The abort reason, if this is an abort.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self {
            Error::Aborted(reason) => Some(*reason),
            _ => None,
        }
    }
}

/// Why [`Transaction::commit`](crate::Transaction::commit) did not commit, or could not say that
/// its commit is durable.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommitError {
    /// The transaction was aborted (now, by a failed validation, or earlier) and its writes
    /// undone.
    #[error("transaction aborted ({0})")]
    Aborted(AbortReason),
    /// The transaction had already committed or been ended with `abort`.
    #[error("the transaction is no longer active")]
    NotActive,
    /// It committed in memory, but its log record was not made durable: the log stopped (its
    /// I/O error says why) and nothing more is written. The commit is in doubt: the write or
    /// sync that failed may have reached the disk all the same, and then the commit is there
    /// once the database is opened again (check before doing it again).
    #[error("committed in memory, not known to be durable (in doubt after a restart): {0}")]
    NotDurable(String),
    /// See [`Error::PreparedIdInUse`].
    #[error("transaction identifier \"{0}\" is already in use")]
    PreparedIdInUse(String),
    /// See [`Error::StillPrepared`].
    #[error("the prepared transaction stays prepared: {0}")]
    StillPrepared(String),
}

impl CommitError {
    /// True if a later try may get past it (every abort but a user rollback).
    pub fn is_retryable(&self) -> bool {
        Error::from(self.clone()).is_retryable()
    }

    /// The abort reason, if this is an abort.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self {
            CommitError::Aborted(reason) => Some(*reason),
            _ => None,
        }
    }
}

impl From<CommitError> for Error {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Aborted(reason) => Error::Aborted(reason),
            CommitError::NotActive => Error::NotActive,
            CommitError::NotDurable(why) => Error::NotDurable(why),
            CommitError::PreparedIdInUse(gid) => Error::PreparedIdInUse(gid),
            CommitError::StillPrepared(why) => Error::StillPrepared(why),
        }
    }
}

/// Result type of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_conditions_are_retryable_and_user_errors_are_not() {
        assert!(Error::Aborted(AbortReason::Conflict).is_retryable());
        assert!(Error::TooManyTransactions(1024).is_retryable());
        assert!(!Error::Aborted(AbortReason::UserRollback).is_retryable());
        assert!(!Error::NotActive.is_retryable());
        assert!(!Error::TableExists("t".into()).is_retryable());
        assert!(CommitError::Aborted(AbortReason::Validation).is_retryable());
        assert!(!CommitError::Aborted(AbortReason::UserRollback).is_retryable());
        assert!(!CommitError::NotActive.is_retryable());
    }
}
