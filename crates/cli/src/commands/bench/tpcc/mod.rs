//! `overtake bench tpcc`: load, run the TPC-C mix closed-loop on scheduler workers, report. With
//! `--interrupt-interval-us`, the dispatcher also interrupts every worker at that interval without
//! giving it work, which measures the preemption mechanism's own cost against the same run
//! without interrupts.
//!
//! A kept database is opened as `--data-dir` says and never loaded over: a load a crash cut short
//! is refused, not repaired.

use std::time::Duration;

use clap::Args;
use overtake_engine::Options;
use overtake_sched::ClassStats;
use overtake_workload::ack::AckLog;
use overtake_workload::drivers::closed_loop::{ClosedLoopConfig, run_closed_loop};
use overtake_workload::tpcc::TxnType;
use overtake_workload::tpcc::load::GROWTH_PER_WORKER_SECOND;

use crate::commands::flags::{
    KeptArgs, MAX_WORKERS, MechanismArg, OsSchedulerArg, PolicyArg, TpccRunOptions,
    positive_seconds, share,
};
use crate::harness::database::{LoadedDb, consistency_after_run, load_database, rss_mib};
use crate::harness::kept::{RecoveredReport, open_tpcc};
use crate::report::progress::{run_progress, ticker};
use crate::report::{ClassReport, print_json, secs};

mod clients;
mod report;

use report::{Checkpoints, Interrupts, LoadReport, LogReport, Total, TpccReport, Versions};

#[derive(Clone, Debug, Args)]
pub struct TpccArgs {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Worker threads running the mix (worker i's home warehouse is i mod warehouses + 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Seconds to run the mix.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    #[command(flatten)]
    pub run: TpccRunOptions,
    /// Interrupt every worker this often, in microseconds, without giving it work (the cost of
    /// the preemption mechanism alone).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub interrupt_interval_us: Option<u64>,
    /// How interrupts are delivered.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds an interrupt request may stay untaken before SIGURG is sent (0: always send).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Instead of one terminal per worker with no think time: this many closed-loop client
    /// threads submitting through the scheduler's API, each thinking between transactions.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: Option<u32>,
    /// With --clients: mean think time in microseconds (exponentially distributed).
    #[arg(long, requires = "clients", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub think_us: u64,
    /// With --clients: share of transactions submitted as urgent (the rest are background).
    #[arg(long, requires = "clients", default_value_t = 0.5, value_parser = share)]
    pub hp_share: f64,
    /// With --clients: the scheduling policy.
    #[arg(long, requires = "clients", value_enum, default_value_t = PolicyArg::Preempt)]
    pub policy: PolicyArg,
    /// With --clients: each client runs its transactions on its own thread, scheduled by the OS
    /// (`eevdf`: a cgroup per class's group; `idle`: background SCHED_IDLE; `fifo`/`rr`: urgent
    /// SCHED_FIFO/SCHED_RR 99), instead of submitting them to the workers.
    #[arg(long, requires = "clients", value_enum)]
    pub session_threads: Option<OsSchedulerArg>,
    /// MiB of heap to fault in after the load and before the run, so that the database's growth
    /// reuses memory the kernel has already backed instead of faulting pages in inside
    /// transactions. By default, the run's expected growth; 0 turns it off. Not with --clients.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_048_576), conflicts_with = "clients")]
    pub prefault_mib: Option<u64>,
    #[command(flatten)]
    pub kept: KeptArgs,
    /// With --data-dir: append `w d o_id` to this file for every New-Order whose commit was
    /// acknowledged (a crash test's ledger; `check tpcc --ack-log` verifies it). Each line is a
    /// write on the worker, so it costs throughput. Not with --clients.
    #[arg(
        long,
        value_name = "FILE",
        requires = "data_dir",
        conflicts_with = "clients"
    )]
    pub ack_log: Option<std::path::PathBuf>,
}

