//! The five TPC-C transactions (clauses 2.4.2, 2.5.2, 2.6.2, 2.7.4, 2.8.2) as stored procedures,
//! one module each, and what more than one of them needs (finding a customer by id or name).
//!
//! Each procedure runs inside a transaction it is given and returns the values the specification's
//! terminal output shows, so that no work can be skipped as unused. New-Order's 1% invalid item
//! rolls the transaction back with [`Transaction::rollback`], which retry policies do not retry.
//! A procedure never commits: its caller does, and retries it after a conflict.

use std::ops::ControlFlow;

use overtake_engine::{Error, KeyBuf, KeyRange, Result, ScanOptions, Table, Transaction};

use super::TpccTables;
use super::input::CustomerSelector;
use super::schema::customer;

mod delivery;
mod new_order;
mod order_status;
mod payment;
mod stock_level;

pub use delivery::{DeliveryOutput, delivery};
pub use new_order::{NewOrderOutput, new_order};
pub use order_status::{OrderStatusOutput, order_status};
pub use payment::{PaymentOutput, payment};
pub use stock_level::stock_level;

fn missing(table: &Table) -> Error {
    Error::RowNotFound {
        table: table.name().to_owned(),
    }
}

/// The customer a selector designates: by id, or the middle (rounded up) of the customers with that
/// last name in order of first name (clause 2.5.2.2).
fn resolve_customer(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    w_id: i64,
    d_id: i64,
    selector: &CustomerSelector,
) -> Result<i64> {
    match selector {
        CustomerSelector::Id(c_id) => Ok(*c_id),
        CustomerSelector::LastName(last) => {
            let prefix = t
                .customer
                .index_key(t.customer_by_name)
                .int(w_id)
                .int(d_id)
                .str(last)
                .prefix()?;
            let mut ids: Vec<i64> = Vec::with_capacity(8);
            txn.scan_index(
                &t.customer,
                t.customer_by_name,
                &KeyRange::prefix(prefix),
                ScanOptions::forward(),
                |r| {
                    ids.push(r.int(customer::C_ID));
                    ControlFlow::Continue(())
                },
            )?;
            if ids.is_empty() {
                return Err(missing(&t.customer));
            }
            Ok(ids[ids.len().div_ceil(2) - 1])
        }
    }
}

/// Starts loading the row of a customer chosen by id (one chosen by name was just read by the
/// scan that found it).
fn prefetch_customer(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    selector: &CustomerSelector,
    customer_key: &KeyBuf,
) {
    if let CustomerSelector::Id(_) = selector {
        txn.prefetch_rows(&[(&t.customer, customer_key)]);
    }
}

/// Copies a short string column into a stack buffer (reading it must not hold the row).
#[derive(Clone, Copy)]
pub(super) struct ShortStr {
    bytes: [u8; 24],
    len: usize,
}

impl ShortStr {
    pub(super) fn new(s: &[u8]) -> Self {
        let mut bytes = [0u8; 24];
        let len = s.len().min(24);
        bytes[..len].copy_from_slice(&s[..len]);
        ShortStr { bytes, len }
    }

    pub(super) fn as_str(&self) -> &str {
        // Copied whole from a stored (UTF-8, ASCII in TPC-C) string column.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}
