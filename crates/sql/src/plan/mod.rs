//! Plans: statements bound against the catalog, with their parameters' and results' types,
//! ready to execute any number of times (a prepared statement is one plan).
//!
//! Parts: `select` (a SELECT's plan tree), `columns` (the columns of its tables a SELECT
//! reads), `copy` (a COPY's format and options), `fold` (constant folding before any row is read),
//! `explain` (a plan as PostgreSQL's EXPLAIN prints it) and `estimate` (the rows, widths and costs
//! it shows). A plan holds no transaction and no lock:
//! it never reads rows.

pub mod columns;
pub mod copy;
pub(crate) mod estimate;
pub(crate) mod explain;
pub(crate) mod fold;
pub mod select;
pub mod window;

pub use select::{
    Access, AggCall, AggFunc, Aggregate, InitKind, InitPlan, LockWait, PlanNode, Relation,
    RightJoinOn, SelectParts, SelectPlan, SetFunc, SetOp, SortKey, Source, ViewRead,
};

use std::sync::Arc;

use crate::catalog::acl::{Grantee, Privileges};
use crate::catalog::{SqlColumn, SqlTable};
use crate::expr::Expr;
use crate::sequence::Sequence;
use crate::values::types::SqlType;

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
    /// Planned under a block's uncommitted catalog changes, or over the system catalogs as they
    /// were when it was planned: good for this execution only, never to keep.
    pub pending: bool,
    /// It is a point read (`Query::is_point_read`), decided once when planned: a server asks
    /// at every execution.
    pub point_read: bool,
    /// It calls `current_setting` or `set_config`: a server gives its run the session's
    /// settings.
    pub reads_settings: bool,
    /// It calls `nextval`, `setval`, `currval` or `lastval` (a serial default included): a
    /// server gives its run the session's sequence values, and keeps what it changes.
    pub uses_sequences: bool,
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
    /// `COPY table | (query) TO STDOUT`: the query's rows, written in the COPY's format.
    CopyOut(Box<Query>, copy::CopyOptions),
    Begin(TxnModes),
    Commit,
    Rollback,
    /// `SAVEPOINT name`.
    Savepoint(String),
    /// `ROLLBACK TO [SAVEPOINT] name`.
    RollbackTo(String),
    /// `RELEASE [SAVEPOINT] name`.
    Release(String),
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
    /// `PREPARE name [(types)] AS statement`: the session keeps `statement` (a SELECT, INSERT,
    /// UPDATE or DELETE, checked by planning it once) under `name`, its parameters of the
    /// `declared` types (`None`: inferred).
    Prepare {
        name: String,
        statement: Arc<crate::syntax::Ast>,
        declared: Vec<Option<SqlType>>,
    },
    /// `EXECUTE name [(arguments)]`: runs the session's statement `name` with the arguments'
    /// values, computed by `arguments` (a SELECT of them; `None` without any), each converted
    /// to its parameter's type as an assignment is (`untyped[i]`: argument `i` is a literal of
    /// no type yet, which any type takes).
    Execute {
        name: String,
        arguments: Option<Arc<Prepared>>,
        untyped: Vec<bool>,
    },
    /// `DISCARD ALL`: the session as it was at its start (settings reset, prepared statements
    /// forgotten); refused in a transaction block.
    DiscardAll,
    /// Accepted and done nothing with (`VACUUM`, `ANALYZE`, `DISCARD`...): the tag to answer.
    Noop(&'static str),
    /// `EXPLAIN`: the plan, as lines of text, and the statement explained (whose privileges
    /// it takes, as PostgreSQL's EXPLAIN does).
    Explain(Vec<String>, Box<Command>),
    /// `DECLARE name CURSOR [WITH HOLD] FOR query`: the query, run as the cursor's rows are
    /// fetched (`hold`: kept past its transaction's commit).
    Declare {
        name: String,
        query: Arc<Prepared>,
        hold: bool,
    },
    /// `FETCH` or `MOVE` on a cursor.
    Fetch(CursorFetch),
    /// `CLOSE name` (`None`: `CLOSE ALL`).
    CloseCursor(Option<String>),
    Empty,
}

/// `FETCH` (rows sent) or `MOVE` (rows skipped) on the cursor `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorFetch {
    pub name: String,
    pub direction: FetchDirection,
    /// `MOVE`: the cursor is positioned, no row is sent.
    pub moves: bool,
}

/// Where a fetch goes, in PostgreSQL's terms: the cursor's position is the row fetched last (0
/// before the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchDirection {
    /// The next `n` rows (`NEXT`, `FORWARD n`, `n`; `None`: `ALL`).
    Forward(Option<u64>),
    /// The row `n` rows on from the position (`RELATIVE n`; 0 is the current row).
    Relative(u64),
    /// Row `n` (`ABSOLUTE n`, `FIRST` is 1).
    Absolute(u64),
    /// The last row (`LAST`, `ABSOLUTE -1`).
    Last,
    /// Any direction that goes back (`PRIOR`, `BACKWARD`, negative counts).
    Backward,
}

