//! Errors as PostgreSQL reports them: a SQLSTATE code clients act on (retry a 40001, report a
//! 23505) and a message. Every failure of parsing, binding or execution ends up here; nothing in
//! this crate panics on bad input.

use std::fmt;

use overtake_engine::{AbortReason, CommitError, Error as EngineError};

/// SQLSTATE codes this crate reports (PostgreSQL's, Appendix A of its manual).
pub mod sqlstate {
    pub const SYNTAX_ERROR: &str = "42601";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const GENERATED_ALWAYS: &str = "428C9";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const INVALID_OBJECT_DEFINITION: &str = "42P17";
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const AMBIGUOUS_FUNCTION: &str = "42725";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const GROUPING_ERROR: &str = "42803";
    pub const WINDOWING_ERROR: &str = "42P20";
    pub const INVALID_ARGUMENT_FOR_NTILE: &str = "22014";
    pub const INVALID_ARGUMENT_FOR_NTH_VALUE: &str = "22016";
    pub const INVALID_PRECEDING_OR_FOLLOWING_SIZE: &str = "22013";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const ARRAY_SUBSCRIPT_ERROR: &str = "2202E";
    pub const INVALID_SQL_STATEMENT_NAME: &str = "26000";
    pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: &str = "2200H";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const INVALID_ARGUMENT_FOR_POWER_FUNCTION: &str = "2201F";
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    pub const BAD_COPY_FILE_FORMAT: &str = "22P04";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const SERIALIZATION_FAILURE: &str = "40001";
    pub const DEADLOCK_DETECTED: &str = "40P01";
    pub const IN_FAILED_TRANSACTION: &str = "25P02";
    pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "25P03";
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_SAVEPOINT_SPECIFICATION: &str = "3B001";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const OUT_OF_MEMORY: &str = "53200";
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const IO_ERROR: &str = "58030";
    pub const STATEMENT_TOO_COMPLEX: &str = "54001";
    pub const QUERY_CANCELED: &str = "57014";
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const INVALID_GRANT_OPERATION: &str = "0LP01";
    pub const OBJECT_IN_USE: &str = "55006";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const INVALID_CURSOR_NAME: &str = "34000";
    pub const DUPLICATE_CURSOR: &str = "42P03";
    pub const INVALID_BINARY_REPRESENTATION: &str = "22P03";
    pub const DEPENDENT_OBJECTS_STILL_EXIST: &str = "2BP01";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    pub const INVALID_REGULAR_EXPRESSION: &str = "2201B";
    pub const INDETERMINATE_DATATYPE: &str = "42P18";
    pub const INVALID_RECURSION: &str = "42P19";
    pub const DUPLICATE_ALIAS: &str = "42712";
    pub const INVALID_SCHEMA_NAME: &str = "3F000";
    pub const CHECK_VIOLATION: &str = "23514";
    pub const FOREIGN_KEY_VIOLATION: &str = "23503";
    pub const INVALID_FOREIGN_KEY: &str = "42830";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
    pub const CONNECTION_FAILURE: &str = "08006";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const INTERNAL_ERROR: &str = "XX000";
}

/// A failed statement: its SQLSTATE and message, and what PostgreSQL's ErrorResponse says
/// besides, which drivers and ORMs read (psycopg's `diag`, node-postgres' `constraint`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    /// Five-character SQLSTATE code.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
    /// The rest, boxed: most errors have none, and every `Result` of this crate carries this
    /// type (a small error keeps evaluation's frames small).
    pub about: Option<Box<About>>,
}

/// What an error says besides its code and message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct About {
    /// More about it (`Key (id)=(1) already exists.`).
    pub detail: Option<String>,
    /// What to do about it (`Use DROP SEQUENCE to remove a sequence.`).
    pub hint: Option<String>,
    /// The table it concerns, by its SQL name.
    pub table: Option<String>,
    /// The column it concerns.
    pub column: Option<String>,
    /// The constraint it concerns (`accounts_pkey`).
    pub constraint: Option<String>,
}

impl SqlError {
    /// An error with `code` and `message`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
            about: None,
        }
    }

    fn about_mut(&mut self) -> &mut About {
        self.about.get_or_insert_with(Box::default)
    }

    /// The same, with its detail.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.about_mut().detail = Some(detail.into());
        self
    }

    /// The same, with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.about_mut().hint = Some(hint.into());
        self
    }

    /// The same, concerning `table` (and its `column`, `constraint`, where given).
    pub fn concerning(
        mut self,
        table: &str,
        column: Option<&str>,
        constraint: Option<String>,
    ) -> Self {
        let about = self.about_mut();
        about.table = Some(table.to_owned());
        about.column = column.map(str::to_owned);
        about.constraint = constraint;
        self
    }

    /// A syntax error.
    pub fn syntax(message: impl Into<String>) -> Self {
        Self::new(sqlstate::SYNTAX_ERROR, message)
    }

    /// Something this implementation does not do (yet), named.
    pub fn unsupported(what: impl fmt::Display) -> Self {
        Self::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("{what} is not supported"),
        )
    }

    /// Whether a client should retry the transaction (serialization failure, deadlock).
    pub fn is_retryable(&self) -> bool {
        self.code == sqlstate::SERIALIZATION_FAILURE || self.code == sqlstate::DEADLOCK_DETECTED
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for SqlError {}

/// Statement results.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

fn abort_code(reason: AbortReason) -> &'static str {
    match reason {
        AbortReason::Deadlock => sqlstate::DEADLOCK_DETECTED,
        AbortReason::TooLarge => sqlstate::PROGRAM_LIMIT_EXCEEDED,
        AbortReason::LockTimeout => sqlstate::LOCK_NOT_AVAILABLE,
        AbortReason::Interrupted => sqlstate::QUERY_CANCELED,
        AbortReason::LogStopped => sqlstate::IO_ERROR,
        _ => sqlstate::SERIALIZATION_FAILURE,
    }
}

