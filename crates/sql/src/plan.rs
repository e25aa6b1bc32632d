//! Plans: statements bound against the catalog, with their parameters' and results' types,
//! ready to execute any number of times (a prepared statement is one plan).

use std::sync::Arc;

use crate::acl::{Grantee, Privileges};
use crate::catalog::{SqlColumn, SqlTable};
use crate::expr::Expr;
use crate::types::SqlType;

/// A statement ready to run.
#[derive(Debug)]
pub struct Prepared {
    pub command: Command,
    /// Types of `$1`, `$2`, ...
    pub params: Vec<SqlType>,
    /// Columns of the rows it returns (empty if it returns none).
    pub columns: Vec<OutputColumn>,
    /// The catalog version it was planned at.
    pub version: u64,
    /// Planned under a block's uncommitted catalog changes: good for that block's statement
    /// only, never to keep.
    pub pending: bool,
    /// It is a point read (`Query::is_point_read`), decided once when planned: a server asks
    /// at every execution.
    pub point_read: bool,
}

/// A result column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
}

/// Isolation levels by their SQL names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsolationLevel {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl IsolationLevel {
    /// The name `SHOW transaction_isolation` prints.
    pub fn name(self) -> &'static str {
        match self {
            IsolationLevel::ReadCommitted => "read committed",
            IsolationLevel::RepeatableRead => "repeatable read",
            IsolationLevel::Serializable => "serializable",
        }
    }

    /// The level called `name` (any case, spaces or underscores).
    pub fn parse(name: &str) -> Option<IsolationLevel> {
        match name.trim().to_ascii_lowercase().replace('_', " ").as_str() {
            "read committed" | "read uncommitted" => Some(IsolationLevel::ReadCommitted),
            "repeatable read" => Some(IsolationLevel::RepeatableRead),
            "serializable" => Some(IsolationLevel::Serializable),
            _ => None,
        }
    }
}

/// The modes BEGIN or SET TRANSACTION name (`None`: not named).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxnModes {
    pub level: Option<IsolationLevel>,
    /// `READ ONLY` (true) or `READ WRITE` (false).
    pub read_only: Option<bool>,
}

