//! `overtake bench mixed` and `overtake compare mixed`: PreemptDB's mixed workload under one or
//! several scheduling policies, each on a freshly loaded database.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{Database, Options, Priority};
use overtake_sched::{ClassStats, Policy, SchedConfig};
use overtake_workload::drivers::open_loop::{self, RunConfig, RunReport};
use overtake_workload::exec::EngineExecutor;
use overtake_workload::mixed::{ComputeTask, HighWork, LowWork, MixedArrivals};
use overtake_workload::tpcc::load::GROWTH_PER_TRANSACTION;
use serde_json::{Value, json};

use crate::args::{
    BenchMixedArgs, CompareMixedArgs, DurabilityArg, HighArg, LowArg, MechanismArg, MixedArgs,
    PolicyArg,
};
use crate::figures::{self, Group, Labeled, print_files, with_files};
use crate::output::{class_json, load_into, print_table, run_progress, secs, ticker, us};

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
fn run_one(policy: PolicyArg, args: &MixedArgs, work: &Calibrated) -> Result<RunReport, String> {
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

/// Commit-to-durable latency per class: from the end of a commit's region until its log record
/// was on disk (commits that wrote nothing wait for nothing and are not counted).
fn print_durable_waits(runs: &[RunReport], classes: &[(Priority, String)]) {
    println!();
    println!(
        "commit to durable (end of the commit until its log record is on disk), in microseconds"
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|r| {
            classes.iter().map(|&(p, _)| {
                let d = r.stats.class(p).durable_wait.summary();
                vec![
                    r.config.sched.policy.name().to_owned(),
                    p.as_str().to_owned(),
                    d.count.to_string(),
                    us(d.p50),
                    us(d.p99),
                    us(d.max),
                ]
            })
        })
        .collect();
    print_table(
        &["policy", "class", "commits", "p50 us", "p99 us", "max us"],
        &rows,
    );
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
    crate::resources::check(
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

/// The classes a run has, most urgent first, with their names and what they are.
fn classes(args: &MixedArgs) -> Vec<(Priority, String)> {
    let urgent = match args.hp {
        HighArg::Tpcc => "New-Order, Payment".to_owned(),
        HighArg::Compute => format!("{} us compute", args.hp_compute_us),
    };
    let mut out = vec![(Priority::HIGH, format!("high priority ({urgent})"))];
    if args.mp.is_some() {
        out.push((
            Priority::MEDIUM,
            format!(
                "medium priority (TPC-C mix, one every {} us)",
                args.mp_interval_us
            ),
        ));
    }
    out.push((Priority::LOW, "low priority".to_owned()));
    out
}

/// Share of the workers' time (elapsed x workers) that jobs of a class spent running.
pub fn worker_share(c: &ClassStats, report: &RunReport) -> f64 {
    let total = report.elapsed.as_nanos() as f64 * report.config.sched.workers as f64;
    if total > 0.0 {
        c.running_nanos as f64 / total
    } else {
        0.0
    }
}

fn run_json(report: &RunReport, args: &MixedArgs) -> Value {
    let elapsed = secs(report.elapsed);
    let mut kinds = serde_json::Map::new();
    for (name, c) in report.kinds.iter().zip(&report.stats.kinds) {
        if c.committed + c.rolled_back + c.failed > 0 {
            kinds.insert((*name).to_owned(), class_json(c, elapsed));
        }
    }
    let p = report.preempt;
    json!({
        "policy": report.config.sched.policy.name(),
        "lp": args.lp.name(),
        "hp": args.hp.name(),
        "workers": args.workers,
        "warehouses": args.warehouses.unwrap_or(i64::from(args.workers)),
        "duration_s": elapsed,
        "arrival_interval_us": args.arrival_interval_us,
        "hp_queue": args.hp_queue,
        "lp_queue": args.lp_queue,
        "yield_interval": args.yield_interval,
        "starvation_threshold": args.starvation_threshold,
        "promote_after": args.promote_after,
        "mechanism": args.preempt_mechanism.delivery().name(),
        "signal_delay_us": args.signal_delay_us,
        "huge_pages": args.huge_pages,
        "durability": args.durability.map(|d| d.engine().name()),
        "mp": args.mp.map(|_| "tpcc"),
        "mp_interval_us": args.mp.map(|_| args.mp_interval_us),
        "classes": classes(args)
            .iter()
            .map(|(p, _)| (p.as_str().to_owned(), class_json(report.stats.class(*p), elapsed)))
            .collect::<serde_json::Map<_, _>>(),
        "preemptions": report.stats.class(Priority::LOW).preemptions,
        "worker_time": classes(args)
            .iter()
            .map(|(p, _)| (p.as_str().to_owned(), json!(worker_share(report.stats.class(*p), report))))
            .collect::<serde_json::Map<_, _>>(),
        "kinds": kinds,
        "tail": args.tail_report.then(|| crate::tail::json(report, &classes(args))),
        "warnings": report.dispatch.warnings_about(open_loop_arrivals(args)),
        "blocked_workers": report.blocked.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "machinery": {
            "arrived_high": report.dispatch.arrived_high,
            "late_high": report.dispatch.late_high,
            "requests": report.dispatch.requests,
            "signals_sent": p.signals_sent,
            "injected": p.injected,
            "deferred": p.deferred,
            "served": p.served,
            "starvation_skips": report.dispatch.starvation_skips,
            "unfinished_high": report.dispatch.unfinished_high,
        },
    })
}

pub fn describe(args: &MixedArgs) -> String {
    let low = match args.lp {
        LowArg::Q2 => "CH Query 2".to_owned(),
        LowArg::Compute => format!(
            "{} ms compute ({} fused multiply-add)",
            args.compute_ms,
            overtake_runtime::simd::SimdLevel::best().name()
        ),
        LowArg::BatchUpdate => format!(
            "batch update (a payment booked in every district), then {} ms compute; promoted \
             after {} failed attempts",
            args.compute_ms,
            if args.promote_after > 0 {
                args.promote_after.to_string()
            } else {
                "never".to_owned()
            }
        ),
    };
    let medium = match args.mp {
        Some(_) => format!(
            "medium priority: TPC-C mix, one every {} us; ",
            args.mp_interval_us
        ),
        None => String::new(),
    };
    let high = match args.hp {
        HighArg::Tpcc => "New-Order/Payment".to_owned(),
        HighArg::Compute => format!("{} us compute", args.hp_compute_us),
    };
    format!(
        "mixed workload: {} worker(s), {} warehouse(s), {} s each; low priority: {low} (queue {}); \
         {medium}high priority: {high}, {} every {} us; mechanism {}; huge pages {}; durability {}",
        args.workers,
        args.warehouses.unwrap_or(i64::from(args.workers)),
        args.duration,
        args.lp_queue,
        usize::from(args.workers) * args.hp_queue as usize,
        args.arrival_interval_us,
        args.preempt_mechanism.delivery().name(),
        if args.huge_pages { "on" } else { "off" },
        args.durability
            .map_or("none (in memory)", |d| d.engine().name()),
    )
}

/// Rows of one class's table: one per run, with ratios to the `wait` run if there is one.
fn class_rows(runs: &[RunReport], priority: Priority) -> Vec<Vec<String>> {
    fn class_of(r: &RunReport, p: Priority) -> &ClassStats {
        r.stats.class(p)
    }
    let class = |r| class_of(r, priority);
    let wait = runs.iter().find(|r| r.config.sched.policy == Policy::Wait);
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.3}", a / b)
        } else {
            "-".into()
        }
    };
    runs.iter()
        .map(|r| {
            let c = class(r);
            let (l, d) = (c.latency.summary(), c.sched_delay.summary());
            let per_sec = c.committed as f64 / secs(r.elapsed);
            let mut row = vec![
                r.config.sched.policy.name().to_owned(),
                format!("{per_sec:.0}"),
                us(l.p50),
                us(l.p90),
                us(l.p99),
                us(l.p999),
                us(l.max),
                us(d.p50),
                us(d.p99),
                c.preemptions.to_string(),
            ];
            if let Some(w) = wait {
                let wc = class(w);
                row.push(ratio(l.p99, wc.latency.summary().p99));
                row.push(ratio(per_sec, wc.committed as f64 / secs(w.elapsed)));
            }
            row
        })
        .collect()
}

