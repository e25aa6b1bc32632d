//! Jobs the scheduler runs for Overtake's workloads, and the executor that runs them on the engine.
//!
//! A job is one transaction: any of the five TPC-C transactions, CH-benCHmark Query 2, or a
//! compute-only "UDF" transaction, each with a priority. The executor runs it with the engine's
//! retry helper and reports how it ended.

use std::sync::Arc;

use overtake_engine::{
    AbortReason, Attempts, Database, Error, Isolation, Priority, RetryPolicy, Transaction,
};
use overtake_sched::{Executor, JobError, LockOutcome, Outcome, Status};

use crate::ack::{AckLog, OrderId};
use crate::batch::{BatchUpdate, batch_update};
use crate::ch::ChTables;
use crate::ch::q2::query2;
use crate::compute::ComputeTask;
use crate::tpcc::request::TpccRequest;
use crate::tpcc::{TpccTables, TxnType, procs};

/// Names of the job kinds, in the order [`Executor::kind`] numbers them.
pub const KINDS: [&str; 8] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
    "q2",
    "compute",
    "batch_update",
];

/// What a job does.
#[derive(Clone, Debug)]
pub enum Work {
    /// A TPC-C transaction.
    Tpcc(TpccRequest),
    /// CH-benCHmark Query 2.
    Query2,
    /// A long computation touching no record.
    Compute(ComputeTask),
    /// A batch of bookings writing what urgent transactions write, then a computation.
    BatchUpdate(BatchUpdate),
}

/// One transaction to schedule.
#[derive(Clone, Debug)]
pub struct Job {
    /// Its priority class.
    pub priority: Priority,
    /// What it does.
    pub work: Work,
}

/// Runs jobs against one database.
pub struct EngineExecutor {
    db: Arc<Database>,
    tpcc: TpccTables,
    ch: Option<ChTables>,
    isolation: Isolation,
    retry: RetryPolicy,
    /// How low-priority jobs retry (see [`EngineExecutor::promoting_low_after`]).
    low_retry: RetryPolicy,
    /// Where acknowledged New-Orders are recorded (a crash test's ledger).
    ack: Option<Arc<AckLog>>,
}

impl EngineExecutor {
    /// An executor for `db`, which holds `tpcc` (and `ch`, needed by Query 2).
    pub fn new(
        db: Arc<Database>,
        tpcc: TpccTables,
        ch: Option<ChTables>,
        isolation: Isolation,
    ) -> Self {
        EngineExecutor {
            db,
            tpcc,
            ch,
            isolation,
            retry: RetryPolicy::default(),
            low_retry: RetryPolicy::default(),
            ack: None,
        }
    }

    /// Records every New-Order whose commit returned in `ack`.
    pub fn recording_orders(mut self, ack: Option<Arc<AckLog>>) -> Self {
        self.ack = ack;
        self
    }

    /// After `failures` failed attempts, low-priority jobs run promoted (see
    /// `overtake_engine::Database::run`): a low-priority writer that urgent writers keep
    /// overtaking then commits. `None` (the default) never promotes.
    pub fn promoting_low_after(mut self, failures: Option<u32>) -> Self {
        self.low_retry.promote_after = failures;
        self
    }

