//! Window function calls (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`, `OVER w` with
//! `WINDOW w AS (...)`): bound where a SELECT's select list and ORDER BY are, each becoming a
//! column the query's `PlanNode::Window` appends to the row its projection reads. Calls are
//! refused elsewhere (WHERE, GROUP BY, HAVING, inside an aggregate or another window call)
//! with PostgreSQL's 42P20/42803.

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

use crate::bind::{
    Binder, Grouping, ScopeColumn, aggregate_func, is_unknown, literal_as, object_name, unified,
};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::window::{Frame, FrameBound, WindowCall, WindowFunc};
use crate::values::types::SqlType;

/// Where a window call's column stands while the select list is bound: the row's width is
/// known only once every aggregate is (see [`place_windows`]).
const WINDOW_COLUMNS: usize = 1 << 48;

/// The window calls of the SELECT being bound.
pub(crate) struct Windows {
    pub(crate) calls: Vec<WindowCall>,
    /// `WINDOW name AS (...)` definitions.
    named: Vec<ast::NamedWindowDefinition>,
    /// A call's parts are being bound: a call inside is refused with this message.
    binding: Option<&'static str>,
}

impl Windows {
    pub(crate) fn new(named: &[ast::NamedWindowDefinition]) -> Windows {
        Windows {
            calls: Vec::new(),
            named: named.to_vec(),
            binding: None,
        }
    }
}

/// Points the window calls' columns in `exprs` at their place after the `width` columns of the
/// row the window node reads.
pub(crate) fn place_windows(exprs: &mut [Expr], width: usize) {
    for e in exprs {
        e.visit_mut(&mut |x| {
            if let Expr::Column(c) = x
                && *c >= WINDOW_COLUMNS
            {
                *c = width + (*c - WINDOW_COLUMNS);
            }
        });
    }
}

fn windowing_error(message: impl Into<String>) -> SqlError {
    SqlError::new(sqlstate::WINDOWING_ERROR, message)
}

/// A window's parts as written, a named window's filled in.
struct Spec<'a> {
    partition_by: &'a [ast::Expr],
    order_by: &'a [ast::OrderByExpr],
    frame: Option<&'a ast::WindowFrame>,
}

