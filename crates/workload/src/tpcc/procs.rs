//! The five TPC-C transactions (clauses 2.4.2, 2.5.2, 2.6.2, 2.7.4, 2.8.2) as stored procedures.
//!
//! Each procedure runs inside a transaction it is given and returns the values the specification's
//! terminal output shows, so that no work can be skipped as unused. New-Order's 1% invalid item
//! rolls the transaction back with [`Transaction::rollback`], which retry policies do not retry.

use std::ops::ControlFlow;

use overtake_engine::{Error, KeyBuf, KeyRange, Result, ScanOptions, Table, Transaction};

use super::input::{
    CustomerSelector, DeliveryInput, NewOrderInput, OrderLineInput, OrderStatusInput, PaymentInput,
    StockLevelInput,
};
use super::schema::{
    customer, district, history, item, new_order, order, order_line, stock, warehouse,
};
use super::{DISTRICTS, ITEMS, TpccTables};

fn missing(table: &Table) -> Error {
    Error::RowNotFound {
        table: table.name().to_owned(),
    }
}

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

/// Copies a short string column into a stack buffer (reading it must not hold the row).
#[derive(Clone, Copy)]
struct ShortStr {
    bytes: [u8; 24],
    len: usize,
}

impl ShortStr {
    fn new(s: &[u8]) -> Self {
        let mut bytes = [0u8; 24];
        let len = s.len().min(24);
        bytes[..len].copy_from_slice(&s[..len]);
        ShortStr { bytes, len }
    }

    fn as_str(&self) -> &str {
        // Copied whole from a stored (UTF-8, ASCII in TPC-C) string column.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
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

/// Stock-Level (clause 2.8.2). Read-only. Returns the number of distinct items of the district's
/// last 20 orders whose stock is below the threshold.
pub fn stock_level(
    txn: &mut Transaction<'_>,
    t: &TpccTables,
    input: &StockLevelInput,
) -> Result<usize> {
    let (w_id, d_id) = (input.w_id, input.d_id);
    let next_o_id = txn
        .get(
            &t.district,
            &t.district.key().int(w_id).int(d_id).finish()?,
            |r| r.int(district::D_NEXT_O_ID),
        )?
        .ok_or_else(|| missing(&t.district))?;
    let range = KeyRange::new(
        std::ops::Bound::Included(
            t.order_line
                .key()
                .int(w_id)
                .int(d_id)
                .int(next_o_id - 20)
                .prefix()?,
        ),
        std::ops::Bound::Excluded(
            t.order_line
                .key()
                .int(w_id)
                .int(d_id)
                .int(next_o_id)
                .prefix()?,
        ),
    );
    let mut items: Vec<i64> = Vec::with_capacity(300);
    txn.scan(&t.order_line, &range, ScanOptions::forward(), |r| {
        items.push(r.int(order_line::OL_I_ID));
        ControlFlow::Continue(())
    })?;
    distinct(&mut items);
    // The stock rows are scattered over the table: each batch is prefetched first, so that
    // their cache misses overlap instead of following one another.
    let mut low = 0;
    let mut warehouse_stock = t.stock.key();
    warehouse_stock.int(w_id);
    let mut keys = Vec::with_capacity(32);
    for batch in items.chunks(32) {
        keys.clear();
        for &i_id in batch {
            keys.push(warehouse_stock.clone().int(i_id).finish()?);
        }
        let rows: Vec<(&Table, &KeyBuf)> = keys.iter().map(|key| (&*t.stock, key)).collect();
        // Only the quantity is read, in the first line of each (long) stock row.
        txn.prefetch_row_starts(&rows);
        for key in &keys {
            let quantity = txn
                .get(&t.stock, key, |r| r.int(stock::S_QUANTITY))?
                .ok_or_else(|| missing(&t.stock))?;
            low += usize::from(quantity < input.threshold);
        }
    }
    Ok(low)
}

/// Keeps the first of each value in `items` (in their order), through a small open-addressing
/// set on the stack: sorting the ~200 ids of a Stock-Level took 5% of its instructions. Ids
/// outside TPC-C's range (1 to [`ITEMS`]), or more than the set holds, are sorted instead.
fn distinct(items: &mut Vec<i64>) {
    const SLOTS: usize = 1024;
    if items.len() > SLOTS / 2 || items.iter().any(|&i| !(1..=ITEMS).contains(&i)) {
        items.sort_unstable();
        items.dedup();
        return;
    }
    // 0 marks an empty slot (ids start at 1); at most half full, so probes stay short.
    let mut slots = [0u32; SLOTS];
    items.retain(|&i| {
        let id = i as u32;
        let mut at = (id.wrapping_mul(0x9E37_79B1) >> 22) as usize;
        loop {
            match slots[at] {
                0 => {
                    slots[at] = id;
                    return true;
                }
                seen if seen == id => return false,
                _ => at = (at + 1) % SLOTS,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::{ITEMS, contains, distinct};

    /// Each value once, whatever the order and range: what sorting and deduplicating keeps.
    #[test]
    fn distinct_keeps_each_item_once() {
        let cases: [&[i64]; 7] = [
            &[],
            &[5, 5, 5],
            &[ITEMS, 1, 64, 63, 65, 1, ITEMS, 128, 64],
            &[3, 0, 3],
            &[7, ITEMS + 1, -2, 7],
            // More than the set holds, with collisions on every slot's neighbours.
            &(0..1500).map(|i| 1 + (i * 37) % 700).collect::<Vec<_>>(),
            &(0..500).map(|i| 1 + (i * 1024) % ITEMS).collect::<Vec<_>>(),
        ];
        for case in cases {
            let mut kept = case.to_vec();
            distinct(&mut kept);
            let mut expected = case.to_vec();
            expected.sort_unstable();
            expected.dedup();
            let mut sorted = kept.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, expected, "{case:?}");
            assert_eq!(kept.len(), expected.len(), "{case:?}");
        }
    }

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
