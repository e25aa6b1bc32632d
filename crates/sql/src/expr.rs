//! Bound expressions: column references by position in the row they are evaluated against,
//! parameters by number, and the operators and functions this crate knows, evaluated with
//! PostgreSQL's three-valued logic.

use std::cmp::Ordering;
use std::sync::atomic::AtomicBool;

use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Plus,
    Minus,
    Multiply,
    Divide,
    Modulo,
    Concat,
    Like,
    NotLike,
}

/// Scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Version,
    /// The transaction's start (`now()`, `current_timestamp`): the same for all its statements.
    Now,
    /// The statement's start.
    StatementTimestamp,
    /// The time when it is evaluated.
    ClockTimestamp,
    Random,
    Abs,
    /// `round(x [, places])`: a numeric half away from zero, a double half to even.
    Round,
    /// `trunc(x [, places])`: toward zero.
    Trunc,
    /// `ceil(x)` (`ceiling`).
    Ceil,
    /// `floor(x)`.
    Floor,
    Lower,
    Upper,
    Length,
    Coalesce,
    /// substr(string, from [, count]), 1-based.
    Substr,
    CurrentDatabase,
    CurrentUser,
    /// `pg_backend_pid()`.
    BackendPid,
    /// `pg_cancel_backend(pid)`.
    CancelBackend,
    /// `pg_terminate_backend(pid)`.
    TerminateBackend,
}

/// A bound expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// The value at this position of the input row.
    Column(usize),
    /// Parameter `$n+1`.
    Param(usize),
    Literal(Datum),
    Not(Box<Expr>),
    Negate(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Cast(Box<Expr>, SqlType),
    Func(Func, Vec<Expr>),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
}

/// What evaluation needs besides the row: the statement's parameters and its start time, and
/// what tells a running statement it was cancelled.
#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    pub params: &'a [Datum],
    /// `now()` and `current_timestamp`: the transaction's start, microseconds since the epoch.
    pub now: i64,
    /// `statement_timestamp()`: the statement's start.
    pub statement: i64,
    /// `current_user` and `session_user`: the session's user.
    pub user: &'a str,
    /// Set (by another thread) when the statement is cancelled: its scans stop with 57014.
    pub cancel: Option<&'a AtomicBool>,
    /// The server's sessions, as `pg_backend_pid()`, `pg_cancel_backend()` and
    /// `pg_terminate_backend()` see them (`None`: no server; they fail with 0A000).
    pub backends: Option<&'a dyn Backends>,
    /// Bytes the statement may hold for its sorts, groups and DISTINCT (53200 past them).
    pub memory: usize,
}

/// A statement's memory budget unless set otherwise (`statement_mem`).
pub const DEFAULT_STATEMENT_MEMORY: usize = 1 << 30;

/// What a statement may ask of the server about its sessions, with PostgreSQL's rules (see the
/// server's implementation).
pub trait Backends: Send + Sync {
    /// The process id the session's client was given (`pg_backend_pid()`).
    fn own_pid(&self) -> i32;
    /// Cancels the statement of session `pid`, or (`terminate`) ends the session: false if
    /// there is no such session; 42501 if this session's role may not.
    fn signal(&self, pid: i32, terminate: bool) -> Result<bool>;
}

impl std::fmt::Debug for dyn Backends + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Backends {{ own_pid: {} }}", self.own_pid())
    }
}

impl<'a> Context<'a> {
    /// A statement with `params` that started at `now` (in a transaction that did too).
    pub fn new(params: &'a [Datum], now: i64) -> Self {
        Context {
            params,
            now,
            statement: now,
            user: "overtake",
            cancel: None,
            backends: None,
            memory: DEFAULT_STATEMENT_MEMORY,
        }
    }

    /// The same, with a memory budget of `bytes` for sorts, groups and DISTINCT.
    pub fn with_memory(self, bytes: usize) -> Self {
        Context {
            memory: bytes,
            ..self
        }
    }

