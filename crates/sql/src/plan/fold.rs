//! Constant folding, as PostgreSQL's planner does it (`eval_const_expressions`): a bound
//! expression's constant parts are computed once, before any row is read. This is visible to
//! clients, so it follows PostgreSQL's rules exactly: an error in a constant subexpression (an
//! overflow, a division by zero) fails the statement even when no row would reach it; an
//! operator or strict function with a NULL constant operand is NULL without its other operands
//! being computed for each row; `AND`/`OR` stop at a constant that decides them, `COALESCE` at
//! its first non-NULL constant, and `CASE` never folds an arm whose condition is constantly
//! false (nor any arm after one constantly true).
//!
//! Must never fold what is not constant for the whole statement: columns, parameters, and
//! functions whose value depends on when or where they run (`now()`, `random()`, the user).

use crate::error::Result;
use crate::expr::{BinOp, Context, Expr, Func};
use crate::values::datum::Datum;

/// `e` with its constant parts computed. Runs where binding does, on an OS thread, whose stack
/// `stacker` extends as the binder's does (the binder has bounded the depth already).
pub(crate) fn fold(e: Expr) -> Result<Expr> {
    stacker::maybe_grow(2 * crate::depth::RED_ZONE, 16 << 20, || fold_node(e))
}

fn fold_node(e: Expr) -> Result<Expr> {
    Ok(match e {
        Expr::Column(_) | Expr::Param(_) | Expr::Literal(_) => e,
        Expr::Binary(op @ (BinOp::And | BinOp::Or), l, r) => fold_logical(op, *l, *r)?,
        Expr::Binary(op, l, r) => strict(Expr::Binary(op, bx(fold(*l)?), bx(fold(*r)?)))?,
        Expr::Negate(x) => strict(Expr::Negate(bx(fold(*x)?)))?,
        Expr::Cast(x, ty) => strict(Expr::Cast(bx(fold(*x)?), ty))?,
        Expr::Lookup(x, table) => computed(Expr::Lookup(bx(fold(*x)?), table))?,
        // Known only when the statement runs.
        Expr::Init(_) | Expr::SubPlan(_) => e,
        Expr::Quantified {
            op,
            left,
            array,
            all,
        } => computed(Expr::Quantified {
            op,
            left: bx(fold(*left)?),
            array: bx(fold(*array)?),
            all,
        })?,
        Expr::InInit { expr, id, negated } => Expr::InInit {
            expr: bx(fold(*expr)?),
            id,
            negated,
        },
        // Moves the sequence: computed at each evaluation, never here.
        Expr::Sequence(s, args) => {
            Expr::Sequence(s, args.into_iter().map(fold).collect::<Result<_>>()?)
        }
        Expr::Not(x) => computed(Expr::Not(bx(fold(*x)?)))?,
        Expr::IsNull(x, negated) => computed(Expr::IsNull(bx(fold(*x)?), negated))?,
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => strict(Expr::Between {
            expr: bx(fold(*expr)?),
            low: bx(fold(*low)?),
            high: bx(fold(*high)?),
            negated,
        })?,
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let expr = bx(fold(*expr)?);
            let list = list.into_iter().map(fold).collect::<Result<Vec<_>>>()?;
            let folded = Expr::InList {
                expr,
                list,
                negated,
            };
            if matches!(&folded, Expr::InList { expr, .. } if is_null(expr)) {
                Expr::Literal(Datum::Null)
            } else {
                computed(folded)?
            }
        }
        Expr::Func(Func::Coalesce, args) => fold_coalesce(args)?,
        Expr::Func(
            f @ (Func::Abs
            | Func::Lower
            | Func::Upper
            | Func::Length
            | Func::Substr
            | Func::Round
            | Func::Trunc
            | Func::Ceil
            | Func::Floor),
            args,
        ) => strict(Expr::Func(
            f,
            args.into_iter().map(fold).collect::<Result<_>>()?,
        ))?,
        Expr::Func(f, args) => Expr::Func(f, args.into_iter().map(fold).collect::<Result<_>>()?),
        Expr::Case {
            operand,
            whens,
            otherwise,
        } => fold_case(operand, whens, otherwise)?,
    })
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Literal(Datum::Null))
}

