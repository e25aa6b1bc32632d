//! What evaluating an expression needs besides the row: the statement's parameters, its clocks,
//! its user, its cancel flag and memory budget, and (in a server) the other sessions and the
//! session's settings. A context
//! is read only while a statement runs; it must never carry state from one statement to the
//! next.

use std::sync::atomic::AtomicBool;

use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::key::{Key, KeySet};
use crate::values::types::SqlType;

/// What evaluation needs besides the row: the statement's parameters and its start time, and
/// what tells a running statement it was cancelled.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    pub params: &'a [Datum],
    /// `now()` and `current_timestamp`: the transaction's start, microseconds since the epoch.
    pub now: i64,
    /// `statement_timestamp()`: the statement's start.
    pub statement: i64,
    /// `current_user` and `session_user`: the session's user.
    pub user: &'a str,
    /// Set (by another thread) when the statement is cancelled: its scans stop with 57014.
    pub cancel: Option<&'a AtomicBool>,
    /// The server's sessions, as `pg_backend_pid()`, `pg_cancel_backend()` and
    /// `pg_terminate_backend()` see them (`None`: no server; they fail with 0A000).
    pub backends: Option<&'a dyn Backends>,
    /// The session's settings as the statement started, for `current_setting` (`None`: no
    /// session; every setting is then unknown).
    pub settings: Option<&'a dyn Settings>,
    /// Bytes the statement may hold for its sorts, groups and DISTINCT (53200 past them).
    pub memory: usize,
    /// What the statement's uncorrelated subqueries gave, by number (`Expr::Init`).
    pub init: &'a [InitValue],
    /// What its correlated subqueries gave for the row at hand, by number (`Expr::SubPlan`).
    pub per_row: &'a [(usize, Datum)],
}

/// What an uncorrelated subquery gave.
#[derive(Debug)]
pub enum InitValue {
    /// A scalar subquery's value, or whether an `EXISTS` found a row.
    Value(Datum),
    /// The values of an `IN` subquery.
    Set(InSet),
}

/// The values an `IN (subquery)` is checked against: hashed by value for a lookup per row.
#[derive(Debug)]
pub struct InSet {
    values: Vec<Datum>,
    keys: KeySet,
    ty: SqlType,
    has_null: bool,
}

impl InSet {
    /// The set of `values`, of type `ty`.
    pub fn new(values: Vec<Datum>, ty: SqlType) -> InSet {
        let has_null = values.iter().any(Datum::is_null);
        let keys = values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| Key::one(v.clone()))
            .collect();
        InSet {
            values,
            keys,
            ty,
            has_null,
        }
    }

    /// `x IN (the values)`, with SQL's NULLs: true if one equals it; otherwise NULL if `x` or a
    /// value is NULL (and there is a value), else false.
    pub fn contains(&self, x: &Datum) -> Result<Option<bool>> {
        if self.values.is_empty() {
            return Ok(Some(false));
        }
        if x.is_null() {
            return Ok(None);
        }
        // Of the values' type, the hash finds it; a value that does not convert is compared
        // with each (as `=` compares values of different types).
        let found = match x.clone().cast(self.ty) {
            Ok(same) if same.sql_cmp(x)? == Some(std::cmp::Ordering::Equal) => {
                self.keys.contains(&Key::one(same))
            }
            _ => {
                let mut any = false;
                for v in &self.values {
                    any |= x.sql_cmp(v)? == Some(std::cmp::Ordering::Equal);
                }
                any
            }
        };
        Ok(if found {
            Some(true)
        } else if self.has_null {
            None
        } else {
            Some(false)
        })
    }
}

/// A statement's memory budget unless set otherwise (`statement_mem`).
pub const DEFAULT_STATEMENT_MEMORY: usize = 1 << 30;

/// What a statement may ask of the server about its sessions, with PostgreSQL's rules (see the
/// server's implementation).
pub trait Backends: Send + Sync {
    /// The process id the session's client was given (`pg_backend_pid()`).
    fn own_pid(&self) -> i32;
    /// Cancels the statement of session `pid`, or (`terminate`) ends the session: false if
    /// there is no such session; 42501 if this session's role may not.
    fn signal(&self, pid: i32, terminate: bool) -> Result<bool>;

    /// Where the server's transactions spent their time so far, per priority level
    /// (`overtake_stat_classes`): none without a scheduler.
    fn classes(&self) -> Vec<ClassTimes> {
        Vec::new()
    }
}

