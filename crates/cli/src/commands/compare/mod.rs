//! `overtake compare`: several configurations of one experiment, one after another, side by
//! side with ratios to a baseline. Experiments that `bench` also runs take their flags, their
//! run and their report from there; the rest (starvation, holder, tiers, hints) are here alone.
//!
//! Ctrl-C ends a comparison after the run in progress and reports the runs already done; a
//! comparison must never report a run it did not finish.

use clap::Subcommand;

pub mod bimodal;
pub mod bimodal_sql;
mod classes;
pub mod hints;
pub mod holder;
pub mod htap;
pub mod locks;
pub mod locks_sql;
pub mod mixed;
mod script;
pub mod starvation;
pub mod tiers;
pub mod tiers_sql;

#[derive(Debug, Subcommand)]
pub enum Compare {
    /// The mixed workload under several policies, with ratios to `wait`.
    Mixed(mixed::CompareMixedArgs),
    /// Starvation control under overload (PreemptDB's Figure 12 scaled to these workers): urgent
    /// work arriving faster than a worker can serve it, one run per starvation threshold plus
    /// `wait` and the low-priority work alone.
    #[command(mut_arg("hp_queue", |a| a.default_value("100")))]
    Starvation(starvation::CompareStarvationArgs),
    /// The paused lock holder under every lock policy: on one worker, a low-priority
    /// transaction locks a row and computes; an urgent one asks for the row, preempts it and
    /// waits for the lock, or takes it (POW, PAbort).
    Holder(holder::CompareHolderArgs),
    /// The bimodal workload under several policies (and quantum ablations), with ratios to
    /// `wait`.
    Bimodal(bimodal::CompareBimodalArgs),
    /// The bimodal workload over the wire: pgbench sessions without priorities sending short
    /// point reads beside sessions sending long scans, to Overtake under `wait` and `quantum`
    /// and to PostgreSQL 15, at a range of rates; the short reads' p99 and the highest rate
    /// served under an SLO. Runs `scripts/bimodal-sql.sh`: needs root and PostgreSQL 15.
    BimodalSql(bimodal_sql::CompareBimodalSqlArgs),
    /// TPC-C under two-phase locking: every lock policy at every think time, with urgent
    /// speedups and background penalties against `standard`, plus CPU priority only, lock
    /// priority only, both, and the MVCC mode (McWherter's question).
    Locks(locks::CompareLocksArgs),
    /// Lock scheduling over the wire: go-tpc's TPC-C clients at `priority=high` beside others
    /// at the default level, one warehouse, saturated, on Overtake under 2PL with each lock
    /// policy and on PostgreSQL 15; the urgent speedup and the others' penalty against
    /// `standard`. Runs `scripts/locks-sql.sh`: needs root, PostgreSQL 15 and go-tpc.
    LocksSql(locks_sql::CompareLocksSqlArgs),
    /// UFS's experiment: CPU-bursty time-sensitive sessions against CPU-bound background
    /// sessions (SOLO, MIN:MAX, 50:50), under Overtake's tiers on pinned workers and on OS threads
    /// under the OS's schedulers (cgroup weights, SCHED_IDLE, FIFO, RR); then shares within a
    /// tier by weight.
    Tiers(tiers::CompareTiersArgs),
    /// UFS's experiment over the wire: go-tpc's TPC-C sessions (CPU-bursty, time-sensitive)
    /// beside CH-benCHmark Query 2 sessions (CPU-bound), in the mixes SOLO, MIN:MAX and 50:50,
    /// and two background groups weighted 2:3; under Overtake's tiers, and under the OS's
    /// schedulers on Overtake's session threads and on PostgreSQL 15's backends. Runs
    /// `scripts/tiers-sql.sh`: needs root, PostgreSQL 15 and go-tpc.
    TiersSql(tiers_sql::CompareTiersSqlArgs),
    /// UFS's lock-holder hint experiment on OS threads, all on one core: a background session
    /// holds a row lock and computes, a time-sensitive one waits for it, a second time-sensitive
    /// one burns CPU. The waiter's latency alone, with the burner, and with the lock manager's
    /// hints to overtake-ufs (which must be loaded for that run).
    Hints(hints::CompareHintsArgs),
    /// HTAP over the wire: go-tpc's TPC-C clients (time-sensitive) beside CH-benCHmark
    /// analytic sessions (background), on Overtake (SOLO, same priority, priorities under each
    /// policy) and on PostgreSQL 15 (SOLO, default, AP nice 19, AP SCHED_IDLE, TP SCHED_FIFO,
    /// cgroup weights), with ratios to each server's SOLO runs. Runs `scripts/htap.sh`: needs
    /// root, PostgreSQL 15 and go-tpc.
    Htap(htap::CompareHtapArgs),
}

/// Runs the comparison asked for.
pub fn run(compare: &Compare) -> Result<(), String> {
    match compare {
        Compare::Mixed(a) => mixed::compare(a),
        Compare::Starvation(a) => starvation::compare(a),
        Compare::Holder(a) => holder::compare(a),
        Compare::Bimodal(a) => bimodal::compare(a),
        Compare::BimodalSql(a) => bimodal_sql::compare(a),
        Compare::Locks(a) => locks::compare(a),
        Compare::LocksSql(a) => locks_sql::compare(a),
        Compare::Tiers(a) => tiers::compare(a),
        Compare::TiersSql(a) => tiers_sql::compare(a),
        Compare::Hints(a) => hints::compare(a),
        Compare::Htap(a) => htap::compare(a),
    }
}
