//! The paused lock holder: the situation lock policies like POW exist for. On one worker, a
//! low-priority transaction takes a row's exclusive lock under two-phase locking and then
//! computes (touching no record) for a while; some milliseconds after it started, an urgent
//! transaction asks for the same row, preempts the holder and asks for its lock. Under a policy
//! that lets the urgent one wait, it waits for the whole computation; under one that takes the
//! lock from the paused holder, it is granted at once and the holder retries.
//!
//! With a competitor (UFS's lock-holder hint experiment), time-sensitive work arrives on the
//! holder's worker right after the holder took the lock and computes for a while: the background
//! holder, paused, only continues when that worker has nothing time-sensitive left, unless a
//! policy lifts it into the waiter's level while the urgent transaction waits (`nprio-inherit`).
//!
//! Each round runs on a fresh single-row table. Both transactions add to the row (the holder 1,
//! the urgent one 10), so the row ends at 11 if both committed exactly once: nothing lost, nothing
//! applied twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{
    ColumnType, Concurrency, Database, Isolation, LockPolicy, Options, Priority, RetryPolicy,
    Table, TableSchema,
};
use overtake_sched::{CallExecutor, Policy, SchedConfig, SchedError, Scheduler, Shutdown};

use crate::compute::ComputeTask;

/// One round's settings.
#[derive(Clone, Debug)]
pub struct HolderSetup {
    /// The lock policy.
    pub policy: LockPolicy,
    /// The holder's computation while it holds the lock.
    pub hold: ComputeTask,
    /// How long after the holder took the lock the urgent transaction arrives.
    pub ask_after: Duration,
    /// The scheduler's settings (one worker, a preemptive policy).
    pub sched: SchedConfig,
    /// Time-sensitive computation arriving once the holder has the lock (none: `None`).
    pub competitor: Option<ComputeTask>,
}

/// What one round measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HolderRound {
    /// The urgent transaction's lock waits (QueueTime), summed over its attempts.
    pub urgent_lock_wait: Duration,
    /// From the urgent transaction's arrival to its commit.
    pub urgent_latency: Duration,
    /// Attempts the holder needed to commit.
    pub holder_attempts: u32,
    /// The row's value at the end (11 when both committed exactly once).
    pub row: i64,
    /// Both committed.
    pub committed: bool,
}

pub(crate) fn table(db: &Database) -> overtake_engine::Result<Arc<Table>> {
    let t = db.create_table(
        TableSchema::builder("held")
            .column("id", ColumnType::Int64)
            .column("value", ColumnType::Int64)
            .primary_key(&["id"])
            .build()?,
    )?;
    let mut txn = db.begin(Priority::LOW, Isolation::Serializable)?;
    txn.insert(&t, t.row_builder().int(0, 1).int(1, 0).finish()?)?;
    txn.commit()?;
    Ok(t)
}

/// Adds `n` to the row.
pub(crate) fn add(
    txn: &mut overtake_engine::Transaction<'_>,
    t: &Table,
    n: i64,
) -> overtake_engine::Result<()> {
    let key = t.key().int(1).finish()?;
    txn.update(t, &key, |r| {
        let v = r.as_ref().int(1);
        r.int(1, v + n);
    })?;
    Ok(())
}

/// The row's value.
pub(crate) fn value(db: &Database, t: &Table) -> overtake_engine::Result<i64> {
    let mut txn = db.begin(Priority::LOW, Isolation::Serializable)?;
    let key = t.key().int(1).finish()?;
    let v = txn.get(t, &key, |r| r.int(1))?.unwrap_or(i64::MIN);
    txn.commit()?;
    Ok(v)
}

