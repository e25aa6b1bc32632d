//! Hash joins (`Access::Hash`): a source read once per run into a hash table on its join
//! keys, which each joined row then probes instead of reading the source again.
//!
//! Must never match rows whose keys SQL would not call equal: keys are only of classes whose
//! equal values are the same values (see `bind::access::hash_keys`), and NULL matches nothing.

use super::row_store::{RowStore, place};
use super::{Run, Sink, all_hold, derived_rows};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::rows::fetch_each;
use crate::expr::Expr;
use crate::plan::{Access, Relation, Source};
use crate::values::datum::{Datum, row_bytes};
use crate::values::key::{Key, KeyMap};
use rustc_hash::FxHashMap;

/// A hash join's table: the source's rows that pass the conditions on it alone, by the
/// values of their key columns (NULL-free). Only the columns the statement reads are kept, all
/// rows' values in one vector, and the rows of one key are chained: a table of a few hundred
/// thousand rows is a few allocations, not one per row and key.
pub(super) struct Hashed {
    /// The source's columns kept (relative to the source), in order.
    columns: Box<[usize]>,
    /// Each kept row's values of `columns`.
    rows: RowStore,
    /// Per row, the next row of the same key (`END` for the last).
    next: Vec<usize>,
    heads: Heads,
}

const END: usize = usize::MAX;

/// Per key, its first and last rows. Keys of one or two integers (a join on ids, the common
/// case) are kept as integers: a probe compares them in the table, not through a pointer to
/// a key's values elsewhere in memory (a cache miss per probe).
enum Heads {
    Int(FxHashMap<i64, (usize, usize)>),
    Int2(FxHashMap<(i64, i64), (usize, usize)>),
    Any(KeyMap<(usize, usize)>),
}

/// A key as integers, if it is one or two `Datum::Int`s (values of other kinds are never one
/// key with an integer: see `values::key`).
enum IntKey {
    One(i64),
    Two(i64, i64),
}

fn int_key(values: &[Datum]) -> Option<IntKey> {
    match values {
        [Datum::Int(a)] => Some(IntKey::One(*a)),
        [Datum::Int(a), Datum::Int(b)] => Some(IntKey::Two(*a, *b)),
        _ => None,
    }
}

impl Heads {
    fn new(keys: usize) -> Heads {
        match keys {
            1 => Heads::Int(FxHashMap::default()),
            2 => Heads::Int2(FxHashMap::default()),
            _ => Heads::Any(KeyMap::default()),
        }
    }

    /// The first and last rows of key `values`, made if missing.
    fn entry(&mut self, values: Vec<Datum>) -> &mut (usize, usize) {
        let fresh = (END, END);
        let int = int_key(&values);
        let fits = matches!(
            (&*self, &int),
            (Heads::Int(_), Some(IntKey::One(_)))
                | (Heads::Int2(_), Some(IntKey::Two(..)))
                | (Heads::Any(_), _)
        );
        if !fits {
            self.generalize();
        }
        match (self, int) {
            (Heads::Int(map), Some(IntKey::One(a))) => map.entry(a).or_insert(fresh),
            (Heads::Int2(map), Some(IntKey::Two(a, b))) => map.entry((a, b)).or_insert(fresh),
            (Heads::Any(map), _) => map.entry(Key(values)).or_insert(fresh),
            _ => unreachable!("a key that does not fit made every key a general one"),
        }
    }

    /// Every key as a general one (a key of another kind than integers came).
    fn generalize(&mut self) {
        let all: KeyMap<(usize, usize)> = match self {
            Heads::Int(map) => map
                .drain()
                .map(|(a, e)| (Key(vec![Datum::Int(a)]), e))
                .collect(),
            Heads::Int2(map) => map
                .drain()
                .map(|((a, b), e)| (Key(vec![Datum::Int(a), Datum::Int(b)]), e))
                .collect(),
            Heads::Any(_) => return,
        };
        *self = Heads::Any(all);
    }

    /// The first row of key `values`, if any.
    fn first(&self, values: &[Datum]) -> Option<usize> {
        let found = match (self, int_key(values)) {
            (Heads::Int(map), Some(IntKey::One(a))) => map.get(&a),
            (Heads::Int2(map), Some(IntKey::Two(a, b))) => map.get(&(a, b)),
            // An integer table holds no key of another kind.
            (Heads::Int(_) | Heads::Int2(_), _) => None,
            (Heads::Any(map), _) => {
                let key = Key(values.to_vec());
                map.get(&key)
            }
        };
        found.map(|&(first, _)| first)
    }
}

impl Hashed {
    fn new(columns: Box<[usize]>, keys: usize) -> Hashed {
        Hashed {
            rows: RowStore::new(columns.len()),
            columns,
            next: Vec::new(),
            heads: Heads::new(keys),
        }
    }

