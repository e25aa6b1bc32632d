//! `overtake compare tiers`: UFS's experiment (see `overtake_workload::drivers::tiers`). Bursty
//! time-sensitive sessions alone (SOLO), against bound sessions in the background tier at the
//! extreme weights (MIN:MAX: bursty 10000 time-sensitive, bound 1 background), and both
//! time-sensitive at equal weight (50:50); each under Overtake's tiers and under the OS's
//! schedulers on session threads. Then two groups per tier, all bound, at weights 2:3 and
//! 6670:10000: the CPU shares they get.

use std::time::Duration;

use clap::Args;

use overtake_engine::{Database, Options};
use overtake_sched::{Delivery, Group, Policy, SchedConfig, Tier, Weight};
use overtake_workload::drivers::tiers::{
    Class, Kind, Placement, SideReport, TiersConfig, TiersReport, run_tiers,
};
use serde::Serialize;

use crate::commands::flags::{MAX_WORKERS, OsSchedulerArg, positive_seconds};
use crate::harness::database::{LoadedDb, load_into};
use crate::report::{print_json, print_table, us};

/// Who schedules the sessions in `compare tiers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TiersSchedulerArg {
    /// Overtake's tiers and weights, the sessions' work as tasks on pinned workers.
    Overtake,
    /// Session threads in cgroups weighted by their groups (EEVDF).
    Eevdf,
    /// Background session threads SCHED_IDLE.
    Idle,
    /// Time-sensitive session threads SCHED_FIFO 99.
    Fifo,
    /// Time-sensitive session threads SCHED_RR 99.
    Rr,
    /// Session threads in cgroups named by tier, under `overtake-ufs` (sched_ext).
    Ufs,
}

