//! Row values (`(a, b)`) in comparisons and IN lists, rewritten into the column-by-column
//! conditions PostgreSQL defines them by, before binding: `(a, b) = (x, y)` is `a = x AND b =
//! y`, `(a, b) < (x, y)` is `a < x OR (a = x AND b < y)`, `(a, b) IN ((x, y), ...)` is an OR
//! of row equalities. SQL's three-valued logic then gives PostgreSQL's answers with NULLs (the
//! first pair that is not equal decides; a NULL there makes the result NULL). The planner sees
//! plain conditions, so a list of whole keys is read key by key (see `access`).

use sqlparser::ast::{self, BinaryOperator, UnaryOperator};

use crate::error::{Result, SqlError, sqlstate};

/// The items of `e` if it is a row value (a parenthesized list of two or more expressions).
pub fn row_items(e: &ast::Expr) -> Option<&[ast::Expr]> {
    match e {
        ast::Expr::Tuple(items) => Some(items),
        ast::Expr::Nested(inner) => row_items(inner),
        _ => None,
    }
}

fn unequal() -> SqlError {
    SqlError::new(
        sqlstate::SYNTAX_ERROR,
        "unequal number of entries in row expressions",
    )
}

fn binary(left: ast::Expr, op: BinaryOperator, right: ast::Expr) -> ast::Expr {
    ast::Expr::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

/// `left op right` for two row values, as conditions on their items; `None` for an operator
/// rows do not have here (the caller reports it).
pub fn compare(
    left: &[ast::Expr],
    op: &BinaryOperator,
    right: &[ast::Expr],
) -> Result<Option<ast::Expr>> {
    if left.len() != right.len() {
        return Err(unequal());
    }
    let pairs = left.iter().cloned().zip(right.iter().cloned());
    let all = |op: BinaryOperator, join: BinaryOperator| {
        pairs
            .clone()
            .map(|(l, r)| binary(l, op.clone(), r))
            .reduce(|a, b| binary(a, join.clone(), b))
    };
    Ok(match op {
        BinaryOperator::Eq => all(BinaryOperator::Eq, BinaryOperator::And),
        BinaryOperator::NotEq => all(BinaryOperator::NotEq, BinaryOperator::Or),
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            // From the last pair back: `l_n op r_n`, then `l_i strict r_i OR (l_i = r_i AND
            // rest)`.
            let strict = match op {
                BinaryOperator::Lt | BinaryOperator::LtEq => BinaryOperator::Lt,
                _ => BinaryOperator::Gt,
            };
            let mut pairs: Vec<_> = pairs.collect();
            let (l, r) = pairs.pop().ok_or_else(unequal)?;
            let mut rest = binary(l, op.clone(), r);
            while let Some((l, r)) = pairs.pop() {
                let equal = binary(l.clone(), BinaryOperator::Eq, r.clone());
                let nested = ast::Expr::Nested(Box::new(binary(equal, BinaryOperator::And, rest)));
                rest = binary(binary(l, strict.clone(), r), BinaryOperator::Or, nested);
            }
            Some(rest)
        }
        _ => None,
    })
}

/// `row [NOT] IN (row, ...)` as an OR of row equalities (negated as a whole).
pub fn in_list(row: &[ast::Expr], list: &[ast::Expr], negated: bool) -> Result<ast::Expr> {
    let mut branches = Vec::with_capacity(list.len());
    for item in list {
        let Some(items) = row_items(item) else {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("operator does not exist: a row = {item}, which is not a row"),
            ));
        };
        let eq = compare(row, &BinaryOperator::Eq, items)?.ok_or_else(unequal)?;
        branches.push(ast::Expr::Nested(Box::new(eq)));
    }
    let any = branches
        .into_iter()
        .reduce(|a, b| binary(a, BinaryOperator::Or, b))
        .ok_or_else(unequal)?;
    Ok(if negated {
        ast::Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr: Box::new(ast::Expr::Nested(Box::new(any))),
        }
    } else {
        any
    })
}
