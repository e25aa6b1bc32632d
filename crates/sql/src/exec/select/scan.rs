//! A scan node (`PlanNode::Scan`): the rows a source's access finds under the row joined so
//! far, each checked against the scan's conditions and passed on joined to it; with FOR UPDATE
//! each locked as it is passed on. A key-range lookup repeated under many rows that reads much
//! of its table each time turns into a hash join for the rest of the run. Never holds a row
//! past passing it on, except a derived table's, once per run.

use super::hash_join::hash_join;
use super::row_store::{RowStore, place};
use super::{Run, Sink, all_hold, derived_rows, eval_all, node, rows_node};
use crate::error::Result;
use crate::exec::rows::{fetch, fetch_each, lock_row};
use crate::expr::Expr;
use crate::plan::{Access, LockWait, Relation, Source};
use crate::values::datum::Datum;
use std::collections::HashSet;

/// The rows `source` finds under `row`, passing `filter`, each passed to `sink` joined to
/// `row`; false once the sink wants no more.
pub(super) fn scan(
    source: &Source,
    filter: &[Expr],
    lock: Option<&LockWait>,
    run: &mut Run<'_, '_, '_>,
    row: &mut Vec<Datum>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let access = &source.access;
    // Set for this scan only (the first table scan run after the LIMIT set it).
    let first_rows = run.first_rows.take();
    if let Access::Hash(keys) = access {
        return hash_join(source, keys, filter, run, row, sink);
    }
    let table = match &source.relation {
        Relation::Table(t) => t,
        Relation::Rows { rows, .. } => {
            return rows_node(rows, filter, run, row, sink);
        }
        Relation::Settings => {
            let settings = run.cx.settings.map(|s| s.all()).unwrap_or_default();
            let rows = crate::system::settings_rows(settings);
            return rows_node(&rows, filter, run, row, sink);
        }
        Relation::Classes => {
            let classes = run.cx.backends.map(|b| b.classes()).unwrap_or_default();
            let rows = crate::system::class_rows(classes);
            return rows_node(&rows, filter, run, row, sink);
        }
        // Read first (nothing joined before it), it runs once: its rows stream, so a
        // LIMIT above stops it (a recursive WITH query that would never end included).
        Relation::Subquery(plan) if row.is_empty() => {
            let visible = plan.visible;
            return node(&plan.root, run, &mut Vec::new(), &mut |run, r| {
                r.truncate(visible);
                if !all_hold(filter, r, run.cx)? {
                    return Ok(true);
                }
                sink(run, r)
            });
        }
        Relation::Subquery(plan) => {
            let rows = derived_rows(run, plan)?;
            return rows_node(&rows, filter, run, row, sink);
        }
        Relation::WorkTable(id) => {
            let rows = run.work_tables.get(id).cloned().unwrap_or_default();
            return rows_node(&rows, filter, run, row, sink);
        }
        Relation::Function {
            func,
            args,
            ordinality,
        } => {
            let values = eval_all(args, row, run.cx)?;
            let budget = &mut run.budget;
            let made = crate::exec::set_functions::values(*func, values, &mut |n| budget.take(n))?;
            let rows: Vec<Vec<Datum>> = made
                .into_iter()
                .zip(1..)
                .map(|(v, n)| match ordinality {
                    true => vec![v, Datum::Int(n)],
                    false => vec![v],
                })
                .collect();
            return rows_node(&rows, filter, run, row, sink);
        }
    };
    let outer = row.len();
    // Passes a found row on, joined to the row so far; false once the sink wants no more.
    let mut pass = |run: &mut Run<'_, '_, '_>, row: &mut Vec<Datum>, r: Vec<Datum>| {
        row.truncate(outer);
        row.extend(r);
        sink(run, row)
    };
    let mut go_on = true;
    match lock {
        Some(wait) => {
            // Each row is locked as it is passed on: a LIMIT above stops the locking
            // at the rows it returns. Under a LIMIT the keys are found a batch at a time:
            // a row that changed under its lock may leave the batch short, and then a
            // larger one is read, its keys already taken skipped.
            let mut limit = first_rows.map(|n| n.max(1));
            let mut taken: HashSet<Vec<u8>> = HashSet::new();
            'batches: loop {
                let mut keys = Vec::new();
                fetch(
                    run.txn,
                    table,
                    access,
                    filter,
                    row,
                    run.cx,
                    limit,
                    Some(&mut keys),
                )?;
                let whole = limit.is_none_or(|l| keys.len() < l);
                for key in &keys {
                    if limit.is_some() && !taken.insert(key.as_bytes().to_vec()) {
                        continue;
                    }
                    let locked = lock_row(run.txn, (table, *wait), key, filter, row, run.cx)?;
                    if let Some(r) = locked
                        && !pass(run, row, r)?
                    {
                        go_on = false;
                        break 'batches;
                    }
                }
                match limit {
                    Some(l) if !whole => limit = Some(l.saturating_mul(4)),
                    _ => break,
                }
            }
        }
        None => {
            if let Some(keys) = &source.hash_fallback
                && run
                    .lookups
                    .get(&(source as *const Source))
                    .is_some_and(|l| l.hashed)
            {
                row.truncate(outer);
                return hash_join(source, keys, filter, run, row, sink);
            }
            // Under a LIMIT, the first rows are read first; should the consumer want more
            // (it never does unless something above drops rows), a larger batch is read
            // again, its first rows, already passed on, skipped: a statement that locks
            // nothing reads one snapshot throughout, so they are the same rows.
            let mut limit = first_rows.map(|n| n.max(1));
            let mut passed = 0;
            // The rows found are kept as the values of the columns the statement reads (see
            // `row_store`).
            let read_columns: Vec<usize> = source.read_columns().collect();
            loop {
                row.truncate(outer);
                let mut read = 0;
                let mut values = RowStore::new(read_columns.len());
                fetch_each(
                    run.txn,
                    (table, access, filter, source.needed.as_deref()),
                    row,
                    run.cx,
                    &mut read,
                    &mut |combined, _| {
                        let taken = read_columns
                            .iter()
                            .map(|&c| std::mem::replace(&mut combined[outer + c], Datum::Null));
                        values.push(taken);
                        Ok(limit.is_none_or(|l| values.len() < l))
                    },
                )?;
                if source.hash_fallback.is_some() {
                    let rows = table.engine.slots_allocated() as u64;
                    run.lookups.entry(source).or_default().count(read, rows);
                }
                let found = values.len();
                let whole = limit.is_none_or(|l| found < l);
                let mut values = values.into_values().skip(passed * read_columns.len());
                for _ in passed..found {
                    place(row, (outer, source.width), &read_columns, values.by_ref());
                    if !sink(run, row)? {
                        go_on = false;
                        break;
                    }
                }
                match limit {
                    Some(l) if go_on && !whole => {
                        passed = found;
                        limit = Some(l.saturating_mul(4));
                    }
                    _ => break,
                }
            }
        }
    }
    row.truncate(outer);
    Ok(go_on)
}