    /// Adds the row whose kept values `values` yields under key `key`; the bytes it holds.
    fn push(&mut self, key: Vec<Datum>, values: impl Iterator<Item = Datum>) -> usize {
        let at = self.rows.push(values);
        let bytes = row_bytes(self.rows.row(at)) + row_bytes(&key) + 32;
        self.next.push(END);
        let (first, last) = self.heads.entry(key);
        if *first == END {
            *first = at;
        } else {
            self.next[*last] = at;
        }
        *last = at;
        bytes
    }
}

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
    // The probe's key is made in a vector the run keeps: no allocation per probe.
    let mut probe = std::mem::take(&mut run.probe);
    probe.clear();
    for (_, e) in keys {
        match e.eval(row, run.cx)? {
            Datum::Null => {
                run.probe = probe;
                return Ok(true);
            }
            v => probe.push(v),
        }
    }
    let first = hashed.heads.first(&probe);
    run.probe = probe;
    let Some(mut at) = first else {
        return Ok(true);
    };
    let outer = row.len();
    while at != END {
        let values = hashed.rows.row(at).iter().cloned();
        place(row, (outer, source.width), &hashed.columns, values);
        if all_hold(filter, row, run.cx)? && !sink(run, row)? {
            row.truncate(outer);
            return Ok(false);
        }
        at = hashed.next[at];
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
    let columns: Box<[usize]> = source.read_columns().collect();
    let mut hashed = Hashed::new(columns.clone(), keys.len());
    let offset = source.offset;
    // The key of joined row `joined`, unless one of its values is NULL (matching nothing).
    let key_of = |joined: &[Datum], cx| -> Result<Option<Vec<Datum>>> {
        let mut key = Vec::with_capacity(keys.len());
        for (k, _) in keys {
            match k.eval(joined, cx)? {
                Datum::Null => return Ok(None),
                v => key.push(v),
            }
        }
        Ok(Some(key))
    };
    // The source's rows are read as if joined to a row of NULLs: the conditions read nothing
    // of it.
    let mut joined = vec![Datum::Null; offset];
    match &source.relation {
        Relation::Table(t) => {
            let (cx, budget) = (run.cx, &mut run.budget);
            fetch_each(
                run.txn,
                (t, &Access::Scan, &alone, source.needed.as_deref()),
                &mut joined,
                cx,
                &mut 0,
                &mut |combined, _| {
                    let Some(key) = key_of(combined, cx)? else {
                        return Ok(true);
                    };
                    let values = &mut combined[offset..];
                    let taken = columns
                        .iter()
                        .map(|&c| std::mem::replace(&mut values[c], Datum::Null));
                    budget.take(hashed.push(key, taken))?;
                    Ok(true)
                },
            )?;
        }
        Relation::Subquery(plan) => {
            let all = derived_rows(run, plan)?;
            for r in all.iter() {
                joined.truncate(offset);
                joined.extend_from_slice(r);
                if !all_hold(&alone, &joined, run.cx)? {
                    continue;
                }
                let Some(key) = key_of(&joined, run.cx)? else {
                    continue;
                };
                let bytes = hashed.push(key, columns.iter().map(|&c| r[c].clone()));
                run.budget.take(bytes)?;
            }
        }
        _ => {
            return Err(SqlError::new(
                sqlstate::INTERNAL_ERROR,
                format!("a hash join over {}", source.name),
            ));
        }
    }
    Ok(hashed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(h: &Hashed, key: &[Datum]) -> Vec<Vec<Datum>> {
        let mut rows = Vec::new();
        let mut at = h.heads.first(key).unwrap_or(END);
        while at != END {
            rows.push(h.rows.row(at).to_vec());
            at = h.next[at];
        }
        rows
    }

    #[test]
    fn rows_of_a_key_come_in_the_order_they_were_added_whatever_the_key_kind() {
        let text = |s: &str| Datum::Text(s.to_owned());
        let mut h = Hashed::new(vec![0, 2].into(), 1);
        h.push(vec![Datum::Int(1)], [Datum::Int(10), text("a")].into_iter());
        h.push(vec![Datum::Int(2)], [Datum::Int(20), text("b")].into_iter());
        h.push(vec![Datum::Int(1)], [Datum::Int(11), text("c")].into_iter());
        assert!(matches!(h.heads, Heads::Int(_)));
        assert_eq!(
            rows_of(&h, &[Datum::Int(1)]),
            [[Datum::Int(10), text("a")], [Datum::Int(11), text("c")]]
        );
        // Another kind of value is never one key with an integer.
        assert!(rows_of(&h, &[Datum::Date(1)]).is_empty());
        assert!(rows_of(&h, &[Datum::Int(3)]).is_empty());
        // A key of another kind turns the table general; what it held is still found.
        h.push(vec![text("x")], [Datum::Int(30), text("d")].into_iter());
        assert!(matches!(h.heads, Heads::Any(_)));
        h.push(vec![Datum::Int(1)], [Datum::Int(12), text("e")].into_iter());
        assert_eq!(rows_of(&h, &[Datum::Int(1)]).len(), 3);
        assert_eq!(rows_of(&h, &[Datum::Int(2)]), [[Datum::Int(20), text("b")]]);
        assert_eq!(rows_of(&h, &[text("x")]), [[Datum::Int(30), text("d")]]);
    }

    #[test]
    fn two_integer_keys_are_one_key_only_when_both_are_equal() {
        let mut h = Hashed::new(vec![0].into(), 2);
        h.push(
            vec![Datum::Int(1), Datum::Int(2)],
            [Datum::Int(12)].into_iter(),
        );
        h.push(
            vec![Datum::Int(2), Datum::Int(1)],
            [Datum::Int(21)].into_iter(),
        );
        assert!(matches!(h.heads, Heads::Int2(_)));
        assert_eq!(
            rows_of(&h, &[Datum::Int(1), Datum::Int(2)]),
            [[Datum::Int(12)]]
        );
        assert_eq!(
            rows_of(&h, &[Datum::Int(2), Datum::Int(1)]),
            [[Datum::Int(21)]]
        );
        assert!(rows_of(&h, &[Datum::Int(1), Datum::Int(1)]).is_empty());
        // A NULL-free key with a value of another kind goes to a general table.
        h.push(
            vec![Datum::Int(1), Datum::Float(2.0)],
            [Datum::Int(0)].into_iter(),
        );
        assert_eq!(
            rows_of(&h, &[Datum::Int(1), Datum::Float(2.0)]),
            [[Datum::Int(0)]]
        );
        assert_eq!(
            rows_of(&h, &[Datum::Int(1), Datum::Int(2)]),
            [[Datum::Int(12)]]
        );
    }
}
