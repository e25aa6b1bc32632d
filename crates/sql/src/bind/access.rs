//! How a table's rows are found and where conditions are checked: a condition split into its
//! AND-ed parts, ordered by PostgreSQL's cost, and the access (primary key, key range or scan)
//! the conditions on a table allow.

use crate::bind::ScopeColumn;
use crate::catalog::{CTID, SqlTable};
use crate::expr::{BinOp, Expr};
use crate::plan::Access;
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Splits a condition into its AND-ed parts.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary(BinOp::And, l, r) => {
            conjuncts(*l, out);
            conjuncts(*r, out);
        }
        other => out.push(other),
    }
}

/// Adds the equalities the conditions imply between a column and a constant (a literal or a
/// parameter), as PostgreSQL's equivalence classes do: from `c_w_id = w_id AND w_id = $1`,
/// also `c_w_id = $1`, so each table can be read by its key, whichever is read first. Only
/// between columns of one type (equality of two types may not carry over). The conditions
/// implied are checked like the others (redundantly where the join checks them too).
pub fn implied_equalities(conditions: &mut Vec<Expr>, scope: &[ScopeColumn]) {
    let constant =
        |e: &Expr| matches!(e, Expr::Literal(d) if !d.is_null()) || matches!(e, Expr::Param(_));
    let mut pinned: Vec<(usize, Expr)> = Vec::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for c in conditions.iter() {
        let Expr::Binary(BinOp::Eq, l, r) = c else {
            continue;
        };
        match (&**l, &**r) {
            (Expr::Column(a), Expr::Column(b))
                if a != b && scope.get(*a).map(|s| s.ty) == scope.get(*b).map(|s| s.ty) =>
            {
                pairs.push((*a, *b));
            }
            (Expr::Column(a), v) | (v, Expr::Column(a)) if constant(v) => {
                pinned.push((*a, v.clone()));
            }
            _ => {}
        }
    }
    if pairs.is_empty() || pinned.is_empty() {
        return;
    }
    // Spread the constants along the pairs until nothing new is pinned.
    let mut grew = true;
    while grew {
        grew = false;
        for &(a, b) in &pairs {
            for (from, to) in [(a, b), (b, a)] {
                if pinned.iter().any(|(c, _)| *c == to) {
                    continue;
                }
                if let Some((_, v)) = pinned.iter().find(|(c, _)| *c == from).cloned() {
                    conditions.push(Expr::Binary(
                        BinOp::Eq,
                        Box::new(Expr::Column(to)),
                        Box::new(v.clone()),
                    ));
                    pinned.push((to, v));
                    grew = true;
                }
            }
        }
    }
}

/// A condition constantly false or NULL passes no row: as PostgreSQL's one-time filter, it is
/// then the only condition, so no other is computed for any row.
fn one_time_filter(conditions: &mut Vec<Expr>) {
    let never = conditions.iter().position(|c| {
        matches!(
            c,
            Expr::Literal(
                crate::values::datum::Datum::Bool(false) | crate::values::datum::Datum::Null
            )
        )
    });
    if let Some(never) = never {
        let only = conditions.swap_remove(never);
        *conditions = vec![only];
    }
}

/// Orders a statement's conditions as PostgreSQL's planner does before it checks them on a row:
/// a constantly false one alone (see [`one_time_filter`]), else the cheapest first, in its
/// cost units, the order written among equals (`order_qual_clauses`). Which conditions are
/// computed for a row decides which errors a statement can raise: in `c % c >= 1 AND c IN (1,
/// 2)`, PostgreSQL checks the IN list first and never divides by a zero `c`.
pub fn order_conditions(conditions: &mut Vec<Expr>) {
    one_time_filter(conditions);
    conditions.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
}