fn print_comparison(runs: &[RunReport], args: &MixedArgs) {
    println!("{}", describe(args));
    let with_wait = runs.iter().any(|r| r.config.sched.policy == Policy::Wait);
    let mut header = vec![
        "policy",
        "per s",
        "p50 us",
        "p90 us",
        "p99 us",
        "p99.9 us",
        "max us",
        "delay p50",
        "delay p99",
        "preempted",
    ];
    if with_wait {
        header.extend(["p99/wait", "per s/wait"]);
    }
    let classes = classes(args);
    for (priority, title) in &classes {
        println!();
        println!(
            "{title}: end-to-end latency, scheduling delay (start - arrival), in microseconds"
        );
        print_table(&header, &class_rows(runs, *priority));
    }
    println!();
    println!(
        "where the worker time went: running each class (switches included), and the rest \
         (idle, dispatching, unfinished jobs)"
    );
    let time_rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let shares: Vec<f64> = classes
                .iter()
                .map(|(p, _)| worker_share(r.stats.class(*p), r))
                .collect();
            let mut row = vec![r.config.sched.policy.name().to_owned()];
            row.extend(shares.iter().map(|s| format!("{:.1}%", s * 100.0)));
            row.push(format!(
                "{:.1}%",
                (1.0 - shares.iter().sum::<f64>()) * 100.0
            ));
            row.extend(
                classes
                    .iter()
                    .map(|(p, _)| us(r.stats.class(*p).running.summary().mean)),
            );
            row
        })
        .collect();
    let mut time_header = vec!["policy".to_owned()];
    time_header.extend(classes.iter().map(|(p, _)| p.as_str().to_owned()));
    time_header.push("rest".to_owned());
    time_header.extend(
        classes
            .iter()
            .map(|(p, _)| format!("{} run us", p.as_str())),
    );
    print_table(
        &time_header.iter().map(String::as_str).collect::<Vec<_>>(),
        &time_rows,
    );
    println!();
    println!(
        "where each transaction's time went, mean microseconds: queued (arrival to start), \
         running, preempted (paused by more urgent work), waiting (parked on an event)"
    );
    let breakdown_rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|r| {
            classes.iter().map(|&(p, _)| {
                let b = r.stats.class(p).breakdown();
                vec![
                    r.config.sched.policy.name().to_owned(),
                    p.as_str().to_owned(),
                    us(b.queued),
                    us(b.running),
                    us(b.preempted),
                    us(b.waiting),
                ]
            })
        })
        .collect();
    print_table(
        &[
            "policy",
            "class",
            "queued",
            "running",
            "preempted",
            "waiting",
        ],
        &breakdown_rows,
    );
    if args.durability.is_some() {
        print_durable_waits(runs, &classes);
    }
    if args.lp == LowArg::BatchUpdate {
        println!();
        println!(
            "low-priority writers: attempts per commit, promoted attempts, and the worker time \
             failed attempts threw away"
        );
        let rows: Vec<Vec<String>> = runs
            .iter()
            .map(|r| {
                let l = r.stats.class(Priority::LOW);
                let wasted = l.wasted_nanos as f64 / 1e9;
                vec![
                    r.config.sched.policy.name().to_owned(),
                    l.committed.to_string(),
                    l.attempts().to_string(),
                    if l.committed > 0 {
                        format!("{:.1}", l.attempts() as f64 / l.committed as f64)
                    } else {
                        "-".to_owned()
                    },
                    l.promoted.to_string(),
                    format!("{wasted:.2} s"),
                    format!(
                        "{:.1}%",
                        100.0 * wasted / (secs(r.elapsed) * f64::from(args.workers))
                    ),
                ]
            })
            .collect();
        print_table(
            &[
                "policy",
                "commits",
                "attempts",
                "per commit",
                "promoted",
                "wasted",
                "of worker time",
            ],
            &rows,
        );
    }
    println!();
    for r in runs {
        let p = r.preempt;
        let failed = r.stats.class(Priority::HIGH).failed + r.stats.class(Priority::LOW).failed;
        println!(
            "{}: {} requests, {} signals, {} injected, {} deferred, {} served; {} urgent unfinished \
             at the end{}",
            r.config.sched.policy.name(),
            r.dispatch.requests,
            p.signals_sent,
            p.injected,
            p.deferred,
            p.served,
            r.dispatch.unfinished_high,
            if failed > 0 {
                format!(
                    "; {failed} failed ({})",
                    r.stats
                        .class(Priority::LOW)
                        .first_error
                        .as_ref()
                        .or(r.stats.class(Priority::HIGH).first_error.as_ref())
                        .map(ToString::to_string)
                        .unwrap_or_default()
                )
            } else {
                String::new()
            }
        );
    }
    if args.tail_report {
        for r in runs {
            crate::tail::print(r, &classes);
        }
    }
    for r in runs {
        for w in r.dispatch.warnings_about(open_loop_arrivals(args)) {
            println!("warning: {}: {w}", r.config.sched.policy.name());
        }
        for b in &r.blocked {
            println!("warning: {}: {b}", r.config.sched.policy.name());
        }
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
        println!("{}", with_files(run_json(&report, &args.mixed), &files));
    } else {
        print_comparison(std::slice::from_ref(&report), &args.mixed);
        print_files(&files);
    }
    Ok(())
}

