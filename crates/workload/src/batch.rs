//! A long low-priority writer for the mixed workload: a back-office batch that books one payment
//! per district of one warehouse, all in one transaction, then computes (a report, a model
//! update) for a set time. Successive batches take the warehouses in turn.
//!
//! Each booking is a TPC-C Payment (warehouse, district and customer updated, a history row
//! inserted), so the database stays consistent. Every urgent New-Order writes a district row this
//! batch writes, and every urgent Payment the warehouse row and a district row: the worst case for
//! a low-priority writer that urgent ones overtake. With buffered writes the urgent ones always get
//! through; the batch conflicts with every one that commits while it runs, and only commits when a
//! promoted attempt (see `overtake_engine::RetryPolicy::promote_after`) holds them off.

use overtake_engine::{Result, Transaction};

use crate::compute::ComputeTask;
use crate::tpcc::input::{CustomerSelector, PaymentInput};
use crate::tpcc::{CUSTOMERS, DISTRICTS, TpccTables, procs};

/// Amount of each booking, in cents.
const BOOKING_CENTS: i64 = 1;

/// One batch: the warehouse and the customer of each district it books for, and the computation
/// that follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchUpdate {
    /// The warehouse booked.
    pub w_id: i64,
    /// Customer id booked in every district.
    pub c_id: i64,
    /// The computation after the bookings.
    pub compute: ComputeTask,
}

impl BatchUpdate {
    /// The `n`-th batch on a database of `warehouses`: each books in the next warehouse, for the
    /// next customer, so that batches differ.
    pub fn nth(n: u64, warehouses: i64, compute: ComputeTask) -> Self {
        BatchUpdate {
            w_id: 1 + (n % warehouses.max(1) as u64) as i64,
            c_id: 1 + (n / warehouses.max(1) as u64 % CUSTOMERS as u64) as i64,
            compute,
        }
    }
}

/// Runs one batch in `txn`; returns the computation's result.
pub fn batch_update(txn: &mut Transaction<'_>, t: &TpccTables, batch: &BatchUpdate) -> Result<u64> {
    let w_id = batch.w_id;
    for d_id in 1..=DISTRICTS {
        let booking = PaymentInput {
            w_id,
            d_id,
            c_w_id: w_id,
            c_d_id: d_id,
            customer: CustomerSelector::Id(batch.c_id),
            h_amount: BOOKING_CENTS,
            h_date: 0,
        };
        procs::payment(txn, t, &booking)?;
    }
    Ok(batch.compute.run())
}
