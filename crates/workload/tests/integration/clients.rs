//! Closed-loop clients submitting TPC-C through the scheduler's public API.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use overtake_engine::Priority;
use overtake_sched::{Delivery, OsScheduling, SchedConfig};
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};

#[test]
fn every_client_transaction_goes_through_the_scheduler_at_its_class() {
    let (db, tables, constants) = common::tpcc_database(1, 3);
    let db = Arc::new(db);
    let sched = SchedConfig::default().delivery(Delivery::Poll).pin(false);
    for (share, urgent) in [(1.0, true), (0.0, false)] {
        let config = ClientsConfig {
            hp_share: share,
            ..ClientsConfig::new(3, sched.clone(), constants)
        };
        // A run of no length: every client still runs exactly one transaction.
        let report =
            run_clients(Arc::clone(&db), &tables, &config, Duration::ZERO, &|_| {}).expect("run");
        let (asked, other) = if urgent {
            (Priority::HIGH, Priority::LOW)
        } else {
            (Priority::LOW, Priority::HIGH)
        };
        let stats = &report.scheduler.stats;
        let c = stats.class(asked);
        assert_eq!(c.committed + c.rolled_back, 3, "one transaction per client");
        assert_eq!(c.failed, 0, "{:?}", c.first_error);
        let o = stats.class(other);
        assert_eq!(o.committed + o.rolled_back + o.failed, 0);
    }
}

#[test]
fn with_session_threads_each_client_runs_its_transactions_itself_and_they_are_counted() {
    let (db, tables, constants) = common::tpcc_database(1, 3);
    let db = Arc::new(db);
    let sched = SchedConfig::default().delivery(Delivery::Poll).pin(false);
    let config = ClientsConfig {
        hp_share: 0.0,
        session_threads: Some(OsScheduling::Idle),
        ..ClientsConfig::new(3, sched, constants)
    };
    let report =
        run_clients(Arc::clone(&db), &tables, &config, Duration::ZERO, &|_| {}).expect("run");
    let stats = &report.scheduler.stats;
    let low = stats.class(Priority::LOW);
    assert_eq!(
        low.committed + low.rolled_back,
        3,
        "one transaction per client"
    );
    assert_eq!(low.failed, 0, "{:?}", low.first_error);
    let group = overtake_sched::Group::of(Priority::LOW);
    let g = stats.group(group).expect("counted under its group");
    assert_eq!(g.committed + g.rolled_back, 3);
}
