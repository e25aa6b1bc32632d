//! The SQL catalog: tables as SQL sees them (column types, NULL-ability, defaults, the declared
//! primary key and indexes) over the engine's tables.
//!
//! The catalog is kept in the database (see `exec::stored`): opening a database from its directory
//! brings its SQL tables back.
//!
//! DDL that PostgreSQL does in place — `TRUNCATE`, `ALTER TABLE ... ADD PRIMARY KEY`,
//! `CREATE INDEX` on a loaded table — builds a new engine table (with a fresh internal name) and
//! swaps it in; a plan bound to the old one sees the catalog's version change and is planned
//! again. A dropped or replaced engine table is dropped in the engine: its memory is released
//! when the database is next opened after a checkpoint (in memory: when it closes).
//! The map's latch is taken only inside non-preemptible regions (a DDL task on a worker may be
//! paused anywhere else), so no paused task ever holds it.
//!
//! Parts: `pending` (a block's uncommitted changes), `acl` (owners and grants), `roles` (roles
//! and their passwords), `statistics` (what ANALYZE saw of a table). The catalog never runs a statement's rows and never binds SQL (opening
//! a kept catalog does, in `exec::stored`).

pub(crate) mod acl;
pub mod pending;
pub mod references;
pub mod roles;
pub mod statistics;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use overtake_runtime::{NoPreemptGuard, RegionRwLock};

use overtake_engine::{Database, IndexId, Table};

use crate::catalog::acl::Acl;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::values::types::SqlType;

/// A column's `DEFAULT`: the bound expression, and its SQL (kept in the catalog).
#[derive(Clone, Debug)]
pub struct ColumnDefault {
    pub expr: Expr,
    pub sql: String,
}

/// A column as SQL sees it.
#[derive(Clone, Debug)]
pub struct SqlColumn {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// The `DEFAULT` expression (no columns), if declared.
    pub default: Option<ColumnDefault>,
    /// For an identity column, which kind (its default is its sequence's `nextval`).
    pub identity: Option<Identity>,
}

/// What kind of identity column a column is (`GENERATED ... AS IDENTITY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// `ALWAYS`: an INSERT gives it a value only with `OVERRIDING SYSTEM VALUE`, an UPDATE
    /// only `DEFAULT` (428C9 otherwise).
    Always,
    /// `BY DEFAULT`: a value given is taken.
    ByDefault,
}

impl Identity {
    /// `pg_attribute.attidentity`'s letter.
    pub fn letter(self) -> &'static str {
        match self {
            Identity::Always => "a",
            Identity::ByDefault => "d",
        }
    }
}

/// A CHECK constraint: its name, its condition over the table's row, and the condition's SQL
/// (kept in the catalog).
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub expr: Expr,
    pub sql: String,
}

/// What a foreign key does to the rows referencing a row whose key is deleted or changed
/// (PostgreSQL's `ON DELETE` / `ON UPDATE` actions; `confdeltype` letters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefAction {
    /// Fails at the end of the statement if a referencing row remains and no row holds the
    /// key again (the default).
    NoAction,
    /// Fails if a referencing row remains, whether or not a row holds the key again.
    Restrict,
    /// Deletes the referencing rows (on delete) or changes their columns to the new key.
    Cascade,
    /// Sets the referencing columns to NULL.
    SetNull,
    /// Sets the referencing columns to their defaults (which must then be referenced).
    SetDefault,
}

impl RefAction {
    /// Its letter in `pg_constraint.confdeltype` / `confupdtype`.
    pub fn letter(self) -> &'static str {
        match self {
            RefAction::NoAction => "a",
            RefAction::Restrict => "r",
            RefAction::Cascade => "c",
            RefAction::SetNull => "n",
            RefAction::SetDefault => "d",
        }
    }

    /// Its SQL (`information_schema.referential_constraints`, constraint definitions).
    pub fn sql(self) -> &'static str {
        match self {
            RefAction::NoAction => "NO ACTION",
            RefAction::Restrict => "RESTRICT",
            RefAction::Cascade => "CASCADE",
            RefAction::SetNull => "SET NULL",
            RefAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY constraint of a table (the referencing one): every row whose `columns` hold no
/// NULL (MATCH SIMPLE) has their values in `parent_columns` of a row of table `parent`, whose
/// primary key or a unique index is on exactly those columns. The parent is named, not held:
/// it is found in the catalog as the statement sees it, which may have rebuilt it since.
#[derive(Clone, Debug)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<usize>,
    pub parent: String,
    pub parent_columns: Vec<String>,
    pub on_delete: RefAction,
    pub on_update: RefAction,
}