/// What PostgreSQL's `cost_qual_eval` charges for computing `e`, in operator calls: one per
/// operator, function or cast, none for AND, OR, NOT, IS NULL, COALESCE, a column or a
/// constant, and for an IN list of constants half a comparison per element (PostgreSQL's
/// `= ANY` of an array), one per element holding a column.
fn cost(e: &Expr) -> f64 {
    let children = |es: &mut dyn Iterator<Item = &Expr>| es.map(cost).sum::<f64>();
    match e {
        Expr::Column(_) | Expr::Param(_) | Expr::Literal(_) => 0.0,
        Expr::Not(x) | Expr::IsNull(x, _) => cost(x),
        Expr::Negate(x) | Expr::Cast(x, _) | Expr::Lookup(x, _) => 1.0 + cost(x),
        Expr::Sequence(_, args) => 1.0 + args.iter().map(cost).sum::<f64>(),
        Expr::Init(_) => 0.0,
        Expr::Quantified { left, array, .. } => 1.0 + cost(left) + cost(array),
        // A query per row: last among the conditions.
        Expr::SubPlan(_) => 1000.0,
        Expr::InInit { expr, .. } => 1.0 + cost(expr),
        Expr::Binary(BinOp::And | BinOp::Or, l, r) => cost(l) + cost(r),
        Expr::Binary(_, l, r) => 1.0 + cost(l) + cost(r),
        Expr::Between {
            expr, low, high, ..
        } => 2.0 + cost(expr) + cost(low) + cost(high),
        Expr::InList { expr, list, .. } => {
            let (columns, constants): (Vec<&Expr>, Vec<&Expr>) =
                list.iter().partition(|x| x.max_column().is_some());
            let compare = match constants.len() {
                0 => 0.0,
                1 => 1.0,
                n => 0.5 * n as f64,
            };
            cost(expr) + compare + columns.len() as f64 + children(&mut list.iter())
        }
        Expr::Func(crate::expr::Func::Coalesce, args) => children(&mut args.iter()),
        Expr::Func(_, args) => 1.0 + children(&mut args.iter()),
        Expr::Case {
            operand,
            whens,
            otherwise,
        } => {
            // With an operand, each WHEN compares it to a value.
            let compares = if operand.is_some() {
                whens.len() as f64
            } else {
                0.0
            };
            compares
                + operand.as_deref().map_or(0.0, cost)
                + children(&mut whens.iter().flat_map(|(w, t)| [w, t]))
                + otherwise.as_deref().map_or(0.0, cost)
        }
    }
}

/// The columns a table contributes to a scope, under `name`: its own columns (what an
/// inserted row has).
pub fn table_scope(table: &SqlTable, name: &str) -> Vec<ScopeColumn> {
    table
        .columns
        .iter()
        .map(|c| ScopeColumn {
            table: name.to_owned(),
            name: c.name.clone(),
            ty: c.ty,
            outer: false,
            merged: false,
            using: false,
            system: false,
        })
        .collect()
}

/// The columns a stored row of a table contributes to a scope (what a scan, an UPDATE or a
/// DELETE reads), under `name`: its own columns, then its system column `ctid` if it has one
/// (see `SqlTable::has_ctid`).
pub fn row_scope(table: &SqlTable, name: &str) -> Vec<ScopeColumn> {
    let mut scope = table_scope(table, name);
    if table.has_ctid() {
        scope.push(ScopeColumn {
            table: name.to_owned(),
            name: CTID.to_owned(),
            ty: SqlType::Tid,
            outer: false,
            merged: false,
            using: false,
            system: true,
        });
    }
    scope
}

/// `op` with its operands swapped: `a < b` is `b > a`.
fn mirrored(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        other => other,
    }
}

/// A comparison of a table column with a known value: `(column, op, value)`.
type Comparison = (usize, BinOp, Expr);

/// At most this many keys are read one by one; a longer list reads a range or the table.
const MAX_KEY_LIST: usize = 1000;

