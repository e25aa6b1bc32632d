//! Bound expressions: column references by position in the row they are evaluated against,
//! parameters by number, and the operators and functions this crate knows, evaluated with
//! PostgreSQL's three-valued logic.
//!
//! Parts: this module (the tree), `context` (what evaluation needs besides the row), `eval`
//! (operators, conditions, casts, CASE, LIKE) and `functions` (the scalar functions by
//! [`Func`]). Evaluation never touches a table, and fails with 54001 rather than overflow the
//! stack on a deep tree.

mod arrays;
mod bytea;
mod context;
mod dates;
mod eval;
mod functions;
mod json;
pub mod lookup;
mod strings;

pub use context::{
    Backends, ClassTimes, Context, DEFAULT_STATEMENT_MEMORY, InSet, InitValue, Settings,
};
pub use functions::{DATABASE_NAME, VERSION};

use std::sync::Arc;

use crate::error::{SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

pub use lookup::Lookup;

use crate::sequence::Sequence;

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
    /// `ILIKE`: LIKE ignoring case.
    ILike,
    NotILike,
    /// `~`, `!~`, `~*`, `!~*`: a regular expression matches (ignoring case), or does not.
    RegexMatch,
    RegexNotMatch,
    RegexIMatch,
    RegexNotIMatch,
}

/// Scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Version,
    /// `current_setting(name [, missing_ok])`: the session's setting.
    CurrentSetting,
    /// `set_config(name, value, is_local)`: `SET` as a function.
    SetConfig,
    /// The transaction's start (`now()`, `current_timestamp`): the same for all its statements.
    Now,
    /// The statement's start.
    StatementTimestamp,
    /// The time when it is evaluated.
    ClockTimestamp,
    Random,
    /// `gen_random_uuid()`: a version 4 uuid.
    GenRandomUuid,
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
    /// `nullif(a, b)`: NULL where `a = b`, else `a`.
    NullIf,
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
    /// `concat(any, ...)`: the arguments' text, NULLs skipped.
    Concat,
    /// `concat_ws(separator, any, ...)`.
    ConcatWs,
    /// `ltrim(s [, characters])`, `rtrim`, `btrim` (and `TRIM(... FROM s)`).
    LTrim,
    RTrim,
    BTrim,
    /// `replace(s, from, to)`.
    Replace,
    /// `strpos(s, substring)` (and `position(substring IN s)`): 1-based, 0 if absent.
    StrPos,
    /// `split_part(s, delimiter, n)`.
    SplitPart,
    /// `left(s, n)`, `right(s, n)`: the first or last `n` characters (all but `-n` if negative).
    Left,
    Right,
    /// `lpad(s, length [, fill])`, `rpad`.
    LPad,
    RPad,
    InitCap,
    /// `repeat(s, n)`.
    Repeat,
    Reverse,
    /// `ascii(s)`: the code of its first character.
    Ascii,
    /// `chr(n)`: the character with code `n`.
    Chr,
    /// `power(x, y)` on doubles.
    Power,
    /// `sqrt(x)` on doubles.
    Sqrt,
    /// `greatest(...)`, `least(...)`: NULLs skipped.
    Greatest,
    Least,
    /// `format_type(type_oid, typmod)`: a type's SQL name.
    FormatType,
    /// `quote_ident(s)`: `s` as an identifier, quoted where SQL would need it.
    QuoteIdent,
    /// `extract(field FROM x)` (a numeric), `date_part('field', x)` (a double),
    /// `date_trunc('field', x)`: over dates, times, timestamps and intervals.
    Extract,
    DatePart,
    DateTrunc,
    /// `ARRAY[a, b, ...]`.
    ArrayBuild,
    /// `a[i]`: the element at 1-based `i` (NULL outside the array).
    ArrayElement,
    /// `array_length(a, 1)`, `array_upper(a, 1)` (NULL for an empty array or another
    /// dimension), `cardinality(a)`, `array_lower(a, 1)`.
    ArrayLength,
    ArrayUpper,
    ArrayLower,
    Cardinality,
    /// `array_to_string(a, separator [, null_text])`.
    ArrayToString,
    /// `string_to_array(s, separator [, null_text])`.
    StringToArray,
    /// `array_position(a, x)`: the first 1-based position of `x`.
    ArrayPosition,
    /// `array_append(a, x)`, `array_prepend(x, a)`, `array_cat(a, b)`.
    ArrayAppend,
    ArrayPrepend,
    ArrayCat,
    /// The functions and operators of `bytea` (see `bytea`).
    Bytea(ByteaFunc),
    Json(JsonFunc),
    /// `currval(name)` (its argument: the sequence's name) and `lastval()`: what the
    /// session's last `nextval` of that (or any) sequence gave.
    CurrVal,
    LastVal,
}

/// What bytea values have (see `values::bytea` for their held form).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteaFunc {
    /// `a || b`.
    Concat,
    /// `length(b)`, `octet_length(b)`: its bytes.
    Length,
    /// `md5(b)` (and `md5(text)`, of its UTF-8 bytes): the digest's hex digits.
    Md5,
    /// `encode(b, format)`, `decode(text, format)`: hex, base64 or escape text.
    Encode,
    Decode,
    /// `substring(b from n [for count])`, `substr(b, n [, count])`: 1-based, in bytes.
    Substr,
    /// `get_byte(b, n)`: the byte at 0-based `n`.
    GetByte,
    /// `convert_to(text, encoding)`, `convert_from(b, encoding)`: UTF-8 only.
    ConvertTo,
    ConvertFrom,
}