/// A secondary index.
#[derive(Clone, Debug)]
pub struct SqlIndex {
    pub name: String,
    pub columns: Vec<usize>,
    pub id: IndexId,
    /// Its object id, as `pg_class` and `pg_index` show it.
    pub oid: u32,
    /// For a unique index: what keeps its values unique.
    pub unique: Option<UniqueKeys>,
}

impl SqlIndex {
    /// Whether it is a UNIQUE constraint's index.
    pub fn is_unique_constraint(&self) -> bool {
        self.unique.as_ref().is_some_and(|u| u.constraint)
    }

    /// For a UNIQUE constraint's index, the constraint's object id (derived from the index's:
    /// constraints keep none of their own).
    pub fn constraint_oid(&self) -> u32 {
        0x5000_0000 | (self.oid & 0x0fff_ffff)
    }
}

/// What makes an index unique: an engine table of its own whose primary key is the index's
/// columns, holding one row per row of the table with no NULL in them (NULLs are distinct, as
/// in PostgreSQL). Each write of the table writes it in the same transaction, so a value two
/// transactions insert at once meets the engine's primary-key rules: the second waits for the
/// first under READ COMMITTED (and then fails with 23505 if the first committed), or one of
/// the two fails at its write or commit under the other levels.
#[derive(Clone, Debug)]
pub struct UniqueKeys {
    pub engine: Arc<Table>,
    /// Declared as a constraint (`UNIQUE` in a table, `ADD CONSTRAINT ... UNIQUE`), which
    /// `pg_constraint` lists, rather than by `CREATE UNIQUE INDEX`.
    pub constraint: bool,
}

/// A table: its SQL description and the engine table holding its rows.
#[derive(Debug)]
pub struct SqlTable {
    pub name: String,
    /// Its object id, as the system catalogs show it (kept across rebuilds and restarts, as
    /// PostgreSQL keeps a table's OID): the table's own; the next ones are its row type's, its
    /// primary key index's and its primary key constraint's ([`SqlTable::OIDS`]).
    pub oid: u32,
    pub columns: Vec<SqlColumn>,
    /// Declared primary-key columns; empty if none.
    pub primary_key: Vec<usize>,
    pub indexes: Vec<SqlIndex>,
    pub engine: Arc<Table>,
    /// For a table without a declared primary key: its row ids (see [`RowIds`]). `None` for
    /// tables with a key, and for keyless tables kept by an older version, which the engine
    /// keys by a hidden id of its own that UPDATE and DELETE cannot name.
    /// Shared by every description of the table over one engine table (see `access`).
    pub row_ids: Option<Arc<RowIds>>,
    /// Its owner and what others may do with it.
    pub acl: Acl,
    /// CHECK constraints, each holding (or NULL) on every row.
    pub checks: Vec<Check>,
    /// FOREIGN KEY constraints, each holding on every row.
    pub foreign_keys: Vec<ForeignKey>,
    /// For a sequence (a relation of one row, as in PostgreSQL): its state; its engine table
    /// keeps its mark (see `sequence`).
    pub sequence: Option<Arc<crate::sequence::Sequence>>,
    /// For a view: its query (its engine table stays empty).
    pub view: Option<Arc<View>>,
    /// What ANALYZE last saw of it; shared by every description over one engine table.
    pub statistics: Arc<statistics::Statistics>,
}

/// A view: a query read wherever its name is, bound afresh with the statement that reads it
/// (against the catalog that statement sees), with its owner's privileges. Its columns, as
/// [`SqlTable::columns`] records them, are fixed when it is made: a query that later shows
/// more columns (a `*` over a table that gained one) shows only those, and one that no longer
/// shows them is refused (catalog changes that would do that are refused while it exists).
#[derive(Clone, Debug)]
pub struct View {
    pub query: Box<sqlparser::ast::Query>,
    /// The query's SQL, as `pg_get_viewdef` shows it.
    pub sql: String,
    /// The names of the query's first columns when the view was made (the view's own may
    /// rename them): the query must show them still.
    pub query_columns: Vec<String>,
    /// The relations its query names (tables, views, sequences): they cannot be dropped
    /// while it exists, unless with it (CASCADE).
    pub depends_on: Vec<String>,
}

/// What kind of relation a [`SqlTable`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelKind {
    Table,
    Sequence,
    View,
}

impl RelKind {
    /// Its name in SQL (`DROP VIEW`, errors).
    pub fn noun(self) -> &'static str {
        match self {
            RelKind::Table => "table",
            RelKind::Sequence => "sequence",
            RelKind::View => "view",
        }
    }

    /// The command tag of dropping one.
    pub fn drop_tag(self) -> &'static str {
        match self {
            RelKind::Table => "DROP TABLE",
            RelKind::Sequence => "DROP SEQUENCE",
            RelKind::View => "DROP VIEW",
        }
    }

    /// Its letter in `pg_class.relkind`.
    pub fn letter(self) -> &'static str {
        match self {
            RelKind::Table => "r",
            RelKind::Sequence => "S",
            RelKind::View => "v",
        }
    }
}

