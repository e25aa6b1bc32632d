//! `overtake bench`: one configuration of one experiment, run and reported. Each experiment is a
//! module here with its flags beside it; `compare` runs the same experiments under several
//! configurations and builds on what they export (their flags, one run, their report).
//!
//! A bench measures and reports; it must never change what it measures to make a report look
//! better (a run the machine could not serve says so in a warning).

use clap::Subcommand;

pub mod bimodal;
pub mod engine;
pub mod locks;
pub mod mixed;
pub mod q2;
pub mod sql;
pub mod stalls;
pub mod switch;
pub mod tpcc;

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// TPC-C: load, run the standard mix closed-loop, report throughput and latency per type.
    Tpcc(tpcc::TpccArgs),
    /// CH-benCHmark Query 2 alone: load, run it repeatedly, report its runtime.
    Q2(q2::Q2Args),
    /// The mixed workload (long low-priority transactions, batches of urgent ones) under one
    /// scheduling policy.
    Mixed(mixed::BenchMixedArgs),
    /// Microbenchmarks of the preemption mechanisms: switch cost, flag-to-switch and
    /// signal-to-switch latency.
    Switch(switch::SwitchArgs),
    /// Aspen's bimodal workload (99.5% short requests, 0.5% long scans, Poisson arrivals, no
    /// priorities) under one policy.
    Bimodal(bimodal::BenchBimodalArgs),
    /// How often this machine takes a core away from a running thread (the floor under every
    /// tail latency the other benches report).
    Stalls(stalls::StallsArgs),
    /// TPC-C under two-phase locking with one lock-scheduling policy: closed-loop clients with
    /// think time, a share of them urgent (POW's experiment).
    Locks(locks::BenchLocksArgs),
    /// TPC-C transactions one after another on this thread, straight on the engine (no
    /// scheduler, no clients): the engine's own cost per transaction type, for profiling.
    Engine(engine::EngineArgs),
    /// The SQL layer's own cost per statement: a prepared primary-key SELECT (pgbench's
    /// select-only statement) run through the planner's executor with its parameter decoded and
    /// its row encoded as text, against the same read straight on the engine, on this thread.
    Sql(sql::SqlArgs),
}

/// Runs the bench asked for.
pub fn run(bench: &Bench) -> Result<(), String> {
    match bench {
        Bench::Tpcc(a) => tpcc::run(a),
        Bench::Q2(a) => q2::run(a),
        Bench::Mixed(a) => mixed::bench(a),
        Bench::Switch(a) => switch::run(a),
        Bench::Bimodal(a) => bimodal::bench(a),
        Bench::Stalls(a) => stalls::run(a),
        Bench::Locks(a) => locks::bench(a),
        Bench::Engine(a) => engine::run(a),
        Bench::Sql(a) => sql::run(a),
    }
}
