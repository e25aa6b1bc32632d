//! TPC-C under two-phase locking: closed-loop clients of both priorities run the full mix through
//! the scheduler (lock waits park tasks, preemption pauses lock holders) under every lock policy,
//! and the consistency conditions hold after each run. A lost wake-up or an undetected deadlock
//! would leave a client waiting forever: the run is declared hung instead.

use crate::common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use overtake_engine::{Concurrency, LockPolicy};
use overtake_sched::{Delivery, SchedConfig};
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};
use overtake_workload::tpcc::consistency;

/// Far longer than a run takes on a loaded machine; reached only if clients never finish.
const HANG: Duration = Duration::from_secs(300);

#[test]
fn tpcc_stays_consistent_under_every_lock_policy() {
    let (db, tables, constants) = common::tpcc_database(2, 11);
    let mut db = Arc::new(db);
    for name in LockPolicy::NAMES {
        let policy = LockPolicy::parse(name, Duration::from_micros(200)).expect("policy");
        Arc::get_mut(&mut db)
            .expect("no run holds the database")
            .set_concurrency(Concurrency::TwoPhaseLocking(policy));
        let config = ClientsConfig {
            hp_share: 0.3,
            warehouses: 2,
            seed: 17,
            ..ClientsConfig::new(
                8,
                SchedConfig::default()
                    .workers(2)
                    .delivery(Delivery::Signal)
                    .signal_delay(Duration::from_micros(20))
                    .pin(false),
                constants,
            )
        };
        let (done_tx, done) = mpsc::channel();
        let (run_db, run_tables) = (Arc::clone(&db), tables.clone());
        let runner = std::thread::spawn(move || {
            let report = run_clients(
                run_db,
                &run_tables,
                &config,
                Duration::from_millis(400),
                &|_| {},
            );
            done_tx.send(()).expect("test alive");
            report
        });
        if done.recv_timeout(HANG).is_err() {
            // What the stuck transactions wait for, so a hang can be diagnosed from the log.
            panic!(
                "{name}: the clients never finished; lock waits: {:#?}",
                db.lock_waits()
            );
        }
        let report = runner.join().expect("runner").expect("run");
        let stats = &report.scheduler.stats;
        let mut committed = 0;
        for class in &stats.levels {
            assert_eq!(class.failed, 0, "{name}: {:?}", class.first_error);
            committed += class.committed;
        }
        assert!(committed > 0, "{name}: nothing committed");
        // The check reads every table: one snapshot, rather than a million shared locks.
        let mvcc = Arc::get_mut(&mut db).expect("the run is over");
        mvcc.set_concurrency(Concurrency::Mvcc);
        let check = consistency::check(&db, &tables, false).expect("check");
        assert!(check.is_ok(), "{name}: {}", check.summary());
    }
}
