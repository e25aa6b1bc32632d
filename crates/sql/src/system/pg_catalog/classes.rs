//! `overtake_stat_classes`, Overtake's own statistics view: a row per priority level saying
//! where its transactions' time went (queued, running, preempted, waiting for the client, for
//! locks, for the log), as the server's scheduler booked them. Its rows are made when a
//! statement reads them (see `plan::Relation::Classes`), from `expr::Backends::classes`.
//!
//! Must never show an estimate as a total: every column is what the scheduler counted.

use crate::expr::ClassTimes;
use crate::values::datum::Datum;
use crate::values::types::SqlType::{self, *};

pub(in crate::system) const COLUMNS: &[(&str, SqlType)] = &[
    ("priority", Text),
    ("committed", Int8),
    ("rolled_back", Int8),
    ("preemptions", Int8),
    ("queued_us", Float8),
    ("running_us", Float8),
    ("preempted_us", Float8),
    ("client_wait_us", Float8),
    ("lock_wait_us", Float8),
    ("log_wait_us", Float8),
    ("other_wait_us", Float8),
];

/// The view's rows for `classes`, in their order.
pub(crate) fn rows(classes: Vec<ClassTimes>) -> Vec<Vec<Datum>> {
    classes
        .into_iter()
        .map(|c| {
            vec![
                Datum::Text(c.priority),
                Datum::Int(c.committed),
                Datum::Int(c.rolled_back),
                Datum::Int(c.preemptions),
                Datum::Float(c.queued_us),
                Datum::Float(c.running_us),
                Datum::Float(c.preempted_us),
                Datum::Float(c.client_wait_us),
                Datum::Float(c.lock_wait_us),
                Datum::Float(c.log_wait_us),
                Datum::Float(c.other_wait_us),
            ]
        })
        .collect()
}
