//! The types of bound expressions: number literals and their types, the checks of an
//! assignment, the common type of values that meet (`CASE`, `VALUES`, `IN` lists), and
//! arithmetic's result type, as PostgreSQL resolves them. Pure functions of types and literals:
//! never looks at a catalog or a scope.

use sqlparser::ast::{self, UnaryOperator, Value};

use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::values::datum::Datum;
use crate::values::numeric::Num;
use crate::values::types::SqlType;

/// The text of a number literal under any minus signs and parentheses, with the signs applied;
/// `None` if `e` is not one. A loop, not recursion: the chain may be as deep as the parser
/// allows.
pub(crate) fn signed_number(mut e: &ast::Expr) -> Option<String> {
    let mut negative = false;
    loop {
        match e {
            ast::Expr::Nested(inner) => e = inner,
            ast::Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => {
                negative = !negative;
                e = expr;
            }
            ast::Expr::Value(v) => {
                let Value::Number(text, _) = &v.value else {
                    return None;
                };
                return Some(if negative {
                    format!("-{text}")
                } else {
                    text.clone()
                });
            }
            _ => return None,
        }
    }
}

/// Integers are computed in 64 bits: an arithmetic result of a narrower type is checked to fit
/// it ("integer out of range"), as PostgreSQL's 32- and 16-bit arithmetic is.
pub(crate) fn narrowed(e: Expr, ty: SqlType) -> Expr {
    match ty {
        SqlType::Int2 | SqlType::Int4 => Expr::Cast(Box::new(e), ty),
        _ => e,
    }
}

pub(crate) fn number(text: &str) -> Result<(Expr, SqlType)> {
    if let Ok(v) = text.parse::<i64>() {
        let ty = if i32::try_from(v).is_ok() {
            SqlType::Int4
        } else {
            SqlType::Int8
        };
        return Ok((Expr::Literal(Datum::Int(v)), ty));
    }
    // Every other number is a numeric, as PostgreSQL types a literal with a point or an
    // exponent (`1.5`, `1e10`) or past a bigint.
    match Num::parse(text)? {
        Some(n) => Ok((Expr::Literal(Datum::Numeric(n)), SqlType::Numeric(None))),
        None => Err(SqlError::syntax(format!("invalid number {text}"))),
    }
}

/// `e` (of type `t`) as the functions that see a `char(n)` with its padding take it: LIKE,
/// `concat`, `concat_ws` (PostgreSQL stores it padded; other text functions and casts to text
/// drop the padding, as the value is held here).
pub(crate) fn with_char_padding(e: Expr, t: SqlType) -> Expr {
    match t {
        SqlType::Char(n) if n < crate::values::types::LENGTH_MAX => Expr::Func(
            crate::expr::Func::RPad,
            vec![e, Expr::Literal(Datum::Int(n.into()))],
        ),
        _ => e,
    }
}

/// A string literal (of no type yet, as PostgreSQL's `unknown`) met by a value of type `ty`
/// becomes a value of that type at once, as PostgreSQL resolves it: `int_col = 'abc'` fails
/// with 22P02 when bound, and `char_col = 'a  '` compares without the literal's trailing
/// spaces (`char(n)` ignores them; `text` and `varchar` do not).
pub(crate) fn literal_as(e: Expr, ty: SqlType) -> Result<Expr> {
    match (e, ty) {
        (Expr::Literal(Datum::Text(s)), SqlType::Char(_)) => Ok(Expr::Literal(Datum::Text(
            s.trim_end_matches(' ').to_owned(),
        ))),
        (Expr::Literal(Datum::Text(s)), ty) if !ty.is_string() => {
            Ok(Expr::Literal(Datum::parse(&s, ty)?))
        }
        (e, _) => Ok(e),
    }
}

/// Whether a value of type `from` turns into one of type `to` where it is assigned
/// (PostgreSQL's assignment casts): numbers, booleans and timestamps do not turn into one
/// another.
pub(crate) fn assignable(from: SqlType, to: SqlType) -> bool {
    let kind = |t: SqlType| match t {
        SqlType::Bool => 1,
        SqlType::Timestamp | SqlType::TimestampTz | SqlType::Date => 2,
        SqlType::Time => 4,
        t if t.is_numeric() => 3,
        _ => 0,
    };
    let (a, b) = (kind(from), kind(to));
    a == 0 || b == 0 || a == b
}

/// Whether a value of type `from` may be stored in a column of type `to` (PostgreSQL's
/// assignment casts, as `assignable` tells).
pub fn check_assignable(from: SqlType, to: SqlType, column: &str) -> Result<()> {
    if !assignable(from, to) {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "column \"{column}\" is of type {} but expression is of type {}",
                to.name(),
                from.name()
            ),
        ));
    }
    Ok(())
}

/// Whether `e` of type `ty` is a value of no type yet, which takes the type it meets: an
/// untyped literal, or a parameter nothing has typed (text until then).
pub(crate) fn untyped(e: &Expr, ty: SqlType) -> bool {
    is_unknown(e) || (matches!(e, Expr::Param(_)) && ty == SqlType::Text)
}

