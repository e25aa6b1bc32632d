//! Values and their types: SQL types with their PostgreSQL names, OIDs and storage (`types`),
//! values in flight with PostgreSQL's comparison and arithmetic (`datum`), decimals of any
//! precision (`numeric`), dates and timestamps (`time`) and intervals (`interval`). Pure
//! computation on values: never reaches the catalog, a transaction or a plan.

pub mod datum;
pub mod interval;
pub mod numeric;
pub mod time;
pub mod types;
