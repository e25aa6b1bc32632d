//! Values and their types: SQL types with their PostgreSQL names, OIDs and storage (`types`),
//! the built-in types as `pg_type` lists them (`builtin_types`),
//! values in flight with PostgreSQL's comparison and arithmetic (`datum`), rows of values as hash
//! keys (`key`), decimals of any precision (`numeric`), dates and timestamps (`time`) and
//! intervals (`interval`),
//! JSON documents (`json`), row locations (`tid`), PostgreSQL's binary format of values (`binary`). Pure
//! computation on values: never reaches the catalog, a transaction or a plan.

pub mod array;
pub mod binary;
pub mod builtin_types;
pub mod bytea;
pub mod datum;
pub mod fields;
pub mod interval;
pub mod json;
pub mod key;
pub mod numeric;
pub mod tid;
pub mod time;
pub mod types;
