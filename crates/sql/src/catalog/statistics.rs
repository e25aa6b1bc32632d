//! What ANALYZE saw of a table, for the planner: how many rows it held and a uniform sample of
//! them. The planner estimates how many rows a table's own conditions keep by evaluating them
//! on the sample (a LIKE, a range, an OR of anything), as PostgreSQL estimates a pattern from
//! its histogram's values; with no sample it falls back to fixed shares.
//!
//! Shared by every description of one table (a rebuilt description keeps its statistics), and
//! replaced whole by each ANALYZE. Must never be taken as exact: rows written since are not in
//! it. Its lock is held only inside a non-preemptible region, to clone or swap one pointer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::expr::{BinOp, Context, Expr, Func};
use crate::values::datum::Datum;
use crate::values::key::{Key, KeyMap};

/// Rows a sample holds at most: enough to tell a condition keeping a few percent from one
/// keeping a few per mille, and cheap to evaluate a condition on while planning.
pub const SAMPLE_ROWS: usize = 1000;

/// A table's statistics (none until it is analyzed).
#[derive(Debug, Default)]
pub struct Statistics {
    analyzed: RegionMutex<Option<Arc<Sample>>>,
    /// Rows written (inserted, updated, deleted) since it was last analyzed.
    changed: AtomicU64,
    /// The rows the last ANALYZE counted (read by every write statement, so kept apart from
    /// the sample's lock).
    analyzed_rows: AtomicU64,
    /// An automatic ANALYZE of it is under way.
    analyzing: AtomicBool,
}

/// Rows written to a table that make it due for an automatic ANALYZE, besides the share
/// below (PostgreSQL's `autovacuum_analyze_threshold`).
const AUTO_ANALYZE_ROWS: f64 = 50.0;
/// The share of its rows written that makes a table due (PostgreSQL's
/// `autovacuum_analyze_scale_factor`).
const AUTO_ANALYZE_SHARE: f64 = 0.1;

/// What one ANALYZE saw.
#[derive(Debug)]
pub struct Sample {
    /// Rows the table held.
    pub rows: u64,
    /// Up to [`SAMPLE_ROWS`] of them, each equally likely to be here, with every column.
    pub values: Vec<Vec<Datum>>,
    /// How many distinct values each column holds, estimated from the sample (see
    /// [`estimate_distinct`]).
    pub distinct: Vec<f64>,
}

/// How many distinct values a column of a table of `rows` rows holds, from its `values` in a
/// sample of its rows (one each): those not NULL, counted by [`estimate_distinct`].
pub fn distinct_in_sample(values: Vec<Datum>, rows: u64) -> f64 {
    let sampled = values.len();
    let mut seen: KeyMap<u32> = KeyMap::default();
    let mut n = 0;
    for v in values.into_iter().filter(|v| !v.is_null()) {
        *seen.entry(Key::one(v)).or_default() += 1;
        n += 1;
    }
    let once = seen.values().filter(|&&k| k == 1).count();
    let non_null = (rows as f64 * n as f64 / sampled.max(1) as f64) as u64;
    estimate_distinct(non_null, n, seen.len(), once)
}

/// How many distinct values a column of `rows` rows holds, from a sample of `n` of its rows in
/// which `d` distinct values were seen, `once` of them only once: Haas and Stokes' Duj1
/// estimator, PostgreSQL's too. A sample in which every value was seen once is of a column
/// whose every value is distinct; the whole table sampled counts exactly.
pub fn estimate_distinct(rows: u64, n: usize, d: usize, once: usize) -> f64 {
    let (rows, n, d, once) = (rows as f64, n as f64, d as f64, once as f64);
    if n == 0.0 {
        return 0.0;
    }
    if n >= rows {
        return d;
    }
    if once >= n {
        return rows;
    }
    let estimate = n * d / (n - once + once * n / rows);
    estimate.clamp(d, rows)
}

impl Statistics {
    /// The last sample taken, if any.
    pub fn sample(&self) -> Option<Arc<Sample>> {
        let region = NoPreemptGuard::new();
        self.analyzed.lock(&region).clone()
    }

