//! The order a FROM list's tables are joined in, when it names two or more without explicit
//! joins (`FROM a, b WHERE ...`): the cheapest of every order that joins a source the
//! conditions connect to those before it (one no condition connects only when none left is
//! connected), or past ten sources the cheapest of the greedy orders from each source first
//! (each time the source whose rows each joined row finds fewest). A source's rows are as the
//! engine counts them, scaled by the share of its ANALYZE sample the conditions on it alone
//! keep (fixed shares without one); each joined row finds one row of a source by its whole
//! primary key, else its rows scaled by the equalities joining it (one over an analyzed
//! column's distinct values). An order costs the rows each join makes, the rows of each
//! source read whole (scanned or hashed) and each row a hash table keeps again (a hash join
//! builds on the later side: the smaller one should be it), or, for a source an index finds,
//! the rows each lookup reads and a seek.
//!
//! Must never reorder what the order changes the meaning of: explicit joins (outer joins,
//! USING), or functions in FROM (which read the sources before them).

use crate::catalog::statistics::Sample;
use crate::expr::{BinOp, Expr};
use crate::plan::{Access, Relation, Source};
use sqlparser::ast;

/// How many rows a derived table (or other source the catalog does not count) is taken to
/// have.
const UNCOUNTED_ROWS: f64 = 1000.0;

/// The most a join order may plan to hold in one hash table: a quarter of the default
/// `statement_mem`, so that the statement's other tables, groups and sorts fit too.
const HASH_BYTES: f64 = 256.0 * 1024.0 * 1024.0;

/// What keeping a row in a hash table costs, in rows read: hashing its key and copying its
/// values, about what two probes cost.
const BUILD: f64 = 2.0;

/// What finding where an index lookup's rows start costs, in rows read: a descent of the index
/// and a first read elsewhere in memory, paid once per lookup (CH Q9 at a few warehouses: a
/// range of order lines looked up under each of 90k orders ran 5x slower than scanning them
/// against a hash of the few items wanted, which rows alone costed as close).
const SEEK: f64 = 4.0;

/// Up to how many sources every order is costed (2^n sets of them); past it, greedy orders.
const EXHAUSTIVE: usize = 10;

/// What an order holding a larger hash table costs more: more than any order's rows.
const OVERSIZED: f64 = 1e15;

/// About what one row of `source` takes in a hash table: a value per column and the row's
/// own overhead (strings not counted: the columns nothing reads are not decoded).
fn hashed_row_bytes(source: &Source) -> f64 {
    (source.width * std::mem::size_of::<crate::values::datum::Datum>() + 64) as f64
}

