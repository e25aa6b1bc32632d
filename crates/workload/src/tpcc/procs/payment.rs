//! Payment (clause 2.5.2): a customer pays, by id or by last name; the warehouse, district and
//! customer balances move and a history row records it.
//!
//! It never commits (its caller does).

use overtake_engine::{Result, Transaction};

use super::{ShortStr, missing, prefetch_customer, resolve_customer};
use crate::tpcc::TpccTables;
use crate::tpcc::input::PaymentInput;
use crate::tpcc::schema::{customer, district, history, warehouse};

/// What Payment reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaymentOutput {
    /// The paying customer.
    pub c_id: i64,
    /// Their balance after the payment, in cents.
    pub c_balance: i64,
    /// Whether the customer has bad credit (and so had `C_DATA` rewritten).
    pub bad_credit: bool,
}

/// Payment (clause 2.5.2).
pub fn payment(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    input: &PaymentInput,
) -> Result<PaymentOutput> {
    let (w_id, d_id, amount) = (input.w_id, input.d_id, input.h_amount);
    // The customer first: its row is cold (one of 30,000 per warehouse), the warehouse's and
    // district's are not. Asking for it now lets its misses overlap with their updates.
    let (c_w_id, c_d_id) = (input.c_w_id, input.c_d_id);
    let c_id = resolve_customer(txn, t, c_w_id, c_d_id, &input.customer)?;
    let customer_key = t
        .customer
        .key()
        .int(c_w_id)
        .int(c_d_id)
        .int(c_id)
        .finish()?;
    prefetch_customer(txn, t, &input.customer, &customer_key);
    let mut w_name = ShortStr::new(b"");
    let found = txn.update(&t.warehouse, &t.warehouse.key().int(w_id).finish()?, |r| {
        let row = r.as_ref();
        w_name = ShortStr::new(row.bytes(warehouse::W_NAME));
        let ytd = row.decimal_units(warehouse::W_YTD);
        r.decimal_units(warehouse::W_YTD, ytd + amount);
    })?;
    if !found {
        return Err(missing(&t.warehouse));
    }
    let mut d_name = ShortStr::new(b"");
    let found = txn.update(
        &t.district,
        &t.district.key().int(w_id).int(d_id).finish()?,
        |r| {
            let row = r.as_ref();
            d_name = ShortStr::new(row.bytes(district::D_NAME));
            let ytd = row.decimal_units(district::D_YTD);
            r.decimal_units(district::D_YTD, ytd + amount);
        },
    )?;
    if !found {
        return Err(missing(&t.district));
    }

    let (mut c_balance, mut bad_credit) = (0, false);
    let found = txn.update(&t.customer, &customer_key, |r| {
        let row = r.as_ref();
        c_balance = row.decimal_units(customer::C_BALANCE) - amount;
        let ytd = row.decimal_units(customer::C_YTD_PAYMENT);
        let count = row.int(customer::C_PAYMENT_CNT);
        bad_credit = row.bytes(customer::C_CREDIT) == b"BC";
        let data = bad_credit.then(|| {
            let mut data = format!(
                "{c_id} {c_d_id} {c_w_id} {d_id} {w_id} {}.{:02} | ",
                amount / 100,
                amount % 100
            );
            data.push_str(row.str(customer::C_DATA));
            data.truncate(500);
            data
        });
        r.decimal_units(customer::C_BALANCE, c_balance)
            .decimal_units(customer::C_YTD_PAYMENT, ytd + amount)
            .int(customer::C_PAYMENT_CNT, count + 1);
        if let Some(data) = &data {
            r.str(customer::C_DATA, data);
        }
    })?;
    if !found {
        return Err(missing(&t.customer));
    }

    let mut h_data = String::with_capacity(24);
    h_data.push_str(w_name.as_str());
    h_data.push_str("    ");
    h_data.push_str(d_name.as_str());
    let row = t
        .history
        .row_builder()
        .int(history::H_C_ID, c_id)
        .int(history::H_C_D_ID, c_d_id)
        .int(history::H_C_W_ID, c_w_id)
        .int(history::H_D_ID, d_id)
        .int(history::H_W_ID, w_id)
        .timestamp(history::H_DATE, input.h_date)
        .decimal_units(history::H_AMOUNT, amount)
        .str(history::H_DATA, &h_data)
        .finish()?;
    txn.insert(&t.history, row)?;
    Ok(PaymentOutput {
        c_id,
        c_balance,
        bad_credit,
    })
}
