//! The scalar functions bound expressions call (by [`Func`]): what each computes from its
//! arguments, with PostgreSQL's NULL rules. A function must never block or read a table; what it
//! needs of the server (other sessions) comes through the context's `Backends`.

use super::{Backends, Context, Expr, Func};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// The server's version string, as `version()` reports it.
pub const VERSION: &str = concat!(
    "PostgreSQL 15.0 (Overtake ",
    env!("CARGO_PKG_VERSION"),
    ", a main-memory engine speaking PostgreSQL's protocol)"
);

/// The server's sessions, or 0A000 where there is no server (a statement run by a tool).
fn backends<'a>(cx: &Context<'a>) -> Result<&'a dyn Backends> {
    cx.backends
        .ok_or_else(|| SqlError::unsupported("a session function outside a server"))
}

pub(super) fn eval_func(f: Func, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let arg = |i: usize| -> Result<Datum> { args[i].eval(row, cx) };
    Ok(match f {
        Func::Version => Datum::Text(VERSION.into()),
        Func::Now => Datum::TimestampTz(cx.now),
        Func::StatementTimestamp => Datum::TimestampTz(cx.statement),
        Func::ClockTimestamp => Datum::TimestampTz(crate::values::time::now_micros()),
        Func::Random => Datum::Float(fastrand::f64()),
        Func::CurrentDatabase => Datum::Text("overtake".into()),
        Func::CurrentUser => Datum::Text(cx.user.to_owned()),
        Func::BackendPid => Datum::Int(i64::from(backends(cx)?.own_pid())),
        Func::CancelBackend | Func::TerminateBackend => match arg(0)? {
            Datum::Null => Datum::Null,
            Datum::Int(pid) => {
                let pid = i32::try_from(pid).map_err(|_| {
                    SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "integer out of range")
                })?;
                Datum::Bool(backends(cx)?.signal(pid, f == Func::TerminateBackend)?)
            }
            other => {
                return Err(SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    format!("pid {other:?}"),
                ));
            }
        },
        Func::Abs => match arg(0)? {
            Datum::Int(v) => Datum::Int(
                v.checked_abs()
                    .ok_or_else(crate::values::datum::out_of_range)?,
            ),
            Datum::Float(v) => Datum::Float(v.abs()),
            Datum::Numeric(n) => Datum::Numeric(n.abs()),
            Datum::Null => Datum::Null,
            other => Datum::Int(0).arith('+', &other)?,
        },
        Func::Lower | Func::Upper | Func::Length => match arg(0)?.to_text() {
            None => Datum::Null,
            Some(s) => match f {
                Func::Lower => Datum::Text(s.to_lowercase()),
                Func::Upper => Datum::Text(s.to_uppercase()),
                _ => Datum::Int(s.chars().count() as i64),
            },
        },
        Func::Substr => {
            let Some(s) = arg(0)?.to_text() else {
                return Ok(Datum::Null);
            };
            let from = match arg(1)?.cast(SqlType::Int8)? {
                Datum::Int(v) => v,
                _ => return Ok(Datum::Null),
            };
            let count = match args.get(2) {
                Some(e) => match e.eval(row, cx)?.cast(SqlType::Int8)? {
                    Datum::Int(v) if v < 0 => {
                        return Err(SqlError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            "negative substring length not allowed",
                        ));
                    }
                    Datum::Int(v) => Some(v),
                    _ => return Ok(Datum::Null),
                },
                None => None,
            };
            // Characters from position `from` (1-based, may be before the start) for `count`.
            let end = count.map_or(i64::MAX, |c| from.saturating_add(c));
            let start = from.max(1);
            Datum::Text(
                s.chars()
                    .skip((start - 1) as usize)
                    .take(end.saturating_sub(start).max(0) as usize)
                    .collect(),
            )
        }
        Func::Round | Func::Trunc | Func::Ceil | Func::Floor => {
            let x = arg(0)?;
            let places = match args.get(1) {
                Some(p) => match p.eval(row, cx)? {
                    Datum::Int(v) => Some(v),
                    _ => return Ok(Datum::Null),
                },
                None => None,
            };
            match x {
                Datum::Null => Datum::Null,
                Datum::Float(v) => Datum::Float(match f {
                    Func::Round => v.round_ties_even(),
                    Func::Trunc => v.trunc(),
                    Func::Ceil => v.ceil(),
                    _ => v.floor(),
                }),
                x => {
                    let n = x.as_num()?;
                    Datum::Numeric(match f {
                        Func::Round => n.round(places.unwrap_or(0)),
                        Func::Trunc => n.truncate(places.unwrap_or(0)),
                        Func::Ceil => n.integral(true),
                        _ => n.integral(false),
                    })
                }
            }
        }
        Func::Coalesce => {
            for a in args {
                let v = a.eval(row, cx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Datum::Null
        }
    })
}
