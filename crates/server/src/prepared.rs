//! A prepared statement as a session keeps it, between the extended protocol's Parse and its
//! Executes or SQL's PREPARE and its EXECUTEs: its syntax tree, the parameter types declared,
//! and its current plan (made again when the catalog changed, or made afresh under a block's
//! uncommitted DDL). Knows nothing of the wire.

use std::sync::{Arc, Mutex as StdMutex};

use overtake_sql::bind::statement::{Ast, prepare_in};
use overtake_sql::catalog::pending::Tables;
use overtake_sql::{Prepared, SqlError, SqlType, sqlstate};

/// A prepared statement: its syntax tree, declared parameter types and current plan.
#[derive(Debug)]
pub struct Statement {
    pub(crate) ast: Arc<Ast>,
    pub(crate) declared: Vec<Option<SqlType>>,
    pub(crate) plan: StdMutex<Arc<Prepared>>,
}

impl Statement {
    /// Its plan over the catalog as `tables` shows it: the one kept, made again if the catalog
    /// changed since; under a block's uncommitted changes, one made for this time only.
    ///
    /// A plan made again must give the rows the statement was described with: PostgreSQL's
    /// 0A000 if the catalog changed them (`SELECT *` after `ADD COLUMN`).
    pub(crate) fn plan(&self, tables: Tables<'_>) -> Result<Arc<Prepared>, SqlError> {
        let mut plan = self.plan.lock().unwrap_or_else(|p| p.into_inner());
        let pending = tables.is_pending();
        if !pending && plan.version == tables.catalog.version() && !plan.pending {
            return Ok(Arc::clone(&plan));
        }
        let fresh = Arc::new(prepare_in(tables, &self.ast, &self.declared)?);
        if fresh.columns != plan.columns {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cached plan must not change result type",
            ));
        }
        if !pending {
            *plan = Arc::clone(&fresh);
        }
        Ok(fresh)
    }
}

/// What pgwire stores per prepared statement.
pub type StatementRef = Arc<Statement>;
