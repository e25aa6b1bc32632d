//! `bench bimodal` and `compare bimodal`: Aspen's bimodal workload (requests without priorities,
//! 99.5% short, 0.5% long, Poisson arrivals at a share of the capacity) under run-to-completion
//! and under the quantum policy and its ablations; `compare bimodal --sweep` runs every policy at
//! a range of loads and reports Aspen's metric, the highest load at which the short requests' p99
//! stays under a limit.
//!
//! The capacity comes from each kind's service time measured alone on the same scheduler (the
//! median of a few closed-loop rounds of that kind only), so that it includes the scheduler's
//! cost per request but not the policies' interplay, and moves less with this machine's noise
//! than a probe of the mix did.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use overtake_sched::{IdleWork, Policy, SchedConfig};
use overtake_workload::bimodal::{Bimodal, KINDS, LONG_SHARE, PoissonArrivals, Request};
use overtake_workload::drivers::open_loop::{self, NoArrivals, RunConfig, RunReport};
use overtake_workload::rng::TpccRng;
use serde_json::{Value, json};

use crate::args::{BenchBimodalArgs, BimodalArgs, BimodalPolicyArg, CompareBimodalArgs};
use crate::figures::{self, Group, Labeled, print_files, with_files};
use crate::output::{class_json, print_table, progress, run_progress, ticker, us};
use crate::plot::{self, Curve};

/// The workload, loaded and measured once for every run.
struct Prepared {
    workload: Arc<Bimodal>,
    /// Service times of each kind run directly on the engine (no scheduler).
    short: Duration,
    long: Duration,
    /// Service times of each kind alone on the scheduler (its cost per request included).
    short_scheduled: Duration,
    long_scheduled: Duration,
    /// Requests per second the workers can serve: workers over the mean scheduled service time.
    capacity: f64,
}

impl Prepared {
    /// Offered requests per second at `load`.
    fn rate(&self, load: f64) -> f64 {
        self.capacity * load
    }
}

/// Rounds of each kind's service-time probe, and how long each runs.
const PROBE_ROUNDS: usize = 5;
const PROBE: Duration = Duration::from_millis(300);

/// The median time per request of `long` (or short) requests alone, closed-loop on the scheduler.
fn scheduled_service_time(
    workload: &Arc<Bimodal>,
    long: bool,
    args: &BimodalArgs,
) -> Result<Duration, String> {
    let mut rounds = Vec::with_capacity(PROBE_ROUNDS);
    for round in 0..PROBE_ROUNDS {
        let feeds = (0..args.workers)
            .map(|w| {
                let workload = Arc::clone(workload);
                let mut rng = TpccRng::new(args.seed.wrapping_add(u64::from(w) + round as u64));
                Some(Box::new(move || Some(workload.request(&mut rng, long))) as IdleWork<Request>)
            })
            .collect();
        let probe = RunConfig {
            duration: PROBE,
            ..run_config(BimodalPolicyArg::Wait, args)
        };
        let measured = open_loop::run(
            &probe,
            Arc::clone(workload),
            &mut NoArrivals,
            feeds,
            &|_| {},
        )
        .map_err(|e| e.to_string())?;
        let served: u64 = measured.stats.kinds.iter().map(|k| k.committed).sum();
        if served == 0 {
            return Err("the service-time probe committed no request".into());
        }
        let busy = measured.elapsed.as_secs_f64() * f64::from(args.workers);
        rounds.push(busy / served as f64);
    }
    rounds.sort_by(f64::total_cmp);
    Ok(Duration::from_secs_f64(rounds[rounds.len() / 2]))
}

fn prepare(args: &BimodalArgs) -> Result<Prepared, String> {
    let bar = progress(1, "loading", args.json);
    let mut workload = Bimodal::load().map_err(|e| format!("loading the bimodal table: {e}"))?;
    workload
        .age(args.seed)
        .map_err(|e| format!("updating the bimodal table: {e}"))?;
    workload.calibrate(Duration::from_micros(args.long_us));
    let mut rng = TpccRng::new(args.seed ^ 0x5eed);
    // Warm the table up, then measure each kind alone.
    workload.service_times(2_000, &mut rng);
    let (short, long) = workload.service_times(5_000, &mut rng);
    bar.finish_and_clear();
    let workload = Arc::new(workload);
    let bar = progress(1, "measuring", args.json);
    let short_scheduled = scheduled_service_time(&workload, false, args)?;
    let long_scheduled = scheduled_service_time(&workload, true, args)?;
    bar.finish_and_clear();
    let mean = (1.0 - LONG_SHARE) * short_scheduled.as_secs_f64()
        + LONG_SHARE * long_scheduled.as_secs_f64();
    Ok(Prepared {
        workload,
        short,
        long,
        short_scheduled,
        long_scheduled,
        capacity: f64::from(args.workers) / mean,
    })
}