/// The row ids of a table without a declared primary key. Its engine table has one more
/// column after the SQL ones, [`ROW_ID_COLUMN`], an `Int64` that is the engine's primary key:
/// a row can then be found again (UPDATE, DELETE, FOR UPDATE), logged and recovered like any
/// other. Ids are handed out in increasing order and never reused by the table.
#[derive(Debug)]
pub struct RowIds {
    next: AtomicU64,
}

/// The engine column holding a keyless table's row id. PostgreSQL's name for a row's physical
/// id: like PostgreSQL, a user column cannot take it.
pub const ROW_ID_COLUMN: &str = CTID;

/// The system column every table's rows have: where the row is kept (`values::tid`).
pub const CTID: &str = "ctid";

/// PostgreSQL's system column names, which no user column may take (42701).
const SYSTEM_COLUMNS: [&str; 6] = ["tableoid", "cmax", "xmax", "cmin", "xmin", CTID];

/// 42701 if `name` is a system column's name.
pub fn check_not_system_column(name: &str) -> Result<()> {
    if SYSTEM_COLUMNS.contains(&name) {
        return Err(SqlError::new(
            sqlstate::DUPLICATE_COLUMN,
            format!("column name \"{name}\" conflicts with a system column name"),
        ));
    }
    Ok(())
}

impl RowIds {
    /// Ids starting after `last` (the largest in use, 0 if none).
    pub fn after(last: u64) -> Self {
        RowIds {
            next: AtomicU64::new(last + 1),
        }
    }

    /// A new row's id.
    pub fn take(&self) -> i64 {
        // Relaxed: ids need only be distinct, and 2^63 of them are not used up.
        self.next.fetch_add(1, Ordering::Relaxed) as i64
    }
}

impl SqlTable {
    /// Its rows as ANALYZE counted them (`sample`, its statistics'), unless it has grown well
    /// past that since (the engine's count is of slots, rounded up to its allocation).
    pub fn rows_estimate(&self, sample: Option<&statistics::Sample>) -> u64 {
        let slots = self.engine.slots_allocated();
        match sample {
            Some(sample) if slots <= 2 * sample.rows + 64 => sample.rows,
            _ => slots,
        }
    }

    /// Whether its rows have the system column `ctid`: a table's do, a view's and a
    /// sequence's do not. (No table has a column of that name: every version refused it.)
    pub fn has_ctid(&self) -> bool {
        self.kind() == RelKind::Table
    }

    /// How many values a row read from it has: its columns, then its `ctid` if it has one.
    pub fn row_width(&self) -> usize {
        self.columns.len() + usize::from(self.has_ctid())
    }

    /// What kind of relation it is.
    pub fn kind(&self) -> RelKind {
        match (&self.sequence, &self.view) {
            (Some(_), _) => RelKind::Sequence,
            (None, Some(_)) => RelKind::View,
            (None, None) => RelKind::Table,
        }
    }

    /// How many object ids a table takes: its own, its row type's, its primary key index's and
    /// its primary key constraint's.
    pub const OIDS: u32 = 4;

    /// Its engine tables: the one holding its rows, then those of its unique indexes.
    pub fn engine_tables(&self) -> impl Iterator<Item = &Arc<Table>> {
        let unique = self.indexes.iter().filter_map(|i| i.unique.as_ref());
        std::iter::once(&self.engine).chain(unique.map(|u| &u.engine))
    }

    /// Its row type's object id (`pg_type.typrelid` names the table).
    pub fn row_type_oid(&self) -> u32 {
        self.oid + 1
    }

    /// Its primary key index's object id.
    pub fn primary_key_oid(&self) -> u32 {
        self.oid + 2
    }

    /// Its primary key constraint's object id.
    pub fn primary_key_constraint_oid(&self) -> u32 {
        self.oid + 3
    }

    /// A CHECK constraint's object id (derived from the table's and its position: constraints
    /// keep none of their own).
    pub fn check_oid(&self, position: usize) -> u32 {
        0x6000_0000 | (self.oid.wrapping_mul(257).wrapping_add(position as u32) & 0x0fff_ffff)
    }

    /// A FOREIGN KEY constraint's object id (derived as a CHECK's, in a range of its own).
    pub fn foreign_key_oid(&self, position: usize) -> u32 {
        0x7000_0000 | (self.oid.wrapping_mul(257).wrapping_add(position as u32) & 0x0fff_ffff)
    }

    /// The name of its primary key's index and constraint, PostgreSQL's `{table}_pkey`.
    pub fn primary_key_name(&self) -> String {
        format!("{}_pkey", self.name)
    }

