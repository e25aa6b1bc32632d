//! Order-Status (clause 2.6.2): a customer's balance and last order with its lines (read only).

use std::ops::ControlFlow;

use overtake_engine::{KeyRange, Result, ScanOptions, Transaction};

use super::{missing, prefetch_customer, resolve_customer};
use crate::tpcc::TpccTables;
use crate::tpcc::input::OrderStatusInput;
use crate::tpcc::schema::{customer, order, order_line};

/// What Order-Status reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderStatusOutput {
    /// The customer.
    pub c_id: i64,
    /// Their balance, in cents.
    pub c_balance: i64,
    /// Their most recent order, if any.
    pub o_id: Option<i64>,
    /// Lines of that order.
    pub lines: usize,
    /// Sum of the lines' amounts, in cents.
    pub amount: i64,
}

/// Order-Status (clause 2.6.2). Read-only.
pub fn order_status(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    input: &OrderStatusInput,
) -> Result<OrderStatusOutput> {
    let (w_id, d_id) = (input.w_id, input.d_id);
    let c_id = resolve_customer(txn, t, w_id, d_id, &input.customer)?;
    let customer_key = t.customer.key().int(w_id).int(d_id).int(c_id).finish()?;
    // The customer's row is cold: asked for before the search for its last order, read after.
    prefetch_customer(txn, t, &input.customer, &customer_key);
    let prefix = t
        .order
        .index_key(t.order_by_customer)
        .int(w_id)
        .int(d_id)
        .int(c_id)
        .prefix()?;
    let mut o_id = None;
    txn.scan_index(
        &t.order,
        t.order_by_customer,
        &KeyRange::prefix(prefix),
        ScanOptions::reverse().limit(1),
        |r| {
            let _ = (
                r.timestamp(order::O_ENTRY_D),
                r.is_null(order::O_CARRIER_ID),
            );
            o_id = Some(r.int(order::O_ID));
            ControlFlow::Break(())
        },
    )?;
    let c_balance = txn
        .get(&t.customer, &customer_key, |r| {
            // The terminal shows the name too; reading it is part of the transaction's work.
            let _ = (
                r.str(customer::C_FIRST),
                r.str(customer::C_MIDDLE),
                r.str(customer::C_LAST),
            );
            r.decimal_units(customer::C_BALANCE)
        })?
        .ok_or_else(|| missing(&t.customer))?;
    let (mut lines, mut amount) = (0, 0);
    if let Some(o_id) = o_id {
        let prefix = t.order_line.key().int(w_id).int(d_id).int(o_id).prefix()?;
        lines = txn.scan(
            &t.order_line,
            &KeyRange::prefix(prefix),
            ScanOptions::forward(),
            |r| {
                let _ = (
                    r.int(order_line::OL_I_ID),
                    r.int(order_line::OL_SUPPLY_W_ID),
                    r.int(order_line::OL_QUANTITY),
                    r.is_null(order_line::OL_DELIVERY_D),
                );
                amount += r.decimal_units(order_line::OL_AMOUNT);
                ControlFlow::Continue(())
            },
        )?;
    }
    Ok(OrderStatusOutput {
        c_id,
        c_balance,
        o_id,
        lines,
        amount,
    })
}
