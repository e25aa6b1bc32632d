//! New-Order (clause 2.4.2): an order of 5 to 15 lines, each taking stock from a warehouse.
//!
//! It never commits (its caller does); its 1% invalid item rolls back.

use overtake_engine::{KeyBuf, Result, Table, Transaction};

use super::{ShortStr, missing};
use crate::tpcc::TpccTables;
use crate::tpcc::input::{NewOrderInput, OrderLineInput};
use crate::tpcc::schema::{
    customer, district, item, new_order, order, order_line, stock, warehouse,
};

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    // A New-Order checks twenty 26-50 byte strings for "ORIGINAL": comparing at every offset
    // cost about 150 instructions each. Candidates are the offsets of the needle's first byte,
    // found a vector at a time.
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let last_start = haystack.len().saturating_sub(rest.len());
    memchr::memchr_iter(first, &haystack[..last_start])
        .any(|at| haystack[at + 1..].starts_with(rest))
}

/// What New-Order reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewOrderOutput {
    /// The new order's id.
    pub o_id: i64,
    /// Total amount in cents, after discount and taxes.
    pub total: i64,
    /// Lines whose item and stock both carry "ORIGINAL" (brand-generic 'B').
    pub brand_lines: usize,
}

/// New-Order (clause 2.4.2).
pub fn new_order(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    input: &NewOrderInput,
) -> Result<NewOrderOutput> {
    let (w_id, d_id) = (input.w_id, input.d_id);
    // The customer's row and every line's item and stock rows (cold in a large table) are asked
    // for first, so that their cache misses overlap with each other and with the work on the
    // warehouse and district, instead of following one another.
    let customer_key = t
        .customer
        .key()
        .int(w_id)
        .int(d_id)
        .int(input.c_id)
        .finish()?;
    let lines = input.lines();
    let keys = lines
        .iter()
        .map(|line| Ok((item_key(t, line)?, stock_key(t, line)?)))
        .collect::<Result<Vec<_>>>()?;
    let mut rows: Vec<(&Table, &KeyBuf)> = Vec::with_capacity(1 + 2 * keys.len());
    rows.push((&*t.customer, &customer_key));
    rows.extend(
        keys.iter()
            .flat_map(|(item, stock)| [(&*t.item, item), (&*t.stock, stock)]),
    );
    txn.prefetch_rows(&rows);
    let w_tax = txn
        .get(&t.warehouse, &t.warehouse.key().int(w_id).finish()?, |r| {
            r.decimal_units(warehouse::W_TAX)
        })?
        .ok_or_else(|| missing(&t.warehouse))?;
    let (mut d_tax, mut o_id) = (0, 0);
    let district_key = t.district.key().int(w_id).int(d_id).finish()?;
    let found = txn.update(&t.district, &district_key, |r| {
        let row = r.as_ref();
        d_tax = row.decimal_units(district::D_TAX);
        o_id = row.int(district::D_NEXT_O_ID);
        r.int(district::D_NEXT_O_ID, o_id + 1);
    })?;
    if !found {
        return Err(missing(&t.district));
    }
    let c_discount = txn
        .get(&t.customer, &customer_key, |r| {
            r.decimal_units(customer::C_DISCOUNT)
        })?
        .ok_or_else(|| missing(&t.customer))?;

    let all_local = lines.iter().all(|l| l.supply_w_id == w_id);
    let row = t
        .order
        .row_builder()
        .int(order::O_W_ID, w_id)
        .int(order::O_D_ID, d_id)
        .int(order::O_ID, o_id)
        .int(order::O_C_ID, input.c_id)
        .timestamp(order::O_ENTRY_D, input.entry_d)
        .null(order::O_CARRIER_ID)
        .int(order::O_OL_CNT, lines.len() as i64)
        .int(order::O_ALL_LOCAL, i64::from(all_local))
        .finish()?;
    txn.insert(&t.order, row)?;
    let row = t
        .new_order
        .row_builder()
        .int(new_order::NO_W_ID, w_id)
        .int(new_order::NO_D_ID, d_id)
        .int(new_order::NO_O_ID, o_id)
        .finish()?;
    txn.insert(&t.new_order, row)?;

    let mut line_builder = t.order_line.row_builder();
    let (mut sum, mut brand_lines) = (0i64, 0);
    for (n, (line, (item_key, stock_key))) in lines.iter().zip(&keys).enumerate() {
        let Some((price, item_original)) = txn.get(&t.item, item_key, |r| {
            (
                r.decimal_units(item::I_PRICE),
                contains(r.bytes(item::I_DATA), b"ORIGINAL"),
            )
        })?
        else {
            // "Item number is not valid": the specified 1% rollback.
            return Err(txn.rollback());
        };
        let mut dist_info = ShortStr::new(b"");
        let mut stock_original = false;
        let remote = line.supply_w_id != w_id;
        let found = txn.update(&t.stock, stock_key, |r| {
            let row = r.as_ref();
            let quantity = row.int(stock::S_QUANTITY);
            let ytd = row.int(stock::S_YTD);
            let orders = row.int(stock::S_ORDER_CNT);
            let remotes = row.int(stock::S_REMOTE_CNT);
            dist_info = ShortStr::new(row.bytes(stock::S_DIST_01 + d_id as usize - 1));
            stock_original = contains(row.bytes(stock::S_DATA), b"ORIGINAL");
            let left = if quantity >= line.quantity + 10 {
                quantity - line.quantity
            } else {
                quantity - line.quantity + 91
            };
            r.int(stock::S_QUANTITY, left)
                .int(stock::S_YTD, ytd + line.quantity)
                .int(stock::S_ORDER_CNT, orders + 1);
            if remote {
                r.int(stock::S_REMOTE_CNT, remotes + 1);
            }
        })?;
        if !found {
            return Err(missing(&t.stock));
        }
        let amount = line.quantity * price;
        sum += amount;
        brand_lines += usize::from(item_original && stock_original);
        line_builder
            .int(order_line::OL_W_ID, w_id)
            .int(order_line::OL_D_ID, d_id)
            .int(order_line::OL_O_ID, o_id)
            .int(order_line::OL_NUMBER, n as i64 + 1)
            .int(order_line::OL_I_ID, line.i_id)
            .int(order_line::OL_SUPPLY_W_ID, line.supply_w_id)
            .null(order_line::OL_DELIVERY_D)
            .int(order_line::OL_QUANTITY, line.quantity)
            .decimal_units(order_line::OL_AMOUNT, amount)
            .str(order_line::OL_DIST_INFO, dist_info.as_str());
        txn.insert(&t.order_line, line_builder.finish()?)?;
    }
    // total = sum * (1 - discount) * (1 + w_tax + d_tax); rates have 4 decimals.
    let total =
        i128::from(sum) * i128::from(10_000 - c_discount) * i128::from(10_000 + w_tax + d_tax)
            / 100_000_000;
    Ok(NewOrderOutput {
        o_id,
        total: total as i64,
        brand_lines,
    })
}

