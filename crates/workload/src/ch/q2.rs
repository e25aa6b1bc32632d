//! CH-benCHmark Query 2 as a stored procedure.
//!
//! ```sql
//! SELECT su_suppkey, su_name, n_name, i_id, i_name, su_address, su_phone, su_comment
//! FROM item, supplier, stock, nation, region,
//!      (SELECT s_i_id AS m_i_id, MIN(s_quantity) AS m_s_quantity
//!       FROM stock, supplier, nation, region
//!       WHERE MOD((s_w_id * s_i_id), 10000) = su_suppkey AND su_nationkey = n_nationkey
//!         AND n_regionkey = r_regionkey AND r_name LIKE 'Europ%'
//!       GROUP BY s_i_id) m
//! WHERE i_id = s_i_id AND MOD((s_w_id * s_i_id), 10000) = su_suppkey
//!   AND su_nationkey = n_nationkey AND n_regionkey = r_regionkey
//!   AND i_data LIKE '%b' AND r_name LIKE 'Europ%'
//!   AND i_id = m_i_id AND s_quantity = m_s_quantity
//! ORDER BY n_name, su_name, i_id
//! ```
//!
//! Plan: find the European regions, their nations and suppliers; scan every item, keeping those
//! whose data ends in 'b'; for each, look up its stock row in every warehouse whose supplier
//! (`mod(w * i, 10000)`) is European, take the minimum quantity among them, and emit the stock rows at
//! that minimum. The subquery's minimum is only ever joined with the outer item, so computing it for
//! the selected items alone gives the same rows. A read-only transaction over one snapshot: the
//! long, low-priority transaction of the PreemptDB setup.

use std::ops::ControlFlow;

use overtake_engine::{Error, KeyRange, Result, ScanOptions, Transaction};

use super::{ChTables, SUPPLIERS, nation, region, supplier};
use crate::tpcc::TpccTables;
use crate::tpcc::schema::{item, stock, warehouse};

/// One result row.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q2Row {
    /// Supplier key.
    pub su_suppkey: i64,
    /// Supplier name.
    pub su_name: String,
    /// Nation name.
    pub n_name: String,
    /// Item id.
    pub i_id: i64,
    /// Item name.
    pub i_name: String,
    /// Supplier address.
    pub su_address: String,
    /// Supplier phone.
    pub su_phone: String,
    /// Supplier comment.
    pub su_comment: String,
}

/// Runs Query 2 in `txn`, returning its rows in the query's order.
pub fn query2(txn: &mut Transaction<'_>, tpcc: &TpccTables, ch: &ChTables) -> Result<Vec<Q2Row>> {
    // European regions and their nations' names.
    let mut regions = Vec::new();
    txn.scan(&ch.region, &KeyRange::all(), ScanOptions::forward(), |r| {
        if r.bytes(region::R_NAME).starts_with(b"Europ") {
            regions.push(r.int(region::R_REGIONKEY));
        }
        ControlFlow::Continue(())
    })?;
    let mut nations: Vec<(i64, String)> = Vec::new();
    txn.scan(&ch.nation, &KeyRange::all(), ScanOptions::forward(), |r| {
        if regions.contains(&r.int(nation::N_REGIONKEY)) {
            nations.push((r.int(nation::N_NATIONKEY), r.str(nation::N_NAME).to_owned()));
        }
        ControlFlow::Continue(())
    })?;
    // For each supplier key, the index in `nations` of its nation if European.
    let mut european: Vec<Option<u8>> = vec![None; SUPPLIERS as usize];
    txn.scan(
        &ch.supplier,
        &KeyRange::all(),
        ScanOptions::forward(),
        |r| {
            let key = r.int(supplier::SU_SUPPKEY);
            let nation_key = r.int(supplier::SU_NATIONKEY);
            if let (Ok(k), Some(n)) = (
                usize::try_from(key),
                nations.iter().position(|(n, _)| *n == nation_key),
            ) && k < european.len()
            {
                european[k] = Some(n as u8);
            }
            ControlFlow::Continue(())
        },
    )?;
    let mut warehouses = Vec::new();
    txn.scan(
        &tpcc.warehouse,
        &KeyRange::all(),
        ScanOptions::forward(),
        |r| {
            warehouses.push(r.int(warehouse::W_ID));
            ControlFlow::Continue(())
        },
    )?;

    // Items whose data ends in 'b'.
    let mut items: Vec<(i64, String)> = Vec::new();
    txn.scan(&tpcc.item, &KeyRange::all(), ScanOptions::forward(), |r| {
        if r.bytes(item::I_DATA).ends_with(b"b") {
            items.push((r.int(item::I_ID), r.str(item::I_NAME).to_owned()));
        }
        ControlFlow::Continue(())
    })?;

    // Per item: the stock rows with a European supplier at the minimum quantity.
    let mut hits: Vec<(i64, usize, u8)> = Vec::new(); // (suppkey, item index, nation index)
    let mut candidates: Vec<(i64, i64, u8)> = Vec::new(); // (quantity, suppkey, nation index)
    for (index, &(i_id, _)) in items.iter().enumerate() {
        candidates.clear();
        for &w_id in &warehouses {
            let suppkey = (w_id * i_id).rem_euclid(SUPPLIERS);
            let Some(nation) = european[suppkey as usize] else {
                continue;
            };
            let key = tpcc.stock.key().int(w_id).int(i_id).finish()?;
            if let Some(quantity) = txn.get(&tpcc.stock, &key, |r| r.int(stock::S_QUANTITY))? {
                candidates.push((quantity, suppkey, nation));
            }
        }
        if let Some(min) = candidates.iter().map(|c| c.0).min() {
            hits.extend(
                candidates
                    .iter()
                    .filter(|c| c.0 == min)
                    .map(|&(_, suppkey, nation)| (suppkey, index, nation)),
            );
        }
    }

    let mut rows = Vec::with_capacity(hits.len());
    for (suppkey, index, nation) in hits {
        let key = ch.supplier.key().int(suppkey).finish()?;
        let row = txn
            .get(&ch.supplier, &key, |r| Q2Row {
                su_suppkey: suppkey,
                su_name: r.str(supplier::SU_NAME).to_owned(),
                n_name: nations[usize::from(nation)].1.clone(),
                i_id: items[index].0,
                i_name: items[index].1.clone(),
                su_address: r.str(supplier::SU_ADDRESS).to_owned(),
                su_phone: r.str(supplier::SU_PHONE).to_owned(),
                su_comment: r.str(supplier::SU_COMMENT).to_owned(),
            })?
            .ok_or_else(|| Error::RowNotFound {
                table: ch.supplier.name().to_owned(),
            })?;
        rows.push(row);
    }
    rows.sort_by(|a, b| (&a.n_name, &a.su_name, a.i_id).cmp(&(&b.n_name, &b.su_name, b.i_id)));
    Ok(rows)
}