    /// Keeps `sample` as the table's statistics.
    pub fn set(&self, sample: Sample) {
        let sample = Arc::new(sample);
        self.changed.store(0, Ordering::Relaxed);
        self.analyzed_rows.store(sample.rows, Ordering::Relaxed);
        let region = NoPreemptGuard::new();
        *self.analyzed.lock(&region) = Some(sample);
    }

    /// Counts `rows` written to the table; true if that makes it due for an automatic
    /// ANALYZE (more rows written since the last than 50 and a tenth of those it had then, as
    /// PostgreSQL's autovacuum decides) and none is under way: the caller starts one and
    /// calls [`auto_analyze_ended`](Statistics::auto_analyze_ended) when it ends.
    pub fn note_writes(&self, rows: u64) -> bool {
        if rows == 0 {
            return false;
        }
        let changed = self.changed.fetch_add(rows, Ordering::Relaxed) + rows;
        let had = self.analyzed_rows.load(Ordering::Relaxed);
        let due = changed as f64 > AUTO_ANALYZE_ROWS + AUTO_ANALYZE_SHARE * had as f64;
        due && !self.analyzing.swap(true, Ordering::AcqRel)
    }

    /// An automatic ANALYZE started by [`note_writes`](Statistics::note_writes) ended (done or
    /// failed): another may start.
    pub fn auto_analyze_ended(&self) {
        self.analyzing.store(false, Ordering::Release);
    }
}

impl Sample {
    /// Whether `condition` can be evaluated on a sample of a table whose columns are `own`
    /// of the rows it reads: it reads nothing else (a parameter, another table, a subquery,
    /// a sequence) and sets no setting.
    pub fn evaluable(condition: &Expr, own: std::ops::Range<usize>) -> bool {
        let mut ok = true;
        condition.visit(&mut |e| {
            ok &= match e {
                Expr::Column(i) => own.contains(i),
                Expr::Param(_)
                | Expr::Lookup(..)
                | Expr::Sequence(..)
                | Expr::Init(_)
                | Expr::SubPlan(_)
                | Expr::Quantified { .. }
                | Expr::InInit { .. }
                | Expr::Func(Func::SetConfig, _) => false,
                _ => true,
            };
        });
        ok
    }

    /// How many distinct values `expr` (of the table's columns only, at `offset` of the rows
    /// it reads: a column, or `mod(a * b, 10000)`) takes over the table's non-NULL rows,
    /// estimated from its values on the sample. `None` as for [`share`](Sample::share).
    pub fn distinct_of(&self, expr: &Expr, offset: usize, width: usize) -> Option<f64> {
        if let Expr::Column(c) = expr {
            return self.distinct.get(c.checked_sub(offset)?).copied();
        }
        let own = offset..offset + width;
        if self.values.is_empty()
            || self.values.iter().any(|r| r.len() != width)
            || !Sample::evaluable(expr, own)
        {
            return None;
        }
        let cx = Context::new(&[], crate::values::time::now_micros());
        let mut row = vec![Datum::Null; offset];
        let mut values = Vec::with_capacity(self.values.len());
        for sampled in &self.values {
            row.truncate(offset);
            row.extend_from_slice(sampled);
            values.push(expr.eval(&row, &cx).ok()?);
        }
        Some(distinct_in_sample(values, self.rows))
    }

    /// The share of the table's rows for which every one of `conditions` (each
    /// [`evaluable`](Sample::evaluable)) holds, the table's columns being at `offset` of the
    /// rows they read: the share of the sample's rows they hold for (a share below one row of
    /// the sample counts as half a row). `None` if a condition fails on a sampled row, or the
    /// sample is empty or of another width than the table's `width` columns now (a column
    /// was added since).
    pub fn share(&self, conditions: &[&Expr], offset: usize, width: usize) -> Option<f64> {
        let own = offset..offset + width;
        if self.values.is_empty()
            || self.values.iter().any(|r| r.len() != width)
            || !conditions.iter().all(|c| Sample::evaluable(c, own.clone()))
        {
            return None;
        }
        let cx = Context::new(&[], crate::values::time::now_micros());
        let mut row = vec![Datum::Null; offset];
        let mut kept = 0usize;
        for values in &self.values {
            row.truncate(offset);
            row.extend_from_slice(values);
            let mut all = true;
            for c in conditions {
                all &= c.holds(&row, &cx).ok()?;
                if !all {
                    break;
                }
            }
            kept += usize::from(all);
        }
        let n = self.values.len() as f64;
        Some((kept as f64).max(0.5) / n)
    }
}