    /// Position of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// Every table by name, and a version that moves on with each change.
pub struct Catalog {
    db: Arc<Database>,
    /// The engine table the catalog is kept in.
    stored: Arc<Table>,
    /// The engine table the roles are kept in (see `roles`).
    roles: Arc<Table>,
    tables: RegionRwLock<HashMap<String, Arc<SqlTable>>>,
    version: AtomicU64,
    /// Numbers the engine tables built for replacements (their names must be new).
    generation: AtomicU64,
    /// The next object id to hand out.
    next_oid: AtomicU32,
    /// Set once a table with a foreign key is in the catalog (never cleared): until then, no
    /// write looks for the foreign keys involving its table.
    foreign_keys: AtomicBool,
}

/// The first object id of user objects (PostgreSQL's `FirstNormalObjectId`): those below are
/// the system's.
pub const FIRST_USER_OID: u32 = 16_384;

impl Catalog {
    /// A catalog of `tables` over `db`, kept in engine table `stored`, whose next engine table
    /// is numbered `generation` ([`Catalog::open`] makes one).
    pub(crate) fn assemble(
        db: Arc<Database>,
        (stored, roles): (Arc<Table>, Arc<Table>),
        tables: HashMap<String, Arc<SqlTable>>,
        generation: u64,
    ) -> Self {
        let foreign_keys = tables.values().any(|t| !t.foreign_keys.is_empty());
        Catalog {
            db,
            stored,
            roles,
            tables: RegionRwLock::new(tables),
            version: AtomicU64::new(0),
            generation: AtomicU64::new(generation),
            next_oid: AtomicU32::new(FIRST_USER_OID),
            foreign_keys: AtomicBool::new(foreign_keys),
        }
    }

    /// Whether some table may have a foreign key (false: none has).
    pub fn may_have_foreign_keys(&self) -> bool {
        self.foreign_keys.load(Ordering::Acquire)
    }

    /// Notes that `table`, about to be in the catalog, may have foreign keys.
    fn note_foreign_keys(&self, table: &SqlTable) {
        if !table.foreign_keys.is_empty() {
            self.foreign_keys.store(true, Ordering::Release);
        }
    }

    /// `n` consecutive object ids no object has (the first of them).
    pub(crate) fn new_oids(&self, n: u32) -> u32 {
        // Relaxed: ids need only be distinct. Past u32::MAX they wrap, as PostgreSQL's do,
        // skipping the system's range.
        loop {
            let first = self.next_oid.fetch_add(n, Ordering::Relaxed);
            if first >= FIRST_USER_OID && first.checked_add(n).is_some() {
                return first;
            }
        }
    }

    /// Hands out object ids only after `oid` (ids kept by a catalog being opened).
    pub(crate) fn reserve_oids_through(&self, oid: u32) {
        self.next_oid
            .fetch_max(oid.saturating_add(1).max(FIRST_USER_OID), Ordering::Relaxed);
    }

    /// The engine table the catalog is kept in.
    pub(crate) fn stored(&self) -> &Table {
        &self.stored
    }

    /// The engine table the roles are kept in.
    pub fn roles(&self) -> &Arc<Table> {
        &self.roles
    }

    /// Role `name` as committed now.
    pub fn role(&self, name: &str) -> Result<Option<crate::catalog::roles::Role>> {
        crate::catalog::roles::committed(&self.db, &self.roles, name)
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Changes with every DDL: a plan made at another version must be made again.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<Arc<SqlTable>> {
        let region = NoPreemptGuard::new();
        self.tables.read(&region).get(name).cloned().ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )
        })
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<Arc<SqlTable>> {
        let mut all: Vec<_> = {
            let region = NoPreemptGuard::new();
            self.tables.read(&region).values().cloned().collect()
        };
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// A name for a new engine table standing for SQL table `name`.
    pub(crate) fn engine_name(&self, name: &str) -> String {
        let g = self.generation.fetch_add(1, Ordering::Relaxed);
        format!("{name}#{g}")
    }

    /// Moves table `name` from `before` to `after` (`None`: no table of that name) if it is
    /// `before` now; false (and nothing changed) if it is not.
    pub(crate) fn exchange(
        &self,
        name: &str,
        before: Option<&Arc<SqlTable>>,
        after: Option<Arc<SqlTable>>,
    ) -> bool {
        let region = NoPreemptGuard::new();
        let mut tables = self.tables.write(&region);
        let current = tables.get(name);
        let same = match (current, before) {
            (None, None) => true,
            (Some(c), Some(b)) => Arc::ptr_eq(c, b),
            _ => false,
        };
        if !same {
            return false;
        }
        match after {
            Some(t) => {
                self.note_foreign_keys(&t);
                tables.insert(name.to_owned(), t);
            }
            None => {
                tables.remove(name);
            }
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        true
    }
}