/// The primary keys, or leading parts of them, the conditions allow, when they name a list
/// of them: leading key columns each equal to a known value or in a list of them (`k IN (1,
/// 2)`, every combination), or one condition an OR whose every branch pins the same leading
/// key columns (`(a, b) IN ((1, 2), (3, 4))`, bound as `a = 1 AND b = 2 OR a = 3 AND b =
/// 4`). Every tuple has the same length, the longer of the two; none if neither pins a
/// column. The conditions stay checked on each row read, so the list need only hold every
/// key that can match.
fn key_list(
    table: &SqlTable,
    conditions: &[Expr],
    equal_to: &dyn Fn(usize) -> Option<Expr>,
    in_list: &dyn Fn(usize) -> Option<Vec<Expr>>,
    compared: &dyn Fn(&Expr) -> Option<Comparison>,
) -> Option<Vec<Vec<Expr>>> {
    let pk = &table.primary_key;
    // Leading key columns each equal to a value or in a list, while the combinations stay few.
    let mut by_columns: Vec<Vec<Expr>> = vec![Vec::new()];
    for &c in pk {
        let Some(values) = equal_to(c).map(|e| vec![e]).or_else(|| in_list(c)) else {
            break;
        };
        if by_columns.len().saturating_mul(values.len()) > MAX_KEY_LIST {
            break;
        }
        by_columns = by_columns
            .into_iter()
            .flat_map(|key| {
                values.iter().map(move |v| {
                    let mut k = key.clone();
                    k.push(v.clone());
                    k
                })
            })
            .collect();
    }
    // An OR whose every branch pins the same leading key columns.
    let by_branches = conditions.iter().find_map(|c| {
        let mut branches = Vec::new();
        chain(c, BinOp::Or, &mut branches);
        if branches.len() < 2 || branches.len() > MAX_KEY_LIST {
            return None;
        }
        let keys: Vec<Vec<Expr>> = branches
            .into_iter()
            .map(|branch| {
                let mut parts = Vec::new();
                chain(branch, BinOp::And, &mut parts);
                pk.iter()
                    .map_while(|&col| {
                        parts.iter().find_map(|p| match compared(p) {
                            Some((c, BinOp::Eq, value)) if c == col => Some(value),
                            _ => None,
                        })
                    })
                    .collect()
            })
            .collect();
        let shortest = keys.iter().map(Vec::len).min()?;
        (shortest > 0).then(|| {
            keys.into_iter()
                .map(|mut k| {
                    k.truncate(shortest);
                    k
                })
                .collect::<Vec<_>>()
        })
    });
    let columns = |keys: &Vec<Vec<Expr>>| keys.first().map_or(0, Vec::len);
    let best = match by_branches {
        Some(b) if columns(&b) > columns(&by_columns) => b,
        _ => by_columns,
    };
    (columns(&best) > 0).then_some(best)
}

/// The branches of a chain of `op` (AND or OR) in `e`, by reference. Iterative: a chain of
/// thousands of ORs is as deep as it is long.
pub(super) fn chain<'e>(e: &'e Expr, op: BinOp, out: &mut Vec<&'e Expr>) {
    let mut pending = vec![e];
    while let Some(e) = pending.pop() {
        match e {
            Expr::Binary(o, l, r) if *o == op => {
                pending.push(r);
                pending.push(l);
            }
            other => out.push(other),
        }
    }
}

/// What conditions say of an index's columns: leading ones equal to known values, then bounds
/// on the next (`true`: inclusive).
type KeyConditions = (Vec<Expr>, Option<(Expr, bool)>, Option<(Expr, bool)>);

