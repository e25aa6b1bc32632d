//! Sequences, as PostgreSQL's: `nextval` hands out the values of a range one by one, never the
//! same twice (a rolled-back transaction does not take its values back), `setval` moves it.
//!
//! A sequence's state is kept in memory, behind a latch taken only inside a non-preemptible
//! region (a task paused holding it would stop every other task of its worker); its engine
//! table keeps a mark ahead of the values handed out, written in a transaction of its own every
//! [`LOGGED_AHEAD`] values, as PostgreSQL logs its sequences ahead: a database opened again
//! goes on after the mark, so values may be skipped after a restart but never repeated.
//!
//! Must never: hold its latch outside a region, or hand out a value beyond the logged mark
//! without first moving the mark.

use std::ops::ControlFlow;
use std::sync::Arc;

use overtake_engine::{
    ColumnType, Database, Isolation, KeyRange, Priority, ScanOptions, Table, TableSchema,
};
use overtake_runtime::{NoPreemptGuard, RegionRwLock};

use crate::error::{Result, SqlError, sqlstate};
use crate::values::types::SqlType;

/// How many values a mark covers beyond the one that moved it (PostgreSQL's `SEQ_LOG_VALS`).
pub const LOGGED_AHEAD: i64 = 32;

/// What `CREATE SEQUENCE` declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceOptions {
    /// `smallint`, `integer` or `bigint` (`AS`).
    pub ty: SqlType,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    pub cycle: bool,
    /// The column it belongs to (`OWNED BY table.column`, or a serial column's): it is dropped
    /// with the table.
    pub owned_by: Option<(String, String)>,
}

impl SequenceOptions {
    /// PostgreSQL's defaults for a sequence of `ty` counting by `increment`.
    pub fn defaults(ty: SqlType, increment: i64) -> SequenceOptions {
        let (low, high, _) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX, ""));
        let (min, max) = if increment > 0 { (1, high) } else { (low, -1) };
        SequenceOptions {
            ty,
            increment,
            min,
            max,
            start: if increment > 0 { min } else { max },
            cycle: false,
            owned_by: None,
        }
    }
}

/// Where the handing out stands: the last value and whether it was handed out (`is_called`),
/// and the mark kept in the engine table.
#[derive(Debug)]
struct State {
    last: i64,
    called: bool,
    logged: Option<i64>,
}

/// A sequence: its options, its state, and the engine table keeping its mark.
pub struct Sequence {
    pub name: String,
    pub options: SequenceOptions,
    state: RegionRwLock<State>,
    store: RegionRwLock<Option<(Arc<Database>, Arc<Table>)>>,
}

impl std::fmt::Debug for Sequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sequence {} {:?}", self.name, self.options)
    }
}

impl PartialEq for Sequence {
    /// The same sequence (a bound expression compares its sequence by identity).
    fn eq(&self, other: &Sequence) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The columns of a sequence's engine table: a constant key and the mark.
const KEY: usize = 0;
const MARK: usize = 1;

/// The schema of the engine table called `engine_name` keeping a sequence's mark.
pub(crate) fn engine_schema(engine_name: String) -> Result<TableSchema> {
    TableSchema::builder(engine_name)
        .column("key", ColumnType::Int32)
        .column("mark", ColumnType::Int64)
        .primary_key(&["key"])
        .build()
        .map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))
}

impl Sequence {
    /// A sequence `name` of `options` that has handed out nothing.
    pub fn new(name: String, options: SequenceOptions) -> Sequence {
        Sequence {
            name,
            state: RegionRwLock::new(State {
                last: options.start,
                called: false,
                logged: None,
            }),
            options,
            store: RegionRwLock::new(None),
        }
    }

    /// Keeps its mark in `table` of `db` from now on, going on after the mark the table holds
    /// (a sequence opened again).
    pub(crate) fn attach(&self, db: Arc<Database>, table: Arc<Table>) -> Result<()> {
        let mark = {
            let mut txn = db.begin(Priority::HIGH, Isolation::ReadCommitted)?;
            let mut mark = None;
            txn.scan(&table, &KeyRange::all(), ScanOptions::forward(), |r| {
                mark = Some(r.int(MARK));
                ControlFlow::Break(())
            })?;
            txn.commit()?;
            mark
        };
        let region = NoPreemptGuard::new();
        if let Some(mark) = mark {
            let mut s = self.state.write(&region);
            *s = State {
                last: mark,
                called: true,
                logged: Some(mark),
            };
        }
        *self.store.write(&region) = Some((db, table));
        Ok(())
    }

