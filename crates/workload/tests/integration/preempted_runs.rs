//! End to end under preemption: TPC-C survives thousands of preemptions at deterministic points,
//! and the mixed workload and a signal storm leave it consistent, with a computation preempted by
//! signals keeping its result.
//!
//! No test here counts what a time window happened to contain. Deterministic preemptions come from
//! `overtake_runtime::preempt::inject`; tests that need real signals run rounds until the events
//! they need have happened (on a slow or loaded machine that takes more rounds, never a different
//! verdict), within a generous overall bound that only a hang exceeds.

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_engine::{Database, Isolation, Priority};
use overtake_runtime::preempt::PreemptStats;
use overtake_runtime::preempt::inject::{self, Point, run_preempted};
use overtake_sched::{Delivery, Executor, Policy, RunStats, SchedConfig, Status};
use overtake_workload::batch::BatchUpdate;
use overtake_workload::ch::ChTables;
use overtake_workload::drivers::closed_loop::{ClosedLoopConfig, run_closed_loop};
use overtake_workload::drivers::open_loop::{self, RunConfig, RunReport};
use overtake_workload::exec::{EngineExecutor, Job, Work};
use overtake_workload::mixed::{ComputeTask, LowWork, MixedArrivals};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::input::{
    NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput,
};
use overtake_workload::tpcc::request::TpccRequest;
use overtake_workload::tpcc::{TpccTables, consistency};

// Signal preemption is only enabled where allocation runs inside regions (as in the binary).
/// The bound on rounds of a signal test: far beyond what any machine needs, reached only if the
/// run hangs or the mechanism is broken.
const PATIENCE: Duration = Duration::from_secs(120);

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

/// Low-priority jobs are promoted after 20 failed attempts: preempted at every few points with
/// an urgent writer of the same warehouse at each, a Payment would otherwise lose every time.
fn executor(l: &Loaded) -> Arc<EngineExecutor> {
    Arc::new(
        EngineExecutor::new(
            Arc::clone(&l.db),
            l.tpcc.clone(),
            Some(l.ch.clone()),
            Isolation::Serializable,
        )
        .promoting_low_after(Some(20)),
    )
}

fn assert_consistent(l: &Loaded) {
    let report = consistency::check(&l.db, &l.tpcc, false).expect("check");
    assert!(report.is_ok(), "{}", report.summary());
}

/// Outcomes of jobs run directly on an executor: committed, rolled back on purpose, failed.
#[derive(Default, Debug)]
struct Tally {
    committed: u64,
    rolled_back: u64,
    /// Attempts aborted and retried.
    retried: u64,
    /// Attempts run promoted.
    promoted: u64,
    failures: Vec<String>,
}

impl Tally {
    fn run(&mut self, exec: &EngineExecutor, mut job: Job) {
        let outcome = exec.execute(&mut job, 0);
        self.retried += u64::from(outcome.conflicts + outcome.validation_failures);
        self.promoted += u64::from(outcome.promoted);
        match outcome.status {
            Status::Committed => self.committed += 1,
            Status::RolledBack => self.rolled_back += 1,
            _ => self
                .failures
                .push(format!("{:?}: {:?}", job.work, outcome.error)),
        }
    }
}

