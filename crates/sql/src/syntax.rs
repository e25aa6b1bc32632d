//! A parsed statement kept past its parsing (to plan again after a catalog change, or inside
//! another statement: PREPARE's, DECLARE's), and what makes every tree the parser built safe to
//! drop, walk and copy: the parser builds chains of operators (`AND`, `+`, `IS NULL`) far
//! deeper than its own recursion, and Rust's derived drop, visit and clone recurse.
//! Never parses and never looks at a catalog.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Statement, VisitMut, VisitorMut};

use crate::error::Result;

/// A parsed statement (sqlparser's syntax tree), kept to plan again after a catalog change.
///
/// The parser builds a chain of operators written one after another (`1::int::int...`,
/// `a + b + ...`, `x IS NULL IS NULL ...`) as a tree as deep as the chain is long, without
/// recursing itself; dropping such a tree recursively could overflow the stack. An `Ast` is
/// taken apart iteratively when dropped, so that dropping any statement the parser accepted is
/// safe; binding it refuses what is too deep (see `depth`).
#[derive(Debug)]
pub struct Ast(pub(crate) Statement);

impl std::ops::Deref for Ast {
    type Target = Statement;

    fn deref(&self) -> &Statement {
        &self.0
    }
}

impl Ast {
    /// The statement, taken out.
    pub fn into_statement(mut self) -> Statement {
        std::mem::replace(
            &mut self.0,
            Statement::Commit {
                chain: false,
                end: false,
                modifier: None,
            },
        )
    }
}

/// Stack a walk or copy of a statement part may recurse on: what the deepest part
/// [`recursing_through`] accepts needs, with room (reserved, not touched, until used).
const COPY_STACK: usize = 256 << 20;

impl Ast {
    /// A copy of `part`, a statement inside another (PREPARE's, DECLARE's), to keep past the
    /// statement that holds it. Copying recurses through the tree, which the parser may have
    /// built far deeper than its own recursion (chains of `AND`, `+`, `IS NULL`): a part that
    /// nests deeper than a bound expression may ([`MAX_DEPTH`](crate::depth::MAX_DEPTH)) is
    /// refused with 54001 before any copying (chains of AND and OR included, which binding
    /// otherwise balances: PostgreSQL keeps any number), and the copy runs on a stack big
    /// enough for the rest.
    pub(crate) fn copy_of(part: &Statement) -> Result<Ast> {
        Self::copy(part, |s| s)
    }

    /// [`copy_of`](Self::copy_of) a query (DECLARE's), as a statement of its own.
    pub(crate) fn copy_of_query(query: &ast::Query) -> Result<Ast> {
        Self::copy(query, |q| Statement::Query(Box::new(q)))
    }

    fn copy<T: ast::Visit + Clone>(
        part: &T,
        statement: impl FnOnce(T) -> Statement,
    ) -> Result<Ast> {
        recursing_through(part, |p| Ast(statement(p.clone())))
    }
}

/// Runs `f`, which recurses through `part` (copies it, walks it), on a stack big enough for
/// it, once `part` is found to nest no deeper than a bound expression may
/// ([`MAX_DEPTH`](crate::depth::MAX_DEPTH); 54001 otherwise): the parser builds chains of
/// operators (`AND`, `+`, `IS NULL`) far deeper than its own recursion.
///
/// A shallow part (most are: a DECLARE's query, an EXECUTE's parameters) is walked and copied
/// on the caller's stack when plenty of it is left: growing one maps and unmaps
/// [`COPY_STACK`] of address space, a system call pair and a shootdown of the other cores'
/// TLBs each time, which measured a tenth of a shard's CPU under postgres_fdw (a DECLARE per
/// query).
pub(crate) fn recursing_through<T: ast::Visit, R>(part: &T, f: impl FnOnce(&T) -> R) -> Result<R> {
    let mut depth = Depth {
        now: 0,
        deepest: 0,
        watch_stack: true,
        stack_low: false,
    };
    let in_place = match overtake_runtime::stack::remaining() {
        Some(left) if left >= IN_PLACE_STACK => {
            // The walk stops where the stack runs low, so it cannot overflow it.
            let stopped = ast::Visit::visit(part, &mut depth).is_break();
            if stopped && !depth.stack_low {
                return Err(crate::depth::too_deep());
            }
            !stopped && depth.deepest <= SHALLOW
        }
        _ => false,
    };
    if in_place {
        return Ok(f(part));
    }
    stacker::grow(COPY_STACK, || {
        // Big enough for any part the depth bound lets through (and a grown segment's room
        // cannot be told: `remaining` is `None` there).
        let mut depth = Depth {
            now: 0,
            deepest: 0,
            watch_stack: false,
            stack_low: false,
        };
        if ast::Visit::visit(part, &mut depth).is_break() {
            return Err(crate::depth::too_deep());
        }
        Ok(f(part))
    })
}