    /// The last value and whether it was handed out (`SELECT last_value, is_called`).
    pub fn current(&self) -> (i64, bool) {
        let region = NoPreemptGuard::new();
        let s = self.state.read(&region);
        (s.last, s.called)
    }

    /// `nextval`: the next value, its mark kept first if it is past the one kept.
    pub fn next(&self) -> Result<i64> {
        let (value, mark) = {
            let region = NoPreemptGuard::new();
            let mut s = self.state.write(&region);
            let value = if s.called {
                self.after(s.last)?
            } else {
                s.last
            };
            s.last = value;
            s.called = true;
            let covered = s.logged.is_some_and(|m| self.covers(m, value));
            let mark = (!covered).then(|| self.ahead(value));
            if let Some(m) = mark {
                s.logged = Some(m);
            }
            (value, mark)
        };
        if let Some(m) = mark {
            self.keep(m)?;
        }
        Ok(value)
    }

    /// `setval(value, called)`: the next `nextval` gives `value` (not `called`) or the one after.
    pub fn set(&self, value: i64, called: bool) -> Result<i64> {
        let o = &self.options;
        if value < o.min || value > o.max {
            return Err(SqlError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    self.name, o.min, o.max
                ),
            ));
        }
        let mark = self.ahead(value);
        {
            let region = NoPreemptGuard::new();
            let mut s = self.state.write(&region);
            *s = State {
                last: value,
                called,
                logged: Some(mark),
            };
        }
        self.keep(mark)?;
        Ok(value)
    }

    /// The value after `last`: its increment on, or round to the other end when it cycles;
    /// 2200H past the end otherwise.
    fn after(&self, last: i64) -> Result<i64> {
        let o = &self.options;
        match last.checked_add(o.increment) {
            Some(v) if (o.min..=o.max).contains(&v) => Ok(v),
            _ if o.cycle => Ok(if o.increment > 0 { o.min } else { o.max }),
            _ => Err(SqlError::new(
                sqlstate::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                format!(
                    "nextval: reached {} value of sequence \"{}\" ({})",
                    if o.increment > 0 {
                        "maximum"
                    } else {
                        "minimum"
                    },
                    self.name,
                    if o.increment > 0 { o.max } else { o.min }
                ),
            )),
        }
    }

    /// Whether mark `m` covers `value` (the mark is at or beyond it, in the sequence's
    /// direction).
    fn covers(&self, m: i64, value: i64) -> bool {
        if self.options.increment > 0 {
            value <= m
        } else {
            value >= m
        }
    }

    /// A mark [`LOGGED_AHEAD`] values beyond `value`, within the range.
    fn ahead(&self, value: i64) -> i64 {
        let o = &self.options;
        let step = o.increment.saturating_mul(LOGGED_AHEAD);
        value.saturating_add(step).clamp(o.min, o.max)
    }

    /// Writes mark `m` to the engine table in a transaction of its own (retried when another
    /// writer of the mark wins), never moving a kept mark back.
    fn keep(&self, m: i64) -> Result<()> {
        let store = {
            let region = NoPreemptGuard::new();
            self.store.read(&region).clone()
        };
        let Some((db, table)) = store else {
            // Not attached yet: its table is being created; the mark is written when it is.
            return Ok(());
        };
        let table = &table;
        loop {
            let mut txn = db.begin(Priority::HIGH, Isolation::Snapshot)?;
            let key = table.key().int(0).finish()?;
            let kept = txn.get(table, &key, |r| r.int(MARK))?;
            if kept.is_some_and(|k| self.covers(k, m)) {
                txn.commit()?;
                return Ok(());
            }
            let row = table.row_builder().int(KEY, 0).int(MARK, m).finish()?;
            if kept.is_some() {
                txn.delete(table, &key)?;
            }
            txn.insert(table, row)?;
            match txn.commit().map_err(SqlError::from) {
                Ok(()) => return Ok(()),
                Err(e) if e.code == sqlstate::SERIALIZATION_FAILURE => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