/// Where the transactions of one priority level spent their time since the server started, as
/// its scheduler booked them: a statement outside a block, or a whole transaction block, is one
/// transaction. Times are totals in microseconds, so that two readings subtract.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ClassTimes {
    /// The level's name, as `SET priority` takes it.
    pub priority: String,
    /// Transactions ended: committed, and rolled back or failed.
    pub committed: i64,
    pub rolled_back: i64,
    /// Times they were paused by more urgent work.
    pub preemptions: i64,
    /// From arrival to first start, in the scheduler's queues.
    pub queued_us: f64,
    /// Running on a worker.
    pub running_us: f64,
    /// Paused by more urgent work.
    pub preempted_us: f64,
    /// Parked between a transaction block's statements, waiting for the next: the client's
    /// round trip and think time (and the session handing the statement over).
    pub client_wait_us: f64,
    /// Parked waiting for row and table locks.
    pub lock_wait_us: f64,
    /// Waiting for commits to be durable in the log.
    pub log_wait_us: f64,
    /// Parked for anything else (an earlier commit becoming durable before rows leave, ...).
    pub other_wait_us: f64,
}

impl ClassTimes {
    /// The times of level `priority`; every count and time zero.
    pub fn new(priority: &str) -> ClassTimes {
        ClassTimes {
            priority: priority.to_owned(),
            ..ClassTimes::default()
        }
    }
}

/// A session's settings, by name (as `SHOW` gives them).
pub trait Settings: Send + Sync {
    /// The value of setting `name` (any case), if there is such a setting.
    fn get(&self, name: &str) -> Option<String>;

    /// Every setting: its name, its value as `SHOW` gives it, and its default (`pg_settings`).
    fn all(&self) -> Vec<(String, String, Option<String>)> {
        Vec::new()
    }

    /// `set_config(name, value, local)`: sets `name` (to its default if `value` is `None`) for
    /// the session, or (`local`) the transaction, once the statement succeeds; returns the
    /// value as `SHOW` will give it. Fails as `SET` would.
    fn set(&self, name: &str, value: Option<&str>, local: bool) -> Result<String> {
        let _ = (name, value, local);
        Err(SqlError::unsupported(
            "set_config outside a session's statement",
        ))
    }

    /// Sequence `name` gave `value` to `nextval` or was set to it by `setval`: what
    /// `currval(name)` and `lastval()` give from now on in the session.
    fn sequence_used(&self, name: &str, value: i64) {
        let _ = (name, value);
    }

    /// `currval(name)` (`Some(name)`) or `lastval()` (`None`): the value the session last
    /// got, if it got one.
    fn sequence_value(&self, name: Option<&str>) -> Option<i64> {
        let _ = name;
        None
    }
}

impl Settings for std::collections::HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        self.get(&name.to_ascii_lowercase()).cloned()
    }
}

impl std::fmt::Debug for dyn Settings + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Settings")
    }
}

impl std::fmt::Debug for dyn Backends + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backends {{ own_pid: {} }}", self.own_pid())
    }
}

impl<'a> Context<'a> {
    /// A statement with `params` that started at `now` (in a transaction that did too).
    pub fn new(params: &'a [Datum], now: i64) -> Self {
        Context {
            params,
            now,
            statement: now,
            user: "overtake",
            cancel: None,
            backends: None,
            settings: None,
            memory: DEFAULT_STATEMENT_MEMORY,
            init: &[],
            per_row: &[],
        }
    }

    /// The same, with its correlated subqueries' values for the row at hand.
    pub fn with_per_row(self, per_row: &'a [(usize, Datum)]) -> Self {
        Context { per_row, ..self }
    }

    /// The same, with the values of the statement's uncorrelated subqueries.
    pub fn with_init(self, init: &'a [InitValue]) -> Self {
        Context { init, ..self }
    }

    /// The same, with a memory budget of `bytes` for sorts, groups and DISTINCT.
    pub fn with_memory(self, bytes: usize) -> Self {
        Context {
            memory: bytes,
            ..self
        }
    }

    /// The same, with the server's sessions.
    pub fn with_backends(self, backends: &'a dyn Backends) -> Self {
        Context {
            backends: Some(backends),
            ..self
        }
    }

    /// The same, with the session's settings.
    pub fn with_settings(self, settings: &'a dyn Settings) -> Self {
        Context {
            settings: Some(settings),
            ..self
        }
    }

    /// The same, for a session of `user`.
    pub fn for_user(self, user: &'a str) -> Self {
        Context { user, ..self }
    }

    /// The same, in a transaction that started at `now` (before the statement).
    pub fn in_transaction_since(self, now: i64) -> Self {
        Context { now, ..self }
    }

    /// The same, stopped by `cancel`.
    pub fn cancelled_by(self, cancel: &'a AtomicBool) -> Self {
        Context {
            cancel: Some(cancel),
            ..self
        }
    }

    /// Fails with 57014 if the statement was cancelled.
    pub fn check_cancel(&self) -> Result<()> {
        match self.cancel {
            Some(c) if c.load(std::sync::atomic::Ordering::Relaxed) => Err(SqlError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to user request",
            )),
            _ => Ok(()),
        }
    }
}
