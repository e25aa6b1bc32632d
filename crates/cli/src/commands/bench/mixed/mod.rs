//! `overtake bench mixed`: PreemptDB's mixed workload (long low-priority transactions, batches of
//! urgent ones arriving open-loop) under one scheduling policy, on a freshly loaded database.
//! `compare mixed` and `compare starvation` run the same experiment through what this module
//! exports; [`report`] is what a run reports.
//!
//! Each run loads a database of its own; a run must never reuse what an earlier run left behind
//! (its memory is settled between runs).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use overtake_engine::{Database, Options};
use overtake_sched::{Policy, SchedConfig};
use overtake_workload::drivers::open_loop::{self, RunConfig, RunReport};
use overtake_workload::exec::EngineExecutor;
use overtake_workload::mixed::{ComputeTask, HighWork, LowWork, MixedArrivals};
use overtake_workload::tpcc::load::GROWTH_PER_TRANSACTION;

use crate::commands::flags::{
    DurabilityArg, IsolationArg, MAX_WORKERS, MechanismArg, PolicyArg, non_negative,
    positive_seconds,
};
use crate::harness::database::load_into;
use crate::report::figures::{FigureArgs, print_files};
use crate::report::progress::{run_progress, ticker};
use crate::report::{print_json, secs};

pub mod report;

pub use report::{
    MixedComparison, MixedRun, describe, print_comparison, worker_share, write_figures,
};

/// The long low-priority transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LowArg {
    /// CH-benCHmark Query 2.
    Q2,
    /// A numeric loop touching no record (like a UDF), --compute-ms long: fused multiply-adds
    /// over a 32 KiB array with the widest vector instructions the CPU has (AVX-512, AVX2+FMA,
    /// or scalar).
    Compute,
    /// A writer: one TPC-C Payment booked in every district of a warehouse (so it writes
    /// the warehouse and district rows every urgent New-Order and Payment writes), in one
    /// transaction, then --compute-ms of computation.
    BatchUpdate,
}

impl LowArg {
    pub fn name(self) -> &'static str {
        match self {
            LowArg::Q2 => "q2",
            LowArg::Compute => "compute",
            LowArg::BatchUpdate => "batch-update",
        }
    }
}

/// The urgent transactions of the mixed workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HighArg {
    /// TPC-C New-Order and Payment, half each.
    Tpcc,
    /// A numeric loop touching no record, --hp-compute-us long (sets the urgent load exactly).
    Compute,
}

impl HighArg {
    pub fn name(self) -> &'static str {
        match self {
            HighArg::Tpcc => "tpcc",
            HighArg::Compute => "compute",
        }
    }
}

/// The middle class of the mixed workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MediumArg {
    /// The TPC-C standard mix (all five transactions), arriving open-loop.
    Tpcc,
}