/// The order to join `select`'s FROM items in (positions in its FROM list), if it is not the
/// written one, given its `sources` and conditions by level (`filters`) bound in the written
/// order.
pub(super) fn choose(
    select: &ast::Select,
    sources: &[Source],
    filters: &[Vec<Expr>],
) -> Option<Vec<usize>> {
    let n = sources.len();
    if n < 2 || select.from.len() != n || select.from.iter().any(|t| !t.joins.is_empty()) {
        return None;
    }
    let first_column = sources[0].offset;
    let source_of = |c: usize| {
        sources
            .iter()
            .position(|s| (s.offset..s.offset + s.width).contains(&c))
    };
    // The sources each condition reads (an enclosing query's columns are constants here).
    let conditions: Vec<(&Expr, Vec<usize>)> = filters
        .iter()
        .flatten()
        .map(|c| {
            let mut reads = Vec::new();
            c.visit(&mut |e| {
                if let Expr::Column(col) = e
                    && *col >= first_column
                    && let Some(s) = source_of(*col)
                    && !reads.contains(&s)
                {
                    reads.push(s);
                }
            });
            (c, reads)
        })
        .collect();
    // How many of a source's columns an analyzed sample has: a table's own (not its `ctid`).
    let sampled_width = |s: &Source| match &s.relation {
        Relation::Table(t) => t.columns.len(),
        _ => s.width,
    };
    let mut rows = Vec::with_capacity(n);
    let mut bases = Vec::with_capacity(n);
    let mut samples = Vec::with_capacity(n);
    for (i, s) in sources.iter().enumerate() {
        let sample = match &s.relation {
            Relation::Table(t) => t.statistics.sample(),
            _ => None,
        };
        let base = match &s.relation {
            Relation::Table(t) => t.rows_estimate(sample.as_deref()).max(1) as f64,
            Relation::Rows { rows, .. } => rows.len().max(1) as f64,
            Relation::Subquery(_)
            | Relation::WorkTable(_)
            | Relation::Settings
            | Relation::Classes => UNCOUNTED_ROWS,
            Relation::Function { .. } => return None,
        };
        // The conditions on it alone keep the share of its analyzed sample they hold for
        // (see `catalog::statistics`); those the sample cannot tell, or on a table never
        // analyzed, a fixed share each.
        let alone: Vec<&Expr> = conditions
            .iter()
            .filter(|(_, r)| r.as_slice() == [i])
            .map(|(c, _)| *c)
            .collect();
        bases.push(base);
        let own = s.offset..s.offset + sampled_width(s);
        let (sampled, guessed): (Vec<&Expr>, Vec<&Expr>) = alone
            .into_iter()
            .partition(|c| sample.is_some() && Sample::evaluable(c, own.clone()));
        let share = match (&sample, sampled.is_empty()) {
            (_, true) => Some(1.0),
            (Some(sample), false) => sample.share(&sampled, s.offset, sampled_width(s)),
            (None, false) => None,
        };
        let guessed = match share {
            Some(_) => guessed,
            None => sampled.into_iter().chain(guessed).collect(),
        };
        let scaled = guessed.iter().fold(base * share.unwrap_or(1.0), |rows, c| {
            rows * crate::catalog::statistics::guessed_share(c)
        });
        // One row by its whole key, from constants (not from the sources before it).
        let keyed = matches!(&s.access, Access::Key(key)
            if key.iter().all(|e| e.max_column().is_none_or(|m| m < first_column)));
        rows.push(if keyed { 1.0 } else { scaled.max(1.0) });
        samples.push(sample.filter(|x| x.distinct.len() == sampled_width(s)));
    }
    // Distinct values of `e` (over source `c`'s columns alone), if `c` was analyzed.
    // Each estimated once: the greedy orders ask for the same ones many times, and an
    // expression's is evaluated over the whole sample. A column is known by its position (the
    // lookups below ask with a temporary), another expression by the condition holding it.
    let estimated = std::cell::RefCell::new(std::collections::HashMap::new());
    let distinct = |c: usize, e: &Expr| {
        let key = match e {
            Expr::Column(i) => (c, false, *i),
            _ => (c, true, e as *const Expr as usize),
        };
        if let Some(d) = estimated.borrow().get(&key) {
            return *d;
        }
        let s = &sources[c];
        let d = samples[c]
            .as_ref()
            .and_then(|x| x.distinct_of(e, s.offset, sampled_width(s)));
        estimated.borrow_mut().insert(key, d);
        d
    };
    // The rows a source finds for each joined row once `joined` are: one by its whole primary
    // key bound by equalities, else its rows scaled by the equalities joining it; and, if it
    // is looked up through an index rather than read whole, the rows each lookup reads.
    let per_row = |c: usize, joined: &[usize]| -> (f64, Option<f64>) {
        let s = &sources[c];
        let Relation::Table(t) = &s.relation else {
            // A derived table's (or a list's) rows: each equality joining it taken to find
            // one (its joined columns as if unique: a grouped subquery's keys are).
            let joining = conditions.iter().any(|(e, reads)| {
                matches!(e, Expr::Binary(BinOp::Eq, ..))
                    && reads.contains(&c)
                    && reads.iter().all(|x| *x == c || joined.contains(x))
                    && reads.len() > 1
            });
            return (if joining { 1.0 } else { rows[c] }, None);
        };
        let bound = |col: usize| {
            conditions.iter().any(|(e, reads)| {
                let Expr::Binary(BinOp::Eq, l, r) = e else {
                    return false;
                };
                let other_known = reads.iter().all(|x| *x == c || joined.contains(x));
                other_known
                    && [(&**l, &**r), (&**r, &**l)].iter().any(|(mine, other)| {
                        matches!(mine, Expr::Column(m) if *m == s.offset + col)
                            && other
                                .max_column()
                                .is_none_or(|m| m < s.offset || m >= s.offset + s.width)
                    })
            })
        };
        if !t.primary_key.is_empty() && t.primary_key.iter().all(|&k| bound(k)) {
            // The row found, if its own conditions keep it.
            return ((rows[c] / bases[c]).min(1.0), Some(1.0));
        }
        // Each equality joining it keeps a share of its rows: one on an analyzed column (or
        // an expression of its columns) one of its distinct values; else one on its key's columns alone (a function of them, or
        // part of them) few, one on another column more, one on an expression of other
        // columns (a state's first letter) most.
        let key_column = |col: usize| t.primary_key.contains(&(col - s.offset));
        let own = s.offset..s.offset + s.width;
        let mut share = 1.0;
        for (e, reads) in &conditions {
            let Expr::Binary(BinOp::Eq, l, r) = e else {
                continue;
            };
            if !reads.contains(&c) || reads.iter().any(|x| *x != c && !joined.contains(x)) {
                continue;
            }
            let Some(side) = [&**l, &**r].into_iter().find(|side| {
                let mut all_own = true;
                let mut any = false;
                side.visit(&mut |x| {
                    if let Expr::Column(col) = x {
                        any = true;
                        all_own &= own.contains(col);
                    }
                });
                any && all_own
            }) else {
                continue;
            };
            let mut on_key = true;
            side.visit(&mut |x| {
                if let Expr::Column(col) = x {
                    on_key &= key_column(*col);
                }
            });
            share *= match side {
                side if let Some(d) = distinct(c, side) => 1.0 / d.max(1.0),
                _ if on_key => 0.001,
                Expr::Column(_) => 0.01,
                _ => 0.1,
            };
        }
        // Through an index whose leading columns are bound (the primary key's or another's)
        // it is looked up per row, reading the rows those columns select, if that is under a
        // sixteenth of the table (else the run reads it whole: see `exec::select::scan`).
        let prefix_reads = |columns: &[usize]| {
            let mut reads = None;
            for &k in columns.iter().take_while(|&&k| bound(k)) {
                let d = distinct(c, &Expr::Column(s.offset + k)).unwrap_or(100.0);
                reads = Some(reads.unwrap_or(bases[c]) / d.max(1.0));
            }
            reads
        };
        let reads = std::iter::once(prefix_reads(&t.primary_key))
            .chain(t.indexes.iter().map(|i| prefix_reads(&i.columns)))
            .flatten()
            .min_by(f64::total_cmp)
            .filter(|r| r * 16.0 < bases[c]);
        ((rows[c] * share).max(1.0), reads.map(|r| r.max(1.0)))
    };
    let connected = |c: usize, joined: &[usize]| {
        conditions.iter().any(|(_, reads)| {
            reads.contains(&c)
                && reads.len() > 1
                && reads.iter().all(|x| *x == c || joined.contains(x))
        })
    };
    let smallest = |order: &[usize], pick: &dyn Fn(usize) -> Option<f64>| {
        (0..n)
            .filter(|c| !order.contains(c))
            .filter_map(|c| Some((c, pick(c)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map(|(c, _)| c)
    };
    // Joining `next` to `order` (whose joins made `joined_rows`): what it costs (every source
    // read whole, scanned or hashed; one found through an index looked up per row) and the
    // rows it makes.
    let step = |order: &[usize], joined_rows: f64, next: usize| -> (f64, f64) {
        let (each, lookup) = match connected(next, order) {
            true => per_row(next, order),
            false => (rows[next], None),
        };
        let mut cost = match lookup {
            // Past a share of the table, its lookups turn into a hash join of it (see
            // `exec::select::scan`).
            Some(reads) => (joined_rows * (reads + SEEK)).min(bases[next] + BUILD * rows[next]),
            None => bases[next] + BUILD * rows[next],
        };
        // Read whole into a hash table larger than a statement should hold: an order to take
        // only if every other needs one too.
        if lookup.is_none() && rows[next] * hashed_row_bytes(&sources[next]) > HASH_BYTES {
            cost += OVERSIZED;
        }
        let joined = (joined_rows * each).max(1.0);
        (cost + joined, joined)
    };
    // The first is read whole, or through an index its constants select.
    let first = |start: usize| per_row(start, &[]).1.unwrap_or(bases[start]) + rows[start];
    // Which may come next: a source the conditions connect to those joined, or any when none
    // of those left is connected.
    let may_follow = |order: &[usize], c: usize| {
        connected(c, order) || !(0..n).any(|x| !order.contains(&x) && connected(x, order))
    };
    let best = if n <= EXHAUSTIVE {
        // Every order, the cheapest for each set of sources kept (a set's rows are much the
        // same whatever the order that joined it).
        let mut by_set: Vec<Option<(f64, f64, Vec<usize>)>> = vec![None; 1 << n];
        for start in 0..n {
            by_set[1 << start] = Some((first(start), rows[start], vec![start]));
        }
        for set in 1..(1usize << n) {
            let Some((cost, joined, order)) = by_set[set].clone() else {
                continue;
            };
            for next in (0..n).filter(|c| set & (1 << c) == 0) {
                if !may_follow(&order, next) {
                    continue;
                }
                let (added, joined) = step(&order, joined, next);
                let to = &mut by_set[set | (1 << next)];
                if to.as_ref().is_none_or(|(c, ..)| cost + added < *c) {
                    let mut longer = order.clone();
                    longer.push(next);
                    *to = Some((cost + added, joined, longer));
                }
            }
        }
        by_set[(1 << n) - 1]
            .take()
            .map(|(cost, _, order)| (order, cost))
    } else {
        // From each source first, the greedy order: each time the source whose rows each
        // joined row finds fewest.
        let from = |start: usize| -> Option<(Vec<usize>, f64)> {
            let mut order = vec![start];
            let (mut cost, mut joined_rows) = (first(start), rows[start]);
            while order.len() < n {
                let next = smallest(&order, &|c| {
                    connected(c, &order).then(|| per_row(c, &order).0)
                })
                .or_else(|| smallest(&order, &|c| Some(rows[c])))?;
                let (added, joined) = step(&order, joined_rows, next);
                (cost, joined_rows) = (cost + added, joined);
                order.push(next);
            }
            Some((order, cost))
        };
        let mut best: Option<(Vec<usize>, f64)> = None;
        for start in 0..n {
            let (order, cost) = from(start)?;
            if best.as_ref().is_none_or(|(_, b)| cost < *b) {
                best = Some((order, cost));
            }
        }
        best
    };
    let (order, _) = best?;
    (order.iter().enumerate().any(|(i, &c)| i != c)).then_some(order)
}
