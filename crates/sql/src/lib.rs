//! SQL for Overtake: PostgreSQL's dialect parsed by `sqlparser`, bound against a catalog of SQL
//! tables over the engine's tables, planned and executed inside engine transactions.
//!
//! - [`statement::parse`] and [`statement::prepare`]: text to [`Prepared`] plans (a client's
//!   prepared statement is one), with parameter and result types.
//! - [`exec::execute`]: a data statement's plan run in a [`Transaction`](overtake_engine::Transaction);
//!   [`ddl::execute_in`]: catalog changes inside a transaction, kept as the block's
//!   [`pending::Pending`] changes until it commits; [`copy::parse_text`]: COPY's text format.
//! - [`Catalog`]: SQL tables (types, NULL-ability, defaults, keys, indexes) by name, kept in
//!   the database itself (`stored`), so [`Catalog::open`] finds a recovered database's tables.
//!
//! Inside: `types` (SQL types and their storage), `datum` (values, comparison, arithmetic, text
//! forms), `numeric` (decimals of any precision), `time` (timestamps), `expr` (bound
//! expressions and their evaluation), `bind` (expressions from syntax trees), `select` and
//! `dml` (statements), `plan`, `explain`.
//!
//! This crate never blocks a thread except in engine lock waits (which park a scheduler task),
//! never panics on bad input, and holds no lock while it runs a plan.

#![forbid(unsafe_code)]

pub mod access;
mod acl;
mod aggregate;
mod bind;
pub mod catalog;
pub mod copy;
pub mod datum;
pub mod ddl;
pub mod depth;
mod dml;
pub mod error;
pub mod exec;
mod explain;
pub mod expr;
mod fold;
mod functions;
pub mod interval;
pub mod numeric;
pub mod pending;
pub mod plan;
mod role_statement;
pub mod roles;
mod select;
pub mod statement;
mod stored;
pub mod time;
pub mod types;

pub use catalog::{Catalog, SqlColumn, SqlTable};
pub use datum::Datum;
pub use error::{About, Result, SqlError, sqlstate};
pub use exec::Output;
pub use expr::{Context, VERSION};
pub use plan::{Command, IsolationLevel, OutputColumn, Prepared, Query};
pub use types::SqlType;