/// Options shared by `bench mixed` and `compare mixed`.
#[derive(Clone, Debug, Args)]
pub struct MixedArgs {
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Warehouses (default: one per worker).
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: Option<i64>,
    /// Seconds to run each configuration.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Microseconds between batches of urgent transactions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub arrival_interval_us: u64,
    /// High-priority queue size per worker (a batch is workers x this).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub hp_queue: u32,
    /// Low-priority queue size per worker (kept full).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub lp_queue: u32,
    /// Cooperative: record accesses between checks for urgent work.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub yield_interval: u32,
    /// Preempt: starvation threshold (0 never preempts; 1 or more never limits).
    #[arg(long, default_value_t = 100.0, value_parser = non_negative)]
    pub starvation_threshold: f64,
    /// The long low-priority transaction.
    #[arg(long, value_enum, default_value_t = LowArg::Q2)]
    pub lp: LowArg,
    /// The urgent transactions.
    #[arg(long, value_enum, default_value_t = HighArg::Tpcc)]
    pub hp: HighArg,
    /// Length of an urgent compute transaction, in microseconds (with --hp compute).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub hp_compute_us: u64,
    /// A middle class at medium priority, between the urgent and the low-priority work.
    #[arg(long, value_enum)]
    pub mp: Option<MediumArg>,
    /// Microseconds between medium-priority arrivals (with --mp).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub mp_interval_us: u64,
    /// After this many failed attempts a low-priority transaction runs promoted (not preemptible,
    /// reserving the rows it writes), so that urgent writers cannot starve a low-priority writer
    /// (--lp batch-update); 0 never promotes.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub promote_after: u32,
    /// Length of a compute transaction, in milliseconds (with --lp compute and batch-update).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub compute_ms: u64,
    /// How preemption requests reach a worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds a request may stay untaken before SIGURG is sent (signal mechanism).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Isolation level.
    #[arg(long, value_enum, default_value_t = IsolationArg::Serializable)]
    pub isolation: IsolationArg,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// MiB of heap to fault in after the load and before each run, so that the database's
    /// growth reuses memory the kernel has already backed instead of faulting pages in inside
    /// transactions (and inside the non-preemptible allocator calls that urgent work waits
    /// for). By default, the run's expected growth; 0 turns it off.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub prefault_mib: Option<u64>,
    /// Attribute the slowest 1% of urgent transactions (queueing, preemption delivery, running
    /// on and off the CPU, page faults, the longest non-preemptible region) and print the
    /// lengths of the workers' non-preemptible regions with the longest sites. A diagnostic
    /// mode: it costs two system calls per urgent transaction.
    #[arg(long)]
    pub tail_report: bool,
    /// Let the kernel back the heap with transparent huge pages. Off by default: on a VM whose
    /// host backs memory lazily, the first touch of each fresh 2 MiB page stalls the transaction
    /// that touches it for milliseconds.
    #[arg(long)]
    pub huge_pages: bool,
    /// Seed of the data and transaction generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Log the commits: each run loads its database into a fresh directory (under --log-dir)
    /// opened with this durability, and removes it afterwards. Without it the runs are in
    /// memory.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// With --durability: where the runs' directories go (default: the system's temporary
    /// directory). Put it on the disk whose flushes you want to measure.
    #[arg(long, value_name = "DIR", requires = "durability")]
    pub log_dir: Option<std::path::PathBuf>,
    /// With --durability: group commit, the longest a commit nobody urgent flushes waits for
    /// its flush, in microseconds.
    #[arg(long, value_name = "US", requires = "durability",
          default_value_t = overtake_engine::DEFAULT_GROUP_COMMIT.as_micros() as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub group_commit_us: u64,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Debug, Args)]
