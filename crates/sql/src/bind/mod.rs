//! Binding, the first stage after parsing: a syntax tree (`sqlparser`) becomes a plan, with
//! names resolved against the catalog and the columns in scope, parameters numbered and typed,
//! and every result type known before anything runs (clients ask with Describe).
//!
//! - `parse`: text to syntax trees; [`statement`]: syntax trees to
//!   [`Prepared`](crate::plan::Prepared) plans, each kind of statement, with `ddl` for CREATE
//!   TABLE, indexes and GRANT/REVOKE;
//! - `select` and `dml`: the statements that read and write rows, with `from` for FROM and
//!   WHERE, `join_order` for the order a FROM list is joined in, `access` for how a table's
//!   rows are found and where conditions are checked, `or_conditions` for what an OR of
//!   conditions implies,
//!   (joins, derived tables, subqueries as semi joins) and `subquery` for subqueries in
//!   expressions, `arrays` for arrays, `set_ops` for UNION, INTERSECT, EXCEPT and VALUES,
//!   `with` for WITH queries, `view` for views (made and read), `window` for window function
//!   calls;
//! - `expr` ([`Binder`]): expressions, with `functions` for the scalar functions by name, `bytea`
//!   and `json` for what takes or makes those types, and
//!   `typing` for literals and the types where values meet;
//! - `analyze`: the tables `ANALYZE` takes statistics of;
//! - [`prepare`]: SQL-level `PREPARE` and `EXECUTE`;
//! - `role_statement`: `CREATE ROLE` and `ALTER ROLE ... WITH`; `row_values`: row values in
//!   comparisons and IN lists, as conditions on their items.
//!
//! Binding never reads or writes rows and never changes the catalog: it only reads the
//! catalog's (or a block's pending) tables.

pub(crate) mod access;
mod analyze;
pub(crate) mod arrays;
mod bytea;
mod ddl;
mod json;
pub(crate) use ddl::{converted_column, rebound_checks, relation_name};
mod constraint;
pub(crate) mod dml;
mod expr;
mod from;
pub(crate) mod functions;
mod join_order;
mod on_conflict;
mod or_conditions;
mod parse;
pub mod prepare;
pub(crate) mod role_statement;
mod row_values;
pub(crate) mod select;
mod set_ops;
pub mod statement;
mod subquery;
mod system;
mod typing;
pub(crate) mod view;
pub(crate) mod window;
mod with;

pub use expr::*;
pub use typing::*;
