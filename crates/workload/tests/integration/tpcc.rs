//! TPC-C: the load matches the specification, the transactions behave as specified, and the
//! consistency conditions hold after concurrent runs (and catch corruption).

use crate::common;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyRange, Priority, RetryPolicy, ScanOptions, Table,
    Transaction,
};
use overtake_sched::Delivery;
use overtake_workload::drivers::closed_loop::{ClosedLoopConfig, run_closed_loop};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::input::{
    CustomerSelector, DeliveryInput, NewOrderInput, PaymentInput, StockLevelInput,
};
use overtake_workload::tpcc::schema::{
    customer, district, item, order, order_line, stock, warehouse,
};
use overtake_workload::tpcc::{TpccTables, TxnType, consistency, procs};

// Signal preemption is only enabled where allocation runs inside regions (as in the binary).
fn loaded(warehouses: i64) -> (Arc<Database>, TpccTables, NuRandConstants) {
    let (db, tables, constants) = common::tpcc_database(warehouses, 42);
    (Arc::new(db), tables, constants)
}

/// Runs `body` as an urgent serializable transaction with the default retry policy.
fn urgent<T>(
    db: &Database,
    body: impl FnMut(&mut Transaction<'_>) -> overtake_engine::Result<T>,
) -> overtake_engine::Result<T> {
    db.run(
        Priority::HIGH,
        Isolation::Serializable,
        &RetryPolicy::default(),
        body,
    )
    .result
}

fn count(
    db: &Database,
    table: &Table,
    mut filter: impl FnMut(overtake_engine::RowRef<'_>) -> bool,
) -> usize {
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut n = 0;
    txn.scan(table, &KeyRange::all(), ScanOptions::forward(), |r| {
        n += usize::from(filter(r));
        ControlFlow::Continue(())
    })
    .expect("scan");
    n
}

#[test]
fn load_has_the_specified_cardinalities_and_is_consistent() {
    let (db, t, _) = loaded(1);
    assert_eq!(count(&db, &t.warehouse, |_| true), 1);
    assert_eq!(count(&db, &t.district, |_| true), 10);
    assert_eq!(count(&db, &t.item, |_| true), 100_000);
    assert_eq!(count(&db, &t.stock, |_| true), 100_000);
    assert_eq!(count(&db, &t.customer, |_| true), 30_000);
    assert_eq!(count(&db, &t.history, |_| true), 30_000);
    assert_eq!(count(&db, &t.order, |_| true), 30_000);
    assert_eq!(count(&db, &t.new_order, |_| true), 9_000);
    let lines = count(&db, &t.order_line, |_| true);
    assert!(
        (270_000..=330_000).contains(&lines),
        "about 10 lines per order: {lines}"
    );
    let bad_credit = count(&db, &t.customer, |r| r.str(customer::C_CREDIT) == "BC");
    assert!(
        (2_500..=3_500).contains(&bad_credit),
        "about 10% BC: {bad_credit}"
    );
    let original = count(&db, &t.item, |r| r.str(item::I_DATA).contains("ORIGINAL"));
    assert!(
        (9_000..=11_000).contains(&original),
        "about 10% ORIGINAL: {original}"
    );
    // The first 1,000 customers of a district carry every last name once.
    let barbarbar = count(&db, &t.customer, |r| {
        r.int(customer::C_ID) <= 1_000 && r.str(customer::C_LAST) == "BARBARBAR"
    });
    assert_eq!(barbarbar, 10);
    let report = consistency::check(&db, &t, true).expect("check");
    assert!(report.is_ok(), "{}", report.summary());
    assert_eq!(report.checked, (1..=12).collect::<Vec<u8>>());
}

#[test]
fn transactions_follow_the_specification_and_a_mixed_run_stays_consistent() {
    let (db, t, load_constants) = loaded(2);
    let mut rng = TpccRng::new(5);
    let c = NuRandConstants::for_run(&load_constants, &mut rng);

    // New-Order with an invalid last item rolls back and leaves no trace.
    let mut input = NewOrderInput::generate(&mut rng, &c, 1, 2);
    let last = input.line_count - 1;
    input.lines[last].i_id = 100_001;
    let before = count(&db, &t.order, |_| true);
    assert_eq!(
        urgent(&db, |txn| procs::new_order(txn, &t, &input)),
        Err(Error::Aborted(AbortReason::UserRollback))
    );
    assert_eq!(count(&db, &t.order, |_| true), before);
    let next = |db: &Database| {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let key = t
            .district
            .key()
            .int(input.w_id)
            .int(input.d_id)
            .finish()
            .expect("key");
        txn.get(&t.district, &key, |r| r.int(district::D_NEXT_O_ID))
            .expect("get")
            .expect("row")
    };
    assert_eq!(next(&db), 3_001, "the district counter was rolled back too");

    // A valid New-Order takes the next order id and adds one NEW-ORDER row.
    input.lines[last].i_id = 1;
    let out = urgent(&db, |txn| procs::new_order(txn, &t, &input)).expect("new order");
    assert_eq!(out.o_id, 3_001);
    assert!(out.total > 0);
    assert_eq!(next(&db), 3_002);
    let key = t
        .new_order
        .key()
        .int(input.w_id)
        .int(input.d_id)
        .int(3_001)
        .finish()
        .expect("key");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert!(txn.exists(&t.new_order, &key).expect("get"));
    drop(txn);

    // Payment by last name picks the middle customer (rounded up) ordered by first name.
    let name = "BARBARBAR";
    let mut firsts: Vec<(String, i64)> = Vec::new();
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    txn.scan(&t.customer, &KeyRange::all(), ScanOptions::forward(), |r| {
        if r.int(customer::C_W_ID) == 1
            && r.int(customer::C_D_ID) == 1
            && r.str(customer::C_LAST) == name
        {
            firsts.push((r.str(customer::C_FIRST).to_owned(), r.int(customer::C_ID)));
        }
        ControlFlow::Continue(())
    })
    .expect("scan");
    drop(txn);
    firsts.sort();
    let expected = firsts[firsts.len().div_ceil(2) - 1].1;
    let payment = PaymentInput {
        w_id: 1,
        d_id: 1,
        c_w_id: 1,
        c_d_id: 1,
        customer: CustomerSelector::LastName(name.to_owned()),
        h_amount: 12_34,
        h_date: 0,
    };
    let paid = urgent(&db, |txn| procs::payment(txn, &t, &payment)).expect("payment");
    assert_eq!(
        paid.c_id,
        expected,
        "{} customers named {name}",
        firsts.len()
    );

    // Delivery takes the oldest undelivered order of each district.
    let delivery = DeliveryInput {
        w_id: 2,
        o_carrier_id: 7,
        delivery_d: 1,
    };
    let out = urgent(&db, |txn| procs::delivery(txn, &t, &delivery)).expect("delivery");
    assert_eq!(out.delivered, 10);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let key = t
        .order
        .key()
        .int(2)
        .int(3)
        .int(2_101)
        .finish()
        .expect("key");
    let carrier = txn
        .get(&t.order, &key, |r| r.int(order::O_CARRIER_ID))
        .expect("get");
    assert_eq!(carrier, Some(7));
    let no_key = t
        .new_order
        .key()
        .int(2)
        .int(3)
        .int(2_101)
        .finish()
        .expect("key");
    assert!(!txn.exists(&t.new_order, &no_key).expect("get"));
    drop(txn);

    // Stock-Level counts the distinct items of the district's last 20 orders whose stock is
    // below the threshold: the same count as one made from plain scans.
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let district_w1d1 = t.district.key().int(1).int(1).finish().expect("key");
    let next_o_id = txn
        .get(&t.district, &district_w1d1, |r| {
            r.int(district::D_NEXT_O_ID)
        })
        .expect("get")
        .expect("row");
    let mut quantity = vec![0; 100_001];
    let stock_w1 = KeyRange::prefix(t.stock.key().int(1).prefix().expect("prefix"));
    txn.scan(&t.stock, &stock_w1, ScanOptions::forward(), |r| {
        quantity[r.int(stock::S_I_ID) as usize] = r.int(stock::S_QUANTITY);
        ControlFlow::Continue(())
    })
    .expect("scan");
    let lines_w1d1 = KeyRange::prefix(t.order_line.key().int(1).int(1).prefix().expect("prefix"));
    let mut items = Vec::new();
    txn.scan(&t.order_line, &lines_w1d1, ScanOptions::forward(), |r| {
        if (next_o_id - 20..next_o_id).contains(&r.int(order_line::OL_O_ID)) {
            items.push(r.int(order_line::OL_I_ID));
        }
        ControlFlow::Continue(())
    })
    .expect("scan");
    drop(txn);
    items.sort_unstable();
    items.dedup();
    assert!(
        items.len() > 64,
        "several prefetch batches: {}",
        items.len()
    );
    for threshold in [10, 15, 20, 101] {
        let expected = items
            .iter()
            .filter(|&&i| quantity[i as usize] < threshold)
            .count();
        let input = StockLevelInput {
            w_id: 1,
            d_id: 1,
            threshold,
        };
        let low = urgent(&db, |txn| procs::stock_level(txn, &t, &input)).expect("stock level");
        assert_eq!(low, expected, "threshold {threshold}");
    }

    // Now the full mix on two workers at once, under both isolation levels.
    for isolation in [Isolation::Serializable, Isolation::Snapshot] {
        let report = run_closed_loop(
            Arc::clone(&db),
            &t,
            &ClosedLoopConfig {
                warehouses: 2,
                workers: 2,
                duration: Duration::from_millis(1_500),
                isolation,
                constants: c,
                seed: 9,
                interrupt_interval: None,
                delivery: Delivery::Signal,
                signal_delay: Duration::from_micros(10),
                pin: false,
                ack: None,
            },
            &|_| {},
        )
        .expect("run");
        for kind in TxnType::ALL {
            let k = &report.stats.kinds[kind.index()];
            assert!(k.committed > 0, "{kind:?} committed");
            assert_eq!(k.failed, 0, "{kind:?}: {:?}", k.first_error);
        }
        let consistency = consistency::check(&db, &t, false).expect("check");
        assert!(
            consistency.is_ok(),
            "{isolation:?}: {}",
            consistency.summary()
        );
    }
}

#[test]
fn the_checker_catches_corruption() {
    let (db, t, _) = loaded(1);
    let corrupt = |f: &dyn Fn(&mut overtake_engine::Transaction<'_>)| {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        f(&mut txn);
        txn.commit().expect("commit");
    };
    corrupt(&|txn| {
        let key = t.warehouse.key().int(1).finish().expect("key");
        txn.update(&t.warehouse, &key, |r| {
            let v = r.as_ref().decimal_units(warehouse::W_YTD);
            r.decimal_units(warehouse::W_YTD, v + 1);
        })
        .expect("update");
    });
    let report = consistency::check(&db, &t, true).expect("check");
    let failed: Vec<u8> = report.violations.iter().map(|v| v.condition).collect();
    assert!(
        failed.contains(&1) && failed.contains(&8),
        "{}",
        report.summary()
    );
    corrupt(&|txn| {
        let key = t
            .new_order
            .key()
            .int(1)
            .int(4)
            .int(2_500)
            .finish()
            .expect("key");
        assert!(txn.delete(&t.new_order, &key).expect("delete"));
    });
    let report = consistency::check(&db, &t, true).expect("check");
    let failed: Vec<u8> = report.violations.iter().map(|v| v.condition).collect();
    for condition in [3, 5, 11] {
        assert!(
            failed.contains(&condition),
            "condition {condition}: {}",
            report.summary()
        );
    }
    assert!(report.summary().starts_with("condition 1, "));
}