    /// The same, with the server's sessions.
    pub fn with_backends(self, backends: &'a dyn Backends) -> Self {
        Context {
            backends: Some(backends),
            ..self
        }
    }

    /// The same, for a session of `user`.
    pub fn for_user(self, user: &'a str) -> Self {
        Context { user, ..self }
    }

    /// The same, in a transaction that started at `now` (before the statement).
    pub fn in_transaction_since(self, now: i64) -> Self {
        Context { now, ..self }
    }

    /// The same, stopped by `cancel`.
    pub fn cancelled_by(self, cancel: &'a AtomicBool) -> Self {
        Context {
            cancel: Some(cancel),
            ..self
        }
    }

    /// Fails with 57014 if the statement was cancelled.
    pub fn check_cancel(&self) -> Result<()> {
        match self.cancel {
            Some(c) if c.load(std::sync::atomic::Ordering::Relaxed) => Err(SqlError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to user request",
            )),
            _ => Ok(()),
        }
    }
}

impl Expr {
    /// Evaluates against `row`. An expression nested deeper than the stack left allows fails with
    /// 54001 (see `depth`).
    pub fn eval(&self, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
        if !matches!(self, Expr::Column(_) | Expr::Param(_) | Expr::Literal(_)) {
            crate::depth::check(0)?;
        }
        // Each kind of expression is evaluated in a function of its own: a chain of them
        // (`x::int::int...`, `x IS NULL IS NULL...`) recurses through small frames only (in a
        // debug build a single large `match` would put every arm's locals in each level's frame).
        match self {
            Expr::Column(i) => Ok(row.get(*i).cloned().unwrap_or(Datum::Null)),
            Expr::Param(i) => cx.params.get(*i).cloned().ok_or_else(|| {
                SqlError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    format!("no value for parameter ${}", i + 1),
                )
            }),
            Expr::Literal(d) => Ok(d.clone()),
            Expr::Not(e) => eval_not(e, row, cx),
            Expr::Negate(e) => eval_negate(e, row, cx),
            Expr::Binary(op, l, r) => eval_binary(*op, l, r, row, cx),
            Expr::IsNull(e, negated) => eval_is_null(e, *negated, row, cx),
            Expr::Between { .. } => eval_between(self, row, cx),
            Expr::InList { .. } => eval_in_list(self, row, cx),
            Expr::Cast(e, ty) => eval_cast(e, *ty, row, cx),
            Expr::Func(f, args) => eval_func(*f, args, row, cx),
            Expr::Case { .. } => eval_case(self, row, cx),
        }
    }

    /// Evaluates a condition: rows pass only when it is true (not NULL).
    pub fn holds(&self, row: &[Datum], cx: &Context<'_>) -> Result<bool> {
        Ok(self.eval(row, cx)?.truth()? == Some(true))
    }

    /// The highest input column this expression reads, if any.
    pub fn max_column(&self) -> Option<usize> {
        let mut max = None;
        self.visit(&mut |e| {
            if let Expr::Column(i) = e {
                max = Some(max.map_or(*i, |m: usize| m.max(*i)));
            }
        });
        max
    }

    /// Calls `f` on this expression and every expression inside it.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Not(e) | Expr::Negate(e) | Expr::IsNull(e, _) | Expr::Cast(e, _) => e.visit(f),
            Expr::Binary(_, l, r) => {
                l.visit(f);
                r.visit(f);
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                expr.visit(f);
                low.visit(f);
                high.visit(f);
            }
            Expr::InList { expr, list, .. } => {
                expr.visit(f);
                list.iter().for_each(|e| e.visit(f));
            }
            Expr::Func(_, args) => args.iter().for_each(|e| e.visit(f)),
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => {
                if let Some(o) = operand {
                    o.visit(f);
                }
                for (w, t) in whens {
                    w.visit(f);
                    t.visit(f);
                }
                if let Some(o) = otherwise {
                    o.visit(f);
                }
            }
            Expr::Column(_) | Expr::Param(_) | Expr::Literal(_) => {}
        }
    }
}