/// Why a round could not run.
#[derive(Debug, thiserror::Error)]
pub enum HolderError {
    /// The engine refused something the round needs.
    #[error("{0}")]
    Engine(#[from] overtake_engine::Error),
    /// The scheduler could not start or stop.
    #[error("{0}")]
    Sched(#[from] SchedError),
    /// A call could not be admitted or did not run.
    #[error("a transaction did not run: {0}")]
    NotRun(String),
}

/// Runs one round.
pub fn run_round(setup: &HolderSetup) -> Result<HolderRound, HolderError> {
    let db = Arc::new(Database::in_memory(
        Options::default().concurrency(Concurrency::TwoPhaseLocking(setup.policy)),
    ));
    let t = table(&db)?;
    let sched = setup.sched.clone().workers(1);
    let scheduler = Scheduler::start(&sched, Arc::new(CallExecutor))?;
    let holding = Arc::new(AtomicBool::new(false));
    let (hdb, ht, h, task) = (
        Arc::clone(&db),
        Arc::clone(&t),
        Arc::clone(&holding),
        setup.hold.clone(),
    );
    let holder = scheduler
        .call(Priority::LOW, move || {
            hdb.run(
                Priority::LOW,
                Isolation::Serializable,
                &RetryPolicy::forever(),
                |txn| {
                    add(txn, &ht, 1)?;
                    h.store(true, Ordering::Release);
                    std::hint::black_box(task.run());
                    Ok(())
                },
            )
        })
        .map_err(|e| HolderError::NotRun(e.to_string()))?;
    while !holding.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let competitor = match &setup.competitor {
        Some(task) => {
            let (running, r, task) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicBool::new(false)),
                task.clone(),
            );
            let (flag, started) = (Arc::clone(&r), Arc::clone(&running));
            let call = scheduler
                .call(Priority::MEDIUM, move || {
                    started.store(true, Ordering::Release);
                    std::hint::black_box(task.run());
                    flag.store(true, Ordering::Release);
                })
                .map_err(|e| HolderError::NotRun(e.to_string()))?;
            while !running.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            Some(call)
        }
        None => None,
    };
    std::thread::sleep(setup.ask_after);
    let arrived = Instant::now();
    let (udb, ut) = (Arc::clone(&db), Arc::clone(&t));
    let urgent = scheduler
        .call(Priority::HIGH, move || {
            let attempts = udb.run(
                Priority::HIGH,
                Isolation::Serializable,
                &RetryPolicy::forever(),
                |txn| add(txn, &ut, 10),
            );
            (
                attempts.result.is_ok(),
                attempts.locks.queue,
                Instant::now(),
            )
        })
        .map_err(|e| HolderError::NotRun(e.to_string()))?;
    let (urgent_ok, urgent_lock_wait, urgent_done) = urgent
        .wait()
        .map_err(|e| HolderError::NotRun(e.to_string()))?;
    let held = holder
        .wait()
        .map_err(|e| HolderError::NotRun(e.to_string()))?;
    if let Some(c) = competitor {
        c.wait().map_err(|e| HolderError::NotRun(e.to_string()))?;
    }
    scheduler.shutdown(Shutdown::Drain)?;
    let holder_attempts = held.conflicts
        + held.validation_failures
        + held.deadlocks
        + held.lock_preemptions
        + u32::from(held.result.is_ok());
    Ok(HolderRound {
        urgent_lock_wait,
        urgent_latency: urgent_done.saturating_duration_since(arrived),
        holder_attempts,
        row: value(&db, &t)?,
        committed: urgent_ok && held.result.is_ok(),
    })
}

/// The scheduler settings of a paused-holder round: preemptive, one worker.
pub fn sched_config() -> SchedConfig {
    SchedConfig::default().policy(Policy::Preempt).workers(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_a_competitor_both_commit_exactly_once_with_the_lift_and_without() {
        let hold = ComputeTask::calibrate(Duration::from_millis(2));
        let competitor = Some(ComputeTask::calibrate(Duration::from_millis(4)));
        for policy in [LockPolicy::NPrio, LockPolicy::NPrioInherit] {
            let round = run_round(&HolderSetup {
                policy,
                hold: hold.clone(),
                ask_after: Duration::from_millis(1),
                sched: sched_config().delivery(overtake_sched::Delivery::Poll),
                competitor: competitor.clone(),
            })
            .expect("a round");
            assert!(round.committed, "{policy:?}: {round:?}");
            assert_eq!(round.row, 11, "{policy:?}");
            assert_eq!(round.holder_attempts, 1, "neither policy aborts the holder");
        }
    }
}
