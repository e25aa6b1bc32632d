//! How data is stored: schemas and the row format ([`schema`], [`row`], [`value`], decimals of
//! any precision in [`numeric`]),
//! order-preserving keys ([`key`], [`key_columns`]), and records: the version chains and the slots
//! that hold them ([`record`], in arrays that never move their elements, [`doubling`]).
//!
//! Storage knows nothing of tables (`catalog`), indexes or transactions: which version a reader
//! sees is `mvcc`'s business, and who may write is `txn`'s. It must never take a lock a paused
//! transaction could hold.

pub(crate) mod doubling;
pub(crate) mod key;
pub(crate) mod key_columns;
pub(crate) mod numeric;
pub(crate) mod record;
pub(crate) mod row;
pub(crate) mod schema;
pub(crate) mod value;
