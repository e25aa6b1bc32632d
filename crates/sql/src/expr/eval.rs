//! Evaluating expressions: each kind of node in a function of its own (small frames when a chain
//! of them recurses), with PostgreSQL's three-valued logic for conditions. Evaluation must never
//! touch a table or hold anything across a call: it reads the row and the context only.

use std::borrow::Cow;
use std::cmp::Ordering;

use super::functions::eval_func;
use super::strings;
use super::{BinOp, Context, Expr, InitValue};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

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
            Expr::Param(i) => cx.params.get(*i).cloned().ok_or_else(|| no_param(*i)),
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
            Expr::Lookup(e, table) => table.get(&e.eval(row, cx)?),
            Expr::Sequence(sequence, args) => eval_sequence(sequence, args, row, cx),
            Expr::Init(n) => match cx.init.get(*n) {
                Some(InitValue::Value(d)) => Ok(d.clone()),
                _ => Err(no_init(*n)),
            },
            Expr::SubPlan(n) => match cx.per_row.iter().find(|(id, _)| id == n) {
                Some((_, d)) => Ok(d.clone()),
                None => Err(no_init(*n)),
            },
            Expr::Quantified {
                op,
                left,
                array,
                all,
            } => eval_quantified(*op, left, array, *all, row, cx),
            Expr::InInit { expr, id, negated } => {
                let x = expr.eval(row, cx)?;
                let Some(InitValue::Set(set)) = cx.init.get(*id) else {
                    return Err(no_init(*id));
                };
                Ok(match set.contains(&x)? {
                    None => Datum::Null,
                    Some(b) => Datum::Bool(b != *negated),
                })
            }
        }
    }

    /// Evaluates a condition: rows pass only when it is true (not NULL). A comparison or
    /// BETWEEN (most of a scan's filters) compares its operands where they are, making no
    /// boolean value to test and drop: a scan checks one per row read.
    pub fn holds(&self, row: &[Datum], cx: &Context<'_>) -> Result<bool> {
        match self {
            Expr::Binary(op, l, r) if let Some(test) = ordering_test(*op) => {
                let (a, b) = (l.eval_ref(row, cx)?, r.eval_ref(row, cx)?);
                Ok(compare(&a, &b)?.is_some_and(test))
            }
            Expr::Between {
                expr,
                low,
                high,
                negated: false,
            } => {
                // Both bounds evaluated, as `eval` evaluates them (an error in either counts).
                let v = expr.eval_ref(row, cx)?;
                let above = compare(&v, &*low.eval_ref(row, cx)?)?.map(|o| o != Ordering::Less);
                let below = compare(&v, &*high.eval_ref(row, cx)?)?.map(|o| o != Ordering::Greater);
                Ok(above == Some(true) && below == Some(true))
            }
            _ => Ok(self.eval(row, cx)?.truth()? == Some(true)),
        }
    }

    /// The value, borrowed where it already is one (a column, a parameter, a literal): a
    /// comparison in a scan's filter then copies no string.
    pub(crate) fn eval_ref<'a>(
        &'a self,
        row: &'a [Datum],
        cx: &'a Context<'_>,
    ) -> Result<Cow<'a, Datum>> {
        static NULL: Datum = Datum::Null;
        match self {
            Expr::Column(i) => Ok(Cow::Borrowed(row.get(*i).unwrap_or(&NULL))),
            Expr::Param(i) => cx
                .params
                .get(*i)
                .map(Cow::Borrowed)
                .ok_or_else(|| no_param(*i)),
            Expr::Literal(d) => Ok(Cow::Borrowed(d)),
            _ => self.eval(row, cx).map(Cow::Owned),
        }
    }
}

