//! How deep a statement may nest, bounded by stack as PostgreSQL bounds it (`max_stack_depth`,
//! 54001 "stack depth limit exceeded"): every recursion over a statement (binding, evaluating,
//! walking) asks [`check`] before it goes one level deeper, on whatever thread or task it runs.
//!
//! Two bounds: the stack actually left (so no thread or task can overflow, whatever its size),
//! and a fixed depth of bound expressions, [`MAX_DEPTH`], near what PostgreSQL runs with its
//! default 2 MB stack (about 10,000 nested casts or `IS NULL`s), so that a plan bound on a big
//! stack can still be evaluated and dropped on a smaller one. Chains of AND and OR are bound as
//! balanced trees (see `bind`): like PostgreSQL, which flattens them, any number of terms runs.

use crate::error::{Result, SqlError, sqlstate};

/// Deepest nesting of a bound expression.
pub const MAX_DEPTH: usize = 15_000;

/// Deepest nesting of queries in one another (subqueries, derived tables): their plans are run
/// and dropped by recursion on a task's fixed stack, a few frames per level. PostgreSQL runs a
/// few hundred and refuses a few thousand (its parser's stack).
pub const MAX_QUERY_DEPTH: usize = 1_000;

/// Stack that must be left before going one level deeper: what one level of the deepest-framed
/// recursion (the parser's, in a debug build) and what runs below it may take.
pub const RED_ZONE: usize = 512 << 10;

/// The error past the bound.
pub fn too_deep() -> SqlError {
    SqlError::new(
        sqlstate::STATEMENT_TOO_COMPLEX,
        "stack depth limit exceeded",
    )
}

/// Fails with 54001 if less than [`RED_ZONE`] of stack is left, or `depth` is past
/// [`MAX_DEPTH`].
#[inline]
pub fn check(depth: usize) -> Result<()> {
    if depth > MAX_DEPTH || overtake_runtime::stack::remaining().is_some_and(|left| left < RED_ZONE)
    {
        return Err(too_deep());
    }
    Ok(())
}
