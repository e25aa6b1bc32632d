//! Stock-Level (clause 2.8.2): how many of the items of a district's last 20 orders are low in
//! stock (read only).

use std::ops::ControlFlow;

use overtake_engine::{KeyBuf, KeyRange, Result, ScanOptions, Table, Transaction};

use super::missing;
use crate::tpcc::input::StockLevelInput;
use crate::tpcc::schema::{district, order_line, stock};
use crate::tpcc::{ITEMS, TpccTables};

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
    use super::distinct;
    use crate::tpcc::ITEMS;

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
}
