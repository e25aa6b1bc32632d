//! `ANALYZE` of one table: every row it holds is counted and a uniform sample of them kept as
//! its statistics (see `catalog::statistics`), by reservoir sampling over one scan.
//!
//! Must never hold more than the sample: a row is decoded only when it enters the sample.

use std::ops::ControlFlow;

use overtake_engine::{KeyRange, ScanOptions, Transaction};

use super::rows::read_row;
use crate::catalog::SqlTable;
use crate::catalog::statistics::{SAMPLE_ROWS, Sample, distinct_in_sample};
use crate::error::Result;
use crate::expr::Context;

/// Takes `table`'s statistics in `txn` (what its snapshot sees).
pub fn analyze(txn: &mut Transaction<'_>, table: &SqlTable, cx: &Context<'_>) -> Result<()> {
    // Seeded by the table, so that one table's sample is the same each time over the same
    // rows (plans do not change between two runs over unchanged data).
    let mut rng = fastrand::Rng::with_seed(u64::from(table.oid));
    let mut rows = 0u64;
    let mut values: Vec<Vec<_>> = Vec::with_capacity(SAMPLE_ROWS);
    let mut failure = None;
    txn.scan(
        &table.engine,
        &KeyRange::all(),
        ScanOptions::forward(),
        |row| {
            rows += 1;
            if rows.is_multiple_of(256)
                && let Err(e) = cx.check_cancel()
            {
                failure = Some(e);
                return ControlFlow::Break(());
            }
            if values.len() < SAMPLE_ROWS {
                values.push(read_row(table, row));
            } else {
                // The n-th row replaces a sampled one with probability SAMPLE_ROWS / n.
                let slot = rng.u64(..rows) as usize;
                if slot < SAMPLE_ROWS {
                    values[slot] = read_row(table, row);
                }
            }
            ControlFlow::Continue(())
        },
    )?;
    if let Some(e) = failure {
        return Err(e);
    }
    let distinct = (0..table.columns.len())
        .map(|c| distinct_in_sample(values.iter().map(|r| r[c].clone()).collect(), rows))
        .collect();
    table.statistics.set(Sample {
        rows,
        values,
        distinct,
    });
    Ok(())
}