/// PostgreSQL's 42883 for an operator with no version over these types.
pub(crate) fn no_operator(l: SqlType, op: &sqlparser::ast::BinaryOperator, r: SqlType) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("operator does not exist: {} {op} {}", l.name(), r.name()),
    )
}

/// PostgreSQL's 42883 for a function with no version over these types.
pub(crate) fn no_function(name: &str, types: &[SqlType]) -> SqlError {
    let types: Vec<String> = types.iter().map(|t| t.name()).collect();
    SqlError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", types.join(", ")),
    )
}

/// Whether function `name` takes a value of any type (so also a bytea or a document, whose
/// held text no text function may read as text).
pub(crate) fn takes_any_type(name: &str) -> bool {
    matches!(
        name,
        "pg_typeof"
            | "coalesce"
            | "nullif"
            | "greatest"
            | "least"
            | "concat"
            | "concat_ws"
            | "format"
            | "num_nulls"
            | "num_nonnulls"
            | "to_json"
            | "to_jsonb"
            | "json_build_object"
            | "jsonb_build_object"
            | "json_build_array"
            | "jsonb_build_array"
    )
}

/// Whether `e` is a literal of no type yet (a quoted string or NULL: PostgreSQL's `unknown`).
pub(crate) fn is_unknown(e: &Expr) -> bool {
    matches!(e, Expr::Literal(Datum::Text(_) | Datum::Null))
}

/// PostgreSQL's error for an operator over `unknown` operands (42725): `- unknown`, or
/// `unknown / unknown` when `left` is given.
pub(crate) fn not_unique(op: &str, left: Option<&str>) -> SqlError {
    let operands = match left {
        Some(l) => format!("{l} {op} unknown"),
        None => format!("{op} unknown"),
    };
    SqlError::new(
        sqlstate::AMBIGUOUS_FUNCTION,
        format!("operator is not unique: {operands}"),
    )
}

pub(crate) fn is_timestamp(t: SqlType) -> bool {
    matches!(t, SqlType::Timestamp | SqlType::TimestampTz)
}

/// The results of a CASE or the arguments of a coalesce, of one type as PostgreSQL resolves it
/// (see [`result_type`]): a number of another kind than the result's (an integer among
/// numerics, a numeric among doubles) is converted, as PostgreSQL converts it; other values
/// are left as they are. `Text` when there are none.
pub(crate) fn unified(values: Vec<(Expr, SqlType)>) -> (Vec<Expr>, SqlType) {
    let ty = values
        .iter()
        .map(|(_, t)| *t)
        .reduce(result_type)
        .unwrap_or(SqlType::Text);
    let converted = values
        .into_iter()
        .map(|(e, t)| match ty {
            SqlType::Numeric(_) | SqlType::Float8
                if t.is_numeric()
                    && !matches!(
                        (t, ty),
                        (SqlType::Numeric(_), SqlType::Numeric(_))
                            | (SqlType::Float8, SqlType::Float8)
                    ) =>
            {
                Expr::Cast(Box::new(e), ty)
            }
            _ => e,
        })
        .collect();
    (converted, ty)
}

/// The type of a CASE whose results have types `a` and `b`, as PostgreSQL resolves it: numbers
/// take the wider type (an integer arm and a bigint arm make a bigint); otherwise the first
/// type that is not an untyped literal's.
pub(crate) fn result_type(a: SqlType, b: SqlType) -> SqlType {
    match (a, b) {
        (SqlType::Text, t) | (t, SqlType::Text) => t,
        (x, y) if x.is_numeric() && y.is_numeric() => arith_type(x, y),
        (x, _) => x,
    }
}

/// The result type of arithmetic on `a` and `b` (an untyped side takes the other's type).
pub fn arith_type(a: SqlType, b: SqlType) -> SqlType {
    use SqlType::*;
    match (a, b) {
        (Text, t) | (t, Text) if t != Text => arith_type(t, t),
        (Interval, Interval) => Interval,
        (Date, Interval) | (Interval, Date) => Timestamp,
        (Time, Interval) | (Interval, Time) => Time,
        (Time, Time) => Interval,
        (Date, Time) | (Time, Date) => Timestamp,
        (t @ (Timestamp | TimestampTz), Interval) | (Interval, t @ (Timestamp | TimestampTz)) => t,
        (Date, Date) => Int4,
        (Date, _) | (_, Date) => Date,
        (Float8, _) | (_, Float8) => Float8,
        (Numeric(_), _) | (_, Numeric(_)) => Numeric(None),
        (Int8, _) | (_, Int8) => Int8,
        (Timestamp, _) | (_, Timestamp) => Timestamp,
        (TimestampTz, _) | (_, TimestampTz) => TimestampTz,
        (Int2, Int2) => Int2,
        _ => Int4,
    }
}

/// Refuses a condition (of a CHECK, a FILTER) whose type is not boolean (an unknown-typed
/// literal is read as one), as PostgreSQL does: 42804.
pub fn require_boolean(clause: &str, ty: SqlType) -> Result<()> {
    if matches!(ty, SqlType::Bool | SqlType::Text) {
        return Ok(());
    }
    Err(SqlError::new(
        sqlstate::DATATYPE_MISMATCH,
        format!(
            "argument of {clause} must be type boolean, not type {}",
            ty.name()
        ),
    ))
}