pub fn compare(args: &CompareMixedArgs) -> Result<(), String> {
    if args.policies.is_empty() {
        return Err("--policies needs at least one policy".into());
    }
    crate::args::each_once("--policies", &args.policies, |p| {
        p.policy().name().to_owned()
    })?;
    for p in &args.policies {
        settings(p.policy(), &args.mixed)
            .validate()
            .map_err(|e| e.to_string())?;
        check_can_preempt(&args.mixed, p.policy())?;
    }
    check_resources(&args.mixed)?;
    set_huge_pages(&args.mixed)?;
    args.mixed.figures.prepare()?;
    let work = Calibrated::for_args(&args.mixed);
    let mut runs = Vec::with_capacity(args.policies.len());
    for policy in &args.policies {
        if crate::interrupt::requested() {
            break;
        }
        runs.push(run_one(*policy, &args.mixed, &work)?);
        // The run's database is gone: free what it leaves behind now, not inside the next run.
        settle_between_runs();
    }
    crate::interrupt::check_any(runs.len())?;
    let files = write_figures(&runs, &args.mixed)?;
    if args.mixed.json {
        let interrupted = runs.len() < args.policies.len();
        let runs: Vec<Value> = runs.iter().map(|r| run_json(r, &args.mixed)).collect();
        let out = json!({ "runs": runs, "interrupted": interrupted });
        println!("{}", with_files(out, &files));
    } else {
        print_comparison(&runs, &args.mixed);
        crate::interrupt::print_if_cut(runs.len(), args.policies.len());
        print_files(&files);
    }
    Ok(())
}

/// The runs as the figures see them, named by policy.
pub fn labeled(runs: &[RunReport]) -> Vec<Labeled<'_>> {
    runs.iter()
        .map(|r| Labeled {
            label: r.config.sched.policy.name().to_owned(),
            stats: &r.stats,
            kinds: &r.kinds,
            elapsed: r.elapsed,
        })
        .collect()
}

/// What `--plot` and `--csv` ask for, from a comparison of policies.
fn write_figures(runs: &[RunReport], args: &MixedArgs) -> Result<Vec<PathBuf>, String> {
    figures::write(
        &args.figures,
        "mixed workload",
        Some(Group::Classes),
        &labeled(runs),
        |_| Ok(Vec::new()),
    )
}
