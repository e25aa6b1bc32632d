//! Hash joins (`Access::Hash`): a source read once per run into a hash table on its join
//! keys, which each joined row then probes instead of reading the source again.
//!
//! Must never match rows whose keys SQL would not call equal: keys are only of classes whose
//! equal values are the same values (see `bind::access::hash_keys`), and NULL matches nothing.

use super::{Run, Sink, all_hold, derived_rows};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::rows::fetch_counting;
use crate::expr::Expr;
use crate::plan::{Access, Relation, Source};
use crate::values::datum::{Datum, row_bytes};
use crate::values::key::{Key, KeyMap};

/// A hash join's table: the source's rows that pass the conditions on it alone, by the
/// values of its key columns (NULL-free).
pub(super) type Hashed = KeyMap<Vec<Vec<Datum>>>;

/// The rows of `source` (read through `Access::Hash` on `keys`) whose keys equal the joined
/// row's values and that pass `filter`, each appended to the joined row `row`. The source is
/// read once per run into a hash table: its rows passing the conditions on its own columns
/// alone (which read nothing of the row before it, so hold for every row), by key.
pub(super) fn hash_join(
    source: &Source,
    keys: &[(Expr, Expr)],
    filter: &[Expr],
    run: &mut Run<'_, '_, '_>,
    row: &mut Vec<Datum>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let id: *const Source = source;
    let hashed = match run.hashed.get(&id) {
        Some(h) => std::rc::Rc::clone(h),
        None => {
            let built = std::rc::Rc::new(build_hash(source, keys, filter, run)?);
            run.hashed.insert(id, std::rc::Rc::clone(&built));
            built
        }
    };
    let mut probe = Vec::with_capacity(keys.len());
    for (_, e) in keys {
        match e.eval(row, run.cx)? {
            Datum::Null => return Ok(true),
            v => probe.push(v),
        }
    }
    let Some(found) = hashed.get(&Key(probe)) else {
        return Ok(true);
    };
    let outer = row.len();
    for r in found {
        row.truncate(outer);
        row.extend_from_slice(r);
        if all_hold(filter, row, run.cx)? && !sink(run, row)? {
            row.truncate(outer);
            return Ok(false);
        }
    }
    row.truncate(outer);
    Ok(true)
}

/// The hash table of `source` for `hash_join`.
fn build_hash(
    source: &Source,
    keys: &[(Expr, Expr)],
    filter: &[Expr],
    run: &mut Run<'_, '_, '_>,
) -> Result<Hashed> {
    let own = source.offset..source.offset + source.width;
    let alone: Vec<Expr> = filter
        .iter()
        .filter(|f| {
            let mut inside = true;
            f.visit(&mut |e| {
                inside &= !matches!(e, Expr::Column(c) if !own.contains(c))
                    && !matches!(e, Expr::SubPlan(_));
            });
            inside
        })
        .cloned()
        .collect();
    // The source's rows are read as if joined to a row of NULLs: the conditions read nothing
    // of it.
    let before = vec![Datum::Null; source.offset];
    let rows: Vec<Vec<Datum>> = match &source.relation {
        Relation::Table(t) => fetch_counting(
            run.txn,
            (t, &Access::Scan, &alone, source.needed.as_deref()),
            &before,
            run.cx,
            None,
            None,
            &mut 0,
        )?,
        Relation::Subquery(plan) => {
            let all = derived_rows(run, plan)?;
            let mut kept = Vec::new();
            let mut joined = before.clone();
            for r in all.iter() {
                joined.truncate(source.offset);
                joined.extend_from_slice(r);
                if all_hold(&alone, &joined, run.cx)? {
                    kept.push(r.clone());
                }
            }
            kept
        }
        _ => {
            return Err(SqlError::new(
                sqlstate::INTERNAL_ERROR,
                format!("a hash join over {}", source.name),
            ));
        }
    };
    let mut hashed = Hashed::default();
    let mut joined = before;
    'rows: for r in rows {
        joined.truncate(source.offset);
        joined.extend_from_slice(&r);
        let mut key = Vec::with_capacity(keys.len());
        for (k, _) in keys {
            match k.eval(&joined, run.cx)? {
                Datum::Null => continue 'rows,
                v => key.push(v),
            }
        }
        run.budget.take(row_bytes(&r) + row_bytes(&key) + 32)?;
        hashed.entry(Key(key)).or_default().push(r);
    }
    Ok(hashed)
}