/// A statement that reads or writes rows.
#[derive(Debug)]
pub enum Query {
    Select(SelectPlan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    /// `ANALYZE`: the tables whose statistics it takes.
    Analyze(Vec<Arc<SqlTable>>),
}

impl Query {
    /// Whether it writes (an explicit transaction's first write needs no special care, but a
    /// read-only statement may run on any snapshot).
    pub fn writes(&self) -> bool {
        !matches!(self, Query::Select(s) if !s.for_update) && !matches!(self, Query::Analyze(_))
    }

    /// Whether it is a point read: a SELECT that locks nothing, visits at most one row of one
    /// table (by its whole primary key) and calls no function. Its cost is a key lookup and a
    /// few operators on values of bounded size, whatever the data: short enough to run where
    /// nothing preempts it, as a server runs such a statement inside the step that read it.
    /// Its uncorrelated subqueries, computed before its rows are read.
    pub fn init(&self) -> &[InitPlan] {
        match self {
            Query::Select(s) => &s.init,
            Query::Insert(i) => &i.init,
            Query::Update(u) => &u.init,
            Query::Delete(d) => &d.init,
            Query::Analyze(_) => &[],
        }
    }

    /// Gives it its uncorrelated subqueries.
    pub fn set_init(&mut self, init: Vec<InitPlan>) {
        if let Query::Analyze(_) = self {
            return;
        }
        *match self {
            Query::Select(s) => &mut s.init,
            Query::Insert(i) => &mut i.init,
            Query::Update(u) => &mut u.init,
            Query::Delete(d) => &mut d.init,
            Query::Analyze(_) => unreachable!("returned above"),
        } = init;
    }

    /// The table it writes, if it writes one.
    pub fn written_table(&self) -> Option<&Arc<SqlTable>> {
        match self {
            Query::Insert(i) => Some(&i.table),
            Query::Update(u) => Some(&u.table),
            Query::Delete(d) => Some(&d.table),
            Query::Select(_) | Query::Analyze(_) => None,
        }
    }

