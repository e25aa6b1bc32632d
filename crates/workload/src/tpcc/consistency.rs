//! The consistency conditions of TPC-C clause 3.3.2, checked over one snapshot.
//!
//! Conditions 1-10 and 12 hold at any time. Condition 11
//! (`count(ORDER) - count(NEW-ORDER) = 2100` per district) only holds until the first Delivery, so
//! it is checked when the caller says the database is freshly loaded.

use std::collections::HashMap;
use std::ops::ControlFlow;

use overtake_engine::{
    Database, Isolation, KeyRange, Priority, Result, ScanOptions, Table, Transaction,
};

use super::schema::{customer, district, history, new_order, order, order_line, warehouse};
use super::{FIRST_UNDELIVERED, TpccTables};

/// A condition that does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Condition number (clause 3.3.2.N).
    pub condition: u8,
    /// Where and how.
    pub detail: String,
}

/// The outcome of a check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsistencyReport {
    /// Conditions that were checked.
    pub checked: Vec<u8>,
    /// What failed (at most a few per condition).
    pub violations: Vec<Violation>,
}

impl ConsistencyReport {
    /// True if every checked condition holds.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// `"ok"`, or the failed conditions, e.g. `"condition 3 failed: district (1,4): ..."`.
    pub fn summary(&self) -> String {
        match self.violations.first() {
            None => "ok".to_owned(),
            Some(v) => {
                let mut failed: Vec<u8> = self.violations.iter().map(|v| v.condition).collect();
                failed.dedup();
                let list: Vec<String> = failed.iter().map(u8::to_string).collect();
                format!(
                    "condition {} failed: {} ({} violations)",
                    list.join(", "),
                    v.detail,
                    self.violations.len()
                )
            }
        }
    }

    fn fail(&mut self, condition: u8, detail: impl FnOnce() -> String) {
        if self
            .violations
            .iter()
            .filter(|v| v.condition == condition)
            .count()
            < 5
        {
            self.violations.push(Violation {
                condition,
                detail: detail(),
            });
        }
    }
}

fn pack(w: i64, d: i64, x: i64) -> u64 {
    ((w as u64) << 44) | ((d as u64) << 36) | x as u64
}

