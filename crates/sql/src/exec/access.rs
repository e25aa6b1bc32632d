//! Who may do what to a table, as PostgreSQL's privileges: its owner may do anything to it;
//! another role what was granted to it or to `PUBLIC` (SELECT, INSERT, UPDATE, DELETE,
//! TRUNCATE, REFERENCES, TRIGGER); a superuser everything. Only the owner (or a superuser)
//! drops, alters, indexes and grants on a table.
//!
//! A data statement is checked each time it runs, after it is bound (a misspelt column is 42703
//! first, as PostgreSQL checks at executor start), so a cached plan obeys a later REVOKE; a
//! catalog change is checked when it runs, against the table it finds. A table's owner and
//! grants are part of its catalog description (see `stored`), so they commit and roll back
//! with their block and survive a restart.
//!
//! Must never: allow a statement by a role that was not granted it, or check anything but the
//! acting role (an [`Actor`]) — the catalog's own statements, which act for nobody, are the
//! only ones not checked.

use crate::catalog::SqlTable;
pub use crate::catalog::acl::{Acl, Actor, Grantee, Privileges};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{Command, InsertSource, Query, Relation, SelectPlan};

/// 42501 for `table` (a table, view or sequence), in PostgreSQL's words.
pub(crate) fn denied(table: &SqlTable) -> SqlError {
    SqlError::new(
        sqlstate::INSUFFICIENT_PRIVILEGE,
        format!(
            "permission denied for {} {}",
            table.kind().noun(),
            table.name
        ),
    )
}

/// Fails with 42501 unless `actor` may do `need` to `table`.
pub fn require(actor: Option<&Actor>, table: &SqlTable, need: Privileges) -> Result<()> {
    match actor {
        Some(a) if !a.superuser && !table.acl.privileges_of(a).contains(need) => Err(denied(table)),
        _ => Ok(()),
    }
}

/// Fails with 42501 unless `actor` owns `table` (DROP, ALTER, CREATE INDEX).
pub fn require_owner(actor: Option<&Actor>, table: &SqlTable) -> Result<()> {
    match actor {
        Some(a) if !table.acl.is_owner(a) => Err(SqlError::new(
            sqlstate::INSUFFICIENT_PRIVILEGE,
            format!("must be owner of table {}", table.name),
        )),
        _ => Ok(()),
    }
}

/// Fails with 42501 unless `actor` may run the data statement `command` (anything else passes:
/// catalog changes are checked when they run).
pub fn check(command: &Command, actor: &Actor) -> Result<()> {
    if actor.superuser {
        return Ok(());
    }
    let query = match command {
        Command::Query(query) | Command::CopyOut(query, _) => query,
        Command::CopyIn(copy) => return require(Some(actor), &copy.table, Privileges::INSERT),
        Command::Explain(_, explained) => return check(explained, actor),
        Command::Declare { query, .. } => return check(&query.command, actor),
        _ => return Ok(()),
    };
    // Subqueries in expressions read tables too (those in a view's query with the view
    // owner's privileges).
    for init in query.init() {
        check_select(&init.plan, init.owner.as_ref().unwrap_or(actor))?;
    }
    match &**query {
        Query::Select(s) => check_select(s, actor),
        Query::Insert(i) => {
            require(Some(actor), &i.table, Privileges::INSERT)?;
            let targeted = i.on_conflict.as_ref().is_some_and(|o| o.targeted);
            if targeted || reads(i.returning.iter()) {
                require(Some(actor), &i.table, Privileges::SELECT)?;
            }
            if i.on_conflict.as_ref().is_some_and(|o| o.update.is_some()) {
                require(Some(actor), &i.table, Privileges::UPDATE)?;
            }
            match &i.source {
                InsertSource::Select(s) => check_select(s, actor),
                InsertSource::Values(_) => Ok(()),
            }
        }
        // Reading a column (in the condition or a new value) takes SELECT too.
        Query::Update(u) => {
            require(Some(actor), &u.table, Privileges::UPDATE)?;
            let assigned = u.assignments.iter().map(|(_, e)| e);
            if reads(u.filter.iter().chain(assigned).chain(&u.returning)) {
                require(Some(actor), &u.table, Privileges::SELECT)?;
            }
            Ok(())
        }
        // The binder kept only the tables the user owns.
        Query::Analyze(_) => Ok(()),
        Query::Delete(d) => {
            require(Some(actor), &d.table, Privileges::DELETE)?;
            if reads(d.filter.iter().chain(&d.returning)) {
                require(Some(actor), &d.table, Privileges::SELECT)?;
            }
            Ok(())
        }
    }
}

/// Whether any of `exprs` reads a column.
fn reads<'a>(mut exprs: impl Iterator<Item = &'a Expr>) -> bool {
    exprs.any(|e| e.max_column().is_some())
}

/// SELECT on every table and view read; UPDATE too on those `FOR UPDATE` locks. A view's
/// query reads with its owner's privileges.
fn check_select(plan: &SelectPlan, actor: &Actor) -> Result<()> {
    if actor.superuser {
        return Ok(());
    }
    // The system catalogs are everyone's to read.
    for source in plan.root.sources_outside_views() {
        match &source.relation {
            Relation::Table(t) => {
                require(Some(actor), t, Privileges::SELECT)?;
                if plan.for_update {
                    require(Some(actor), t, Privileges::UPDATE)?;
                }
            }
            Relation::Subquery(inner) => {
                if let Some(read) = &inner.view {
                    require(Some(actor), &read.view, Privileges::SELECT)?;
                    check_select(inner, &read.owner)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}