fn run_config(policy: BimodalPolicyArg, args: &BimodalArgs) -> RunConfig {
    let (policy, two_queues, skip_needless) = policy.settings();
    let mut sched = SchedConfig::default()
        .policy(policy)
        .workers(usize::from(args.workers))
        .quantum(Duration::from_micros(args.quantum_us))
        .delivery(args.preempt_mechanism.delivery())
        .signal_delay(Duration::from_micros(args.signal_delay_us))
        .record_jobs(args.figures.records_jobs());
    sched.resumed_quanta = args.resumed_quanta;
    sched.paused_age_limit = Duration::from_millis(args.paused_age_ms);
    sched.two_queues = two_queues;
    sched.skip_needless = skip_needless;
    RunConfig {
        sched,
        duration: Duration::from_secs_f64(args.duration),
        batch: args.queue as usize,
        ..RunConfig::default()
    }
}

/// One run of `config` on the prepared workload, at `load`.
fn run_one(
    name: &str,
    config: &RunConfig,
    prepared: &Prepared,
    args: &BimodalArgs,
    load: f64,
) -> Result<Run, String> {
    config.service().validate().map_err(|e| e.to_string())?;
    let rate = prepared.rate(load);
    let mut arrivals = PoissonArrivals::new(Arc::clone(&prepared.workload), rate, args.seed);
    let bar = run_progress(args.duration, name, args.json);
    let report = open_loop::run(
        config,
        Arc::clone(&prepared.workload),
        &mut arrivals,
        Vec::new(),
        &ticker(&bar),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(Run {
        name: name.to_owned(),
        load,
        rate,
        report,
    })
}

/// One policy's run at one load.
struct Run {
    name: String,
    load: f64,
    /// Offered requests per second.
    rate: f64,
    report: RunReport,
}

impl Run {
    fn served(&self) -> u64 {
        self.report.stats.kinds.iter().map(|k| k.committed).sum()
    }

    /// Share of the offered requests served within the run.
    fn served_share(&self) -> f64 {
        self.served() as f64 / self.report.elapsed.as_secs_f64() / self.rate
    }

    /// Worker time not spent idle, in seconds.
    fn busy(&self) -> f64 {
        let r = &self.report;
        r.elapsed.as_secs_f64() * r.config.sched.workers as f64 - r.stats.idle_nanos as f64 / 1e9
    }

    fn short_p99(&self) -> f64 {
        self.report.stats.kinds[0].latency.summary().p99
    }

    /// Within the SLO at its load: kept up, and the short requests' p99 under `slo_us`.
    fn meets(&self, slo_us: f64) -> bool {
        self.served_share() >= KEPT_UP && self.short_p99() <= slo_us
    }
}

/// Worker time per preemption that `quantum` spent beyond what `wait` spent per request served,
/// at the same load: what a quantum's end costs the worker (the switch, the scheduler's
/// bookkeeping, the preempted request's lost cache). `None` without preemptions.
fn cost_per_preemption(quantum: &Run, wait: &Run) -> Option<f64> {
    let preemptions = quantum.report.dispatch.quantum_preemptions;
    if preemptions == 0 || wait.served() == 0 {
        return None;
    }
    let per_request = wait.busy() / wait.served() as f64;
    let extra = quantum.busy() - per_request * quantum.served() as f64;
    Some(extra / preemptions as f64)
}

/// Share of the offered requests a run must serve within its duration to count as keeping up.
const KEPT_UP: f64 = 0.98;

/// Why this run's latencies are mostly queueing, if they are: the dispatcher's warnings, and a
/// run that served under 98% of the offered requests.
fn warnings(r: &Run) -> Vec<String> {
    let mut out = r.report.dispatch.warnings_about("requests");
    out.extend(shortfall(
        r.served(),
        r.report.elapsed.as_secs_f64(),
        r.rate,
    ));
    out.extend(r.report.blocked.iter().map(ToString::to_string));
    out
}

/// The warning for a run that served `served` requests in `elapsed_s` seconds of `offered` per
/// second, if that is under [`KEPT_UP`] of them.
fn shortfall(served: u64, elapsed_s: f64, offered: f64) -> Option<String> {
    let served_per_sec = served as f64 / elapsed_s;
    (served_per_sec < KEPT_UP * offered).then(|| {
        format!(
            "the worker could not keep up: it served {served_per_sec:.0} requests/s of the \
             {offered:.0}/s offered ({:.1}%), so the latencies shown are mostly queueing",
            served_per_sec * 100.0 / offered
        )
    })
}

fn run_json(r: &Run) -> Value {
    let report = &r.report;
    let elapsed = report.elapsed.as_secs_f64();
    json!({
        "policy": r.name,
        "load": r.load,
        "offered_per_sec": r.rate,
        "served_share": r.served_share(),
        "quantum_us": report.config.sched.quantum.as_secs_f64() * 1e6,
        "two_queues": report.config.sched.two_queues,
        "skip_needless": report.config.sched.skip_needless,
        "classes": {
            "short": class_json(&report.stats.kinds[0], elapsed),
            "long": class_json(&report.stats.kinds[1], elapsed),
        },
        "preemptions": {
            "sent": report.dispatch.quantum_preemptions,
            "skipped": report.dispatch.quantum_skipped,
            "served": report.preempt.served,
            "signals": report.preempt.signals_sent,
        },
        "worker_busy_share": r.busy() / (elapsed * report.config.sched.workers as f64),
        "arrived": report.dispatch.arrived_high,
        "unfinished": report.dispatch.unfinished_high,
        "warnings": warnings(r),
    })
}

fn describe(prepared: &Prepared, args: &BimodalArgs) -> String {
    format!(
        "bimodal workload: {} worker(s), {} s per run; service time alone on the scheduler: short \
         {} us, long {} us ({} rows scanned; on the engine alone {} us and {} us); capacity \
         {:.0} requests/s; quantum {} us",
        args.workers,
        args.duration,
        us(prepared.short_scheduled.as_secs_f64() * 1e6),
        us(prepared.long_scheduled.as_secs_f64() * 1e6),
        prepared.workload.long_len(),
        us(prepared.short.as_secs_f64() * 1e6),
        us(prepared.long.as_secs_f64() * 1e6),
        prepared.capacity,
        args.quantum_us
    )
}

fn print_runs(runs: &[Run], prepared: &Prepared, args: &BimodalArgs) {
    println!("{}", describe(prepared, args));
    println!(
        "offered: {:.0} requests/s (load {})",
        prepared.rate(args.load),
        args.load
    );
    let wait = runs.iter().find(|r| r.name == "wait");
    for (title, kind) in [("short requests (99.5%)", 0), ("long requests (0.5%)", 1)] {
        println!();
        println!("{title}: end-to-end latency in microseconds");
        let rows: Vec<Vec<String>> = runs
            .iter()
            .map(|r| {
                let c = &r.report.stats.kinds[kind];
                let l = c.latency.summary();
                let per_s = c.committed as f64 / r.report.elapsed.as_secs_f64();
                let base = wait.map(|w| &w.report.stats.kinds[kind]);
                let ratio = |mine: f64, theirs: Option<f64>| {
                    theirs
                        .filter(|t| *t > 0.0)
                        .map_or("-".to_owned(), |t| format!("{:.3}", mine / t))
                };
                vec![
                    r.name.clone(),
                    format!("{per_s:.0}"),
                    us(l.p50),
                    us(l.p99),
                    us(l.p999),
                    us(l.max),
                    ratio(l.p99, base.map(|b| b.latency.summary().p99)),
                    ratio(
                        per_s,
                        base.zip(wait)
                            .map(|(b, w)| b.committed as f64 / w.report.elapsed.as_secs_f64()),
                    ),
                ]
            })
            .collect();
        print_table(
            &[
                "policy",
                "per s",
                "p50 us",
                "p99 us",
                "p99.9 us",
                "max us",
                "p99/wait",
                "per s/wait",
            ],
            &rows,
        );
    }
    println!();
    println!(
        "where each request's time went, mean microseconds: queued (arrival to start), running, \
         preempted (paused for other work)"
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|r| {
            KINDS.iter().enumerate().map(move |(kind, kind_name)| {
                let b = r.report.stats.kinds[kind].breakdown();
                vec![
                    r.name.clone(),
                    (*kind_name).to_owned(),
                    us(b.queued),
                    us(b.running),
                    us(b.preempted),
                ]
            })
        })
        .collect();
    print_table(&["policy", "kind", "queued", "running", "preempted"], &rows);
    println!();
    print_preemptions(runs);
    for r in runs {
        for w in warnings(r) {
            println!("warning ({}): {w}", r.name);
        }
    }
}

/// Quantum ends asked for and skipped, and what each cost the worker (against `wait` at the same
/// load, when there is a `wait` run).
fn print_preemptions(runs: &[Run]) {
    println!(
        "quantum ends: preemptions asked for, skipped because nothing else waited (a skip costs \
         the worker nothing: it is never asked), and the worker time each preemption cost \
         beyond what wait spent per request at the same load"
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let d = &r.report.dispatch;
            let (sent, skipped) = (d.quantum_preemptions, d.quantum_skipped);
            let share = if sent + skipped > 0 {
                format!("{:.1}%", skipped as f64 * 100.0 / (sent + skipped) as f64)
            } else {
                "-".to_owned()
            };
            let wait = runs.iter().find(|w| w.name == "wait" && w.load == r.load);
            let cost = wait
                .and_then(|w| cost_per_preemption(r, w))
                .map_or("-".to_owned(), |c| us(c * 1e6));
            vec![
                r.name.clone(),
                format!("{}", r.load),
                sent.to_string(),
                skipped.to_string(),
                share,
                r.report.preempt.signals_sent.to_string(),
                cost,
            ]
        })
        .collect();
    print_table(
        &[
            "policy",
            "load",
            "sent",
            "skipped",
            "skipped share",
            "signals",
            "us per preemption",
        ],
        &rows,
    );
}

