//! `overtake bench locks`: TPC-C under two-phase locking, POW's experiment. Closed-loop clients
//! (exponential think time, each transaction urgent with probability `--hp-share`) submit the
//! full mix through the scheduler; the database uses one lock-scheduling policy. `compare locks`
//! sweeps policies and think times on one loaded database through what this module exports
//! (switching its concurrency control between runs); [`LocksRun`] is what a run reports.
//!
//! A run never shares its database with another in flight: the concurrency control is switched
//! only when no run holds the database.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use overtake_engine::{Concurrency, LockPolicy, LockWait, Priority};
use overtake_sched::{ClassStats, RunStats, SchedConfig};
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};
use overtake_workload::rng::NuRandConstants;
use overtake_workload::tpcc::consistency;
use serde::Serialize;

use crate::commands::flags::{
    CcArg, MAX_WORKERS, MechanismArg, PolicyArg, lock_policy_name, positive_seconds, share,
};
use crate::harness::database::{LoadedDb, load_database};
use crate::report::figures::{self, FigureArgs, Group, Labeled, print_files};
use crate::report::plot::{self, Curve};
use crate::report::progress::{run_progress, ticker};
use crate::report::{ClassReport, print_json, print_table, us};

#[derive(Clone, Debug, Args)]
pub struct LocksArgs {
    /// Number of warehouses (POW used 10).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Closed-loop client threads.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clients: u32,
    /// Share of transactions submitted as urgent (a Bernoulli draw per transaction).
    #[arg(long, default_value_t = 0.1, value_parser = share)]
    pub hp_share: f64,
    /// Seconds to run each configuration.
    #[arg(long, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Reprieve of the `cr` policy, in microseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub reprieve_us: u64,
    /// CPU scheduling of the lock-policy runs (the McWherter runs choose their own).
    #[arg(long, value_enum, default_value_t = PolicyArg::Preempt)]
    pub cpu: PolicyArg,
    /// How preemption requests reach a worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds a request may stay untaken before SIGURG is sent (signal mechanism).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Check the TPC-C consistency conditions after every run.
    #[arg(long)]
    pub check: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data and client generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Debug, Args)]
pub struct BenchLocksArgs {
    #[command(flatten)]
    pub locks: LocksArgs,
    /// Lock-scheduling policy: standard, nprio, nprio-inherit, pabort, pow, cr, wdl1, cats.
    #[arg(long, default_value = "pow", value_parser = lock_policy_name)]
    pub lock_policy: String,
    /// Concurrency control: 2pl (with --lock-policy) or mvcc.
    #[arg(long, value_enum, default_value_t = CcArg::TwoPl)]
    pub cc: CcArg,
    /// Mean think time of a client between transactions, in microseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub think_us: u64,
    /// Also print the lock waits in progress half-way through the run (who waits for whom, how
    /// long, like PostgreSQL's pg_locks).
    #[arg(long)]
    pub show_waits: bool,
}

/// One configuration to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// What the row is called.
    pub label: String,
    pub concurrency: Concurrency,
    pub cpu: PolicyArg,
    pub think_us: u64,
}

/// What one run measured.
pub struct RunResult {
    pub spec: RunSpec,
    pub elapsed: f64,
    pub high: ClassStats,
    pub low: ClassStats,
    /// Every class, for figures and the CSV file.
    stats: RunStats,
    pub overloaded: u64,
    pub consistent: Option<bool>,
    /// The lock waits seen at half time (`--show-waits`), and when.
    waits: Option<(Duration, Vec<LockWait>)>,
}

impl RunResult {
    /// Clients with a transaction in flight, on average (Little's law over both classes).
    pub fn active_clients(&self) -> f64 {
        [&self.high, &self.low]
            .iter()
            .map(|c| c.committed as f64 / self.elapsed * c.latency.summary().mean / 1e6)
            .sum()
    }
}

/// One run: what `--json` prints for it (with the comparison's ratios under `compare`, and the
/// lock waits of `--show-waits` under `bench`), and what its table reads.
#[derive(Debug, Serialize)]
pub struct LocksRun {
    pub config: String,
    pub cc: &'static str,
    pub lock_policy: Option<&'static str>,
    pub cpu: &'static str,
    pub think_us: u64,
    pub duration_s: f64,
    /// Clients with a transaction in flight, on average.
    pub active_clients: f64,
    pub overloaded: u64,
    pub consistent: Option<bool>,
    pub classes: Classes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urgent_speedup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_waits: Option<LockWaits>,
}