    fn run<T>(
        &self,
        priority: Priority,
        body: impl FnMut(&mut overtake_engine::Transaction<'_>) -> overtake_engine::Result<T>,
    ) -> Attempts<T> {
        // Background work has its own retry policy (it may be promoted); everything above it
        // retries as urgent work does.
        let retry = if priority == Priority::LOW {
            &self.low_retry
        } else {
            &self.retry
        };
        self.db.run_pipelined(priority, self.isolation, retry, body)
    }
}

/// How a job ended, from the engine's retry helper's report (its acknowledgement, if it
/// committed, left for the worker to await).
pub(crate) fn outcome<T>(mut attempts: Attempts<T>) -> Outcome {
    let acknowledgement = attempts.acknowledgement.take();
    let (promoted, wasted) = (attempts.promoted, attempts.failed_time);
    let durable_wait = attempts.durable_wait;
    let mut locks = LockOutcome::default();
    locks.deadlocks = attempts.deadlocks;
    locks.aborts = attempts.lock_preemptions;
    locks.waits = attempts.locks.waits;
    locks.queue = attempts.locks.queue;
    locks.excess = attempts.locks.excess;
    let (status, error) = match attempts.result {
        Ok(_) => (Status::Committed, None),
        Err(Error::Aborted(AbortReason::UserRollback)) => (Status::RolledBack, None),
        Err(e) => (Status::Failed, Some(JobError::failed(e))),
    };
    let mut outcome = Outcome::ended(status);
    outcome.conflicts = attempts.conflicts;
    outcome.validation_failures = attempts.validation_failures;
    outcome.promoted = promoted;
    outcome.wasted = wasted;
    outcome.locks = locks;
    outcome.durable_wait = durable_wait;
    outcome.error = error;
    outcome.acknowledgement = acknowledgement.map(|a| -> overtake_sched::Acknowledgement {
        Box::pin(async move { a.await.map_err(JobError::failed) })
    });
    outcome
}

/// A job that cannot run as configured.
#[derive(Debug, thiserror::Error)]
enum JobProblem {
    /// A preemption corrupted a computation's state.
    #[error("the computation's result changed under preemption")]
    ResultChanged,
    /// Query 2 without its tables.
    #[error("Query 2 needs the CH-benCHmark tables, which are not loaded")]
    NoChTables,
}

/// The outcome of a job ending in a computation that must produce `expected`: a wrong result
/// would mean a preemption corrupted the computation's state.
fn checked(attempts: Attempts<u64>, expected: u64) -> Outcome {
    let wrong = matches!(attempts.result, Ok(v) if v != expected);
    let mut result = outcome(attempts);
    if wrong {
        result.status = Status::Failed;
        result.error = Some(JobError::failed(JobProblem::ResultChanged));
    }
    result
}

impl Executor for EngineExecutor {
    type Job = Job;

    fn kinds(&self) -> &[&'static str] {
        &KINDS
    }

    fn kind(&self, job: &Job) -> usize {
        match &job.work {
            Work::Tpcc(r) => r.kind().index(),
            Work::Query2 => 5,
            Work::Compute(_) => 6,
            Work::BatchUpdate(_) => 7,
        }
    }

    fn priority(&self, job: &Job) -> Priority {
        job.priority
    }

    fn execute(&self, job: &mut Job, _worker: usize) -> Outcome {
        let (p, t) = (job.priority, &self.tpcc);
        match &job.work {
            Work::Tpcc(request) => {
                let attempts = self.run(p, |x| request.execute(x, t));
                let order = attempts.result.as_ref().ok().copied().flatten();
                let mut outcome = outcome(attempts);
                // The ledger records an order once its commit is acknowledged, never before.
                if let (Some(ledger), Some(order)) = (&self.ack, order) {
                    let ledger = Arc::clone(ledger);
                    let durable = outcome.acknowledgement.take();
                    outcome.acknowledgement = Some(Box::pin(async move {
                        if let Some(durable) = durable {
                            durable.await?;
                        }
                        ledger.record(order);
                        Ok(())
                    }));
                }
                outcome
            }
            Work::Query2 => match &self.ch {
                Some(ch) => outcome(self.run(p, |x| query2(x, t, ch))),
                None => Outcome::failed(JobError::failed(JobProblem::NoChTables)),
            },
            Work::BatchUpdate(batch) => checked(
                self.run(p, |x| batch_update(x, t, batch)),
                batch.compute.expected,
            ),
            Work::Compute(task) => checked(self.run(p, |_| Ok(task.run())), task.expected),
        }
    }
}

impl TpccRequest {
    /// The transaction type.
    pub fn kind(&self) -> TxnType {
        match self {
            TpccRequest::NewOrder(_) => TxnType::NewOrder,
            TpccRequest::Payment(_) => TxnType::Payment,
            TpccRequest::OrderStatus(_) => TxnType::OrderStatus,
            TpccRequest::Delivery(_) => TxnType::Delivery,
            TpccRequest::StockLevel(_) => TxnType::StockLevel,
        }
    }

    /// Runs the transaction's body in `txn` (the caller commits). Its output is dropped but for
    /// the order a New-Order enters (what a crash test's ledger records once it committed).
    pub fn execute(
        &self,
        txn: &mut Transaction<'_>,
        t: &TpccTables,
    ) -> overtake_engine::Result<Option<OrderId>> {
        match self {
            TpccRequest::NewOrder(i) => {
                procs::new_order(txn, t, i).map(|o| Some((i.w_id, i.d_id, o.o_id)))
            }
            TpccRequest::Payment(i) => procs::payment(txn, t, i).map(|_| None),
            TpccRequest::OrderStatus(i) => procs::order_status(txn, t, i).map(|_| None),
            TpccRequest::Delivery(i) => procs::delivery(txn, t, i).map(|_| None),
            TpccRequest::StockLevel(i) => procs::stock_level(txn, t, i).map(|_| None),
        }
    }
}