    pub fn is_point_read(&self) -> bool {
        let Query::Select(s) = self else {
            return false;
        };
        if !s.init.is_empty() {
            return false;
        }
        let [source] = s.root.sources()[..] else {
            return false;
        };
        if !matches!(source.access, Access::Key(_)) {
            return false;
        }
        let mut calls = false;
        s.root
            .visit_exprs(&mut |e| calls |= matches!(e, Expr::Func(..)));
        !s.for_update && !calls
    }
}

/// An INSERT.
#[derive(Debug)]
pub struct InsertPlan {
    pub table: Arc<SqlTable>,
    /// Table column positions the source's columns go to.
    pub columns: Vec<usize>,
    pub source: InsertSource,
    /// `RETURNING`: expressions over each inserted row (every column of the table).
    pub returning: Vec<Expr>,
    /// `ON CONFLICT`: what a row whose values are taken does instead.
    pub on_conflict: Option<OnConflict>,
    /// The statement's uncorrelated subqueries (see [`InitPlan`]).
    pub init: Vec<InitPlan>,
    /// The foreign keys its writes involve (`None`: none).
    pub references: Option<Arc<crate::catalog::references::References>>,
}

/// What `ALTER TABLE` does to a column.
#[derive(Debug)]
pub enum ColumnChange {
    Add {
        column: crate::catalog::SqlColumn,
        if_not_exists: bool,
    },
    Drop {
        name: String,
        if_exists: bool,
    },
    Rename {
        from: String,
        to: String,
    },
    /// `SET DEFAULT` (`Some`) or `DROP DEFAULT`.
    Default {
        name: String,
        default: Option<crate::catalog::ColumnDefault>,
    },
    /// `SET NOT NULL` (`false`) or `DROP NOT NULL`.
    Nullable {
        name: String,
        nullable: bool,
    },
    /// `[SET DATA] TYPE ty [USING expression]` (the expression is bound over the table's
    /// columns when the change runs).
    Type {
        name: String,
        ty: SqlType,
        using: Option<Box<sqlparser::ast::Expr>>,
    },
}

/// `INSERT ... ON CONFLICT`: the unique indexes whose taken values it handles (its arbiters)
/// and what it does with such a row instead of failing.
#[derive(Debug)]
pub struct OnConflict {
    /// A conflict target names the arbiters (it reads their columns: SELECT privilege).
    pub targeted: bool,
    /// The primary key is an arbiter.
    pub primary_key: bool,
    /// Positions (in the table's `indexes`) of the unique indexes that are arbiters.
    pub indexes: Vec<usize>,
    /// `DO UPDATE`; `None` for `DO NOTHING`.
    pub update: Option<ConflictUpdate>,
}

/// `ON CONFLICT ... DO UPDATE SET assignments [WHERE filter]`: expressions over the row that
/// holds the values followed by the row proposed for insertion (`excluded`).
#[derive(Debug)]
pub struct ConflictUpdate {
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
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
    /// `RETURNING`: expressions over each row as it became.
    pub returning: Vec<Expr>,
    /// The statement's uncorrelated subqueries (see [`InitPlan`]).
    pub init: Vec<InitPlan>,
    /// The foreign keys its writes involve (`None`: none).
    pub references: Option<Arc<crate::catalog::references::References>>,
}

/// A DELETE.
#[derive(Debug)]
pub struct DeletePlan {
    pub table: Arc<SqlTable>,
    pub access: Access,
    pub filter: Vec<Expr>,
    /// `RETURNING`: expressions over each row as it was.
    pub returning: Vec<Expr>,
    /// The statement's uncorrelated subqueries (see [`InitPlan`]).
    pub init: Vec<InitPlan>,
    /// The foreign keys its writes involve (`None`: none).
    pub references: Option<Arc<crate::catalog::references::References>>,
}

/// A FOREIGN KEY constraint as a statement declares it, by names (resolved when it runs).
#[derive(Clone, Debug)]
pub struct ForeignKeyDef {
    pub name: Option<String>,
    /// The referencing columns.
    pub columns: Vec<String>,
    pub parent: String,
    /// The referenced columns; empty: the parent's primary key.
    pub parent_columns: Vec<String>,
    pub on_delete: crate::catalog::RefAction,
    pub on_update: crate::catalog::RefAction,
}

/// Catalog changes.
#[derive(Debug)]
pub enum Ddl {
    CreateTable {
        name: String,
        columns: Vec<SqlColumn>,
        primary_key: Vec<usize>,
        if_not_exists: bool,
        /// The sequences of its serial and identity columns, made with it.
        sequences: Vec<Arc<Sequence>>,
        checks: Vec<crate::catalog::Check>,
        /// UNIQUE constraints: (name, columns).
        uniques: Vec<(String, Vec<usize>)>,
        foreign_keys: Vec<ForeignKeyDef>,
    },
    CreateSequence {
        sequence: Arc<Sequence>,
        if_not_exists: bool,
    },
    /// `CREATE [OR REPLACE] VIEW`.
    CreateView {
        name: String,
        columns: Vec<SqlColumn>,
        view: Arc<crate::catalog::View>,
        or_replace: bool,
    },
    /// `DROP TABLE`, `DROP SEQUENCE` or `DROP VIEW` (`kind`); `cascade`: the foreign keys
    /// referencing a dropped relation and the views reading it go too.
    DropTable {
        names: Vec<String>,
        if_exists: bool,
        kind: crate::catalog::RelKind,
        cascade: bool,
    },
    /// `TRUNCATE names` (`cascade`: and the tables referencing them, in turn).
    Truncate {
        names: Vec<String>,
        cascade: bool,
    },
    /// `ALTER TABLE` with several actions: each in order, as one statement.
    Steps(Vec<Ddl>),
    /// `ALTER TABLE table ADD [CONSTRAINT name] FOREIGN KEY ...`.
    AddForeignKey {
        table: String,
        foreign_key: ForeignKeyDef,
    },
    AddPrimaryKey {
        table: String,
        columns: Vec<String>,
    },
    /// `CREATE [UNIQUE] INDEX`, and `ALTER TABLE ... ADD [CONSTRAINT name] UNIQUE (columns)`.
    CreateIndex {
        name: Option<String>,
        table: String,
        columns: Vec<String>,
        if_not_exists: bool,
        kind: IndexKind,
    },
    /// `ALTER TABLE table ADD|DROP|RENAME|ALTER COLUMN ...`.
    AlterColumn {
        table: String,
        change: ColumnChange,
    },
    /// `DROP INDEX [IF EXISTS] names`.
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `ALTER TABLE table DROP CONSTRAINT [IF EXISTS] name`.
    DropConstraint {
        table: String,
        name: String,
        if_exists: bool,
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

/// What a secondary index is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    Plain,
    /// `CREATE UNIQUE INDEX`.
    Unique,
    /// A UNIQUE constraint (`pg_constraint` lists it).
    UniqueConstraint,
}

/// The tables a GRANT names.
#[derive(Debug)]
pub enum GrantOn {
    Tables(Vec<String>),
    /// `ALL TABLES IN SCHEMA public`.
    AllTables,
}

/// `COPY table [(columns)] FROM STDIN`.
#[derive(Debug)]
pub struct CopyIn {
    pub table: Arc<SqlTable>,
    pub columns: Vec<usize>,
    /// The foreign keys its rows involve (`None`: none).
    pub references: Option<Arc<crate::catalog::references::References>>,
    pub options: copy::CopyOptions,
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