#[derive(Debug, Serialize)]
pub struct Classes {
    pub high: ClassReport,
    pub low: ClassReport,
}

/// The lock waits in progress at half time (`--show-waits`).
#[derive(Debug, Serialize)]
pub struct LockWaits {
    pub at_s: f64,
    pub waits: Vec<Wait>,
}

#[derive(Debug, Serialize)]
pub struct Wait {
    pub waiter: u64,
    pub level: u8,
    pub lock: String,
    pub holders: Vec<(u64, bool)>,
    pub waited_us: f64,
}

impl LocksRun {
    pub fn new(r: &RunResult) -> Self {
        LocksRun {
            config: r.spec.label.clone(),
            cc: cc_name(r.spec.concurrency),
            lock_policy: policy_of(r.spec.concurrency),
            cpu: r.spec.cpu.policy().name(),
            think_us: r.spec.think_us,
            duration_s: r.elapsed,
            active_clients: r.active_clients(),
            overloaded: r.overloaded,
            consistent: r.consistent,
            classes: Classes {
                high: ClassReport::new(&r.high, r.elapsed),
                low: ClassReport::new(&r.low, r.elapsed),
            },
            urgent_speedup: None,
            background_penalty: None,
            lock_waits: r.waits.as_ref().map(|(at, waits)| LockWaits {
                at_s: at.as_secs_f64(),
                waits: waits
                    .iter()
                    .map(|w| Wait {
                        waiter: w.waiter,
                        level: w.level,
                        lock: w.lock.clone(),
                        holders: w.holders.clone(),
                        waited_us: w.waited.as_secs_f64() * 1e6,
                    })
                    .collect(),
            }),
        }
    }
}

fn cc_name(c: Concurrency) -> &'static str {
    c.name()
}

fn policy_of(c: Concurrency) -> Option<&'static str> {
    c.lock_policy().map(LockPolicy::name)
}

pub fn parse_policy(name: &str, args: &LocksArgs) -> Result<LockPolicy, String> {
    LockPolicy::parse(name, Duration::from_micros(args.reprieve_us))
        .ok_or_else(|| format!("{name:?} is not a lock policy"))
}

/// Loads the database and draws the run's NURand constants.
pub fn load(args: &LocksArgs) -> Result<(LoadedDb, NuRandConstants), String> {
    let loaded = load_database(args.warehouses, args.seed, false, args.json)?;
    let constants = loaded.run_constants(args.seed);
    Ok((loaded, constants))
}

/// Runs `spec` on the loaded database.
pub fn run_one(
    loaded: &mut LoadedDb,
    constants: NuRandConstants,
    args: &LocksArgs,
    spec: &RunSpec,
    show_waits: bool,
) -> Result<RunResult, String> {
    Arc::get_mut(&mut loaded.db)
        .ok_or("the database is still in use by a previous run")?
        .set_concurrency(spec.concurrency);
    let clients = args.clients as usize;
    let config = ClientsConfig {
        think: Duration::from_micros(spec.think_us),
        hp_share: args.hp_share,
        warehouses: args.warehouses,
        sched: SchedConfig::default()
            .policy(spec.cpu.policy())
            .workers(usize::from(args.workers))
            .inboxes(clients, clients)
            .delivery(args.preempt_mechanism.delivery())
            .signal_delay(Duration::from_micros(args.signal_delay_us))
            .record_jobs(args.figures.records_jobs()),
        seed: args.seed,
        ..ClientsConfig::new(clients, SchedConfig::default(), constants)
    };
    let bar = run_progress(args.duration, &spec.label, args.json);
    let advance = ticker(&bar);
    // The lock waits at half time, if asked for (taken from the tick callback, on this thread).
    let waits = std::cell::RefCell::new(None);
    let half = Duration::from_secs_f64(args.duration / 2.0);
    let db = Arc::clone(&loaded.db);
    let tick = |elapsed: Duration| {
        advance(elapsed);
        if show_waits && elapsed >= half && waits.borrow().is_none() {
            *waits.borrow_mut() = Some((elapsed, db.lock_waits()));
        }
    };
    let report = run_clients(
        Arc::clone(&loaded.db),
        &loaded.tpcc,
        &config,
        Duration::from_secs_f64(args.duration),
        &tick,
    )
    .map_err(|e| e.to_string())?;
    drop(db);
    bar.finish_and_clear();
    let consistent = if args.check {
        // One snapshot reads every table; under locks it would take a million shared locks.
        let db = Arc::get_mut(&mut loaded.db).ok_or("the run still holds the database")?;
        db.set_concurrency(Concurrency::Mvcc);
        let check = consistency::check(&loaded.db, &loaded.tpcc, false)
            .map_err(|e| format!("consistency check: {e}"))?;
        if !check.is_ok() {
            eprintln!("{}: consistency: {}", spec.label, check.summary());
        }
        Some(check.is_ok())
    } else {
        None
    };
    let stats = report.scheduler.stats;
    Ok(RunResult {
        spec: spec.clone(),
        elapsed: report.elapsed.as_secs_f64(),
        high: stats.class(Priority::HIGH).clone(),
        low: stats.class(Priority::LOW).clone(),
        stats,
        overloaded: report.overloaded,
        consistent,
        waits: waits.into_inner(),
    })
}