pub fn run(args: &TpccArgs) -> Result<(), String> {
    if let Some(clients) = args.clients {
        return clients::run(args, clients);
    }
    let delivery = args.preempt_mechanism.delivery();
    if args.interrupt_interval_us.is_some() {
        delivery.check().map_err(|e| e.to_string())?;
    }
    let growth = (GROWTH_PER_WORKER_SECOND as f64 * f64::from(args.workers) * args.duration) as u64;
    let prefault = args.prefault_mib.map_or(growth, |mib| mib << 20);
    crate::harness::resources::check(
        args.warehouses,
        usize::from(args.workers),
        growth.max(prefault),
    )?;
    let loaded = tpcc_database(args)?;
    let log_before = loaded.db.log_stats();
    let checkpoints_before = loaded.db.checkpoint_stats();
    // The run's growth then reuses memory already backed (see `prefault_heap`).
    let prefault_time = overtake_runtime::os::memory::prefault_heap(
        usize::try_from(prefault).unwrap_or(usize::MAX),
    );
    let (db, tables) = (&loaded.db, &loaded.tpcc);
    let constants = loaded.run_constants(args.run.seed);
    let ack = match &args.ack_log {
        Some(path) => Some(std::sync::Arc::new(
            AckLog::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
        )),
        None => None,
    };
    let config = ClosedLoopConfig {
        warehouses: args.warehouses,
        workers: usize::from(args.workers),
        duration: Duration::from_secs_f64(args.duration),
        isolation: args.run.isolation.engine(),
        constants,
        seed: args.run.seed,
        interrupt_interval: args.interrupt_interval_us.map(Duration::from_micros),
        delivery,
        signal_delay: Duration::from_micros(args.signal_delay_us),
        pin: true,
        ack,
    };
    let bar = run_progress(args.duration, "running", args.run.json);
    let report = run_closed_loop(std::sync::Arc::clone(db), tables, &config, &ticker(&bar))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let stats_at_end = db.stats();
    let census_at_end = db.census();
    db.collect_garbage();
    let census_after_collect = db.census();
    let rss_after_run = rss_mib();
    let consistency = consistency_after_run(db, tables, args.run.check, args.run.json)?;

    let elapsed = secs(report.elapsed);
    let mut total = ClassStats::default();
    for kind in TxnType::ALL {
        total.merge(&report.stats.kinds[kind.index()]);
    }
    let log = match (log_before, db.log_stats()) {
        (Some(before), Some(after)) => Some(after.since(&before)),
        _ => None,
    };
    let p = report.preempt;
    let out = TpccReport {
        benchmark: "tpcc",
        warehouses: args.warehouses,
        workers: args.workers,
        isolation: args.run.isolation.name(),
        duration_s: elapsed,
        load: LoadReport {
            seconds: secs(loaded.loaded.elapsed),
            rows: loaded.loaded.rows,
            rss_mib: loaded.rss_mib,
            rss_mib_per_warehouse: loaded.rss_mib.map(|r| r / args.warehouses as f64),
            prefault_mib: prefault >> 20,
            prefault_seconds: secs(prefault_time),
        },
        total: Total {
            per_sec_per_worker: total.committed as f64 / elapsed / f64::from(args.workers),
            class: ClassReport::new(&total, elapsed),
        },
        by_type: TxnType::ALL
            .iter()
            .map(|k| {
                (
                    k.name(),
                    ClassReport::new(&report.stats.kinds[k.index()], elapsed),
                )
            })
            .collect(),
        interrupts: Interrupts {
            interval_us: args.interrupt_interval_us,
            mechanism: args.preempt_mechanism.delivery().name(),
            signal_delay_us: args.signal_delay_us,
            requests: report.dispatch.requests,
            signals_sent: p.signals_sent,
            injected: p.injected,
            deferred: p.deferred,
            served: p.served,
        },
        versions: Versions {
            created: stats_at_end.versions_created,
            reclaimed: stats_at_end.versions_reclaimed,
            linked_at_end: census_at_end.linked_versions,
            unreclaimed_at_end: census_at_end.unreclaimed_versions,
            unreclaimed_deletes_at_end: census_at_end.unreclaimed_deletes,
            unreclaimed_after_collect: census_after_collect.unreclaimed_versions,
        },
        rss_mib_after_run: rss_after_run,
        first_error: total.first_error.as_ref().map(ToString::to_string),
        consistency,
        durability: LogReport::new(
            args.kept
                .data_dir
                .as_ref()
                .map_or("in memory", |_| args.kept.durability().engine().name()),
            log,
            total.committed,
            elapsed,
            Checkpoints::during(checkpoints_before, db.checkpoint_stats()),
        ),
        recovered: loaded.recovered.as_ref().map(RecoveredReport::from),
        durable_waits: total.durable_wait.count(),
    };
    if args.run.json {
        print_json(&out, &[])
    } else {
        out.print();
        Ok(())
    }
}

/// The TPC-C database of a `bench tpcc` run: kept in `--data-dir` if given, else in memory.
pub fn tpcc_database(args: &TpccArgs) -> Result<LoadedDb, String> {
    let (seed, json) = (args.run.seed, args.run.json);
    match &args.kept.data_dir {
        Some(dir) => {
            let options = args.kept.options(Options::default());
            open_tpcc(dir, options, args.warehouses, seed, json)
        }
        None => {
            args.kept.check_in_memory()?;
            load_database(args.warehouses, seed, false, json)
        }
    }
}