#[test]
fn tpcc_survives_thousands_of_preemptions_at_deterministic_points() {
    // The low-priority side runs the full mix on warehouse 1, the urgent side New-Order,
    // Payment, Order-Status and Stock-Level on the same warehouse: urgent transactions read and
    // write what the paused one has written (its writes are buffered, so it holds nothing), and
    // each commits at its first attempt; the paused one pays, by retrying.
    let l = loaded(2);
    let exec = executor(&l);
    let constants = l.constants;
    let low_tally = Rc::new(RefCell::new(Tally::default()));
    let urgent_tally = Rc::new(RefCell::new(Tally::default()));
    const WANTED: u64 = 3_000;
    // Counted by the urgent side, which runs once per preemption served: the loop cannot go by
    // injections fired, as two landing at one region exit are served as one.
    let urgent_runs = Rc::new(std::cell::Cell::new(0u64));
    let served = {
        let runs = Rc::clone(&urgent_runs);
        let (low_exec, tally) = (Arc::clone(&exec), Rc::clone(&low_tally));
        let low = move || {
            let mut rng = TpccRng::new(11);
            // Every 7th region exit (allocation, index call, commit, epoch exit, ...) and every
            // 11th record access: preemptions land all over the engine's code.
            inject::inject(Point::RegionExit, 1, 7);
            inject::inject(Point::RecordAccess, 1, 11);
            for _ in 0..100_000 {
                if runs.get() >= WANTED {
                    break;
                }
                let request = TpccRequest::generate(&mut rng, &constants, 1, 1);
                tally.borrow_mut().run(
                    &low_exec,
                    Job {
                        priority: Priority::LOW,
                        work: Work::Tpcc(request),
                    },
                );
            }
            inject::stop();
        };
        let (exec, tally) = (Arc::clone(&exec), Rc::clone(&urgent_tally));
        let mut rng = TpccRng::new(13);
        let mut turn = 0u32;
        let runs = Rc::clone(&urgent_runs);
        let urgent = move || {
            runs.set(runs.get() + 1);
            turn += 1;
            let request = match turn % 4 {
                0 => TpccRequest::NewOrder(Box::new(NewOrderInput::generate(
                    &mut rng, &constants, 1, 1,
                ))),
                1 => TpccRequest::Payment(PaymentInput::generate(&mut rng, &constants, 1, 1)),
                2 => TpccRequest::OrderStatus(OrderStatusInput::generate(&mut rng, &constants, 1)),
                _ => TpccRequest::StockLevel(StockLevelInput::generate(&mut rng, 1)),
            };
            tally.borrow_mut().run(
                &exec,
                Job {
                    priority: Priority::HIGH,
                    work: Work::Tpcc(request),
                },
            );
        };
        run_preempted(low, urgent).expect("a worker with two contexts")
    };
    let (low, urgent) = (low_tally.borrow(), urgent_tally.borrow());
    assert!(served >= WANTED, "{served} preemptions served");
    assert!(low.failures.is_empty(), "{:?}", low.failures);
    assert!(urgent.failures.is_empty(), "{:?}", urgent.failures);
    assert_eq!(
        urgent.retried, 0,
        "no urgent transaction waited for the paused one"
    );
    assert!(low.committed > 10, "{low:?}");
    assert!(
        low.retried > 0,
        "the paused one lost to urgent writers: {low:?}"
    );
    assert_eq!(
        urgent.committed + urgent.rolled_back,
        served,
        "one urgent transaction per preemption"
    );
    assert_consistent(&l);
}