/// The per-class rows of one run.
fn class_rows(r: &LocksRun) -> Vec<Vec<String>> {
    [("high", &r.classes.high), ("low", &r.classes.low)]
        .iter()
        .map(|(name, c)| {
            let (l, b, locks) = (&c.latency_us, &c.breakdown_us, &c.locks);
            vec![
                (*name).to_owned(),
                format!("{:.0}", c.per_sec),
                us(l.mean),
                us(l.p50),
                us(l.p99),
                format!("{:.2}", locks.waits_per_txn),
                us(locks.queue_time_us_mean),
                us(locks.wait_excess_us_mean),
                locks.preemptive_aborts.to_string(),
                locks.deadlocks.to_string(),
                format!("{:.1}", c.wasted_ms),
                us(b.queued),
                us(b.running),
                us(b.preempted),
                us(b.waiting),
            ]
        })
        .collect()
}

const CLASS_HEADER: [&str; 15] = [
    "class",
    "per s",
    "mean us",
    "p50 us",
    "p99 us",
    "waits/txn",
    "queue us",
    "excess us",
    "aborts",
    "deadlocks",
    "wasted ms",
    "queued",
    "running",
    "paused",
    "lock wait",
];

const CLASS_NOTE: &str = "latency: submission to end; waits/txn: lock requests that waited per \
                          attempt; queue/excess: mean QueueTime and WaitExcess per wait; aborts: \
                          preemptive (and wait-depth) aborts; wasted: time in aborted attempts; \
                          queued/running/paused/lock wait: mean microseconds per transaction";

pub fn bench(args: &BenchLocksArgs) -> Result<(), String> {
    let common = &args.locks;
    let concurrency = match args.cc {
        CcArg::Mvcc => Concurrency::Mvcc,
        CcArg::TwoPl => Concurrency::TwoPhaseLocking(parse_policy(&args.lock_policy, common)?),
    };
    let spec = RunSpec {
        label: match args.cc {
            CcArg::Mvcc => "mvcc".to_owned(),
            CcArg::TwoPl => args.lock_policy.clone(),
        },
        concurrency,
        cpu: common.cpu,
        think_us: args.think_us,
    };
    common.figures.prepare()?;
    let (mut loaded, constants) = load(common)?;
    let r = run_one(&mut loaded, constants, common, &spec, args.show_waits)?;
    let files = write_figures(common, std::slice::from_ref(&r), &[])?;
    let report = LocksRun::new(&r);
    if common.json {
        return print_json(&report, &files);
    }
    println!(
        "TPC-C under {} ({}), CPU policy {}, {} clients (think {} us mean, {:.0}% urgent), {} \
         worker(s), {} warehouse(s), {:.1} s; {:.1} clients active on average",
        cc_name(spec.concurrency),
        policy_of(spec.concurrency).unwrap_or("no locks"),
        spec.cpu.policy().name(),
        common.clients,
        spec.think_us,
        common.hp_share * 100.0,
        common.workers,
        common.warehouses,
        report.duration_s,
        report.active_clients
    );
    print_table(&CLASS_HEADER, &class_rows(&report));
    println!("{CLASS_NOTE}");
    print_consistency(&r);
    if let Some((at, waits)) = &r.waits {
        print_waits(*at, waits);
    }
    print_files(&files);
    Ok(())
}