impl Datum {
    /// A condition's value: `None` for NULL.
    pub fn truth(&self) -> Result<Option<bool>> {
        match self {
            Datum::Null => Ok(None),
            Datum::Bool(b) => Ok(Some(*b)),
            Datum::Text(s) => match Datum::parse(s, SqlType::Bool)? {
                Datum::Bool(b) => Ok(Some(b)),
                _ => Ok(None),
            },
            other => Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "argument of a condition must be boolean, not {}",
                    other.to_text().unwrap_or_default()
                ),
            )),
        }
    }
}

#[inline(never)]
fn eval_not(e: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    Ok(match e.eval(row, cx)?.truth()? {
        None => Datum::Null,
        Some(b) => Datum::Bool(!b),
    })
}

#[inline(never)]
fn eval_negate(e: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    match e.eval(row, cx)? {
        // A double's sign flips (-0 is a value, as PostgreSQL prints it); a numeric has no -0.
        Datum::Float(v) => Ok(Datum::Float(-v)),
        Datum::Numeric(n) => Ok(Datum::Numeric(n.neg())),
        v => Datum::Int(0).arith('-', &v),
    }
}

#[inline(never)]
fn eval_is_null(e: &Expr, negated: bool, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    Ok(Datum::Bool(e.eval(row, cx)?.is_null() != negated))
}

#[inline(never)]
fn eval_cast(e: &Expr, ty: SqlType, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    e.eval(row, cx)?.cast(ty)
}

#[inline(never)]
fn eval_between(between: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let Expr::Between {
        expr,
        low,
        high,
        negated,
    } = between
    else {
        unreachable!("a BETWEEN")
    };
    let v = expr.eval(row, cx)?;
    let above = compare(&v, &low.eval(row, cx)?)?.map(|o| o != Ordering::Less);
    let below = compare(&v, &high.eval(row, cx)?)?.map(|o| o != Ordering::Greater);
    Ok(match and3(above, below) {
        None => Datum::Null,
        Some(b) => Datum::Bool(b != *negated),
    })
}

#[inline(never)]
fn eval_in_list(in_list: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let Expr::InList {
        expr,
        list,
        negated,
    } = in_list
    else {
        unreachable!("an IN list")
    };
    let v = expr.eval(row, cx)?;
    // x IN (a, b) is x = a OR x = b, with its NULL behaviour.
    let mut found = Some(false);
    for item in list {
        let eq = compare(&v, &item.eval(row, cx)?)?.map(|o| o == Ordering::Equal);
        found = or3(found, eq);
        if found == Some(true) {
            break;
        }
    }
    Ok(match found {
        None => Datum::Null,
        Some(b) => Datum::Bool(b != *negated),
    })
}

#[inline(never)]
fn eval_case(case: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let Expr::Case {
        operand,
        whens,
        otherwise,
    } = case
    else {
        unreachable!("a CASE")
    };
    let subject = operand.as_ref().map(|o| o.eval(row, cx)).transpose()?;
    for (when, then) in whens {
        let w = when.eval(row, cx)?;
        let hit = match &subject {
            Some(s) => compare(s, &w)? == Some(Ordering::Equal),
            None => w.truth()? == Some(true),
        };
        if hit {
            return then.eval(row, cx);
        }
    }
    match otherwise {
        Some(e) => e.eval(row, cx),
        None => Ok(Datum::Null),
    }
}

fn compare(a: &Datum, b: &Datum) -> Result<Option<Ordering>> {
    a.sql_cmp(b)
}

fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn bool_datum(b: Option<bool>) -> Datum {
    b.map_or(Datum::Null, Datum::Bool)
}

