//! A statement as the extended protocol keeps it between Parse and its Executes: its syntax
//! tree, the parameter types the client declared, and its current plan (made again when the
//! catalog changed, or made afresh under a block's uncommitted DDL). Knows nothing of the wire.

use std::sync::{Arc, Mutex as StdMutex};

use overtake_sql::bind::statement::{Ast, prepare_in};
use overtake_sql::catalog::pending::Tables;
use overtake_sql::{Prepared, SqlError, SqlType};

/// A statement as the extended protocol keeps it: its text, syntax tree and current plan.
#[derive(Debug)]
pub struct Statement {
    pub(crate) ast: Ast,
    pub(crate) declared: Vec<Option<SqlType>>,
    pub(crate) plan: StdMutex<Arc<Prepared>>,
}

impl Statement {
    /// Its plan over the catalog as `tables` shows it: the one kept, made again if the catalog
    /// changed since; under a block's uncommitted changes, one made for this time only.
    pub(crate) fn plan(&self, tables: Tables<'_>) -> Result<Arc<Prepared>, SqlError> {
        if tables.is_pending() {
            return Ok(Arc::new(prepare_in(tables, &self.ast, &self.declared)?));
        }
        let mut plan = self.plan.lock().unwrap_or_else(|p| p.into_inner());
        if plan.version != tables.catalog.version() || plan.pending {
            *plan = Arc::new(prepare_in(tables, &self.ast, &self.declared)?);
        }
        Ok(Arc::clone(&plan))
    }
}

/// What pgwire stores per prepared statement.
pub type StatementRef = Arc<Statement>;