/// What a statement does.
#[derive(Debug)]
pub enum Command {
    /// Reads or writes rows: runs in a transaction.
    Query(Box<Query>),
    /// Changes the catalog.
    Ddl(Ddl),
    /// `COPY table FROM STDIN`: rows follow from the client.
    CopyIn(CopyIn),
    Begin(TxnModes),
    Commit,
    Rollback,
    /// `SET [LOCAL] name = value` (`None`: `DEFAULT`).
    Set {
        name: String,
        value: Option<String>,
        local: bool,
    },
    /// `SET TRANSACTION ISOLATION LEVEL ... READ ONLY` (or `SET SESSION CHARACTERISTICS`).
    SetTransaction {
        modes: TxnModes,
        session: bool,
    },
    Show(String),
    /// `RESET name` (`all` resets everything).
    Reset(String),
    /// `ALTER ROLE role SET name = value` (`None`: `RESET`).
    AlterRoleSet {
        role: String,
        name: String,
        value: Option<String>,
    },
    /// `GRANT role TO user` (`revoke`: `REVOKE role FROM user`).
    GrantRole {
        roles: Vec<String>,
        grantees: Vec<String>,
        revoke: bool,
    },
    /// `CREATE ROLE`, `ALTER ROLE ... WITH`, `DROP ROLE`: the server carries them out (it
    /// hashes passwords and knows who may).
    Role(RoleCommand),
    /// `DEALLOCATE name` (`None`: `DEALLOCATE ALL`): forgets the session's prepared statements,
    /// which the connection keeps.
    Deallocate(Option<String>),
    /// Accepted and done nothing with (`VACUUM`, `ANALYZE`, `DISCARD`...): the tag to answer.
    Noop(&'static str),
    /// `EXPLAIN`: the plan, as lines of text, and the statement explained (whose privileges
    /// it takes, as PostgreSQL's EXPLAIN does).
    Explain(Vec<String>, Box<Command>),
    Empty,
}

/// A statement that reads or writes rows.
#[derive(Debug)]
pub enum Query {
    Select(SelectPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

impl Query {
    /// Whether it writes (an explicit transaction's first write needs no special care, but a
    /// read-only statement may run on any snapshot).
    pub fn writes(&self) -> bool {
        !matches!(self, Query::Select(s) if !s.for_update)
    }

    /// Whether it is a point read: a SELECT that locks nothing, visits at most one row of one
    /// table (by its whole primary key) and calls no function. Its cost is a key lookup and a
    /// few operators on values of bounded size, whatever the data: short enough to run where
    /// nothing preempts it, as a server runs such a statement inside the step that read it.
    pub fn is_point_read(&self) -> bool {
        let Query::Select(s) = self else {
            return false;
        };
        let [source] = s.sources.as_slice() else {
            return false;
        };
        let Access::Key(key) = &source.access else {
            return false;
        };
        let mut calls = false;
        let mut find_calls = |e: &Expr| calls |= matches!(e, Expr::Func(..));
        let aggregates = s.aggregate.iter().flat_map(|a| {
            a.group_by
                .iter()
                .chain(a.calls.iter().filter_map(|c| c.arg.as_ref()))
                .chain(a.having.iter())
        });
        key.iter()
            .chain(s.filters.iter().flatten())
            .chain(aggregates)
            .chain(&s.projection)
            .chain(s.limit.iter().chain(s.offset.iter()))
            .for_each(|e| e.visit(&mut find_calls));
        !s.for_update && !calls
    }
}

/// How a table's rows are found.
#[derive(Clone, Debug)]
pub enum Access {
    /// Every row.
    Scan,
    /// One row by its whole primary key (values in key order).
    Key(Vec<Expr>),
    /// Rows whose leading key columns equal `eq`, and whose next key column lies within the
    /// bounds (`true`: inclusive), in the primary key or (`index`: its position among the
    /// table's indexes) a secondary index.
    Range {
        index: Option<usize>,
        eq: Vec<Expr>,
        lower: Option<(Expr, bool)>,
        upper: Option<(Expr, bool)>,
    },
}

/// A table in a FROM clause: its columns start at `offset` in the joined row.
#[derive(Debug)]
pub struct Source {
    pub table: Arc<SqlTable>,
    pub name: String,
    pub offset: usize,
    pub access: Access,
}

/// Aggregate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    Avg,
}

/// One aggregate of a query: its argument over the joined row (`None`: `count(*)`).
#[derive(Clone, Debug)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    pub ty: SqlType,
}

/// Grouping: the aggregated row is the group values followed by the aggregates.
#[derive(Debug)]
pub struct Aggregate {
    pub group_by: Vec<Expr>,
    pub calls: Vec<AggCall>,
    pub having: Option<Expr>,
}

/// A sort key: a column of the projected row.
#[derive(Clone, Copy, Debug)]
pub struct SortKey {
    pub column: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A SELECT: nested loops over `sources` (each level filtered by `filters[level]`), then
/// aggregation, projection, DISTINCT, ORDER BY and LIMIT/OFFSET.
#[derive(Debug)]
pub struct SelectPlan {
    pub sources: Vec<Source>,
    /// Conditions checked as soon as the sources up to each level are joined.
    pub filters: Vec<Vec<Expr>>,
    pub aggregate: Option<Aggregate>,
    /// Expressions over the joined row (or the aggregated row); the first `visible` are
    /// returned, the others only sort.
    pub projection: Vec<Expr>,
    pub visible: usize,
    pub distinct: bool,
    pub order_by: Vec<SortKey>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
    /// `FOR UPDATE`: the rows read are locked as writes would lock them.
    pub for_update: bool,
    /// What `FOR UPDATE` does with a row another transaction holds locked.
    pub lock_wait: LockWait,
}

/// What a locking read does with a row locked by another transaction (PostgreSQL's default,
/// `NOWAIT` and `SKIP LOCKED`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Waits for the holder to end.
    #[default]
    Wait,
    /// Fails at once with 55P03.
    NoWait,
    /// Leaves the row out.
    SkipLocked,
}

/// An INSERT.
#[derive(Debug)]
pub struct InsertPlan {
    pub table: Arc<SqlTable>,
    /// Table column positions the source's columns go to.
    pub columns: Vec<usize>,
    pub source: InsertSource,
}

/// Where inserted rows come from.
#[derive(Debug)]
pub enum InsertSource {
    Values(Vec<Vec<Expr>>),
    Select(Box<SelectPlan>),
}

/// An UPDATE: which rows (as a one-table SELECT would find them) and what they become.
#[derive(Debug)]
pub struct UpdatePlan {
    pub table: Arc<SqlTable>,
    pub access: Access,
    pub filter: Vec<Expr>,
    pub assignments: Vec<(usize, Expr)>,
}

/// A DELETE.
#[derive(Debug)]
pub struct DeletePlan {
    pub table: Arc<SqlTable>,
    pub access: Access,
    pub filter: Vec<Expr>,
}

/// Catalog changes.
#[derive(Debug)]
pub enum Ddl {
    CreateTable {
        name: String,
        columns: Vec<SqlColumn>,
        primary_key: Vec<usize>,
        if_not_exists: bool,
    },
    DropTable {
        names: Vec<String>,
        if_exists: bool,
    },
    Truncate(Vec<String>),
    AddPrimaryKey {
        table: String,
        columns: Vec<String>,
    },
    CreateIndex {
        name: String,
        table: String,
        columns: Vec<String>,
        if_not_exists: bool,
    },
    /// `GRANT privileges ON tables TO grantees` (`revoke`: `REVOKE ... FROM`).
    Grant {
        privileges: Privileges,
        on: GrantOn,
        grantees: Vec<Grantee>,
        revoke: bool,
    },
    /// `ALTER TABLE table OWNER TO owner`.
    SetOwner {
        table: String,
        owner: String,
    },
}

/// The tables a GRANT names.
#[derive(Debug)]
pub enum GrantOn {
    Tables(Vec<String>),
    /// `ALL TABLES IN SCHEMA public`.
    AllTables,
}

/// `COPY table [(columns)] FROM STDIN` in text format.
#[derive(Debug)]
pub struct CopyIn {
    pub table: Arc<SqlTable>,
    pub columns: Vec<usize>,
}

/// A change of roles. A password is its text here (the server hashes it in the statement's
/// task; only the hash is kept).
#[derive(Debug)]
pub enum RoleCommand {
    Create {
        name: String,
        superuser: bool,
        login: bool,
        password: Option<String>,
    },
    /// `None`: unchanged; `Some(None)` for a password: `PASSWORD NULL`.
    Alter {
        name: String,
        superuser: Option<bool>,
        login: Option<bool>,
        password: Option<Option<String>>,
    },
    Drop {
        names: Vec<String>,
        if_exists: bool,
    },
}
