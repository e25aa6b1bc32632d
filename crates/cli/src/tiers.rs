//! `overtake compare tiers`: UFS's experiment (see `overtake_workload::drivers::tiers`). Bursty
//! time-sensitive sessions alone (SOLO), against bound sessions in the background tier at the
//! extreme weights (MIN:MAX: bursty 10000 time-sensitive, bound 1 background), and both
//! time-sensitive at equal weight (50:50); each under Overtake's tiers and under the OS's
//! schedulers on session threads. Then two groups per tier, all bound, at weights 2:3 and
//! 6670:10000: the CPU shares they get.

use std::time::Duration;

use overtake_engine::{Database, Options};
use overtake_sched::{Delivery, Group, Policy, SchedConfig, Tier, Weight};
use overtake_workload::drivers::tiers::{
    Class, Kind, Placement, SideReport, TiersConfig, TiersReport, run_tiers,
};
use serde_json::{Value, json};

use crate::args::{CompareTiersArgs, OsSchedulerArg, TiersSchedulerArg};
use crate::output::{LoadedDb, load_into, print_table, us};

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
    crate::args::each_once("--schedulers", &args.schedulers, |s| s.name().to_owned())?;
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
            if crate::interrupt::requested() {
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
    if runs.is_empty() && !skipped.is_empty() && !crate::interrupt::requested() {
        return Err(format!("no scheduler could run: {}", skipped.join("; ")));
    }
    crate::interrupt::check_any(runs.len())?;
    let weights = if args.no_weights {
        Vec::new()
    } else {
        // Two sessions per group and worker: a worker holding tasks of one group only can give
        // it no more than the worker, whatever the weights say (tasks never move).
        weight_runs(args, 2 * usize::from(args.workers), &run, &mut skipped)
    };
    print(args, &loaded, &runs, &weights, &skipped);
    if let Ok(tree) = crate::args::session_cgroups() {
        tree.remove_empty();
    }
    Ok(())
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
            if crate::interrupt::requested() {
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
) {
    let cores = f64::from(args.workers);
    let find = |scheduler: TiersSchedulerArg, mix: &str| {
        runs.iter()
            .find(|r| r.scheduler == scheduler && r.mix == mix)
            .map(|r| &r.report)
    };
    let rows: Vec<Value> = runs
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
                json!({
                    "per_sec": rate,
                    "rel_solo": bound_solo.map(|s| rate / s),
                    "cpu_share": cpu_share(b, e, cores),
                })
            });
            json!({
                "mix": r.mix,
                "scheduler": r.scheduler.name(),
                "bursty": {
                    "per_sec": bursty_rate,
                    "rel_solo": solo.map(|s| bursty_rate / s),
                    "latency_us": {"mean": latency.mean, "p95": latency.p95},
                    "cpu_share": cpu_share(bursty, e, cores),
                },
                "background": background,
            })
        })
        .collect();
    let weight_rows: Vec<Value> = weights
        .iter()
        .map(|w| {
            json!({
                "scheduler": w.scheduler.name(),
                "tier": w.tier.as_str(),
                "weights": [w.weights.0, w.weights.1],
                "share": w.share,
                "want": f64::from(w.weights.0) / f64::from(w.weights.0 + w.weights.1),
            })
        })
        .collect();
    if args.json {
        let out = json!({
            "workers": args.workers,
            "sessions": args.sessions.unwrap_or(args.workers),
            "burst": args.burst,
            "think_us": args.think_us,
            "duration_s": args.duration,
            "rss_mib": loaded.rss_mib,
            "runs": rows,
            "weights": weight_rows,
            "skipped": skipped,
        });
        println!("{out}");
        return;
    }
    let num = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x:.2}"));
    let pct = |v: &Value| {
        v.as_f64()
            .map_or("-".to_owned(), |x| format!("{:.0}%", x * 100.0))
    };
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let b = &r["bursty"];
            let g = &r["background"];
            vec![
                r["mix"].as_str().unwrap_or("").to_owned(),
                r["scheduler"].as_str().unwrap_or("").to_owned(),
                format!("{:.0}", b["per_sec"].as_f64().unwrap_or(0.0)),
                num(&b["rel_solo"]),
                us(b["latency_us"]["mean"].as_f64().unwrap_or(0.0)),
                us(b["latency_us"]["p95"].as_f64().unwrap_or(0.0)),
                pct(&b["cpu_share"]),
                g["per_sec"]
                    .as_f64()
                    .map_or("-".to_owned(), |x| format!("{x:.1}")),
                num(&g["rel_solo"]),
                pct(&g["cpu_share"]),
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
    if !weight_rows.is_empty() {
        println!("\nshares within a tier (bound sessions only, two groups)");
        let table: Vec<Vec<String>> = weight_rows
            .iter()
            .map(|w| {
                vec![
                    w["scheduler"].as_str().unwrap_or("").to_owned(),
                    w["tier"].as_str().unwrap_or("").to_owned(),
                    format!("{}:{}", w["weights"][0], w["weights"][1]),
                    format!("{:.3}", w["share"].as_f64().unwrap_or(0.0)),
                    format!("{:.3}", w["want"].as_f64().unwrap_or(0.0)),
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
}