pub fn bench(args: &BenchBimodalArgs) -> Result<(), String> {
    args.bimodal.figures.prepare()?;
    let prepared = prepare(&args.bimodal)?;
    let mut config = run_config(args.policy, &args.bimodal);
    if config.sched.policy == Policy::Quantum {
        config.sched.two_queues &= !args.no_two_queues;
        config.sched.skip_needless &= !args.no_skip;
    }
    let name = match (
        config.sched.policy,
        config.sched.two_queues,
        config.sched.skip_needless,
    ) {
        (Policy::Quantum, false, false) => "quantum-one-queue-no-skip",
        (Policy::Quantum, false, true) => "quantum-one-queue",
        (Policy::Quantum, true, false) => "quantum-no-skip",
        _ => args.policy.name(),
    };
    let runs = [run_one(
        name,
        &config,
        &prepared,
        &args.bimodal,
        args.bimodal.load,
    )?];
    let files = write_figures(&runs, &[], &args.bimodal)?;
    report(&runs, &prepared, &args.bimodal, &files);
    Ok(())
}

/// The runs as the figures see them: named by policy, and by load in a sweep.
fn labeled(runs: &[Run], sweep: bool) -> Vec<Labeled<'_>> {
    runs.iter()
        .map(|r| Labeled {
            label: if sweep {
                format!("{} load {}", r.name, r.load)
            } else {
                r.name.clone()
            },
            stats: &r.report.stats,
            kinds: &r.report.kinds,
            elapsed: r.report.elapsed,
        })
        .collect()
}