/// `--plot` and `--csv`. One think time: a latency CDF per class with a line per run. A sweep
/// (`think_us`, one entry per think time with its runs): per run label, the urgent and the
/// background mean response time over the think times.
pub fn write_figures(
    args: &LocksArgs,
    runs: &[RunResult],
    sweep: &[(u64, Vec<RunResult>)],
) -> Result<Vec<PathBuf>, String> {
    let all: Vec<&RunResult> = runs.iter().chain(sweep.iter().flat_map(|s| &s.1)).collect();
    let labeled: Vec<Labeled> = all
        .iter()
        .map(|r| Labeled {
            label: if sweep.len() > 1 {
                format!("{} think {}us", r.spec.label, r.spec.think_us)
            } else {
                r.spec.label.clone()
            },
            stats: &r.stats,
            kinds: &["call"],
            elapsed: Duration::from_secs_f64(r.elapsed),
        })
        .collect();
    let group = (sweep.len() <= 1).then_some(Group::Classes);
    figures::write(&args.figures, "TPC-C with locks", group, &labeled, |dir| {
        if sweep.len() <= 1 {
            return Ok(Vec::new());
        }
        let labels: Vec<String> = sweep.iter().map(|(t, _)| format!("{t}us")).collect();
        let names: Vec<String> = sweep[0].1.iter().map(|r| r.spec.label.clone()).collect();
        let curves = |class: fn(&RunResult) -> &ClassStats| -> Vec<Curve> {
            names
                .iter()
                .map(|name| Curve {
                    name: name.clone(),
                    values: sweep
                        .iter()
                        .map(|(_, runs)| {
                            let r = runs.iter().find(|r| &r.spec.label == name)?;
                            let c = class(r);
                            (c.latency.count() > 0).then(|| c.latency.summary().mean)
                        })
                        .collect(),
                })
                .collect()
        };
        let mut files = Vec::new();
        files.extend(plot::sweep(
            dir,
            "sweep-urgent-mean.svg",
            "urgent transactions: mean response time by think time",
            ("mean think time", "mean response time (us, log scale)"),
            &labels,
            &curves(|r| &r.high),
            true,
        )?);
        files.extend(plot::sweep(
            dir,
            "sweep-background-mean.svg",
            "background transactions: mean response time by think time",
            ("mean think time", "mean response time (us, log scale)"),
            &labels,
            &curves(|r| &r.low),
            true,
        )?);
        Ok(files)
    })
}

/// The lock-wait snapshot, longest wait first (like a query of PostgreSQL's `pg_locks`).
fn print_waits(at: Duration, waits: &[LockWait]) {
    println!(
        "\nlock waits at {:.1} s: {} transaction(s) waiting",
        at.as_secs_f64(),
        waits.len()
    );
    let rows: Vec<Vec<String>> = waits
        .iter()
        .map(|w| {
            let holders: Vec<String> = w
                .holders
                .iter()
                .map(|&(t, exclusive)| format!("{t:#x} {}", if exclusive { "X" } else { "S" }))
                .collect();
            vec![
                format!("{:#x}", w.waiter),
                Priority::from_level(usize::from(w.level))
                    .map_or("?", Priority::as_str)
                    .to_owned(),
                w.lock.clone(),
                us(w.waited.as_secs_f64() * 1e6),
                holders.join(", "),
            ]
        })
        .collect();
    print_table(&["waiter", "level", "lock", "waited us", "held by"], &rows);
}

fn print_consistency(r: &RunResult) {
    match r.consistent {
        Some(true) => println!("{}: TPC-C consistency ok", r.spec.label),
        Some(false) => println!("{}: TPC-C consistency FAILED", r.spec.label),
        None => {}
    }
}