/// Chooses how the table whose columns are `offset..offset + n` is read, given the conditions
/// checked at its level: by primary key if each key column is equated to something already
/// known, else by a range of the primary key or of a secondary index on a leading part of its
/// columns (the one whose conditions pin most columns; the primary key on a tie), else by a scan.
pub fn choose_access(table: &SqlTable, offset: usize, conditions: &[Expr]) -> Access {
    let known = |e: &Expr| e.max_column().is_none_or(|c| c < offset);
    // A comparison of table column `col` with a known value, as `col op value` (a comparison
    // written the other way round, `value < col`, is mirrored).
    let compared = |c: &Expr| -> Option<(usize, BinOp, Expr)> {
        let Expr::Binary(op, l, r) = c else {
            return None;
        };
        let column = |e: &Expr| match e {
            Expr::Column(c) if (offset..offset + table.columns.len()).contains(c) => {
                Some(*c - offset)
            }
            _ => None,
        };
        match (column(l), column(r)) {
            (Some(col), _) if known(r) => Some((col, *op, (**r).clone())),
            (_, Some(col)) if known(l) => Some((col, mirrored(*op), (**l).clone())),
            _ => None,
        }
    };
    // What the conditions say of table column `col`: equal to a known value.
    let equal_to = |col: usize| {
        conditions.iter().find_map(|c| match compared(c) {
            Some((c, BinOp::Eq, value)) if c == col => Some(value),
            _ => None,
        })
    };
    // The range conditions give over `columns` (an index's, in order): leading columns equal to
    // known values, then bounds on the next one.
    let range = |columns: &[usize]| {
        let mut eq = Vec::new();
        for &col in columns {
            match equal_to(col) {
                Some(e) => eq.push(e),
                None => break,
            }
        }
        let (mut lower, mut upper) = (None, None);
        if let Some(&col) = columns.get(eq.len()) {
            for c in conditions {
                if let Expr::Between {
                    expr,
                    low,
                    high,
                    negated: false,
                } = c
                    && matches!(**expr, Expr::Column(e) if e == offset + col)
                    && known(low)
                    && known(high)
                {
                    lower = Some(((**low).clone(), true));
                    upper = Some(((**high).clone(), true));
                    continue;
                }
                match compared(c) {
                    Some((c, op, value)) if c == col => match op {
                        BinOp::Gt => lower = Some((value, false)),
                        BinOp::GtEq => lower = Some((value, true)),
                        BinOp::Lt => upper = Some((value, false)),
                        BinOp::LtEq => upper = Some((value, true)),
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
        (eq, lower, upper)
    };
    // How selective a range is: columns pinned, then a bound on the next.
    let rank = |(eq, lower, upper): &KeyConditions| {
        2 * eq.len() + usize::from(lower.is_some() || upper.is_some())
    };
    let primary = range(&table.primary_key);
    if !table.primary_key.is_empty() && primary.0.len() == table.primary_key.len() {
        return Access::Key(primary.0);
    }
    // `ctid = value`: the one row kept there.
    let ctid = offset + table.columns.len();
    if table.has_ctid()
        && let Some(value) = conditions.iter().find_map(|c| match c {
            Expr::Binary(BinOp::Eq, l, r) => match (&**l, &**r) {
                (Expr::Column(c), v) | (v, Expr::Column(c)) if *c == ctid && known(v) => {
                    Some(v.clone())
                }
                _ => None,
            },
            _ => None,
        })
    {
        return Access::Tid(value);
    }
    // A list of keys or key prefixes, if it pins more than a range of the primary key; a
    // secondary index's range must pin more still (below).
    let mut keys_access = None;
    if let Some(keys) = key_list(
        table,
        conditions,
        &equal_to,
        &|c| {
            // `col IN (known, ...)`: the values a key column may take.
            conditions.iter().find_map(|x| match x {
                Expr::InList {
                    expr,
                    list,
                    negated: false,
                } if matches!(**expr, Expr::Column(e) if e == offset + c)
                    && list.iter().all(known) =>
                {
                    Some(list.clone())
                }
                _ => None,
            })
        },
        &compared,
    ) {
        if keys[0].len() == table.primary_key.len() {
            return Access::Keys(keys);
        }
        keys_access = Some(keys);
    }
    let mut best = (None, primary);
    for (i, index) in table.indexes.iter().enumerate() {
        let candidate = range(&index.columns);
        if rank(&candidate) > rank(&best.1) {
            best = (Some(i), candidate);
        }
    }
    if let Some(keys) = keys_access
        && 2 * keys[0].len() > rank(&best.1)
    {
        return Access::Keys(keys);
    }
    match best {
        (_, (eq, None, None)) if eq.is_empty() => Access::Scan,
        (index, (eq, lower, upper)) => Access::Range {
            index,
            eq,
            lower,
            upper,
        },
    }
}

/// What a hash join's key values are: values of one class are equal as SQL compares them
/// exactly when they are the same values (so their hash keys are the same).
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    Integer,
    Text,
    Exact(crate::values::types::SqlType),
}

/// The class of `e`'s values, for the expressions whose type is plain from their shape (a
/// column, integer arithmetic, a text function of text, a cast); `None` for others.
fn key_class(e: &Expr, scope: &[ScopeColumn]) -> Option<KeyClass> {
    use crate::expr::Func;
    use crate::values::types::SqlType as T;
    let of_type = |ty: T| match ty {
        T::Int2 | T::Int4 | T::Int8 => Some(KeyClass::Integer),
        T::Text | T::VarChar(_) => Some(KeyClass::Text),
        T::Bool | T::Date | T::Timestamp | T::TimestampTz | T::Uuid => Some(KeyClass::Exact(ty)),
        _ => None,
    };
    match e {
        Expr::Column(c) => of_type(scope.get(*c)?.ty),
        Expr::Cast(_, ty) => of_type(*ty),
        Expr::Binary(
            BinOp::Plus | BinOp::Minus | BinOp::Multiply | BinOp::Divide | BinOp::Modulo,
            l,
            r,
        ) => (key_class(l, scope)? == KeyClass::Integer
            && key_class(r, scope)? == KeyClass::Integer)
            .then_some(KeyClass::Integer),
        Expr::Literal(Datum::Int(_)) => Some(KeyClass::Integer),
        Expr::Func(Func::Ascii, _) => Some(KeyClass::Integer),
        Expr::Func(Func::Lower | Func::Upper | Func::Substr, args) => {
            (key_class(args.first()?, scope)? == KeyClass::Text).then_some(KeyClass::Text)
        }
        _ => None,
    }
}

/// The keys of a hash join for the source whose columns are `columns` in the joined row (see
/// `Access::Hash`), from the equalities among `conditions` between an expression over the
/// source's columns alone and one over the columns before it (one of them at least: a
/// constant is what an index or the scan's filter handles), both of a class whose values are
/// equal exactly when they are the same (integers, text, dates and times, uuid, booleans).
/// `None` where there are none.
pub fn hash_keys(
    columns: std::ops::Range<usize>,
    conditions: &[Expr],
    scope: &[ScopeColumn],
) -> Option<Vec<(Expr, Expr)>> {
    let first = columns.start;
    let reads = |e: &Expr, inside: bool| {
        let mut any = false;
        let mut only = true;
        e.visit(&mut |x| match x {
            Expr::Column(c) => {
                any = true;
                only &= columns.contains(c) == inside && (inside || *c < first);
            }
            Expr::SubPlan(_) | Expr::Init(_) => only = false,
            _ => {}
        });
        any && only
    };
    let mut keys: Vec<(Expr, Expr)> = Vec::new();
    for c in conditions {
        let Expr::Binary(BinOp::Eq, l, r) = c else {
            continue;
        };
        for (mine, other) in [(&**l, &**r), (&**r, &**l)] {
            if !reads(mine, true) || !reads(other, false) {
                continue;
            }
            let class = key_class(mine, scope);
            if class.is_some() && class == key_class(other, scope) {
                keys.push((mine.clone(), other.clone()));
                break;
            }
        }
    }
    (!keys.is_empty()).then_some(keys)
}
