//! Steps of the Hermitage tests (`test(id, value)`, see `hermitage_table`) that sessions run,
//! and what they check afterwards.

use std::ops::ControlFlow;
use std::sync::Arc;

use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyRange, Priority, ScanOptions, Table, Transaction,
};

use super::sessions::{Outcome, Progress};
use super::{HERMITAGE_ID as ID, HERMITAGE_VALUE as VALUE, hermitage_row as row};

/// A step: `select value from test where id = ?` (empty if absent).
pub fn read(
    t: &Arc<Table>,
    id: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let key = t.key().int(id).finish().expect("key");
        Ok(txn.get(&t, &key, |r| r.int(VALUE))?.into_iter().collect())
    }
}

/// A step: `update test set value = ? where id = ?`.
pub fn write(
    t: &Arc<Table>,
    id: i64,
    value: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let key = t.key().int(id).finish().expect("key");
        txn.update(&t, &key, |r| {
            r.int(VALUE, value);
        })?;
        Ok(Vec::new())
    }
}

/// A step: `insert into test values (?, ?)`.
pub fn insert(
    t: &Arc<Table>,
    id: i64,
    value: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.insert(&t, row(&t, id, value))?;
        Ok(Vec::new())
    }
}

/// Everything committed, as (id, value) pairs.
pub fn committed(db: &Database, t: &Table) -> Vec<(i64, i64)> {
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut out = Vec::new();
    txn.scan(t, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.push((r.int(ID), r.int(VALUE)));
        ControlFlow::Continue(())
    })
    .expect("scan");
    txn.commit().expect("commit");
    out
}

pub fn done(values: &[i64]) -> Progress {
    Progress::Done(Ok(values.to_vec()))
}

pub fn aborted(reason: AbortReason) -> Outcome {
    Err(Error::Aborted(reason))
}