fn eval_binary(op: BinOp, l: &Expr, r: &Expr, row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    // AND and OR look at the right side only when the left does not decide.
    if op == BinOp::And || op == BinOp::Or {
        let a = l.eval(row, cx)?.truth()?;
        if (op == BinOp::And && a == Some(false)) || (op == BinOp::Or && a == Some(true)) {
            return Ok(Datum::Bool(a == Some(true)));
        }
        let b = r.eval(row, cx)?.truth()?;
        return Ok(bool_datum(if op == BinOp::And {
            and3(a, b)
        } else {
            or3(a, b)
        }));
    }
    let (a, b) = (l.eval(row, cx)?, r.eval(row, cx)?);
    let cmp = |test: fn(Ordering) -> bool| -> Result<Datum> {
        Ok(bool_datum(compare(&a, &b)?.map(test)))
    };
    match op {
        BinOp::Eq => cmp(|o| o == Ordering::Equal),
        BinOp::NotEq => cmp(|o| o != Ordering::Equal),
        BinOp::Lt => cmp(|o| o == Ordering::Less),
        BinOp::LtEq => cmp(|o| o != Ordering::Greater),
        BinOp::Gt => cmp(|o| o == Ordering::Greater),
        BinOp::GtEq => cmp(|o| o != Ordering::Less),
        BinOp::Plus => a.arith('+', &b),
        BinOp::Minus => a.arith('-', &b),
        BinOp::Multiply => a.arith('*', &b),
        BinOp::Divide => a.arith('/', &b),
        BinOp::Modulo => a.arith('%', &b),
        BinOp::Concat => Ok(match (a.to_text_cast(), b.to_text_cast()) {
            (Some(x), Some(y)) => Datum::Text(x + &y),
            _ => Datum::Null,
        }),
        BinOp::Like | BinOp::NotLike => Ok(match (a.to_text(), b.to_text()) {
            (Some(s), Some(p)) => Datum::Bool(like(&s, &p) == (op == BinOp::Like)),
            _ => Datum::Null,
        }),
        BinOp::And | BinOp::Or => unreachable!("handled above"),
    }
}

/// SQL LIKE: `%` any run, `_` any one character, `\` escapes the next. Iterative, remembering
/// only the last `%` to retry from (the classic wildcard match): no recursion a long pattern
/// could overflow a task's stack with; at most (text length x pattern length) steps.
fn like(s: &str, pattern: &str) -> bool {
    /// A pattern element: a literal character, `_`, or `%`.
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Char(char),
        One,
        Any,
    }
    let mut pat = Vec::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        pat.push(match c {
            '%' => P::Any,
            '_' => P::One,
            '\\' => P::Char(chars.next().unwrap_or('\\')),
            c => P::Char(c),
        });
    }
    let s: Vec<char> = s.chars().collect();
    let (mut i, mut j) = (0, 0);
    // Where the last `%` was, and the text position it matched up to so far.
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        match pat.get(j) {
            Some(P::Any) => {
                star = Some((j, i));
                j += 1;
            }
            Some(P::One) => {
                i += 1;
                j += 1;
            }
            Some(P::Char(c)) if *c == s[i] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                // Let the last `%` take one more character and try again after it.
                Some((sj, si)) => {
                    star = Some((sj, si + 1));
                    i = si + 1;
                    j = sj + 1;
                }
                None => return false,
            },
        }
    }
    pat[j..].iter().all(|p| *p == P::Any)
}

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

fn eval_func(f: Func, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
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

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn like_matches_as_postgresql_does_without_recursion() {
        assert!(like("hello", "h%o"));
        assert!(like("hello", "_ell_"));
        assert!(like("hello", "%"));
        assert!(like("", "%"));
        assert!(!like("hello", "h%x"));
        assert!(!like("hello", "hell"));
        assert!(like("50%", "50\\%"));
        assert!(!like("50x", "50\\%"));
        assert!(like("abcabcabd", "%abd"));
        // Long patterns take no stack (a recursive matcher would overflow a task's stack).
        let long = "a".repeat(3_000);
        assert!(like(&long, &format!("%{}", "a".repeat(1_000))));
        assert!(!like(&long, &format!("{}b%", "%a".repeat(100))));
    }
}
