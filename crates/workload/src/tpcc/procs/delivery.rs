//! Delivery (clause 2.7.4): the oldest undelivered order of each district is delivered.
//!
//! It never commits (its caller does); a district without an undelivered order is skipped.

use std::ops::ControlFlow;

use overtake_engine::{KeyBuf, KeyRange, Result, ScanOptions, Table, Transaction};

use super::missing;
use crate::tpcc::input::DeliveryInput;
use crate::tpcc::schema::{customer, new_order, order, order_line};
use crate::tpcc::{DISTRICTS, TpccTables};

/// What Delivery reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryOutput {
    /// Districts that had an undelivered order.
    pub delivered: usize,
    /// Districts skipped because they had none.
    pub skipped: usize,
}

/// Delivery (clause 2.7.4), all ten districts in one transaction.
pub fn delivery(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    input: &DeliveryInput,
) -> Result<DeliveryOutput> {
    let w_id = input.w_id;
    let mut out = DeliveryOutput::default();
    // The districts' work is done in phases, each over all ten districts, so that the rows a
    // phase needs (cold: old orders, their customers) are asked for together and their misses
    // overlap, instead of each district's following the last's. The reads and writes are those
    // of the clause's loop; the districts are independent, so only their interleaving differs.
    // 1. Each district's oldest undelivered order.
    let mut oldest: Vec<(i64, i64)> = Vec::with_capacity(DISTRICTS as usize);
    for d_id in 1..=DISTRICTS {
        let prefix = t.new_order.key().int(w_id).int(d_id).prefix()?;
        let mut found = None;
        txn.scan(
            &t.new_order,
            &KeyRange::prefix(prefix),
            ScanOptions::forward().limit(1),
            |r| {
                found = Some(r.int(new_order::NO_O_ID));
                ControlFlow::Break(())
            },
        )?;
        match found {
            Some(o_id) => oldest.push((d_id, o_id)),
            None => out.skipped += 1,
        }
    }
    // 2. Take each out of NEW-ORDER and stamp its carrier, learning its customer.
    let order_keys = oldest
        .iter()
        .map(|&(d_id, o_id)| t.order.key().int(w_id).int(d_id).int(o_id).finish())
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<(&Table, &KeyBuf)> = order_keys.iter().map(|k| (&*t.order, k)).collect();
    txn.prefetch_rows(&rows);
    let mut customers = Vec::with_capacity(oldest.len());
    for (&(d_id, o_id), order_key) in oldest.iter().zip(&order_keys) {
        if !txn.delete(
            &t.new_order,
            &t.new_order.key().int(w_id).int(d_id).int(o_id).finish()?,
        )? {
            return Err(missing(&t.new_order));
        }
        let mut c_id = 0;
        let found = txn.update(&t.order, order_key, |r| {
            c_id = r.as_ref().int(order::O_C_ID);
            r.int(order::O_CARRIER_ID, input.o_carrier_id);
        })?;
        if !found {
            return Err(missing(&t.order));
        }
        customers.push(t.customer.key().int(w_id).int(d_id).int(c_id).finish()?);
    }
    let rows: Vec<(&Table, &KeyBuf)> = customers.iter().map(|k| (&*t.customer, k)).collect();
    txn.prefetch_rows(&rows);
    // 3. Sum each order's lines while stamping their delivery date, and credit its customer.
    for (&(d_id, o_id), customer_key) in oldest.iter().zip(&customers) {
        let prefix = t.order_line.key().int(w_id).int(d_id).int(o_id).prefix()?;
        let mut amount = 0;
        txn.update_range(
            &t.order_line,
            &KeyRange::prefix(prefix),
            ScanOptions::forward(),
            |r| {
                amount += r.as_ref().decimal_units(order_line::OL_AMOUNT);
                r.timestamp(order_line::OL_DELIVERY_D, input.delivery_d);
            },
        )?;
        let found = txn.update(&t.customer, customer_key, |r| {
            let row = r.as_ref();
            let balance = row.decimal_units(customer::C_BALANCE);
            let deliveries = row.int(customer::C_DELIVERY_CNT);
            r.decimal_units(customer::C_BALANCE, balance + amount)
                .int(customer::C_DELIVERY_CNT, deliveries + 1);
        })?;
        if !found {
            return Err(missing(&t.customer));
        }
        out.delivered += 1;
    }
    Ok(out)
}
