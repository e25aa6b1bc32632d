//! SQL-level prepared statements, read: `PREPARE name [(types)] AS statement` (which
//! `statement` plans once, to check it: PostgreSQL reports a missing table or a type error at
//! PREPARE), and `EXECUTE name [(arguments)]` with its arguments as a query whose row becomes
//! the statement's parameters. The session keeps the statements; binding never sees them, so an
//! argument's conversion to its parameter's type ([`argument`]) happens when the session knows
//! both.

use sqlparser::ast::{self, Statement, Value};

use super::parse::parse_sql;
use super::{ident, typing};
use crate::error::{Result, SqlError, sqlstate};
use crate::syntax::{Ast, recursing_through};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// `PREPARE name [(types)] AS statement`'s name, statement (checked to be one PostgreSQL
/// prepares) and declared parameter types; the caller plans the statement once, to report its
/// errors as PREPARE's.
pub(super) fn prepared(stmt: &Statement) -> Result<(String, &Statement, Vec<Option<SqlType>>)> {
    let Statement::Prepare {
        name,
        data_types,
        statement,
    } = stmt
    else {
        return Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "PREPARE bound from another statement",
        ));
    };
    // PostgreSQL's grammar prepares only these (its `PreparableStmt`).
    if !matches!(
        **statement,
        Statement::Query(_) | Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
    ) {
        let text = statement.to_string();
        let word = text.split_whitespace().next().unwrap_or_default();
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{word}\""
        )));
    }
    let declared = data_types
        .iter()
        .map(|t| SqlType::from_ast(t).map(Some))
        .collect::<Result<Vec<_>>>()?;
    Ok((ident(name), statement, declared))
}

/// What `EXECUTE name [(arguments)]` names, the arguments as a query (`SELECT argument, ...`,
/// `None` without any) for the caller to plan with the outer statement's parameters, and which
/// arguments are literals of no type yet.
pub(super) fn executed(stmt: &Statement) -> Result<(String, Option<Ast>, Vec<bool>)> {
    let Statement::Execute {
        name: Some(name),
        parameters,
        has_parentheses,
        immediate: false,
        into,
        using,
        ..
    } = stmt
    else {
        return Err(SqlError::unsupported("this form of EXECUTE"));
    };
    if !into.is_empty() || !using.is_empty() {
        return Err(SqlError::unsupported("EXECUTE ... INTO or USING"));
    }
    if *has_parentheses && parameters.is_empty() {
        return Err(SqlError::syntax("syntax error at or near \")\""));
    }
    let [name] = name.0.as_slice() else {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            name.0.get(1).map(|p| p.to_string()).unwrap_or_default()
        )));
    };
    let name = name
        .as_ident()
        .map(ident)
        .ok_or_else(|| SqlError::syntax("a prepared statement's name must be an identifier"))?;
    // PostgreSQL computes the arguments without running a query.
    let queries = recursing_through(parameters, |p| ast::Visit::visit(p, &mut Queries))?;
    if queries.is_break() {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "cannot use subquery in EXECUTE parameter",
        ));
    }
    let untyped = parameters.iter().map(untyped).collect();
    let arguments = match parameters.is_empty() {
        true => None,
        false => Some(arguments_query(stmt)?),
    };
    Ok((name, arguments, untyped))
}

/// `SELECT argument, ...` of an EXECUTE's arguments (moved out of a copy of it, so that even a
/// deep one is copied safely: see `Ast::copy_of`).
fn arguments_query(execute: &Statement) -> Result<Ast> {
    let Statement::Execute { parameters, .. } = Ast::copy_of(execute)?.into_statement() else {
        return Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "EXECUTE's copy is another statement",
        ));
    };
    let mut select = parse_sql("SELECT NULL")?.remove(0).into_statement();
    if let Statement::Query(q) = &mut select
        && let ast::SetExpr::Select(s) = &mut *q.body
    {
        s.projection = parameters
            .into_iter()
            .map(ast::SelectItem::UnnamedExpr)
            .collect();
    }
    Ok(Ast(select))
}

/// Stops at the first query it meets.
struct Queries;

impl ast::Visitor for Queries {
    type Break = ();

    fn pre_visit_query(&mut self, _: &ast::Query) -> std::ops::ControlFlow<()> {
        std::ops::ControlFlow::Break(())
    }
}

/// Whether an argument is a literal of no type yet (a quoted string or NULL), which becomes a
/// value of whatever type its parameter has.
fn untyped(e: &ast::Expr) -> bool {
    matches!(
        e,
        ast::Expr::Value(v) if matches!(
            v.value,
            Value::SingleQuotedString(_)
                | Value::EscapedStringLiteral(_)
                | Value::DollarQuotedString(_)
                | Value::Null
        )
    )
}

/// EXECUTE's argument `position` (from 1), `value` of type `from`, as its parameter's type
/// `to`: converted as an assignment converts (PostgreSQL's 42804 where no assignment cast
/// exists), and any way for a literal of no type.
pub fn argument(
    value: Datum,
    (from, untyped): (SqlType, bool),
    to: SqlType,
    position: usize,
) -> Result<Datum> {
    if from == to || value.is_null() {
        return Ok(value);
    }
    // A string becomes another type only by an explicit cast (PostgreSQL's I/O conversion
    // casts from string types are explicit), unless it is a literal of no type yet.
    let from_string = from.is_string() && !to.is_string();
    if !untyped && (from_string || !typing::assignable(from, to)) {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "parameter ${position} of type {} cannot be coerced to the expected type {}",
                from.name(),
                to.name()
            ),
        )
        .with_hint("You will need to rewrite or cast the expression."));
    }
    value.cast(to)
}

/// PostgreSQL's 42601 for an EXECUTE with as many arguments as `given` of a statement that
/// takes `expected`.
pub fn wrong_count(name: &str, expected: usize, given: usize) -> SqlError {
    SqlError::syntax(format!(
        "wrong number of parameters for prepared statement \"{name}\""
    ))
    .with_detail(format!("Expected {expected} parameters but got {given}."))
}