/// `--plot` and `--csv`: without a sweep (`loads` empty) a latency CDF per kind of request with
/// a line per policy; with one, per policy over the loads, the short requests' p99 and the
/// requests served per second.
fn write_figures(runs: &[Run], loads: &[f64], args: &BimodalArgs) -> Result<Vec<PathBuf>, String> {
    let sweep = !loads.is_empty();
    let group = (!sweep).then_some(Group::Kinds);
    figures::write(
        &args.figures,
        "bimodal",
        group,
        &labeled(runs, sweep),
        |dir| {
            if !sweep {
                return Ok(Vec::new());
            }
            let mut names: Vec<&str> = Vec::new();
            for r in runs {
                if !names.contains(&r.name.as_str()) {
                    names.push(&r.name);
                }
            }
            let at = |name: &str, load: f64| runs.iter().find(|r| r.name == name && r.load == load);
            let curves = |value: &dyn Fn(&Run) -> Option<f64>| -> Vec<Curve> {
                names
                    .iter()
                    .map(|&name| Curve {
                        name: name.to_owned(),
                        values: loads.iter().map(|&l| at(name, l).and_then(value)).collect(),
                    })
                    .collect()
            };
            let labels: Vec<String> = loads.iter().map(ToString::to_string).collect();
            let p99 = curves(&|r| {
                let short = &r.report.stats.kinds[0];
                (short.latency.count() > 0).then(|| r.short_p99())
            });
            let served = curves(&|r| {
                let committed: u64 = r.report.stats.kinds.iter().map(|k| k.committed).sum();
                Some(committed as f64 / r.report.elapsed.as_secs_f64())
            });
            let mut files = Vec::new();
            files.extend(plot::sweep(
                dir,
                "sweep-short-p99.svg",
                "short requests' p99 latency by offered load",
                (
                    "offered load (share of capacity)",
                    "p99 latency (us, log scale)",
                ),
                &labels,
                &p99,
                true,
            )?);
            files.extend(plot::sweep(
                dir,
                "sweep-served.svg",
                "requests served per second by offered load",
                ("offered load (share of capacity)", "served per second"),
                &labels,
                &served,
                false,
            )?);
            Ok(files)
        },
    )
}

