//! The closed-loop TPC-C driver behind `overtake bench tpcc`: every worker thread runs the standard
//! mix back to back against its home warehouse for a fixed duration, with no think time, and records
//! per-type throughput, aborts and latency (first attempt to commit, retries included).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{AbortReason, Attempts, Database, Error, Isolation, Priority, RetryPolicy};
use overtake_sched::LatencyHistogram;

use super::input::{DeliveryInput, NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput};
use super::{TpccTables, TxnType, procs};
use crate::rng::{NuRandConstants, TpccRng};

/// How to run the mix.
#[derive(Clone, Debug)]
pub struct ClosedLoopConfig {
    /// Warehouses in the database.
    pub warehouses: i64,
    /// Worker threads; worker `i` uses warehouse `i % warehouses + 1` as its home.
    pub workers: usize,
    /// How long to run.
    pub duration: Duration,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// NURand constants of the run (derived from the load's, clause 2.1.6.1).
    pub constants: NuRandConstants,
    /// Seed of the workers' generators.
    pub seed: u64,
}

/// Counters and latencies of one transaction type.
#[derive(Clone, Debug, Default)]
pub struct TypeReport {
    /// Committed transactions.
    pub committed: u64,
    /// Attempts aborted by write-write conflicts (then retried).
    pub conflicts: u64,
    /// Attempts aborted by serializable validation (then retried).
    pub validation_failures: u64,
    /// Transactions that rolled back by design (New-Order's invalid item).
    pub user_rollbacks: u64,
    /// Transactions that failed otherwise (should be 0).
    pub errors: u64,
    /// Latency of committed transactions.
    pub latency: LatencyHistogram,
}

impl TypeReport {
    fn merge(&mut self, other: &TypeReport) {
        self.committed += other.committed;
        self.conflicts += other.conflicts;
        self.validation_failures += other.validation_failures;
        self.user_rollbacks += other.user_rollbacks;
        self.errors += other.errors;
        self.latency.merge(&other.latency);
    }

    /// Aborted attempts of any kind.
    pub fn aborted(&self) -> u64 {
        self.conflicts + self.validation_failures + self.user_rollbacks
    }

    fn record<T>(
        &mut self,
        attempts: Attempts<T>,
        latency: Duration,
        first_error: &mut Option<Error>,
    ) {
        self.conflicts += u64::from(attempts.conflicts);
        self.validation_failures += u64::from(attempts.validation_failures);
        match attempts.result {
            Ok(_) => {
                self.committed += 1;
                self.latency.record(latency);
            }
            Err(Error::Aborted(AbortReason::UserRollback)) => self.user_rollbacks += 1,
            // Retry-policy exhaustion already counted the final abort above.
            Err(e) if e.is_retryable() => {}
            Err(e) => {
                self.errors += 1;
                first_error.get_or_insert(e);
            }
        }
    }
}

/// The result of a run.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Measured wall time.
    pub elapsed: Duration,
    /// Per type, indexed by [`TxnType::index`].
    pub by_type: [TypeReport; 5],
    /// The first unexpected error, if any occurred.
    pub first_error: Option<Error>,
}

impl RunReport {
    /// All types together.
    pub fn total(&self) -> TypeReport {
        let mut total = TypeReport::default();
        for t in &self.by_type {
            total.merge(t);
        }
        total
    }
}

/// Runs the mix. `tick` is called about ten times a second with the elapsed time (for progress).
pub fn run_closed_loop(
    db: &Database,
    tables: &TpccTables,
    config: &ClosedLoopConfig,
    tick: &(dyn Fn(Duration) + Sync),
) -> RunReport {
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let reports: Vec<RunReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..config.workers.max(1))
            .map(|worker| {
                let stop = &stop;
                s.spawn(move || run_worker(db, tables, config, worker, stop))
            })
            .collect();
        while start.elapsed() < config.duration {
            tick(start.elapsed());
            std::thread::sleep(
                Duration::from_millis(100).min(config.duration.saturating_sub(start.elapsed())),
            );
        }
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let mut report = RunReport {
        elapsed: start.elapsed(),
        ..RunReport::default()
    };
    for r in reports {
        for (mine, theirs) in report.by_type.iter_mut().zip(r.by_type.iter()) {
            mine.merge(theirs);
        }
        if report.first_error.is_none() {
            report.first_error = r.first_error;
        }
    }
    report
}

fn run_worker(
    db: &Database,
    t: &TpccTables,
    config: &ClosedLoopConfig,
    worker: usize,
    stop: &AtomicBool,
) -> RunReport {
    let mut rng = TpccRng::new(config.seed.wrapping_add(worker as u64 * 7919));
    let c = &config.constants;
    let w_id = (worker as i64 % config.warehouses) + 1;
    let policy = RetryPolicy::default();
    let level = config.isolation;
    let mut report = RunReport::default();
    while !stop.load(Ordering::Relaxed) {
        let kind = TxnType::from_mix_roll(rng.uniform(1, 100));
        let start = Instant::now();
        let out = &mut report.by_type[kind.index()];
        let error = &mut report.first_error;
        match kind {
            TxnType::NewOrder => {
                let input = NewOrderInput::generate(&mut rng, c, w_id, config.warehouses);
                let a = db.run(Priority::High, level, &policy, |txn| {
                    procs::new_order(txn, t, &input)
                });
                out.record(a, start.elapsed(), error);
            }
            TxnType::Payment => {
                let input = PaymentInput::generate(&mut rng, c, w_id, config.warehouses);
                let a = db.run(Priority::High, level, &policy, |txn| {
                    procs::payment(txn, t, &input)
                });
                out.record(a, start.elapsed(), error);
            }
            TxnType::OrderStatus => {
                let input = OrderStatusInput::generate(&mut rng, c, w_id);
                let a = db.run(Priority::High, level, &policy, |txn| {
                    procs::order_status(txn, t, &input)
                });
                out.record(a, start.elapsed(), error);
            }
            TxnType::Delivery => {
                let input = DeliveryInput::generate(&mut rng, w_id);
                let a = db.run(Priority::High, level, &policy, |txn| {
                    procs::delivery(txn, t, &input)
                });
                out.record(a, start.elapsed(), error);
            }
            TxnType::StockLevel => {
                let input = StockLevelInput::generate(&mut rng, w_id);
                let a = db.run(Priority::High, level, &policy, |txn| {
                    procs::stock_level(txn, t, &input)
                });
                out.record(a, start.elapsed(), error);
            }
        }
    }
    report
}