/// The share of rows a condition is taken to keep when no sample can tell: an equality 1/20,
/// anything else 1/4.
pub fn guessed_share(condition: &Expr) -> f64 {
    match condition {
        Expr::Binary(BinOp::Eq, ..) => 0.05,
        _ => 0.25,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::BinOp;

    fn sample() -> Sample {
        Sample {
            rows: 100,
            values: (0..100)
                .map(|i| vec![Datum::Int(i), Datum::Int(i % 10)])
                .collect(),
            distinct: vec![100.0, 10.0],
        }
    }

    #[test]
    fn a_table_is_due_for_analyze_after_50_rows_and_a_tenth_of_its_rows_written() {
        let stats = Statistics::default();
        // Never analyzed: past 50 rows written.
        assert!(!stats.note_writes(50));
        assert!(stats.note_writes(1));
        // One under way: no other until it ends.
        assert!(!stats.note_writes(1000));
        stats.auto_analyze_ended();
        stats.set(Sample {
            rows: 1000,
            values: Vec::new(),
            distinct: Vec::new(),
        });
        // 1,000 rows analyzed: past 150 written since.
        assert!(!stats.note_writes(150));
        assert!(!stats.note_writes(0));
        assert!(stats.note_writes(1));
    }

    #[test]
    fn distinct_values_are_estimated_from_the_sample() {
        // The whole table sampled: exactly what was seen.
        assert_eq!(estimate_distinct(100, 100, 10, 0), 10.0);
        // Every sampled value seen once: every value distinct.
        assert_eq!(estimate_distinct(100_000, 1000, 1000, 1000), 100_000.0);
        // Each value seen many times: about the values seen.
        let few = estimate_distinct(100_000, 1000, 10, 0);
        assert_eq!(few, 10.0);
        // Most seen once: many more than were seen, never more than the rows.
        let many = estimate_distinct(300_000, 1000, 998, 996);
        assert!(many > 100_000.0 && many < 300_000.0, "{many}");
    }

    fn lt(column: usize, v: i64) -> Expr {
        Expr::Binary(
            BinOp::Lt,
            Box::new(Expr::Column(column)),
            Box::new(Expr::Literal(Datum::Int(v))),
        )
    }

    #[test]
    fn a_share_is_the_share_of_sampled_rows_every_condition_holds_for() {
        let s = sample();
        // Columns at offset 3: the first table's column 0 is column 3 of the joined row.
        assert_eq!(s.share(&[&lt(3, 30)], 3, 2), Some(0.3));
        assert_eq!(s.share(&[&lt(3, 30), &lt(4, 5)], 3, 2), Some(0.15));
        // None kept: half a sampled row.
        assert_eq!(s.share(&[&lt(3, -1)], 3, 2), Some(0.005));
    }

    #[test]
    fn conditions_reading_more_than_the_sample_are_not_estimated() {
        let s = sample();
        // Another table's column.
        assert_eq!(s.share(&[&lt(1, 30)], 3, 2), None);
        // A parameter.
        let param = Expr::Binary(
            BinOp::Lt,
            Box::new(Expr::Column(3)),
            Box::new(Expr::Param(0)),
        );
        assert_eq!(s.share(&[&param], 3, 2), None);
        // An empty sample.
        let empty = Sample {
            rows: 0,
            values: Vec::new(),
            distinct: Vec::new(),
        };
        assert_eq!(empty.share(&[&lt(3, 30)], 3, 2), None);
        // A table that gained a column since.
        assert_eq!(s.share(&[&lt(3, 30)], 3, 3), None);
    }
}