impl TiersSchedulerArg {
    pub fn name(self) -> &'static str {
        match self {
            TiersSchedulerArg::Overtake => "overtake",
            TiersSchedulerArg::Eevdf => "eevdf",
            TiersSchedulerArg::Idle => "idle",
            TiersSchedulerArg::Fifo => "fifo",
            TiersSchedulerArg::Rr => "rr",
            TiersSchedulerArg::Ufs => "ufs",
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareTiersArgs {
    /// Schedulers to compare.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "overtake,eevdf,idle,fifo,rr"
    )]
    pub schedulers: Vec<TiersSchedulerArg>,
    /// Worker threads (Overtake) and warehouses.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Sessions of each kind in the mixes (default: one per worker; the shares-by-weight runs
    /// use two per group and worker).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub sessions: Option<u16>,
    /// TPC-C transactions per bursty request.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub burst: u32,
    /// Mean think time before a bursty request, in microseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub think_us: u64,
    /// Seconds per run.
    #[arg(long, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Overtake's quantum within a tier, in microseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quantum_us: u64,
    /// Skip the shares-by-weight runs.
    #[arg(long)]
    pub no_weights: bool,
    /// Seed of the load and the sessions.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

fn group(tier: Tier, weight: u32) -> Group {
    Group::new(tier, Weight::new(weight).expect("a weight in 1-10000"))
}

/// The mixes, by name: which classes run.
fn mix(name: &str, sessions: usize) -> Vec<Class> {
    let bursty = |g| Class {
        kind: Kind::Bursty,
        group: g,
        sessions,
    };
    let bound = |g| Class {
        kind: Kind::Bound,
        group: g,
        sessions,
    };
    match name {
        "solo" => vec![bursty(group(Tier::TimeSensitive, 10_000))],
        "minmax" => vec![
            bursty(group(Tier::TimeSensitive, 10_000)),
            bound(group(Tier::Background, 1)),
        ],
        // Two groups of equal weight (two cgroups), each with its own share.
        "5050" => vec![
            bursty(group(Tier::TimeSensitive, 100).numbered(1)),
            bound(group(Tier::TimeSensitive, 100).numbered(2)),
        ],
        // The bound sessions alone: what the background's rate is compared with.
        _ => vec![bound(group(Tier::Background, 1))],
    }
}

/// What runs the sessions, or why this scheduler cannot run here.
fn placement(scheduler: TiersSchedulerArg, args: &CompareTiersArgs) -> Result<Placement, String> {
    Ok(match scheduler {
        TiersSchedulerArg::Overtake => {
            let sched = SchedConfig::default()
                .policy(Policy::Quantum)
                .workers(usize::from(args.workers))
                .delivery(Delivery::Signal)
                .quantum(Duration::from_micros(args.quantum_us));
            sched.validate().map_err(|e| e.to_string())?;
            Placement::Overtake(sched)
        }
        TiersSchedulerArg::Eevdf => Placement::Os(OsSchedulerArg::Eevdf.scheduling()?),
        TiersSchedulerArg::Idle => Placement::Os(OsSchedulerArg::Idle.scheduling()?),
        TiersSchedulerArg::Fifo => Placement::Os(OsSchedulerArg::Fifo.scheduling()?),
        TiersSchedulerArg::Rr => Placement::Os(OsSchedulerArg::Rr.scheduling()?),
        TiersSchedulerArg::Ufs => Placement::Os(OsSchedulerArg::Ufs.scheduling()?),
    })
}

struct Run {
    mix: &'static str,
    scheduler: TiersSchedulerArg,
    report: TiersReport,
}

fn per_sec(side: &SideReport, elapsed: Duration) -> f64 {
    side.units as f64 / elapsed.as_secs_f64()
}

fn cpu_share(side: &SideReport, elapsed: Duration, cores: f64) -> Option<f64> {
    side.cpu_nanos
        .map(|n| n as f64 / (elapsed.as_nanos() as f64 * cores))
}

pub fn compare(args: &CompareTiersArgs) -> Result<(), String> {
    crate::commands::flags::each_once("--schedulers", &args.schedulers, |s| s.name().to_owned())?;
    let workers = i64::from(args.workers);
    let sessions = usize::from(args.sessions.unwrap_or(args.workers));
    let loaded = load_into(
        Database::in_memory(Options::default()),
        workers,
        args.seed,
        true,
        args.json,
    )?;
    let duration = Duration::from_secs_f64(args.duration);
    let config = |classes: Vec<Class>, placement: Placement| TiersConfig {
        classes,
        burst: args.burst as usize,
        think: Duration::from_micros(args.think_us),
        placement,
        warehouses: workers,
        constants: loaded.run_constants(args.seed),
        seed: args.seed,
    };
    let run = |classes: Vec<Class>, placement: Placement| -> Result<TiersReport, String> {
        run_tiers(
            std::sync::Arc::clone(&loaded.db),
            &loaded.tpcc,
            loaded.ch.as_ref(),
            &config(classes, placement),
            duration,
        )
        .map_err(|e| e.to_string())
    };
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for &scheduler in &args.schedulers {
        for name in ["solo", "bound", "minmax", "5050"] {
            if crate::harness::interrupt::requested() {
                break;
            }
            let outcome = placement(scheduler, args).and_then(|p| run(mix(name, sessions), p));
            match outcome {
                Ok(report) => runs.push(Run {
                    mix: name,
                    scheduler,
                    report,
                }),
                Err(e) => {
                    skipped.push(format!("{} {name}: {e}", scheduler.name()));
                    break;
                }
            }
        }
    }
    if runs.is_empty() && !skipped.is_empty() && !crate::harness::interrupt::requested() {
        return Err(format!("no scheduler could run: {}", skipped.join("; ")));
    }
    crate::harness::interrupt::check_any(runs.len())?;
    let weights = if args.no_weights {
        Vec::new()
    } else {
        // Two sessions per group and worker: a worker holding tasks of one group only can give
        // it no more than the worker, whatever the weights say (tasks never move).
        weight_runs(args, 2 * usize::from(args.workers), &run, &mut skipped)
    };
    if let Ok(tree) = crate::commands::flags::session_cgroups() {
        tree.remove_empty();
    }
    print(args, &loaded, &runs, &weights, &skipped)
}

/// One shares-by-weight run: two groups of one tier, all bound.
struct WeightRun {
    scheduler: TiersSchedulerArg,
    tier: Tier,
    weights: (u32, u32),
    /// The first group's share of the two groups' CPU time.
    share: f64,
}

fn weight_runs(
    args: &CompareTiersArgs,
    sessions: usize,
    run: &dyn Fn(Vec<Class>, Placement) -> Result<TiersReport, String>,
    skipped: &mut Vec<String>,
) -> Vec<WeightRun> {
    let mut out = Vec::new();
    let schedulers = [
        TiersSchedulerArg::Overtake,
        TiersSchedulerArg::Eevdf,
        TiersSchedulerArg::Ufs,
    ];
    for scheduler in schedulers
        .into_iter()
        .filter(|s| args.schedulers.contains(s))
    {
        for (tier, weights) in [
            (Tier::TimeSensitive, (200, 300)),
            (Tier::Background, (6_670, 10_000)),
        ] {
            if crate::harness::interrupt::requested() {
                return out;
            }
            let classes = [weights.0, weights.1]
                .map(|w| Class {
                    kind: Kind::Bound,
                    group: group(tier, w),
                    sessions,
                })
                .to_vec();
            let outcome = placement(scheduler, args).and_then(|p| run(classes, p));
            match outcome {
                Ok(report) => {
                    let cpu = |i: usize| report.classes[i].cpu_nanos.unwrap_or(0) as f64;
                    let share = cpu(0) / (cpu(0) + cpu(1)).max(1.0);
                    out.push(WeightRun {
                        scheduler,
                        tier,
                        weights,
                        share,
                    });
                }
                Err(e) => skipped.push(format!("{} weights: {e}", scheduler.name())),
            }
        }
    }
    out
}

fn print(
    args: &CompareTiersArgs,
    loaded: &LoadedDb,
    runs: &[Run],
    weights: &[WeightRun],
    skipped: &[String],
) -> Result<(), String> {
    let cores = f64::from(args.workers);
    let find = |scheduler: TiersSchedulerArg, mix: &str| {
        runs.iter()
            .find(|r| r.scheduler == scheduler && r.mix == mix)
            .map(|r| &r.report)
    };
    let rows: Vec<MixRun> = runs
        .iter()
        .filter(|r| r.mix != "bound")
        .map(|r| {
            let e = r.report.elapsed;
            let solo = find(r.scheduler, "solo").map(|s| per_sec(&s.classes[0], s.elapsed));
            let bound_solo = find(r.scheduler, "bound").map(|s| per_sec(&s.classes[0], s.elapsed));
            let bursty = &r.report.classes[0];
            let bursty_rate = per_sec(bursty, e);
            let latency = bursty.latency.summary();
            let background = r.report.classes.get(1).map(|b| {
                let rate = per_sec(b, e);
                Background {
                    per_sec: rate,
                    rel_solo: bound_solo.map(|s| rate / s),
                    cpu_share: cpu_share(b, e, cores),
                }
            });
            MixRun {
                mix: r.mix,
                scheduler: r.scheduler.name(),
                bursty: Bursty {
                    per_sec: bursty_rate,
                    rel_solo: solo.map(|s| bursty_rate / s),
                    latency_us: MeanP95 {
                        mean: latency.mean,
                        p95: latency.p95,
                    },
                    cpu_share: cpu_share(bursty, e, cores),
                },
                background,
            }
        })
        .collect();
    let weight_rows: Vec<WeightShare> = weights
        .iter()
        .map(|w| WeightShare {
            scheduler: w.scheduler.name(),
            tier: w.tier.as_str(),
            weights: [w.weights.0, w.weights.1],
            share: w.share,
            want: f64::from(w.weights.0) / f64::from(w.weights.0 + w.weights.1),
        })
        .collect();
    let out = TiersComparison {
        workers: args.workers,
        sessions: args.sessions.unwrap_or(args.workers),
        burst: args.burst,
        think_us: args.think_us,
        duration_s: args.duration,
        rss_mib: loaded.rss_mib,
        runs: rows,
        weights: weight_rows,
        skipped: skipped.to_vec(),
    };
    if args.json {
        return print_json(&out, &[]);
    }
    let num = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{x:.2}"));
    let pct = |v: Option<f64>| v.map_or("-".to_owned(), |x| format!("{:.0}%", x * 100.0));
    let table: Vec<Vec<String>> = out
        .runs
        .iter()
        .map(|r| {
            let (b, g) = (&r.bursty, r.background.as_ref());
            vec![
                r.mix.to_owned(),
                r.scheduler.to_owned(),
                format!("{:.0}", b.per_sec),
                num(b.rel_solo),
                us(b.latency_us.mean),
                us(b.latency_us.p95),
                pct(b.cpu_share),
                g.map_or("-".to_owned(), |g| format!("{:.1}", g.per_sec)),
                num(g.and_then(|g| g.rel_solo)),
                pct(g.and_then(|g| g.cpu_share)),
            ]
        })
        .collect();
    println!(
        "{} bursty sessions ({} TPC-C transactions per request, think {} us) and as many bound \
         sessions (CH Q2 back to back); {} workers / cores, {} s per run",
        args.sessions.unwrap_or(args.workers),
        args.burst,
        args.think_us,
        args.workers,
        args.duration
    );
    print_table(
        &[
            "mix",
            "scheduler",
            "bursty tx/s",
            "x SOLO",
            "mean us",
            "p95 us",
            "CPU",
            "bound q/s",
            "x alone",
            "CPU",
        ],
        &table,
    );
    if !out.weights.is_empty() {
        println!("\nshares within a tier (bound sessions only, two groups)");
        let table: Vec<Vec<String>> = out
            .weights
            .iter()
            .map(|w| {
                vec![
                    w.scheduler.to_owned(),
                    w.tier.to_owned(),
                    format!("{}:{}", w.weights[0], w.weights[1]),
                    format!("{:.3}", w.share),
                    format!("{:.3}", w.want),
                ]
            })
            .collect();
        print_table(
            &[
                "scheduler",
                "tier",
                "weights",
                "share of first",
                "by weight",
            ],
            &table,
        );
    }
    for s in skipped {
        println!("warning: skipped {s}");
    }
    Ok(())
}

/// What `compare tiers` reports.
#[derive(Debug, Serialize)]
struct TiersComparison {
    workers: u16,
    sessions: u16,
    burst: u32,
    think_us: u64,
    duration_s: f64,
    rss_mib: Option<f64>,
    /// The SOLO, MIN:MAX and 50:50 runs of each scheduler.
    runs: Vec<MixRun>,
    /// Shares within a tier by weight.
    weights: Vec<WeightShare>,
    /// Schedulers that could not run here, and why.
    skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
struct MixRun {
    mix: &'static str,
    scheduler: &'static str,
    bursty: Bursty,
    /// The bound sessions (`null` in SOLO).
    background: Option<Background>,
}

#[derive(Debug, Serialize)]
struct Bursty {
    per_sec: f64,
    rel_solo: Option<f64>,
    latency_us: MeanP95,
    /// `null` where the OS could not say (no CPU accounting).
    cpu_share: Option<f64>,
}

#[derive(Debug, Serialize)]
struct MeanP95 {
    mean: f64,
    p95: f64,
}

#[derive(Debug, Serialize)]
struct Background {
    per_sec: f64,
    rel_solo: Option<f64>,
    cpu_share: Option<f64>,
}

/// Two groups of one tier at `weights`: the first's share of their CPU time, and its share by
/// weight.
#[derive(Debug, Serialize)]
struct WeightShare {
    scheduler: &'static str,
    tier: &'static str,
    weights: [u32; 2],
    share: f64,
    want: f64,
}