/// The ITEM key of an order line.
fn item_key(t: &TpccTables, line: &OrderLineInput) -> Result<KeyBuf> {
    t.item.key().int(line.i_id).finish()
}

/// The STOCK key of an order line (its supplying warehouse's stock of the item).
fn stock_key(t: &TpccTables, line: &OrderLineInput) -> Result<KeyBuf> {
    t.stock.key().int(line.supply_w_id).int(line.i_id).finish()
}

#[cfg(test)]
mod tests {
    use super::contains;

    /// The search finds what comparing at every offset finds: the needle at each position, cut
    /// short at the end, near misses, and haystacks shorter than the needle.
    #[test]
    fn substring_search_agrees_with_comparing_every_offset() {
        let slow = |h: &[u8], n: &[u8]| n.is_empty() || h.windows(n.len()).any(|w| w == n);
        let needle = b"ORIGINAL";
        for len in 0..=52 {
            let base: Vec<u8> = (0..len).map(|i| b"abcOdefORIGINAxyz"[i % 17]).collect();
            assert_eq!(contains(&base, needle), slow(&base, needle), "{len} bytes");
            for at in 0..=len {
                let mut h = base.clone();
                for (i, &b) in needle.iter().enumerate() {
                    if let Some(slot) = h.get_mut(at + i) {
                        *slot = b;
                    }
                }
                assert_eq!(
                    contains(&h, needle),
                    slow(&h, needle),
                    "{len} bytes, at {at}"
                );
            }
        }
        assert!(contains(b"", b""));
        assert!(!contains(b"ORIGINA", needle));
    }
}