/// A source's key-range lookups in one run (see `Source::hash_fallback`).
#[derive(Default)]
pub(super) struct Lookups {
    count: u64,
    read: u64,
    /// Its lookups are now probes of a hash table of it.
    hashed: bool,
}

impl Lookups {
    /// Counts a lookup that read `read` rows of a table of about `rows`. Past a few lookups,
    /// each reading at least a sixteenth of the table (and 64 rows), the table is read once
    /// into a hash table: that costs about what sixteen more lookups would, in memory the
    /// lookups were reading anyway. So does a run of many selective lookups (a key each) once
    /// they number an eighth of the table's rows: a lookup costs about what reading eight rows
    /// in order does, so by then the lookups have cost what building the table would, and
    /// switching never costs more than twice the better of the two (whatever the rows still
    /// to come). One lookup, or a few selective ones, never switch, nor do lookups of a table
    /// of a few hundred rows, which cost little either way.
    fn count(&mut self, read: u64, rows: u64) {
        self.count += 1;
        self.read += read;
        let each = self.read / self.count;
        let wide = self.count >= 4 && each >= 64 && each.saturating_mul(16) >= rows;
        let many = self.count >= 64 && rows >= 512 && self.count.saturating_mul(8) >= rows;
        self.hashed = wide || many;
    }
}

#[cfg(test)]
mod tests {
    use super::Lookups;

    #[test]
    fn lookups_turn_into_a_hash_join_only_when_they_read_much_of_the_table_or_are_many() {
        // One lookup, however much it reads, never switches.
        let mut one = Lookups::default();
        one.count(100_000, 100_000);
        assert!(!one.hashed);
        // Selective lookups never do.
        let mut selective = Lookups::default();
        for _ in 0..1000 {
            selective.count(5, 100_000);
        }
        assert!(!selective.hashed);
        // Until they number an eighth of the table's rows (and 64): then their cost has
        // reached a build's.
        let mut many = Lookups::default();
        for n in 1..=125 {
            many.count(1, 1000);
            assert_eq!(many.hashed, n == 125, "after {n}");
        }
        let mut few = Lookups::default();
        for _ in 0..63 {
            few.count(1, 512);
        }
        assert!(!few.hashed);
        // Lookups reading under a sixteenth of the table each do not either.
        let mut narrow = Lookups::default();
        for _ in 0..100 {
            narrow.count(1_000, 100_000);
        }
        assert!(!narrow.hashed);
        // The fourth of lookups each reading the whole table does.
        let mut wide = Lookups::default();
        for n in 1..=4 {
            wide.count(30_000, 30_000);
            assert_eq!(wide.hashed, n == 4);
        }
        // Small tables stay with their index (under 64 rows a lookup).
        let mut small = Lookups::default();
        for _ in 0..100 {
            small.count(40, 40);
        }
        assert!(!small.hashed);
    }
}