pub struct BenchMixedArgs {
    /// Scheduling policy.
    #[arg(long, value_enum, default_value_t = PolicyArg::Preempt)]
    pub policy: PolicyArg,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

pub fn settings(policy: Policy, args: &MixedArgs) -> RunConfig {
    let sched = SchedConfig::default()
        .policy(policy)
        .workers(usize::from(args.workers))
        .yield_interval(args.yield_interval)
        .starvation_threshold(args.starvation_threshold)
        .delivery(args.preempt_mechanism.delivery())
        .signal_delay(Duration::from_micros(args.signal_delay_us))
        .trace(args.tail_report)
        .record_jobs(args.figures.records_jobs());
    RunConfig {
        sched,
        duration: Duration::from_secs_f64(args.duration),
        batch: args.hp_queue as usize,
        background_queue: args.lp_queue as usize,
        interrupt_interval: None,
    }
}

/// The compute transactions a run needs, calibrated once for all its policies.
pub struct Calibrated {
    low: Option<ComputeTask>,
    high: Option<ComputeTask>,
}

impl Calibrated {
    pub fn for_args(args: &MixedArgs) -> Self {
        Calibrated {
            low: matches!(args.lp, LowArg::Compute | LowArg::BatchUpdate)
                .then(|| ComputeTask::calibrate(Duration::from_millis(args.compute_ms))),
            high: (args.hp == HighArg::Compute)
                .then(|| ComputeTask::calibrate(Duration::from_micros(args.hp_compute_us))),
        }
    }
}

/// Runs one policy on a fresh database.
pub fn run_one(
    policy: PolicyArg,
    args: &MixedArgs,
    work: &Calibrated,
) -> Result<RunReport, String> {
    run_config(settings(policy.policy(), args), args, work, true)
}

/// Runs `config` on a fresh database; without `urgent`, only the low-priority work arrives.
pub fn run_config(
    config: RunConfig,
    args: &MixedArgs,
    work: &Calibrated,
    urgent: bool,
) -> Result<RunReport, String> {
    config.validate().map_err(|e| e.to_string())?;
    let warehouses = args.warehouses.unwrap_or(i64::from(args.workers));
    let kept = match args.durability {
        Some(durability) => Some(RunDir::create(args, durability)?),
        None => None,
    };
    let db = match &kept {
        Some(dir) => dir.open()?,
        None => Database::in_memory(Options::default()),
    };
    let loaded = load_into(db, warehouses, args.seed, args.lp == LowArg::Q2, args.json)?;
    // The run's growth then reuses memory already backed (see `prefault_heap`).
    overtake_runtime::os::memory::prefault_heap(
        usize::try_from(prefault_bytes(args)).unwrap_or(usize::MAX),
    );
    let constants = loaded.run_constants(args.seed);
    let low = match (args.lp, &work.low) {
        (LowArg::Compute, Some(task)) => LowWork::Compute(task.clone()),
        (LowArg::BatchUpdate, Some(task)) => LowWork::BatchUpdate(task.clone()),
        _ => LowWork::Query2,
    };
    let batch = if urgent {
        usize::from(args.workers) * args.hp_queue as usize
    } else {
        0
    };
    let mut arrivals = MixedArrivals::new(
        Duration::from_micros(args.arrival_interval_us),
        batch,
        low,
        warehouses,
        constants,
        args.seed,
    );
    if let Some(task) = &work.high {
        arrivals = arrivals.with_high(HighWork::Compute(task.clone()));
    }
    if args.mp.is_some() && urgent {
        arrivals = arrivals.with_medium(Duration::from_micros(args.mp_interval_us));
    }
    let executor = Arc::new(
        EngineExecutor::new(
            Arc::clone(&loaded.db),
            loaded.tpcc.clone(),
            loaded.ch.clone(),
            args.isolation.engine(),
        )
        .promoting_low_after((args.promote_after > 0).then_some(args.promote_after)),
    );
    let bar = run_progress(args.duration, config.sched.policy.name(), args.json);
    let log_before = loaded.db.log_stats();
    let report = open_loop::run(&config, executor, &mut arrivals, Vec::new(), &ticker(&bar))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    if let (Some(before), Some(after), false) = (log_before, loaded.db.log_stats(), args.json) {
        let run = after.since(&before);
        let (flushes, asked, resumed) = (
            run.flushes,
            &run.asked_to_durable_histogram,
            &run.durable_to_resumed_histogram,
        );
        let quantile =
            |h: &[u64], q| overtake_engine::LogStats::histogram_quantile(h, q).as_micros();
        let under = |q| quantile(&run.flush_histogram, q);
        eprintln!(
            "log ({}): {flushes} flushes ({:.0} per s, {} started while another was in flight), \
             {:.0} us each on average (half under {} us, 99% under {} us, 99.9% under {} us), \
             {:.1} MiB; log writer {}",
            config.sched.policy.name(),
            flushes as f64 / secs(report.elapsed),
            run.overlapped_flushes,
            run.mean_flush().as_secs_f64() * 1e6,
            under(0.5),
            under(0.99),
            under(0.999),
            run.bytes as f64 / f64::from(1 << 20),
            run.writer_class,
        );
        eprintln!(
            "urgent commits that parked ({}): asking for the flush to durable, half under {} us, \
             99% under {} us; durable to running again, half under {} us, 99% under {} us",
            asked.iter().sum::<u64>(),
            quantile(asked, 0.5),
            quantile(asked, 0.99),
            quantile(resumed, 0.5),
            quantile(resumed, 0.99),
        );
    }
    drop(loaded);
    drop(kept);
    Ok(report)
}

/// A run's own database directory (with `--durability`), removed when the run is over.
struct RunDir {
    path: PathBuf,
    options: Options,
}

impl RunDir {
    fn create(args: &MixedArgs, durability: DurabilityArg) -> Result<RunDir, String> {
        let parent = args.log_dir.clone().unwrap_or_else(std::env::temp_dir);
        let path = parent.join(format!("overtake-mixed-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(RunDir {
            path,
            options: Options::default()
                .durability(durability.engine())
                .group_commit(std::time::Duration::from_micros(args.group_commit_us)),
        })
    }