fn scan_all(
    txn: &mut Transaction<'_>,
    table: &Table,
    mut visit: impl FnMut(overtake_engine::RowRef<'_>),
) -> Result<usize> {
    txn.scan(table, &KeyRange::all(), ScanOptions::forward(), |r| {
        visit(r);
        ControlFlow::Continue(())
    })
}

#[derive(Default)]
struct DistrictFacts {
    ytd: i64,
    next_o_id: i64,
    history_sum: i64,
    orders: i64,
    max_o_id: i64,
    ol_cnt_sum: i64,
    order_lines: i64,
    new_orders: i64,
    min_no: Option<i64>,
    max_no: Option<i64>,
}

struct OrderFacts {
    c_id: i64,
    carrier_null: bool,
    ol_cnt: i64,
    lines: i64,
}

/// Checks the database in one consistent snapshot.
pub fn check(db: &Database, t: &TpccTables, initial: bool) -> Result<ConsistencyReport> {
    let mut report = ConsistencyReport {
        checked: if initial {
            (1..=12).collect()
        } else {
            (1..=12).filter(|&c| c != 11).collect()
        },
        violations: Vec::new(),
    };
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot)?;

    let mut warehouses: HashMap<i64, (i64, i64)> = HashMap::new(); // w -> (ytd, history sum)
    scan_all(&mut txn, &t.warehouse, |r| {
        warehouses.insert(
            r.int(warehouse::W_ID),
            (r.decimal_units(warehouse::W_YTD), 0),
        );
    })?;
    let mut districts: HashMap<(i64, i64), DistrictFacts> = HashMap::new();
    scan_all(&mut txn, &t.district, |r| {
        districts.insert(
            (r.int(district::D_W_ID), r.int(district::D_ID)),
            DistrictFacts {
                ytd: r.decimal_units(district::D_YTD),
                next_o_id: r.int(district::D_NEXT_O_ID),
                ..DistrictFacts::default()
            },
        );
    })?;
    let mut customers: HashMap<u64, (i64, i64)> = HashMap::new(); // -> (history sum, delivered sum)
    scan_all(&mut txn, &t.history, |r| {
        let amount = r.decimal_units(history::H_AMOUNT);
        let (w, d) = (r.int(history::H_W_ID), r.int(history::H_D_ID));
        if let Some(wh) = warehouses.get_mut(&w) {
            wh.1 += amount;
        }
        if let Some(dist) = districts.get_mut(&(w, d)) {
            dist.history_sum += amount;
        }
        let c = pack(
            r.int(history::H_C_W_ID),
            r.int(history::H_C_D_ID),
            r.int(history::H_C_ID),
        );
        customers.entry(c).or_default().0 += amount;
    })?;

    let mut new_orders: std::collections::HashSet<u64> = std::collections::HashSet::new();
    scan_all(&mut txn, &t.new_order, |r| {
        let (w, d, o) = (
            r.int(new_order::NO_W_ID),
            r.int(new_order::NO_D_ID),
            r.int(new_order::NO_O_ID),
        );
        new_orders.insert(pack(w, d, o));
        if let Some(dist) = districts.get_mut(&(w, d)) {
            dist.new_orders += 1;
            dist.min_no = Some(dist.min_no.map_or(o, |m| m.min(o)));
            dist.max_no = Some(dist.max_no.map_or(o, |m| m.max(o)));
        }
    })?;
    let mut orders: HashMap<u64, OrderFacts> = HashMap::new();
    scan_all(&mut txn, &t.order, |r| {
        let (w, d, o) = (
            r.int(order::O_W_ID),
            r.int(order::O_D_ID),
            r.int(order::O_ID),
        );
        let ol_cnt = r.int(order::O_OL_CNT);
        if let Some(dist) = districts.get_mut(&(w, d)) {
            dist.orders += 1;
            dist.max_o_id = dist.max_o_id.max(o);
            dist.ol_cnt_sum += ol_cnt;
        }
        orders.insert(
            pack(w, d, o),
            OrderFacts {
                c_id: r.int(order::O_C_ID),
                carrier_null: r.is_null(order::O_CARRIER_ID),
                ol_cnt,
                lines: 0,
            },
        );
    })?;
    let mut report7 = Vec::new();
    scan_all(&mut txn, &t.order_line, |r| {
        let (w, d, o) = (
            r.int(order_line::OL_W_ID),
            r.int(order_line::OL_D_ID),
            r.int(order_line::OL_O_ID),
        );
        if let Some(dist) = districts.get_mut(&(w, d)) {
            dist.order_lines += 1;
        }
        let delivery_null = r.is_null(order_line::OL_DELIVERY_D);
        match orders.get_mut(&pack(w, d, o)) {
            Some(order) => {
                order.lines += 1;
                if order.carrier_null != delivery_null {
                    report7.push((w, d, o));
                }
                if !delivery_null {
                    customers.entry(pack(w, d, order.c_id)).or_default().1 +=
                        r.decimal_units(order_line::OL_AMOUNT);
                }
            }
            None => report7.push((w, d, o)),
        }
    })?;
    for (w, d, o) in report7 {
        report.fail(7, || format!("order line of order ({w},{d},{o}): OL_DELIVERY_D null does not match O_CARRIER_ID null"));
    }

    for (&w, &(ytd, history_sum)) in &warehouses {
        let d_sum: i64 = districts
            .iter()
            .filter(|((dw, _), _)| *dw == w)
            .map(|(_, f)| f.ytd)
            .sum();
        if ytd != d_sum {
            report.fail(1, || {
                format!("warehouse {w}: W_YTD {ytd} != sum(D_YTD) {d_sum}")
            });
        }
        if ytd != history_sum {
            report.fail(8, || {
                format!("warehouse {w}: W_YTD {ytd} != sum(H_AMOUNT) {history_sum}")
            });
        }
    }
    for (&(w, d), f) in &districts {
        let at = || format!("district ({w},{d})");
        if f.next_o_id - 1 != f.max_o_id || f.max_no.is_some_and(|m| m != f.max_o_id) {
            report.fail(2, || {
                format!(
                    "{}: D_NEXT_O_ID-1 {} max(O_ID) {} max(NO_O_ID) {:?}",
                    at(),
                    f.next_o_id - 1,
                    f.max_o_id,
                    f.max_no
                )
            });
        }
        if let (Some(lo), Some(hi)) = (f.min_no, f.max_no)
            && hi - lo + 1 != f.new_orders
        {
            report.fail(3, || {
                format!("{}: NO_O_ID {lo}..={hi} but {} rows", at(), f.new_orders)
            });
        }
        if f.ol_cnt_sum != f.order_lines {
            report.fail(4, || {
                format!(
                    "{}: sum(O_OL_CNT) {} != {} order lines",
                    at(),
                    f.ol_cnt_sum,
                    f.order_lines
                )
            });
        }
        if f.ytd != f.history_sum {
            report.fail(9, || {
                format!(
                    "{}: D_YTD {} != sum(H_AMOUNT) {}",
                    at(),
                    f.ytd,
                    f.history_sum
                )
            });
        }
        if initial && f.orders - f.new_orders != FIRST_UNDELIVERED - 1 {
            report.fail(11, || {
                format!(
                    "{}: {} orders - {} new orders != 2100",
                    at(),
                    f.orders,
                    f.new_orders
                )
            });
        }
    }
    for (&key, o) in &orders {
        let id = || {
            format!(
                "order ({},{},{})",
                key >> 44,
                (key >> 36) & 0xFF,
                key & 0xF_FFFF_FFFF
            )
        };
        if o.carrier_null != new_orders.contains(&key) {
            report.fail(5, || {
                format!("{}: O_CARRIER_ID null does not match a NEW-ORDER row", id())
            });
        }
        if o.ol_cnt != o.lines {
            report.fail(6, || {
                format!("{}: O_OL_CNT {} but {} lines", id(), o.ol_cnt, o.lines)
            });
        }
    }
    scan_all(&mut txn, &t.customer, |r| {
        let (w, d, c) = (
            r.int(customer::C_W_ID),
            r.int(customer::C_D_ID),
            r.int(customer::C_ID),
        );
        let balance = r.decimal_units(customer::C_BALANCE);
        let ytd = r.decimal_units(customer::C_YTD_PAYMENT);
        let (history_sum, delivered) = customers.get(&pack(w, d, c)).copied().unwrap_or_default();
        if balance != delivered - history_sum {
            report.fail(10, || {
                format!(
                    "customer ({w},{d},{c}): C_BALANCE {balance} != {delivered} - {history_sum}"
                )
            });
        }
        if balance + ytd != delivered {
            report.fail(12, || {
                format!(
                    "customer ({w},{d},{c}): C_BALANCE + C_YTD_PAYMENT {} != {delivered}",
                    balance + ytd
                )
            });
        }
    })?;
    txn.commit()?;
    Ok(report)
}
