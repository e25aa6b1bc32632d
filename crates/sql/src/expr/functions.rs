//! The scalar functions bound expressions call (by [`Func`]): what each computes from its
//! arguments, with PostgreSQL's NULL rules. A function must never block or read a table; what it
//! needs of the server (other sessions) comes through the context's `Backends`.

use super::strings;
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

/// The database's name, as `current_database()` and `pg_database` give it: there is one.
pub const DATABASE_NAME: &str = "overtake";

/// The server's sessions, or 0A000 where there is no server (a statement run by a tool).
fn backends<'a>(cx: &Context<'a>) -> Result<&'a dyn Backends> {
    cx.backends
        .ok_or_else(|| SqlError::unsupported("a session function outside a server"))
}

pub(super) fn eval_func(f: Func, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let arg = |i: usize| -> Result<Datum> { args[i].eval(row, cx) };
    Ok(match f {
        Func::Version => Datum::Text(VERSION.into()),
        Func::CurrentSetting => {
            let Some(name) = arg(0)?.to_text() else {
                return Ok(Datum::Null);
            };
            let missing_ok = args.len() > 1 && arg(1)?.truth()? == Some(true);
            match cx.settings.and_then(|s| s.get(&name)) {
                Some(v) => Datum::Text(v),
                None if missing_ok => Datum::Null,
                None => {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ));
                }
            }
        }
        Func::SetConfig => {
            let Some(name) = arg(0)?.to_text() else {
                return Err(SqlError::new(
                    sqlstate::NULL_VALUE_NOT_ALLOWED,
                    "SET requires parameter name",
                ));
            };
            let value = arg(1)?.to_text();
            let local = arg(2)?.truth()? == Some(true);
            let settings = cx
                .settings
                .ok_or_else(|| SqlError::unsupported("set_config outside a session's statement"))?;
            Datum::Text(settings.set(&name, value.as_deref(), local)?)
        }
        Func::CurrVal | Func::LastVal => {
            let name = match f {
                Func::CurrVal => arg(0)?.to_text(),
                _ => None,
            };
            match cx.settings.and_then(|s| s.sequence_value(name.as_deref())) {
                Some(v) => Datum::Int(v),
                None => {
                    return Err(SqlError::new(
                        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                        match name {
                            Some(n) => format!(
                                "currval of sequence \"{n}\" is not yet defined in this session"
                            ),
                            None => "lastval is not yet defined in this session".into(),
                        },
                    ));
                }
            }
        }
        Func::Now => Datum::TimestampTz(cx.now),
        Func::StatementTimestamp => Datum::TimestampTz(cx.statement),
        Func::ClockTimestamp => Datum::TimestampTz(crate::values::time::now_micros()),
        // fastrand's generator is per thread: drawn inside a region, so that a statement
        // preempted mid-draw does not share its state with the one that preempted it.
        Func::Random => Datum::Float({
            let _region = overtake_runtime::NoPreemptGuard::new();
            fastrand::f64()
        }),
        Func::GenRandomUuid => {
            let random = {
                let _region = overtake_runtime::NoPreemptGuard::new();
                fastrand::u128(..)
            };
            // 122 random bits, the version (4) and the variant (10) in their places.
            let bits = (random & !(0xF << 76) & !(0b11 << 62)) | (4 << 76) | (0b10 << 62);
            Datum::parse(&format!("{bits:032x}"), SqlType::Uuid)?
        }
        Func::CurrentDatabase => Datum::Text(DATABASE_NAME.into()),
        Func::FormatType => match (arg(0)?, arg(1)?) {
            (Datum::Null, _) => Datum::Null,
            (Datum::Int(oid), typmod) => Datum::Text(crate::values::builtin_types::format_type(
                oid as u32,
                match typmod {
                    Datum::Int(m) => Some(m as i32),
                    _ => None,
                },
            )),
            _ => Datum::Null,
        },
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
        Func::Bytea(f) => super::bytea::eval(f, args, row, cx)?,
        Func::Json(f) => super::json::eval(f, args, row, cx)?,
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
            let Some((skip, take)) = super::substring_range(args, row, cx)? else {
                return Ok(Datum::Null);
            };
            Datum::Text(s.chars().skip(skip).take(take).collect())
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
        Func::Concat => {
            let mut out = String::new();
            for a in args {
                if let Some(t) = a.eval(row, cx)?.to_text() {
                    out.push_str(&t);
                }
            }
            Datum::Text(out)
        }
        Func::ArrayBuild
        | Func::ArrayElement
        | Func::ArrayLength
        | Func::ArrayUpper
        | Func::ArrayLower
        | Func::Cardinality
        | Func::ArrayToString
        | Func::StringToArray
        | Func::ArrayPosition
        | Func::ArrayAppend
        | Func::ArrayPrepend
        | Func::ArrayCat => return super::arrays::eval(f, args, row, cx),
        Func::Extract | Func::DatePart | Func::DateTrunc => {
            let (Some(field), value) = (arg(0)?.to_text(), arg(1)?) else {
                return Ok(Datum::Null);
            };
            super::dates::eval(f, &field.to_lowercase(), value)?
        }
        Func::QuoteIdent => match arg(0)?.to_text() {
            Some(s) => Datum::Text(strings::quote_ident(&s)),
            None => Datum::Null,
        },
        Func::ConcatWs => {
            let Some(separator) = arg(0)?.to_text() else {
                return Ok(Datum::Null);
            };
            let mut parts = Vec::with_capacity(args.len() - 1);
            for a in &args[1..] {
                parts.extend(a.eval(row, cx)?.to_text());
            }
            Datum::Text(parts.join(&separator))
        }
        Func::LTrim | Func::RTrim | Func::BTrim => {
            let (Some(s), set) = (arg(0)?.to_text(), texts(args, 1, row, cx)?) else {
                return Ok(Datum::Null);
            };
            let Some(set) = set.unwrap_or_else(|| Some(" ".into())) else {
                return Ok(Datum::Null);
            };
            let start = f != Func::RTrim;
            let end = f != Func::LTrim;
            Datum::Text(strings::trim(&s, &set, start, end))
        }
        Func::Replace => match (arg(0)?.to_text(), arg(1)?.to_text(), arg(2)?.to_text()) {
            (Some(s), Some(from), Some(to)) if !from.is_empty() => {
                Datum::Text(s.replace(&from, &to))
            }
            (Some(s), Some(_), Some(_)) => Datum::Text(s),
            _ => Datum::Null,
        },
        Func::StrPos => match (arg(0)?.to_text(), arg(1)?.to_text()) {
            (Some(s), Some(sub)) => Datum::Int(strings::strpos(&s, &sub)),
            _ => Datum::Null,
        },
        Func::SplitPart => match (arg(0)?.to_text(), arg(1)?.to_text(), int(&arg(2)?)) {
            (Some(s), Some(d), Some(n)) => Datum::Text(strings::split_part(&s, &d, n)?),
            _ => Datum::Null,
        },
        Func::Left | Func::Right => match (arg(0)?.to_text(), int(&arg(1)?)) {
            (Some(s), Some(n)) if f == Func::Left => Datum::Text(strings::left(&s, n)),
            (Some(s), Some(n)) => Datum::Text(strings::right(&s, n)),
            _ => Datum::Null,
        },
        Func::LPad | Func::RPad => {
            let fill = match texts(args, 2, row, cx)? {
                None => Some(" ".to_owned()),
                Some(fill) => fill,
            };
            match (arg(0)?.to_text(), int(&arg(1)?), fill) {
                (Some(s), Some(n), Some(fill)) => {
                    Datum::Text(strings::pad(&s, n, &fill, f == Func::LPad))
                }
                _ => Datum::Null,
            }
        }
        Func::InitCap => arg(0)?
            .to_text()
            .map_or(Datum::Null, |s| Datum::Text(strings::initcap(&s))),
        Func::Repeat => match (arg(0)?.to_text(), int(&arg(1)?)) {
            (Some(s), Some(n)) => Datum::Text(strings::repeat(&s, n)?),
            _ => Datum::Null,
        },
        Func::Reverse => arg(0)?
            .to_text()
            .map_or(Datum::Null, |s| Datum::Text(s.chars().rev().collect())),
        Func::Ascii => arg(0)?.to_text().map_or(Datum::Null, |s| {
            Datum::Int(s.chars().next().map_or(0, |c| i64::from(u32::from(c))))
        }),
        Func::Chr => match int(&arg(0)?) {
            Some(n) => Datum::Text(strings::chr(n)?),
            None => Datum::Null,
        },
        Func::Power => match (float(&arg(0)?), float(&arg(1)?)) {
            (Some(x), Some(y)) => Datum::Float(power(x, y)?),
            _ => Datum::Null,
        },
        Func::Sqrt => match float(&arg(0)?) {
            Some(x) if x < 0.0 => {
                return Err(SqlError::new(
                    sqlstate::INVALID_ARGUMENT_FOR_POWER_FUNCTION,
                    "cannot take square root of a negative number",
                ));
            }
            Some(x) => Datum::Float(x.sqrt()),
            None => Datum::Null,
        },
        Func::Greatest | Func::Least => {
            let mut best: Option<Datum> = None;
            for a in args {
                let v = a.eval(row, cx)?;
                if v == Datum::Null {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some(b) => {
                        let order = v.sql_cmp(b)?;
                        if f == Func::Greatest {
                            order == Some(std::cmp::Ordering::Greater)
                        } else {
                            order == Some(std::cmp::Ordering::Less)
                        }
                    }
                };
                if better {
                    best = Some(v);
                }
            }
            best.unwrap_or(Datum::Null)
        }
        Func::NullIf => {
            let a = args[0].eval(row, cx)?;
            let b = args[1].eval(row, cx)?;
            if a.sql_cmp(&b)? == Some(std::cmp::Ordering::Equal) {
                Datum::Null
            } else {
                a
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

/// The text of argument `i` if the call has one: `None` without it, `Some(None)` if it is NULL.
fn texts(
    args: &[Expr],
    i: usize,
    row: &[Datum],
    cx: &Context<'_>,
) -> Result<Option<Option<String>>> {
    args.get(i)
        .map(|a| a.eval(row, cx).map(|d| d.to_text()))
        .transpose()
}

/// An integer argument (`None`: NULL).
fn int(d: &Datum) -> Option<i64> {
    match d {
        Datum::Int(v) => Some(*v),
        _ => None,
    }
}

/// A double argument (`None`: NULL); integers are taken as doubles.
fn float(d: &Datum) -> Option<f64> {
    match d {
        Datum::Float(v) => Some(*v),
        Datum::Int(v) => Some(*v as f64),
        _ => None,
    }
}

/// `power(x, y)` on doubles, with PostgreSQL's errors.
fn power(x: f64, y: f64) -> Result<f64> {
    if x == 0.0 && y < 0.0 {
        return Err(SqlError::new(
            sqlstate::INVALID_ARGUMENT_FOR_POWER_FUNCTION,
            "zero raised to a negative power is undefined",
        ));
    }
    if x < 0.0 && y.fract() != 0.0 {
        return Err(SqlError::new(
            sqlstate::INVALID_ARGUMENT_FOR_POWER_FUNCTION,
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let v = x.powf(y);
    if v.is_infinite() {
        return Err(SqlError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            "value out of range: overflow",
        ));
    }
    Ok(v)
}