    fn open(&self) -> Result<Database, String> {
        Database::open(&self.path, self.options.clone()).map_err(|e| e.to_string())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Frees, on this thread and before the next run starts, what a finished run left behind: the
/// memory its database and its exited threads held (see
/// `overtake_runtime::os::memory::settle_freed_memory`) and what dropping the database retired for
/// epoch-based reclamation. Without it the second run of a `compare` had one urgent transaction
/// stall 35-55 ms while its worker did that work.
pub fn settle_between_runs() {
    overtake_engine::release_thread_garbage();
    overtake_runtime::os::memory::settle_freed_memory();
}

/// Refuses a preempting policy that could never preempt the low-priority work: a computation
/// touches no record, and the `poll` mechanism only looks at its flag at record accesses.
pub fn check_can_preempt(args: &MixedArgs, policy: Policy) -> Result<(), String> {
    let computes = matches!(args.lp, LowArg::Compute | LowArg::BatchUpdate);
    if policy == Policy::Preempt && computes && args.preempt_mechanism == MechanismArg::Poll {
        return Err(format!(
            "--preempt-mechanism poll cannot preempt --lp {}: the computation touches no \
             record, and poll only checks at record accesses (use signal)",
            args.lp.name()
        ));
    }
    Ok(())
}

/// Refuses a mixed run this machine cannot hold (one database at a time: each policy's run loads
/// its own and drops it after). The database grows by the urgent transactions it runs.
pub fn check_resources(args: &MixedArgs) -> Result<(), String> {
    let warehouses = args.warehouses.unwrap_or(i64::from(args.workers));
    crate::harness::resources::check(
        warehouses,
        usize::from(args.workers),
        growth(args).max(prefault_bytes(args)),
    )
}

/// How much the database grows in one run: the urgent transactions it runs.
fn growth(args: &MixedArgs) -> u64 {
    let urgent_per_sec =
        f64::from(args.workers) * f64::from(args.hp_queue) * 1e6 / args.arrival_interval_us as f64;
    (urgent_per_sec * args.duration * GROWTH_PER_TRANSACTION as f64) as u64
}

/// Bytes of heap to fault in before a run (`--prefault-mib`, by default the run's growth).
fn prefault_bytes(args: &MixedArgs) -> u64 {
    args.prefault_mib
        .map_or_else(|| growth(args), |mib| mib << 20)
}

/// What the dispatcher's arrival counters count: every open-loop arrival, the medium class's too
/// when there is one.
pub fn open_loop_arrivals(args: &MixedArgs) -> &'static str {
    if args.mp.is_some() {
        "urgent and medium-priority transactions"
    } else {
        "urgent transactions"
    }
}

/// Applies the process-wide memory setting before anything is loaded.
pub fn set_huge_pages(args: &MixedArgs) -> Result<(), String> {
    overtake_runtime::os::memory::set_transparent_huge_pages(args.huge_pages)
        .map_err(|e| format!("cannot set transparent huge pages: {e}"))
}

pub fn bench(args: &BenchMixedArgs) -> Result<(), String> {
    check_can_preempt(&args.mixed, args.policy.policy())?;
    check_resources(&args.mixed)?;
    set_huge_pages(&args.mixed)?;
    args.mixed.figures.prepare()?;
    let work = Calibrated::for_args(&args.mixed);
    let report = run_one(args.policy, &args.mixed, &work)?;
    let files = write_figures(std::slice::from_ref(&report), &args.mixed)?;
    if args.mixed.json {
        print_json(&MixedRun::new(&report, &args.mixed), &files)?;
    } else {
        print_comparison(std::slice::from_ref(&report), &args.mixed);
        print_files(&files);
    }
    Ok(())
}
