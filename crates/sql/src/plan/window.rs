//! Window functions as planned: each call's function, arguments, partitioning, ordering and
//! frame, over the rows of a query after its grouping (`PlanNode::Window` appends one column
//! per call). Only what PostgreSQL's window functions mean is described here; the executor
//! (`exec::select::window`) computes them.

use crate::expr::Expr;
use crate::plan::AggCall;
use crate::values::types::SqlType;

/// What a window call computes for each row of its partition.
#[derive(Clone, Debug)]
pub enum WindowFunc {
    /// `row_number()`: the row's position in its partition, from 1.
    RowNumber,
    /// `rank()`: the position of the row's first peer (ties share it, gaps follow).
    Rank,
    /// `dense_rank()`: the number of the row's peer group (no gaps).
    DenseRank,
    /// `percent_rank()`: (rank - 1) / (rows - 1), 0 for a partition of one row.
    PercentRank,
    /// `cume_dist()`: the rows up to the row's last peer over the partition's rows.
    CumeDist,
    /// `ntile(n)`: the bucket, from 1 to n, of as equal sizes as can be (larger ones first).
    Ntile,
    /// `lag(x [, offset [, default]])` (`lead`: forward): `x` on the row `offset` before.
    Lag {
        lead: bool,
    },
    /// `first_value(x)`, `last_value(x)`, `nth_value(x, n)`: `x` on that row of the frame.
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame (its `FILTER` applies; no DISTINCT or ORDER BY in it).
    Aggregate(AggCall),
}

/// A bound of the frame, for a row of the partition.
#[derive(Clone, Debug, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    /// `n PRECEDING` (ROWS only): an expression of no column, evaluated once.
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

/// The rows of the partition an aggregate or a value function sees from a row: `rows` counts
/// rows, else (RANGE) a bound at CURRENT ROW takes in the row's peers.
#[derive(Clone, Debug)]
pub struct Frame {
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Frame {
    /// PostgreSQL's default: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW (the whole
    /// partition where there is no ORDER BY, every row being a peer).
    pub fn default_frame() -> Frame {
        Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }
}

/// One window function call of a query.
#[derive(Clone, Debug)]
pub struct WindowCall {
    pub func: WindowFunc,
    /// Its arguments over the input row (an aggregate's is in its `AggCall`).
    pub args: Vec<Expr>,
    pub partition_by: Vec<Expr>,
    /// ORDER BY: expression, descending, NULLs first.
    pub order_by: Vec<(Expr, bool, bool)>,
    pub frame: Frame,
    pub ty: SqlType,
}

impl WindowCall {
    /// Every expression the call evaluates.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let aggregate = match &self.func {
            WindowFunc::Aggregate(call) => call
                .arg
                .iter()
                .chain(call.filter.iter())
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        let bounds = [&self.frame.start, &self.frame.end]
            .into_iter()
            .filter_map(|b| match b {
                FrameBound::Preceding(e) | FrameBound::Following(e) => Some(e),
                _ => None,
            });
        self.args
            .iter()
            .chain(aggregate)
            .chain(&self.partition_by)
            .chain(self.order_by.iter().map(|(e, _, _)| e))
            .chain(bounds)
    }
}