fn no_param(i: usize) -> SqlError {
    SqlError::new(
        sqlstate::PROTOCOL_VIOLATION,
        format!("no value for parameter ${}", i + 1),
    )
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
    let v = expr.eval_ref(row, cx)?;
    let above = compare(&v, &*low.eval_ref(row, cx)?)?.map(|o| o != Ordering::Less);
    let below = compare(&v, &*high.eval_ref(row, cx)?)?.map(|o| o != Ordering::Greater);
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

/// What comparison `op` asks of its operands' order, if it is one.
fn ordering_test(op: BinOp) -> Option<fn(Ordering) -> bool> {
    Some(match op {
        BinOp::Eq => |o| o == Ordering::Equal,
        BinOp::NotEq => |o| o != Ordering::Equal,
        BinOp::Lt => |o| o == Ordering::Less,
        BinOp::LtEq => |o| o != Ordering::Greater,
        BinOp::Gt => |o| o == Ordering::Greater,
        BinOp::GtEq => |o| o != Ordering::Less,
        _ => return None,
    })
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
    let (a, b) = (l.eval_ref(row, cx)?, r.eval_ref(row, cx)?);
    let (a, b) = (&*a, &*b);
    if let Some(test) = ordering_test(op) {
        return Ok(bool_datum(compare(a, b)?.map(test)));
    }
    match op {
        BinOp::Plus => a.arith('+', b),
        BinOp::Minus => a.arith('-', b),
        BinOp::Multiply => a.arith('*', b),
        BinOp::Divide => a.arith('/', b),
        BinOp::Modulo => a.arith('%', b),
        BinOp::Concat => Ok(match (a.to_text_cast(), b.to_text_cast()) {
            (Some(x), Some(y)) => Datum::Text(x + &y),
            _ => Datum::Null,
        }),
        BinOp::Like | BinOp::NotLike => Ok(match (a.text_ref(), b.text_ref()) {
            (Some(s), Some(p)) => Datum::Bool(like(&s, &p) == (op == BinOp::Like)),
            _ => Datum::Null,
        }),
        BinOp::ILike | BinOp::NotILike => Ok(match (a.text_ref(), b.text_ref()) {
            (Some(s), Some(p)) => {
                Datum::Bool(like(&s.to_lowercase(), &p.to_lowercase()) == (op == BinOp::ILike))
            }
            _ => Datum::Null,
        }),
        BinOp::RegexMatch | BinOp::RegexNotMatch | BinOp::RegexIMatch | BinOp::RegexNotIMatch => {
            Ok(match (a.text_ref(), b.text_ref()) {
                (Some(s), Some(p)) => {
                    let insensitive = matches!(op, BinOp::RegexIMatch | BinOp::RegexNotIMatch);
                    let matches = strings::regex(&p, insensitive)?.is_match(&s);
                    Datum::Bool(matches == matches!(op, BinOp::RegexMatch | BinOp::RegexIMatch))
                }
                _ => Datum::Null,
            })
        }
        BinOp::And
        | BinOp::Or
        | BinOp::Eq
        | BinOp::NotEq
        | BinOp::Lt
        | BinOp::LtEq
        | BinOp::Gt
        | BinOp::GtEq => unreachable!("handled above"),
    }
}

/// SQL LIKE: `%` any run, `_` any one character, `\` escapes the next. Iterative, remembering
/// only the last `%` to retry from (the classic wildcard match): no recursion a long pattern
/// could overflow a task's stack with; at most (text length x pattern length) steps.
fn like(s: &str, pattern: &str) -> bool {
    match like_literal_pieces(s, pattern) {
        Some(matched) => matched,
        None => like_general(s, pattern),
    }
}

/// LIKE for a pattern of literal pieces between `%`s (no `_`, no escapes: `'%b'`, `'PR%'`,
/// `'%BB%'`), on the bytes and without allocating: the first piece starts the text, the last
/// ends it, the others are found in order (leftmost, which leaves the most room for the rest).
/// `None` for other patterns. Per row, the general matcher's two vectors were a tenth of CH
/// Q19's time.
fn like_literal_pieces(s: &str, pattern: &str) -> Option<bool> {
    if pattern.contains(['_', '\\']) {
        return None;
    }
    let (Some(first_any), Some(last_any)) = (pattern.find('%'), pattern.rfind('%')) else {
        return Some(s == pattern);
    };
    let (first, last) = (&pattern[..first_any], &pattern[last_any + 1..]);
    let Some(mut rest) = s.strip_prefix(first) else {
        return Some(false);
    };
    if first_any < last_any {
        for piece in pattern[first_any + 1..last_any].split('%') {
            match rest.find(piece) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return Some(false),
            }
        }
    }
    Some(rest.ends_with(last))
}

