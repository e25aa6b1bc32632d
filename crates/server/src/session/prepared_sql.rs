//! SQL-level prepared statements: `PREPARE` keeps a statement under a name for the session's
//! life (not its transaction's: PostgreSQL's survive ROLLBACK), `EXECUTE` runs it with
//! arguments, `DEALLOCATE` and `DISCARD ALL` forget them. The extended protocol's named
//! statements are the connection's (see `Connection::deallocate`), which asks here first.

use std::sync::{Arc, Mutex};

use overtake_sql::bind::prepare::{argument, wrong_count};
use overtake_sql::bind::statement::Ast;
use overtake_sql::plan::OutputColumn;
use overtake_sql::{Datum, Prepared, SqlError, SqlType, sqlstate};

use super::{RowOut, Session, StatementAnswer};
use crate::prepared::Statement;

impl Session {
    /// `PREPARE name AS statement` (already planned once, to check it).
    pub(super) fn prepare_named(
        &mut self,
        name: &str,
        ast: &Arc<Ast>,
        declared: &[Option<SqlType>],
    ) -> Result<StatementAnswer, SqlError> {
        if self.prepared.contains_key(name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        let plan = overtake_sql::bind::statement::prepare_in(self.tables(), ast, declared)?;
        let statement = Statement {
            ast: Arc::clone(ast),
            declared: declared.to_vec(),
            plan: Mutex::new(Arc::new(plan)),
        };
        self.prepared.insert(name.to_owned(), Arc::new(statement));
        Ok(StatementAnswer::Done("PREPARE".into()))
    }

    /// `EXECUTE name (arguments)`: the arguments computed (by `arguments`, with the outer
    /// statement's `params`), converted to the statement's parameter types, and the statement
    /// run with them; its answer is EXECUTE's.
    pub(super) async fn execute_named(
        &mut self,
        name: &str,
        (arguments, untyped): (Option<&Arc<Prepared>>, &[bool]),
        params: Vec<Datum>,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
        let plan = self.named_plan(name)?;
        if plan.params.len() != untyped.len() {
            return Err(wrong_count(name, plan.params.len(), untyped.len()));
        }
        let mut values = Vec::with_capacity(untyped.len());
        if let Some(arguments) = arguments {
            let (columns, mut rows) =
                match self.run_query(Arc::clone(arguments), params, None).await? {
                    StatementAnswer::Rows { columns, rows, .. } => (columns, rows),
                    _ => (Vec::new(), Vec::new()),
                };
            let row = rows.pop().unwrap_or_default();
            for (i, (value, to)) in row.into_iter().zip(&plan.params).enumerate() {
                let from = columns.get(i).map_or(*to, |c| c.ty);
                values.push(argument(value, (from, untyped[i]), *to, i + 1)?);
            }
        }
        Box::pin(self.execute_inner(plan, values, out)).await
    }

    /// The columns of the rows `EXECUTE name` gives (for a Describe of it).
    pub fn named_columns(&self, name: &str) -> Option<Vec<OutputColumn>> {
        self.named_plan(name).ok().map(|p| p.columns.clone())
    }

    /// Forgets the statement `name` (`None`: every one); whether there was one.
    pub(crate) fn forget_named(&mut self, name: Option<&str>) -> bool {
        match name {
            Some(name) => self.prepared.remove(name).is_some(),
            None => {
                self.prepared.clear();
                true
            }
        }
    }

    /// The current plan of the session's statement `name` (26000 if it has none).
    fn named_plan(&self, name: &str) -> Result<Arc<Prepared>, SqlError> {
        let statement = self.prepared.get(name).ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_SQL_STATEMENT_NAME,
                format!("prepared statement \"{name}\" does not exist"),
            )
        })?;
        statement.plan(self.tables())
    }
}