/// Stack left below which a part is never walked or copied in place.
const IN_PLACE_STACK: usize = 8 << 20;
/// How deep a part copied in place may nest: a copy's frames are a few kilobytes at most, so
/// far below [`IN_PLACE_STACK`].
const SHALLOW: usize = 128;

/// Measures how deeply expressions nest, stopping past [`MAX_DEPTH`](crate::depth::MAX_DEPTH)
/// (so its own recursion is bounded too), or, if it `watch_stack`s, where less than a red zone
/// of stack is left (`stack_low`: the walk goes on a grown stack).
struct Depth {
    now: usize,
    deepest: usize,
    watch_stack: bool,
    stack_low: bool,
}

impl ast::Visitor for Depth {
    type Break = ();

    fn pre_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<()> {
        self.now += 1;
        self.deepest = self.deepest.max(self.now);
        if self.now > crate::depth::MAX_DEPTH {
            return ControlFlow::Break(());
        }
        if self.watch_stack
            && overtake_runtime::stack::remaining().is_none_or(|left| left < crate::depth::RED_ZONE)
        {
            self.stack_low = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _: &ast::Expr) -> ControlFlow<()> {
        self.now -= 1;
        ControlFlow::Continue(())
    }
}

impl Drop for Ast {
    fn drop(&mut self) {
        let mut detached = Detach(Vec::new());
        let _ = self.0.visit(&mut detached);
        while let Some(mut e) = detached.0.pop() {
            // Its chain links go to the list before the visitor descends: each drop is shallow.
            let _ = e.visit(&mut detached);
        }
    }
}

/// Takes the operands of chain-building operators out of every expression it visits (before
/// descending into it), leaving NULLs in their place.
struct Detach(Vec<ast::Expr>);

impl VisitorMut for Detach {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        use ast::Expr as E;
        let mut take = |b: &mut Box<ast::Expr>| {
            let null = E::Value(ast::Value::Null.into());
            self.0.push(std::mem::replace(&mut **b, null));
        };
        match e {
            E::BinaryOp { left, right, .. }
            | E::IsDistinctFrom(left, right)
            | E::IsNotDistinctFrom(left, right)
            | E::AnyOp { left, right, .. }
            | E::AllOp { left, right, .. } => {
                take(left);
                take(right);
            }
            E::Like { expr, pattern, .. }
            | E::ILike { expr, pattern, .. }
            | E::SimilarTo { expr, pattern, .. }
            | E::RLike { expr, pattern, .. } => {
                take(expr);
                take(pattern);
            }
            E::Between {
                expr, low, high, ..
            } => {
                take(expr);
                take(low);
                take(high);
            }
            E::IsFalse(x)
            | E::IsNotFalse(x)
            | E::IsTrue(x)
            | E::IsNotTrue(x)
            | E::IsNull(x)
            | E::IsNotNull(x)
            | E::IsUnknown(x)
            | E::IsNotUnknown(x)
            | E::Nested(x)
            | E::UnaryOp { expr: x, .. }
            | E::Cast { expr: x, .. }
            | E::Collate { expr: x, .. }
            | E::In { expr: x, .. }
            | E::AtTimeZone { timestamp: x, .. }
            | E::CompoundFieldAccess { root: x, .. }
            | E::JsonAccess { value: x, .. } => take(x),
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