/// LIKE for any pattern (see [`like`]).
fn like_general(s: &str, pattern: &str) -> bool {
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

/// `nextval` (no arguments) or `setval(value [, is_called])` on `sequence`.
fn eval_sequence(
    sequence: &crate::sequence::Sequence,
    args: &[Expr],
    row: &[Datum],
    cx: &Context<'_>,
) -> Result<Datum> {
    if args.is_empty() {
        let value = sequence.next()?;
        if let Some(s) = cx.settings {
            s.sequence_used(&sequence.name, value);
        }
        return Ok(Datum::Int(value));
    }
    let value = match args[0].eval(row, cx)? {
        Datum::Null => return Ok(Datum::Null),
        Datum::Int(v) => v,
        other => match other.cast(SqlType::Int8)? {
            Datum::Int(v) => v,
            _ => return Ok(Datum::Null),
        },
    };
    let called = match args.get(1).map(|a| a.eval(row, cx)).transpose()? {
        None => true,
        Some(Datum::Null) => return Ok(Datum::Null),
        Some(d) => d.truth()? == Some(true),
    };
    let value = sequence.set(value, called)?;
    // As PostgreSQL's setval: currval follows only a value marked as given out.
    if let (Some(s), true) = (cx.settings, called) {
        s.sequence_used(&sequence.name, value);
    }
    Ok(Datum::Int(value))
}

/// `left op ANY/ALL (array)`.
fn eval_quantified(
    op: BinOp,
    left: &Expr,
    array: &Expr,
    all: bool,
    row: &[Datum],
    cx: &Context<'_>,
) -> Result<Datum> {
    let x = left.eval(row, cx)?;
    let values = match array.eval(row, cx)? {
        Datum::Null => return Ok(Datum::Null),
        Datum::Array(v) => v,
        other => {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("op ANY/ALL (array) requires array on right side, not {other:?}"),
            ));
        }
    };
    let mut unknown = false;
    for v in &values {
        let one = Expr::Binary(
            op,
            Box::new(Expr::Literal(x.clone())),
            Box::new(Expr::Literal(v.clone())),
        );
        match one.eval(&[], cx)?.truth()? {
            Some(b) if b != all => return Ok(Datum::Bool(b)),
            None => unknown = true,
            Some(_) => {}
        }
    }
    Ok(if unknown {
        Datum::Null
    } else {
        Datum::Bool(all)
    })
}

/// A subquery whose value the statement did not compute first: the executor's bug.
fn no_init(n: usize) -> SqlError {
    SqlError::new(
        sqlstate::INTERNAL_ERROR,
        format!("subquery {n} was not computed before the statement"),
    )
}

#[cfg(test)]
mod tests {
    use super::{like, like_general};

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

    #[test]
    fn patterns_of_literal_pieces_match_as_the_general_matcher_does() {
        // Every pattern over a small alphabet with `%`, against every text up to a length.
        let alphabet = ['a', 'b', 'é', '%'];
        let mut patterns = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = patterns
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            patterns.extend(longer);
        }
        patterns.sort();
        patterns.dedup();
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| ['a', 'b', 'é'].iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(longer);
        }
        texts.sort();
        texts.dedup();
        for p in &patterns {
            for t in &texts {
                assert_eq!(like(t, p), like_general(t, p), "{t:?} LIKE {p:?}");
            }
        }
        assert!(like("abcabd", "%ab%bd"));
        assert!(!like("abd", "%ab%bd"));
    }
}