impl Binder<'_> {
    /// Window call `f` over `scope` (the query's grouping maps its parts onto the aggregated
    /// row): its column of the row the projection reads.
    pub(crate) fn window_call(
        &mut self,
        f: &ast::Function,
        scope: &[ScopeColumn],
        grouping: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        match &mut self.windows {
            None => return Err(windowing_error("window functions are not allowed here")),
            Some(w) => {
                if let Some(message) = w.binding {
                    return Err(windowing_error(message));
                }
            }
        }
        let call = self.window_call_parts(f, scope, grouping);
        let w = self.windows.as_mut().expect("open above");
        w.binding = None;
        let call = call?;
        if call.exprs().any(|e| {
            let mut correlated = false;
            e.visit(&mut |x| correlated |= matches!(x, Expr::SubPlan(_)));
            correlated
        }) {
            return Err(SqlError::unsupported(
                "a correlated subquery in a window function call",
            ));
        }
        let ty = call.ty;
        w.calls.push(call);
        Ok((Expr::Column(WINDOW_COLUMNS + w.calls.len() - 1), ty))
    }

    fn calls_refused(&mut self, message: &'static str) {
        if let Some(w) = &mut self.windows {
            w.binding = Some(message);
        }
    }

    fn window_call_parts(
        &mut self,
        f: &ast::Function,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<WindowCall> {
        let name = object_name(&f.name)?;
        let named = self
            .windows
            .as_ref()
            .map(|w| w.named.clone())
            .unwrap_or_default();
        let spec = spec(f.over.as_ref().expect("a window call"), &named)?;
        self.calls_refused("window functions are not allowed in window definitions");
        let mut partition_by = Vec::new();
        for e in spec.partition_by {
            partition_by.push(self.expr(e, scope, g)?.0);
        }
        let mut order_by = Vec::new();
        let mut order_types = Vec::new();
        for item in spec.order_by {
            let (e, t) = self.expr(&item.expr, scope, g)?;
            order_types.push(t);
            let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
            order_by.push((
                e,
                descending,
                item.options.nulls_first.unwrap_or(descending),
            ));
        }
        let frame = match spec.frame {
            Some(frame) => self.frame(frame, &order_types)?,
            None => Frame::default_frame(),
        };
        self.calls_refused("window function calls cannot be nested");
        if let Some(func) = aggregate_func(&name) {
            let call = self.aggregate(func, f, scope, Some(g))?;
            let ty = call.ty;
            return Ok(WindowCall {
                func: WindowFunc::Aggregate(call),
                args: Vec::new(),
                partition_by,
                order_by,
                frame,
                ty,
            });
        }
        let FunctionArguments::List(list) = &f.args else {
            return Err(windowing_error(format!("{name} needs an argument list")));
        };
        if f.filter.is_some() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "FILTER is not implemented for non-aggregate window functions",
            ));
        }
        let mut args = Vec::new();
        let mut types = Vec::new();
        for a in &list.args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(a)) = a else {
                return Err(SqlError::syntax(format!("wrong arguments to {name}")));
            };
            let (e, t) = self.expr(a, scope, g)?;
            args.push(e);
            types.push(t);
        }
        // The value functions' result: their first argument's type.
        let value = types.first().copied().unwrap_or(SqlType::Text);
        let (func, arity, ty) = match name.as_str() {
            "row_number" => (WindowFunc::RowNumber, 0..=0, SqlType::Int8),
            "rank" => (WindowFunc::Rank, 0..=0, SqlType::Int8),
            "dense_rank" => (WindowFunc::DenseRank, 0..=0, SqlType::Int8),
            "percent_rank" => (WindowFunc::PercentRank, 0..=0, SqlType::Float8),
            "cume_dist" => (WindowFunc::CumeDist, 0..=0, SqlType::Float8),
            "ntile" => (WindowFunc::Ntile, 1..=1, SqlType::Int4),
            "lag" | "lead" => (
                WindowFunc::Lag {
                    lead: name == "lead",
                },
                1..=3,
                value,
            ),
            "first_value" => (WindowFunc::FirstValue, 1..=1, value),
            "last_value" => (WindowFunc::LastValue, 1..=1, value),
            "nth_value" => (WindowFunc::NthValue, 2..=2, value),
            _ => {
                return Err(SqlError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!(
                        "OVER specified, but {name} is not a window function nor an aggregate function"
                    ),
                ));
            }
        };
        if !arity.contains(&args.len()) {
            let listed: Vec<String> = types.iter().map(|t| t.name()).collect();
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", listed.join(", ")),
            ));
        }
        // The counts (ntile's buckets, lag's offset, nth_value's row) are integers.
        let count_at = match func {
            WindowFunc::Ntile => Some(0),
            WindowFunc::Lag { .. } | WindowFunc::NthValue => Some(1),
            _ => None,
        };
        if let Some(i) = count_at
            && i < args.len()
        {
            self.infer(&args[i], SqlType::Int4);
            let e = literal_as(args[i].clone(), SqlType::Int4)?;
            args[i] = match types[i] {
                SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Text => {
                    Expr::Cast(Box::new(e), SqlType::Int4)
                }
                other => {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        format!(
                            "function {name}({}, {}) does not exist",
                            types[0].name(),
                            other.name()
                        ),
                    ));
                }
            };
        }
        // lag's value and default take one type, as CASE's results do.
        let mut ty = ty;
        if args.len() == 3 {
            self.infer(&args[2], ty);
            let d = literal_as(args[2].clone(), ty)?;
            let d_ty = if is_unknown(&args[2]) { ty } else { types[2] };
            let (both, common) = unified(vec![(args[0].clone(), ty), (d, d_ty)]);
            let [value, default]: [Expr; 2] = both.try_into().expect("two values");
            ty = common;
            args[0] = value;
            args[2] = if d_ty == ty {
                default
            } else {
                Expr::Cast(Box::new(default), ty)
            };
        }
        Ok(WindowCall {
            func,
            args,
            partition_by,
            order_by,
            frame,
            ty,
        })
    }

    /// A frame clause: ROWS or RANGE between bounds (RANGE with an offset, GROUPS and
    /// EXCLUDE are not offered).
    fn frame(&mut self, frame: &ast::WindowFrame, order_types: &[SqlType]) -> Result<Frame> {
        let rows = match frame.units {
            ast::WindowFrameUnits::Rows => true,
            ast::WindowFrameUnits::Range => false,
            ast::WindowFrameUnits::Groups => {
                return Err(SqlError::unsupported("GROUPS in a window frame"));
            }
        };
        let mut bound = |b: &ast::WindowFrameBound| -> Result<FrameBound> {
            // ROWS counts rows (a bigint); RANGE measures the one ORDER BY value, of its type.
            let offset = |binder: &mut Self, e: &ast::Expr| -> Result<Expr> {
                let ty = if rows {
                    SqlType::Int8
                } else {
                    match order_types {
                        // A numeric offset is not rounded to the column's scale.
                        [SqlType::Numeric(_)] => SqlType::Numeric(None),
                        [t] if t.is_numeric() => *t,
                        [t] => {
                            return Err(SqlError::new(
                                sqlstate::FEATURE_NOT_SUPPORTED,
                                format!(
                                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                                    t.name()
                                ),
                            ));
                        }
                        _ => {
                            return Err(windowing_error(
                                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
                            ));
                        }
                    }
                };
                let (x, t) = binder.expr(e, &[], &mut None)?;
                binder.infer(&x, ty);
                let x = literal_as(x, ty)?;
                let integer =
                    |t: SqlType| matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8);
                // PostgreSQL's in_range: an integer offset for integers, a number for numbers.
                let fits =
                    t == SqlType::Text || integer(t) || (!rows && !integer(ty) && t.is_numeric());
                if !fits && rows {
                    return Err(SqlError::new(
                        sqlstate::DATATYPE_MISMATCH,
                        format!(
                            "argument of ROWS must be type bigint, not type {}",
                            t.name()
                        ),
                    ));
                }
                if !fits {
                    return Err(SqlError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        format!(
                            "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
                            ty.name(),
                            t.name()
                        ),
                    ));
                }
                Ok(Expr::Cast(Box::new(x), ty))
            };
            Ok(match b {
                ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
                ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
                ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
                ast::WindowFrameBound::Preceding(Some(e)) => {
                    FrameBound::Preceding(offset(self, e)?)
                }
                ast::WindowFrameBound::Following(Some(e)) => {
                    FrameBound::Following(offset(self, e)?)
                }
            })
        };
        let start = bound(&frame.start_bound)?;
        let end = match &frame.end_bound {
            Some(b) => bound(b)?,
            None => FrameBound::CurrentRow,
        };
        let refused = match (&start, &end) {
            (FrameBound::UnboundedFollowing, _) => {
                Some("frame start cannot be UNBOUNDED FOLLOWING")
            }
            (_, FrameBound::UnboundedPreceding) => Some("frame end cannot be UNBOUNDED PRECEDING"),
            (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
                Some("frame starting from current row cannot have preceding rows")
            }
            (FrameBound::Following(_), FrameBound::Preceding(_) | FrameBound::CurrentRow) => {
                Some("frame starting from following row cannot have preceding rows")
            }
            _ => None,
        };
        if let Some(message) = refused {
            return Err(windowing_error(message));
        }
        Ok(Frame { rows, start, end })
    }
}

