//! SQL for Overtake: PostgreSQL's dialect parsed by `sqlparser`, bound against a catalog of SQL
//! tables over the engine's tables, planned and executed inside engine transactions.
//!
//! The stages, each a folder:
//!
//! - [`bind`]: SQL text (parsed by `sqlparser`) to [`Prepared`] plans, with parameter and result
//!   types ([`bind::statement::parse`], [`bind::statement::prepare`]);
//! - [`plan`]: what a statement does, as the binder left it, folded, and printed by `EXPLAIN`;
//! - [`exec`]: a data statement's plan run in a [`Transaction`](overtake_engine::Transaction)
//!   ([`exec::execute`]); catalog changes inside a transaction ([`exec::ddl::execute_in`]), kept
//!   as the block's [`catalog::pending::Pending`] changes until it commits; COPY's text format;
//! - [`catalog`]: SQL tables (types, NULL-ability, defaults, keys, indexes) by name, kept in the
//!   database itself, so [`Catalog::open`] finds a recovered database's tables; privileges and
//!   roles;
//! - [`values`]: SQL types and values, with PostgreSQL's comparison, arithmetic and text forms;
//! - [`expr`]: bound expressions and their evaluation, which every stage shares; [`error`]:
//!   SQLSTATEs; [`depth`]: the stack bound on nesting; [`syntax`]: parsed statements kept,
//!   safe to drop and copy however deep;
//! - [`sequence`]: sequences' state; [`system`]: the system catalogs (`pg_catalog`,
//!   `information_schema`) built from the catalog.
//!
//! This crate never blocks a thread except in engine lock waits (which park a scheduler task),
//! never panics on bad input, and holds no lock while it runs a plan.

#![forbid(unsafe_code)]

pub mod bind;
pub mod catalog;
pub mod depth;
pub mod error;
pub mod exec;
pub mod expr;
pub mod plan;
pub mod sequence;
pub mod syntax;
pub mod system;
pub mod values;

pub use catalog::{Catalog, SqlColumn, SqlTable};
pub use error::{About, Result, SqlError, sqlstate};
pub use exec::Output;
pub use expr::{Context, VERSION};
pub use plan::{Command, IsolationLevel, OutputColumn, Prepared, Query};
pub use values::datum::Datum;
pub use values::types::SqlType;