#[test]
fn a_batch_writer_losing_to_urgent_ones_is_promoted_and_commits() {
    // The low-priority batch books a payment in every district, then computes; at every 5th
    // record access an urgent Payment on the same warehouse commits (it always can: the batch's
    // writes are buffered), so the batch loses at commit, until its fourth attempt runs promoted:
    // not preemptible (the injected preemptions wait for its end) and reserving its rows.
    let l = loaded(1);
    let exec = Arc::new(
        EngineExecutor::new(
            Arc::clone(&l.db),
            l.tpcc.clone(),
            None,
            Isolation::Serializable,
        )
        .promoting_low_after(Some(3)),
    );
    let constants = l.constants;
    let low_tally = Rc::new(RefCell::new(Tally::default()));
    let urgent_tally = Rc::new(RefCell::new(Tally::default()));
    let compute = ComputeTask::calibrate(Duration::from_millis(1));
    {
        let (low_exec, tally) = (Arc::clone(&exec), Rc::clone(&low_tally));
        let low = move || {
            inject::inject(Point::RecordAccess, 1, 5);
            tally.borrow_mut().run(
                &low_exec,
                Job {
                    priority: Priority::LOW,
                    work: Work::BatchUpdate(BatchUpdate::nth(0, 1, compute)),
                },
            );
            inject::stop();
        };
        let (exec, tally) = (Arc::clone(&exec), Rc::clone(&urgent_tally));
        let mut rng = TpccRng::new(17);
        let urgent = move || {
            let request = TpccRequest::Payment(PaymentInput::generate(&mut rng, &constants, 1, 1));
            tally.borrow_mut().run(
                &exec,
                Job {
                    priority: Priority::HIGH,
                    work: Work::Tpcc(request),
                },
            );
        };
        run_preempted(low, urgent).expect("a worker with two contexts");
    }
    let (low, urgent) = (low_tally.borrow(), urgent_tally.borrow());
    assert!(low.failures.is_empty(), "{:?}", low.failures);
    assert!(urgent.failures.is_empty(), "{:?}", urgent.failures);
    assert_eq!(low.committed, 1, "{low:?}");
    assert_eq!((low.retried, low.promoted), (3, 1), "{low:?}");
    assert!(urgent.committed > 3, "{urgent:?}");
    assert_eq!(urgent.retried, 0, "{urgent:?}");
    assert_consistent(&l);
}

/// Statistics summed over the rounds of a signal test.
#[derive(Default)]
struct Totals {
    stats: RunStats,
    preempt: PreemptStats,
    rounds: u32,
}

impl Totals {
    fn add(&mut self, report: &RunReport) {
        self.stats.merge(&report.stats);
        self.preempt += report.preempt;
        self.rounds += 1;
    }

    fn assert_no_failures(&self) {
        for class in [
            self.stats.class(Priority::HIGH),
            self.stats.class(Priority::LOW),
        ] {
            assert_eq!(class.failed, 0, "{:?}", class.first_error);
        }
    }
}

/// Runs `round` until `enough` holds for what the rounds did together.
fn rounds_until(
    what: &str,
    mut round: impl FnMut() -> RunReport,
    enough: impl Fn(&Totals) -> bool,
) -> Totals {
    let start = Instant::now();
    let mut totals = Totals::default();
    while !enough(&totals) {
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: still not seen after {} rounds ({:?})",
            totals.rounds,
            totals.preempt
        );
        totals.add(&round());
        totals.assert_no_failures();
    }
    totals
}

/// One second of the mixed workload on one worker under the preempt policy. A zero signal delay
/// sends SIGURG with every request, so preemptions land anywhere in the engine, not only at
/// record accesses.
fn mixed_preempt_round(l: &Loaded, low: LowWork, seed: u64) -> RunReport {
    let sched = SchedConfig::default()
        .policy(Policy::Preempt)
        .workers(1)
        .delivery(Delivery::Signal)
        .signal_delay(Duration::ZERO)
        .pin(false);
    let config = RunConfig {
        sched,
        duration: Duration::from_secs(1),
        ..RunConfig::default()
    };
    let mut arrivals = MixedArrivals::new(
        Duration::from_millis(1),
        config.batch,
        low,
        1,
        l.constants,
        seed,
    );
    open_loop::run(&config, executor(l), &mut arrivals, Vec::new(), &|_| {}).expect("run")
}

#[test]
fn a_mixed_preempt_run_with_query2_keeps_tpcc_consistent() {
    let l = loaded(1);
    let mut seed = 10;
    rounds_until(
        "Query 2 preempted by committed urgent work",
        || {
            seed += 1;
            mixed_preempt_round(&l, LowWork::Query2, seed)
        },
        |t| {
            t.stats.class(Priority::HIGH).committed > 0
                && t.stats.class(Priority::LOW).committed > 0
                && t.stats.class(Priority::LOW).preemptions > 0
        },
    );
    assert_consistent(&l);
}