/// The operands of `e`, one level down.
fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Column(_) | Expr::Param(_) | Expr::Literal(_) | Expr::Init(_) | Expr::SubPlan(_) => {
            Vec::new()
        }
        Expr::InInit { expr, .. } => vec![&**expr],
        Expr::Not(x)
        | Expr::Negate(x)
        | Expr::IsNull(x, _)
        | Expr::Cast(x, _)
        | Expr::Lookup(x, _) => vec![&**x],
        Expr::Binary(_, l, r)
        | Expr::Quantified {
            left: l, array: r, ..
        } => vec![&**l, &**r],
        Expr::Between {
            expr, low, high, ..
        } => vec![&**expr, &**low, &**high],
        Expr::InList { expr, list, .. } => std::iter::once(&**expr).chain(list).collect(),
        Expr::Func(_, args) | Expr::Sequence(_, args) => args.iter().collect(),
        Expr::Case {
            operand,
            whens,
            otherwise,
        } => operand
            .iter()
            .map(|o| &**o)
            .chain(whens.iter().flat_map(|(w, t)| [w, t]))
            .chain(otherwise.iter().map(|o| &**o))
            .collect(),
    }
}

/// `e` (its children folded) computed now if all its operands are constants.
fn computed(e: Expr) -> Result<Expr> {
    if children(&e).iter().all(|c| matches!(c, Expr::Literal(_))) {
        Ok(Expr::Literal(e.eval(&[], &Context::new(&[], 0))?))
    } else {
        Ok(e)
    }
}

/// A strict operation (its children folded): NULL if an operand is a NULL constant, else as
/// [`computed`].
fn strict(e: Expr) -> Result<Expr> {
    if children(&e).iter().any(|c| is_null(c)) {
        Ok(Expr::Literal(Datum::Null))
    } else {
        computed(e)
    }
}

/// `l AND r` / `l OR r`: a constant that decides it ends the folding (what follows is left as
/// it is); a constant that does not is dropped.
fn fold_logical(op: BinOp, l: Expr, r: Expr) -> Result<Expr> {
    let decides = Datum::Bool(op == BinOp::Or);
    let l = fold(l)?;
    if matches!(&l, Expr::Literal(d) if *d == decides) {
        return Ok(l);
    }
    let r = fold(r)?;
    if matches!(&r, Expr::Literal(d) if *d == decides) {
        return Ok(r);
    }
    let neutral = |e: &Expr| matches!(e, Expr::Literal(Datum::Bool(b)) if *b != (op == BinOp::Or));
    Ok(match (neutral(&l), neutral(&r)) {
        (true, _) => r,
        (_, true) => l,
        _ => computed(Expr::Binary(op, bx(l), bx(r)))?,
    })
}

/// COALESCE: NULL constants dropped, and nothing after the first other constant kept or folded.
fn fold_coalesce(args: Vec<Expr>) -> Result<Expr> {
    let mut kept = Vec::with_capacity(args.len());
    for a in args {
        let a = fold(a)?;
        if is_null(&a) {
            continue;
        }
        let constant = matches!(a, Expr::Literal(_));
        kept.push(a);
        if constant {
            break;
        }
    }
    Ok(match kept.len() {
        0 => Expr::Literal(Datum::Null),
        1 if matches!(kept[0], Expr::Literal(_)) => kept.pop().expect("one"),
        _ => Expr::Func(Func::Coalesce, kept),
    })
}

/// CASE: an arm whose condition is constantly false or NULL goes unfolded (and is dropped); one
/// constantly true ends it, its result folded as the value.
fn fold_case(
    operand: Option<Box<Expr>>,
    whens: Vec<(Expr, Expr)>,
    otherwise: Option<Box<Expr>>,
) -> Result<Expr> {
    let operand = operand.map(|o| fold(*o)).transpose()?;
    let mut kept = Vec::with_capacity(whens.len());
    for (condition, result) in whens {
        let condition = fold(condition)?;
        // With an operand, an arm's value is compared to it; decided only if both are constant.
        let decided = match (&operand, &condition) {
            (None, Expr::Literal(d)) => Some(*d == Datum::Bool(true)),
            (Some(Expr::Literal(o)), Expr::Literal(c)) => {
                let eq = Expr::Binary(
                    BinOp::Eq,
                    bx(Expr::Literal(o.clone())),
                    bx(Expr::Literal(c.clone())),
                );
                Some(eq.eval(&[], &Context::new(&[], 0))? == Datum::Bool(true))
            }
            _ => None,
        };
        match decided {
            Some(false) => continue,
            Some(true) if kept.is_empty() => return fold(result),
            Some(true) => {
                return Ok(Expr::Case {
                    operand: operand.map(bx),
                    whens: kept,
                    otherwise: Some(bx(fold(result)?)),
                });
            }
            None => kept.push((condition, fold(result)?)),
        }
    }
    let otherwise = otherwise.map(|o| fold(*o)).transpose()?;
    if kept.is_empty() {
        return Ok(otherwise.unwrap_or(Expr::Literal(Datum::Null)));
    }
    Ok(Expr::Case {
        operand: operand.map(bx),
        whens: kept,
        otherwise: otherwise.map(bx),
    })
}