fn report(runs: &[Run], prepared: &Prepared, args: &BimodalArgs, files: &[PathBuf]) {
    if args.json {
        println!(
            "{}",
            with_files(
                json!({
                    "workers": args.workers,
                    "duration_s": args.duration,
                    "load": args.load,
                    "offered_per_sec": prepared.rate(args.load),
                    "capacity_per_sec": prepared.capacity,
                    "short_service_us": prepared.short_scheduled.as_secs_f64() * 1e6,
                    "long_service_us": prepared.long_scheduled.as_secs_f64() * 1e6,
                    "short_engine_us": prepared.short.as_secs_f64() * 1e6,
                    "long_engine_us": prepared.long.as_secs_f64() * 1e6,
                    "long_rows": prepared.workload.long_len(),
                    "runs": runs.iter().map(run_json).collect::<Vec<_>>(),
                }),
                files
            )
        );
    } else {
        print_runs(runs, prepared, args);
        print_files(files);
    }
}

pub fn compare(args: &CompareBimodalArgs) -> Result<(), String> {
    if args.policies.is_empty() {
        return Err("--policies needs at least one policy".into());
    }
    crate::args::each_once("--policies", &args.policies, |p| p.name().to_owned())?;
    let policies = &args.policies;
    args.bimodal.figures.prepare()?;
    let prepared = prepare(&args.bimodal)?;
    let loads: Vec<f64> = if args.sweep {
        args.loads.clone()
    } else {
        vec![args.bimodal.load]
    };
    let mut runs = Vec::new();
    // Ctrl-C ends the sweep at a load's end: every load shown has all its policies.
    let mut loads_done = 0;
    for &load in &loads {
        if crate::interrupt::requested() {
            break;
        }
        loads_done += 1;
        for &policy in policies {
            let config = run_config(policy, &args.bimodal);
            runs.push(run_one(
                policy.name(),
                &config,
                &prepared,
                &args.bimodal,
                load,
            )?);
            crate::mixed::settle_between_runs();
        }
    }
    crate::interrupt::check_any(runs.len())?;
    let planned = loads.len();
    let loads = &loads[..loads_done];
    if !args.sweep {
        let files = write_figures(&runs, &[], &args.bimodal)?;
        report(&runs, &prepared, &args.bimodal, &files);
        return Ok(());
    }
    let files = write_figures(&runs, loads, &args.bimodal)?;
    let slo_us = args.slo_us.map_or_else(
        || {
            (10.0 * prepared.short_scheduled.as_secs_f64() * 1e6)
                .max(2.0 * args.bimodal.quantum_us as f64)
        },
        |s| s as f64,
    );
    let names: Vec<&str> = policies.iter().map(|p| p.name()).collect();
    report_sweep(
        &runs,
        &names,
        loads,
        slo_us,
        &prepared,
        &args.bimodal,
        &files,
    );
    if !args.bimodal.json {
        crate::interrupt::print_if_cut(loads.len(), planned);
        print_files(&files);
    }
    Ok(())
}