/// What json and jsonb documents have (see `values::json` for their held forms). `raw`: on a
/// `json` value, read as written; else on a `jsonb` one. `text`: the `->>` forms, giving text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonFunc {
    /// `doc -> key`, `doc -> position` (`index`), and their `->>`.
    Get {
        raw: bool,
        text: bool,
        index: bool,
    },
    /// `doc #> path` (a text array), `json_extract_path(doc, key, ...)`, and their text forms.
    GetPath {
        raw: bool,
        text: bool,
    },
    /// `a @> b` (and `b <@ a`).
    Contains,
    /// `a = b`, numbers compared by value.
    Equal,
    /// `doc ? key`, `doc ?| keys`, `doc ?& keys`.
    Exists,
    ExistsAny,
    ExistsAll,
    /// `a || b`.
    Concat,
    /// `doc - key`, `doc - keys` (a text array), `doc - position` (`index`).
    Delete {
        index: bool,
    },
    /// `jsonb_set(doc, path, new [, create])`, `doc #- path`, `jsonb_strip_nulls(doc)`,
    /// `jsonb_pretty(doc)`.
    SetPath,
    DeletePath,
    StripNulls,
    Pretty,
    /// `jsonb_typeof(doc)`, `jsonb_array_length(doc)`.
    TypeOf,
    ArrayLength,
    /// The text a scalar document gives a cast to this (non-text) type: 22023 for others.
    Scalar(SqlType),
    /// `to_json(v)` of a value of this type: its JSON text.
    ToJson(SqlType),
    /// `json_build_object(key, value, ...)`, `json_build_array(value, ...)`, each value given
    /// as JSON text.
    BuildObject,
    BuildArray,
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
    /// The answer a table built when the statement was planned gives for the value (see
    /// [`lookup`]).
    Lookup(Box<Expr>, Arc<Lookup>),
    /// `nextval(sequence)` (no arguments) or `setval(sequence, value [, is_called])`: never
    /// folded, each evaluation moves the sequence.
    Sequence(Arc<Sequence>, Vec<Expr>),
    /// The value of the statement's uncorrelated subquery `n` (a scalar subquery or an
    /// `EXISTS`), computed before its rows are read (see `Context::init`).
    Init(usize),
    /// The value of the statement's correlated subquery `n` for the row at hand, which the
    /// executor ran under it (see `Context::per_row`).
    SubPlan(usize),
    /// `left op ANY (array)` (`all`: `op ALL`), with PostgreSQL's NULLs: ANY is true if the
    /// comparison holds for an element, else NULL if one was NULL, else false.
    Quantified {
        op: BinOp,
        left: Box<Expr>,
        array: Box<Expr>,
        all: bool,
    },
    /// `expr [NOT] IN (subquery)` over the values of the statement's subquery `id`.
    InInit {
        expr: Box<Expr>,
        id: usize,
        negated: bool,
    },
}

/// Runs `$call` on each expression directly inside `$e` (`$iter`: `iter` or `iter_mut`, as
/// `$e` is borrowed), for `visit` and `visit_mut`.
macro_rules! each_child {
    ($e:expr, |$x:ident| $call:expr, $iter:ident) => {
        match $e {
            Expr::Not($x)
            | Expr::Negate($x)
            | Expr::IsNull($x, _)
            | Expr::Cast($x, _)
            | Expr::Lookup($x, _)
            | Expr::InInit { expr: $x, .. } => $call,
            Expr::Binary(_, l, r)
            | Expr::Quantified {
                left: l, array: r, ..
            } => {
                for $x in [l, r] {
                    $call;
                }
            }
            Expr::Between {
                expr, low, high, ..
            } => {
                for $x in [expr, low, high] {
                    $call;
                }
            }
            Expr::InList { expr, list, .. } => {
                {
                    let $x = expr;
                    $call;
                }
                for $x in list.$iter() {
                    $call;
                }
            }
            Expr::Func(_, args) | Expr::Sequence(_, args) => {
                for $x in args.$iter() {
                    $call;
                }
            }
            Expr::Case {
                operand,
                whens,
                otherwise,
            } => {
                if let Some($x) = operand {
                    $call;
                }
                for (w, t) in whens.$iter() {
                    for $x in [w, t] {
                        $call;
                    }
                }
                if let Some($x) = otherwise {
                    $call;
                }
            }
            Expr::Column(_)
            | Expr::Param(_)
            | Expr::Literal(_)
            | Expr::Init(_)
            | Expr::SubPlan(_) => {}
        }
    };
}

impl Expr {
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
        each_child!(self, |e| e.visit(f), iter);
    }

    /// Calls `f` on this expression and every expression inside it, each changeable (after
    /// `f` has seen it, its parts).
    pub fn visit_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        f(self);
        each_child!(self, |e| e.visit_mut(f), iter_mut);
    }
}

/// What `substr(s, from [, count])` keeps of `s`'s characters (or bytes): how many to skip and
/// how many to take after them (`from` is 1-based and may be before the start). `None` if
/// `from` or `count` is NULL.
fn substring_range(
    args: &[Expr],
    row: &[Datum],
    cx: &Context<'_>,
) -> crate::error::Result<Option<(usize, usize)>> {
    let from = match args[1].eval(row, cx)?.cast(SqlType::Int8)? {
        Datum::Int(v) => v,
        _ => return Ok(None),
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
            _ => return Ok(None),
        },
        None => None,
    };
    let end = count.map_or(i64::MAX, |c| from.saturating_add(c));
    let start = from.max(1);
    Ok(Some((
        (start - 1) as usize,
        end.saturating_sub(start).max(0) as usize,
    )))
}