fn abort_message(reason: AbortReason) -> String {
    match reason {
        AbortReason::Conflict => "could not serialize access due to concurrent update".into(),
        AbortReason::Validation => {
            "could not serialize access due to read/write dependencies among transactions".into()
        }
        AbortReason::Deadlock => "deadlock detected".into(),
        AbortReason::LockTimeout => "canceling statement due to lock timeout".into(),
        AbortReason::Interrupted => "canceling statement due to user request".into(),
        AbortReason::TooLarge => {
            "the transaction's writes are too large to log (over 1 GB in one commit)".into()
        }
        AbortReason::LogStopped => "could not write to the log: it stopped after a write it could not complete; the server takes no more writes until it is restarted".into(),
        other => format!("transaction aborted: {}", other.as_str()),
    }
}

/// A transaction the log could not keep: it stopped (`why`) before what the transaction wrote,
/// or read, was known to be durable; a failed write may have reached the disk all the same, so
/// whether it is there after a restart is not known (as when PostgreSQL stops mid-commit).
fn not_durable(why: &str) -> SqlError {
    SqlError::new(
        sqlstate::IO_ERROR,
        "could not write to the log: whether what this transaction wrote or read is kept after a restart is not known",
    )
    .with_detail(why)
}

/// The SQL name of an engine table (`accounts#3` stands for SQL table `accounts`): errors name
/// tables as the client does.
fn sql_name(engine: &str) -> &str {
    engine.rsplit_once('#').map_or(engine, |(name, _)| name)
}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Aborted(reason) => {
                SqlError::new(abort_code(reason), abort_message(reason))
            }
            EngineError::DuplicateKey { table } => {
                let constraint = format!("{}_pkey", sql_name(&table));
                SqlError::new(
                    sqlstate::UNIQUE_VIOLATION,
                    format!("duplicate key value violates unique constraint \"{constraint}\""),
                )
                .concerning(sql_name(&table), None, Some(constraint))
            }
            EngineError::NoSuchTable(name) => SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", sql_name(&name)),
            ),
            EngineError::TableExists(name) => SqlError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", sql_name(&name)),
            ),
            // A statement planned against a table a committed rebuild replaced while it waited
            // for the table's lock (PostgreSQL would write into the new table instead).
            EngineError::TableReplaced(name) => SqlError::new(
                sqlstate::SERIALIZATION_FAILURE,
                format!(
                    "could not serialize access: relation \"{}\" was rewritten by a concurrent transaction",
                    sql_name(&name)
                ),
            ),
            EngineError::TooManyTransactions(n) => SqlError::new(
                sqlstate::TOO_MANY_CONNECTIONS,
                format!("too many open transactions (at most {n})"),
            ),
            EngineError::TooManyTables(_)
            | EngineError::InvalidKey { .. }
            | EngineError::RowTooBig { .. } => {
                SqlError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, e.to_string())
            }
            // The SQL types' own lengths are checked before: this is what a key or an index
            // keeps of a text or varchar value (`TEXT_KEY_MAX`), what a column keeps of one
            // (`TEXT_MAX`), or the bytes of a char(n). (A bytea's count is of its hex form.)
            EngineError::StringTooLong { column, bytes, max } => SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "value too long for column \"{column}\": {bytes} bytes, more than the {max} it holds{}",
                    // (`TEXT_MAX` is the engine's longest string, u16::MAX.)
                    if max < u16::MAX {
                        " in a key or index"
                    } else {
                        ""
                    }
                ),
            ),
            EngineError::InvalidValue { .. } | EngineError::Decimal(_) => {
                SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, e.to_string())
            }
            EngineError::NotDurable(why) => not_durable(&why),
            EngineError::NotLogged { .. } => {
                SqlError::new(sqlstate::FEATURE_NOT_SUPPORTED, e.to_string())
            }
            other => SqlError::new(sqlstate::INTERNAL_ERROR, other.to_string()),
        }
    }
}

impl From<CommitError> for SqlError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::Aborted(reason) => {
                SqlError::new(abort_code(reason), abort_message(reason))
            }
            CommitError::NotDurable(why) => not_durable(&why),
            other => SqlError::new(sqlstate::INTERNAL_ERROR, other.to_string()),
        }
    }
}
