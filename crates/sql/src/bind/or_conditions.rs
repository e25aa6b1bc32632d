//! What an OR of conditions says beyond itself, made into conditions the planner can use as
//! PostgreSQL does: a join condition every branch holds is factored out (`(a = b AND x) OR (a = b
//! AND y)` is `a = b AND (x OR y)`, so the join on `a = b` is a join), and each table whose
//! own conditions are in every branch gets the restriction they imply.
//!
//! Must never change what the conditions hold for, NULLs included (AND and OR distribute in
//! SQL's three-valued logic), nor evaluate a volatile expression a different number of times
//! (those are left where they are).

use std::ops::Range;

use super::access::chain;
use crate::expr::{BinOp, Expr, Func};

/// Whether `e` may be evaluated more or fewer times than written: it is neither volatile
/// (`random()`, a sequence, a setting changed) nor reads a subquery.
fn copyable(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| {
        ok &= !matches!(
            x,
            Expr::SubPlan(_)
                | Expr::Init(_)
                | Expr::InInit { .. }
                | Expr::Quantified { .. }
                | Expr::Sequence(..)
                | Expr::Func(
                    Func::Random | Func::GenRandomUuid | Func::ClockTimestamp | Func::SetConfig,
                    _,
                )
        );
    });
    ok
}

/// Factors out of each OR condition the join conditions (conjuncts reading more than one of
/// `sources`) every one of its branches holds; an OR one of whose branches is left with
/// nothing holds whenever they do, and goes. Conditions on one table stay in their branches,
/// where a branch's key equalities choose its rows (`(k = 1 AND j = 2) OR (k = 1 AND j = 3)`
/// reads two keys).
pub fn factor_common(conditions: &mut Vec<Expr>, sources: &[Range<usize>]) {
    let joins = |e: &Expr| {
        let mut read: Vec<usize> = Vec::new();
        e.visit(&mut |x| {
            if let Expr::Column(c) = x
                && let Some(s) = sources.iter().position(|s| s.contains(c))
                && !read.contains(&s)
            {
                read.push(s);
            }
        });
        read.len() > 1
    };
    let mut out = Vec::with_capacity(conditions.len());
    for c in conditions.drain(..) {
        let mut branches = Vec::new();
        chain(&c, BinOp::Or, &mut branches);
        if branches.len() < 2 {
            out.push(c);
            continue;
        }
        let parts: Vec<Vec<&Expr>> = branches
            .iter()
            .map(|b| {
                let mut p = Vec::new();
                chain(b, BinOp::And, &mut p);
                p
            })
            .collect();
        let common: Vec<&Expr> = parts[0]
            .iter()
            .copied()
            .filter(|p| joins(p) && copyable(p) && parts[1..].iter().all(|other| other.contains(p)))
            .collect();
        if common.is_empty() {
            out.push(c);
            continue;
        }
        let rest: Vec<Option<Expr>> = parts
            .iter()
            .map(|p| {
                p.iter()
                    .filter(|x| !common.contains(x))
                    .map(|x| (*x).clone())
                    .reduce(|a, b| Expr::Binary(BinOp::And, a.into(), b.into()))
            })
            .collect();
        out.extend(common.iter().map(|x| (*x).clone()));
        // A branch left with nothing is true once the common part is.
        if rest.iter().all(Option::is_some) {
            let or = rest
                .into_iter()
                .flatten()
                .reduce(|a, b| Expr::Binary(BinOp::Or, a.into(), b.into()));
            out.extend(or);
        }
    }
    *conditions = out;
}

/// Adds, for each OR of conditions over several sources (each source's columns one of
/// `sources`), the restriction it implies on a source whose own conditions are in every branch:
/// `(n1.name = 'A' AND n2.name = 'B') OR (n1.name = 'B' AND n2.name = 'A')` implies
/// `n1.name = 'A' OR n1.name = 'B'` (and as much of `n2`), which that source's scan checks, so
/// it passes on only the rows the OR can hold for (PostgreSQL extracts these too). The OR
/// itself stays, checked where it was; a branch part that is volatile (`random()`, a
/// sequence) or reads a subquery is not copied.
pub fn implied_restrictions(conditions: &mut Vec<Expr>, sources: &[Range<usize>]) {
    let reads_only = |e: &Expr, own: &Range<usize>| {
        let mut any = false;
        let mut only = copyable(e);
        e.visit(&mut |x| {
            if let Expr::Column(c) = x {
                any = true;
                only &= own.contains(c);
            }
        });
        any && only
    };
    let mut implied = Vec::new();
    for c in conditions.iter() {
        let mut branches = Vec::new();
        chain(c, BinOp::Or, &mut branches);
        if branches.len() < 2 {
            continue;
        }
        for own in sources {
            if reads_only(c, own) {
                continue;
            }
            let mut restriction: Option<Expr> = None;
            for b in &branches {
                let mut parts = Vec::new();
                chain(b, BinOp::And, &mut parts);
                let mine = parts.into_iter().filter(|p| reads_only(p, own)).cloned();
                let Some(mine) = mine.reduce(|a, b| Expr::Binary(BinOp::And, a.into(), b.into()))
                else {
                    restriction = None;
                    break;
                };
                restriction = Some(match restriction {
                    None => mine,
                    Some(r) => Expr::Binary(BinOp::Or, r.into(), mine.into()),
                });
            }
            implied.extend(restriction);
        }
    }
    conditions.extend(implied);
}
