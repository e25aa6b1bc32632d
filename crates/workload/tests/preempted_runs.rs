//! End to end under preemption: the mixed workload and a signal storm leave TPC-C consistent, and a
//! computation preempted by signals still produces its result.

mod common;

use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{Database, Isolation};
use overtake_sched::{Delivery, Policy, RunReport, SchedConfig};
use overtake_workload::ch::ChTables;
use overtake_workload::exec::EngineExecutor;
use overtake_workload::mixed::{ComputeTask, LowWork, MixedArrivals};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::driver::{ClosedLoopConfig, run_closed_loop};
use overtake_workload::tpcc::{TpccTables, consistency};

// Signal preemption is only enabled where allocation runs inside regions (as in the binary).
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

struct Loaded {
    db: Arc<Database>,
    tpcc: TpccTables,
    ch: ChTables,
    constants: NuRandConstants,
}

fn loaded(warehouses: i64) -> Loaded {
    let (db, tpcc, load_constants) = common::tpcc_database(warehouses, 7);
    let ch = ChTables::create(&db).expect("CH schema");
    ch.load(&db, 7).expect("CH load");
    let constants = NuRandConstants::for_run(&load_constants, &mut TpccRng::new(3));
    Loaded {
        db: Arc::new(db),
        tpcc,
        ch,
        constants,
    }
}

/// The mixed workload on one worker under the preempt policy. A zero signal delay sends SIGURG
/// with every request, so preemptions land anywhere in the engine, not only at record accesses.
fn mixed_preempt_run(l: &Loaded, low: LowWork) -> RunReport {
    let config = SchedConfig {
        policy: Policy::Preempt,
        workers: 1,
        delivery: Delivery::Signal,
        signal_delay: Duration::ZERO,
        duration: Duration::from_millis(1_500),
        pin: false,
        ..SchedConfig::default()
    };
    let mut arrivals = MixedArrivals::new(
        Duration::from_millis(1),
        config.hp_queue,
        low,
        1,
        l.constants,
        11,
    );
    let executor = Arc::new(EngineExecutor::new(
        Arc::clone(&l.db),
        l.tpcc.clone(),
        Some(l.ch.clone()),
        Isolation::Serializable,
    ));
    overtake_sched::run(&config, executor, &mut arrivals, Vec::new(), &|_| {}).expect("run")
}

fn assert_consistent(l: &Loaded) {
    let report = consistency::check(&l.db, &l.tpcc, false).expect("check");
    assert!(report.is_ok(), "{}", report.summary());
}

#[test]
fn a_mixed_preempt_run_with_query2_keeps_tpcc_consistent() {
    let l = loaded(1);
    let report = mixed_preempt_run(&l, LowWork::Query2);
    let (high, low) = (&report.stats.high, &report.stats.low);
    assert!(high.committed > 0, "urgent transactions ran");
    assert!(low.committed > 0, "Query 2 completed");
    assert!(low.preemptions > 0, "Query 2 was preempted");
    assert_eq!(high.failed, 0, "{:?}", high.first_error);
    assert_eq!(low.failed, 0, "{:?}", low.first_error);
    assert_consistent(&l);
}

#[test]
fn a_computation_preempted_by_signals_keeps_its_result() {
    let l = loaded(1);
    // The kernel never touches a record: every preemption of it must come through an injected
    // call, and the executor fails the job if the result differs from the unpreempted one.
    let task = ComputeTask::calibrate(Duration::from_millis(5));
    let report = mixed_preempt_run(&l, LowWork::Compute(task));
    let low = &report.stats.low;
    assert!(low.committed > 0, "computations completed");
    assert_eq!(low.failed, 0, "{:?}", low.first_error);
    assert!(low.preemptions > 0, "computations were preempted");
    assert!(report.preempt.injected > 0, "{:?}", report.preempt);
    assert!(report.stats.high.committed > 0);
    assert_consistent(&l);
}

#[test]
fn a_signal_storm_while_tpcc_runs_neither_deadlocks_nor_corrupts() {
    let l = loaded(2);
    // Every 200 µs each worker's flag is raised and SIGURG sent at once: thousands of interrupts
    // per second per worker, landing in allocation, latches, commit and epoch code alike.
    let report = run_closed_loop(
        Arc::clone(&l.db),
        &l.tpcc,
        &ClosedLoopConfig {
            warehouses: 2,
            workers: 2,
            duration: Duration::from_secs(3),
            isolation: Isolation::Serializable,
            constants: l.constants,
            seed: 5,
            interrupt_interval: Some(Duration::from_micros(200)),
            delivery: Delivery::Signal,
            signal_delay: Duration::ZERO,
            pin: false,
        },
        &|_| {},
    )
    .expect("run");
    let p = report.preempt;
    assert!(p.signals_sent >= 1_000, "a storm: {p:?}");
    assert!(p.injected + p.deferred > 0, "{p:?}");
    assert!(report.stats.low.committed > 0, "TPC-C made progress");
    for kind in &report.stats.kinds {
        assert_eq!(kind.failed, 0, "{:?}", kind.first_error);
    }
    assert_consistent(&l);
}