/// The window `over` names or writes, a named window's parts filled in as PostgreSQL's rules
/// allow (a window copying another adds an ORDER BY or a frame, never replaces one).
fn spec<'a>(
    over: &'a ast::WindowType,
    named: &'a [ast::NamedWindowDefinition],
) -> Result<Spec<'a>> {
    let lookup = |name: &ast::Ident| -> Result<&'a ast::WindowSpec> {
        let wanted = crate::bind::ident(name);
        for ast::NamedWindowDefinition(n, e) in named {
            if crate::bind::ident(n) == wanted {
                return match e {
                    ast::NamedWindowExpr::WindowSpec(s) => Ok(s),
                    ast::NamedWindowExpr::NamedWindow(_) => Err(SqlError::unsupported(
                        "a WINDOW defined as another window's name",
                    )),
                };
            }
        }
        Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("window \"{wanted}\" does not exist"),
        ))
    };
    let own = match over {
        ast::WindowType::NamedWindow(name) => {
            let base = lookup(name)?;
            if base.window_name.is_some() {
                return Err(SqlError::unsupported("a WINDOW that copies another window"));
            }
            return Ok(Spec {
                partition_by: &base.partition_by,
                order_by: &base.order_by,
                frame: base.window_frame.as_ref(),
            });
        }
        ast::WindowType::WindowSpec(s) => s,
    };
    let Some(name) = &own.window_name else {
        return Ok(Spec {
            partition_by: &own.partition_by,
            order_by: &own.order_by,
            frame: own.window_frame.as_ref(),
        });
    };
    let base = lookup(name)?;
    let wanted = crate::bind::ident(name);
    if !own.partition_by.is_empty() {
        return Err(windowing_error(format!(
            "cannot override PARTITION BY clause of window \"{wanted}\""
        )));
    }
    if !own.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(windowing_error(format!(
            "cannot override ORDER BY clause of window \"{wanted}\""
        )));
    }
    if base.window_frame.is_some() {
        return Err(windowing_error(format!(
            "cannot copy window \"{wanted}\" because it has a frame clause"
        )));
    }
    Ok(Spec {
        partition_by: &base.partition_by,
        order_by: if own.order_by.is_empty() {
            &base.order_by
        } else {
            &own.order_by
        },
        frame: own.window_frame.as_ref(),
    })
}