#[test]
fn a_computation_preempted_by_signals_keeps_its_result() {
    let l = loaded(1);
    // The kernel never touches a record: every preemption of it must come through an injected
    // call, and the executor fails the job if the result differs from the unpreempted one.
    let task = ComputeTask::calibrate(Duration::from_millis(5));
    let mut seed = 20;
    let totals = rounds_until(
        "a computation preempted by an injected call, and finished",
        || {
            seed += 1;
            mixed_preempt_round(&l, LowWork::Compute(task.clone()), seed)
        },
        |t| {
            t.stats.class(Priority::LOW).committed > 0
                && t.stats.class(Priority::LOW).preemptions > 0
                && t.preempt.injected > 0
        },
    );
    assert!(totals.stats.class(Priority::HIGH).committed > 0);
    assert_consistent(&l);
}

#[test]
fn a_signal_storm_while_tpcc_runs_neither_deadlocks_nor_corrupts() {
    let l = loaded(2);
    // Every 200 µs each worker's flag is raised and SIGURG sent at once: thousands of interrupts
    // per second per worker, landing in allocation, latches, commit and epoch code alike. Rounds
    // go on until a thousand signals have landed (injected a call, or been deferred by a region).
    let mut seed = 5;
    let totals = rounds_until(
        "a thousand signals landing while TPC-C runs",
        || {
            seed += 1;
            run_closed_loop(
                Arc::clone(&l.db),
                &l.tpcc,
                &ClosedLoopConfig {
                    warehouses: 2,
                    workers: 2,
                    duration: Duration::from_millis(500),
                    isolation: Isolation::Serializable,
                    constants: l.constants,
                    seed,
                    interrupt_interval: Some(Duration::from_micros(200)),
                    delivery: Delivery::Signal,
                    signal_delay: Duration::ZERO,
                    pin: false,
                    ack: None,
                },
                &|_| {},
            )
            .expect("run")
        },
        |t| t.preempt.injected + t.preempt.deferred >= 1_000,
    );
    assert!(
        totals.stats.class(Priority::LOW).committed > 0,
        "TPC-C made progress"
    );
    for kind in &totals.stats.kinds {
        assert_eq!(kind.failed, 0, "{:?}", kind.first_error);
    }
    assert_consistent(&l);
}

#[test]
fn computations_round_robin_over_many_contexts_under_signals_keep_their_results() {
    let l = loaded(1);
    // The quantum policy with one queue and 32 computations queued: every 50 us the running
    // computation is preempted by a signal (zero delay) and goes behind the others, so some 33
    // contexts take turns, each switched out and in mid-kernel hundreds of times. The executor
    // fails any job whose result differs from the unpreempted one.
    let task = ComputeTask::calibrate(Duration::from_millis(3));
    let mut seed = 40;
    let totals = rounds_until(
        "computations preempted by injected calls across many contexts",
        || {
            seed += 1;
            let mut sched = SchedConfig::default()
                .policy(Policy::Quantum)
                .quantum(Duration::from_micros(50))
                .workers(1)
                .delivery(Delivery::Signal)
                .signal_delay(Duration::ZERO)
                .pin(false);
            sched.two_queues = false;
            let config = RunConfig {
                sched,
                duration: Duration::from_secs(1),
                background_queue: 32,
                ..RunConfig::default()
            };
            // A little urgent TPC-C as well (sparse: a debug build runs it slowly).
            let mut arrivals = MixedArrivals::new(
                Duration::from_millis(20),
                1,
                LowWork::Compute(task.clone()),
                1,
                l.constants,
                seed,
            );
            open_loop::run(&config, executor(&l), &mut arrivals, Vec::new(), &|_| {}).expect("run")
        },
        |t| {
            let low = t.stats.class(Priority::LOW);
            low.committed >= 32 && low.preemptions >= 1_000 && t.preempt.injected >= 100
        },
    );
    assert!(totals.stats.class(Priority::HIGH).committed > 0);
}