/// Aspen's metric for `policy`: the highest load up to which every load kept the short requests'
/// p99 under `slo_us` (and kept up), and the short requests served per second there.
fn slo_point<'a>(runs: &'a [Run], policy: &str, slo_us: f64) -> Option<&'a Run> {
    let mut mine: Vec<&Run> = runs.iter().filter(|r| r.name == policy).collect();
    mine.sort_by(|a, b| a.load.total_cmp(&b.load));
    mine.into_iter().take_while(|r| r.meets(slo_us)).last()
}

fn short_per_sec(r: &Run) -> f64 {
    r.report.stats.kinds[0].committed as f64 / r.report.elapsed.as_secs_f64()
}

fn report_sweep(
    runs: &[Run],
    policies: &[&str],
    loads: &[f64],
    slo_us: f64,
    prepared: &Prepared,
    args: &BimodalArgs,
    files: &[PathBuf],
) {
    if args.json {
        let sweep: Vec<Value> = loads
            .iter()
            .map(|&load| {
                json!({
                    "load": load,
                    "runs": runs.iter().filter(|r| r.load == load).map(run_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        let slo: serde_json::Map<String, Value> = policies
            .iter()
            .map(|&p| {
                let point = slo_point(runs, p, slo_us);
                (
                    p.to_owned(),
                    json!({
                        "load": point.map(|r| r.load),
                        "short_per_sec": point.map_or(0.0, short_per_sec),
                    }),
                )
            })
            .collect();
        println!(
            "{}",
            with_files(
                json!({
                    "workers": args.workers,
                    "duration_s": args.duration,
                    "capacity_per_sec": prepared.capacity,
                    "short_service_us": prepared.short_scheduled.as_secs_f64() * 1e6,
                    "long_service_us": prepared.long_scheduled.as_secs_f64() * 1e6,
                    "slo_us": slo_us,
                    "sweep": sweep,
                    "slo": slo,
                }),
                files
            )
        );
        return;
    }
    println!("{}", describe(prepared, args));
    println!();
    println!(
        "per load and policy: offered requests/s, the share served, short and long latency \
         (microseconds), preemptions per second"
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let (s, l) = (
                r.report.stats.kinds[0].latency.summary(),
                r.report.stats.kinds[1].latency.summary(),
            );
            vec![
                format!("{}", r.load),
                r.name.clone(),
                format!("{:.0}", r.rate),
                format!("{:.3}", r.served_share()),
                us(s.p50),
                us(s.p99),
                us(l.p99),
                format!(
                    "{:.0}",
                    r.report.dispatch.quantum_preemptions as f64 / r.report.elapsed.as_secs_f64()
                ),
            ]
        })
        .collect();
    print_table(
        &[
            "load",
            "policy",
            "offered/s",
            "served",
            "short p50",
            "short p99",
            "long p99",
            "preempt/s",
        ],
        &rows,
    );
    println!();
    println!(
        "Aspen's metric: the highest load up to which the short requests' p99 stayed under \
         {} us and at least 98% of the offered requests were served",
        us(slo_us)
    );
    let wait_rate = slo_point(runs, "wait", slo_us).map(short_per_sec);
    let rows: Vec<Vec<String>> = policies
        .iter()
        .map(|&p| {
            let point = slo_point(runs, p, slo_us);
            let rate = point.map_or(0.0, short_per_sec);
            vec![
                p.to_owned(),
                point.map_or("none".to_owned(), |r| format!("{}", r.load)),
                format!("{rate:.0}"),
                match wait_rate {
                    Some(w) if w > 0.0 => format!("{:.2}", rate / w),
                    _ if rate > 0.0 => "wait met none".to_owned(),
                    _ => "-".to_owned(),
                },
            ]
        })
        .collect();
    print_table(&["policy", "SLO load", "short/s", "vs wait"], &rows);
    println!();
    print_preemptions(runs);
    for r in runs {
        for w in warnings(r) {
            println!("warning ({} at {}): {w}", r.name, r.load);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_serving_under_98_percent_of_the_offered_load_is_flagged() {
        assert_eq!(shortfall(990_000, 10.0, 100_000.0), None);
        let warning = shortfall(945_000, 10.0, 100_000.0).expect("94.5% served");
        assert!(warning.contains("94500 requests/s of the 100000/s offered (94.5%)"));
    }
}
