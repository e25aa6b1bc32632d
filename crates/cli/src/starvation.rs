//! `overtake compare starvation`: starvation control under sustained overload, PreemptDB's Figure
//! 12 scaled to these workers. Urgent work arrives faster than a worker can serve it (by default
//! 100 New-Order/Payment per millisecond per worker, a batch every millisecond into an urgent
//! queue of 100), low-priority work (Query 2 by default) fills every worker it can get, and each
//! run uses one starvation threshold; `wait` and the low-priority work alone (its solo rate) are
//! the references. Each run loads its own database.

use std::path::PathBuf;

use overtake_engine::Priority;
use overtake_sched::Policy;
use overtake_workload::drivers::open_loop::RunReport;
use serde_json::{Value, json};

use crate::args::{CompareStarvationArgs, MixedArgs};
use crate::figures::{self, Group, Labeled, print_files, with_files};
use crate::mixed::{
    Calibrated, check_can_preempt, check_resources, describe, run_config, set_huge_pages, settings,
    settle_between_runs, worker_share,
};
use crate::output::{class_json, print_table, secs, us};
use crate::plot::{self, Curve};

/// One run and what it was.
struct Run {
    label: String,
    threshold: Option<f64>,
    report: RunReport,
}

fn per_sec(report: &RunReport, p: Priority) -> f64 {
    report.stats.class(p).committed as f64 / secs(report.elapsed)
}

pub fn compare(args: &CompareStarvationArgs) -> Result<(), String> {
    if args.thresholds.is_empty() && args.no_wait {
        return Err("nothing to run: give --thresholds or drop --no-wait".into());
    }
    crate::args::each_once("--thresholds", &args.thresholds, f64::to_string)?;
    let mixed = &args.mixed;
    if mixed.mp.is_some() {
        return Err("compare starvation has two classes: --mp is not taken here".into());
    }
    settings(Policy::Preempt, mixed)
        .validate()
        .map_err(|e| e.to_string())?;
    check_can_preempt(mixed, overtake_sched::Policy::Preempt)?;
    check_resources(mixed)?;
    set_huge_pages(mixed)?;
    mixed.figures.prepare()?;
    let work = Calibrated::for_args(mixed);
    let mut runs = Vec::new();
    let solo = if args.no_solo {
        None
    } else {
        let report = run_config(settings(Policy::Wait, mixed), mixed, &work, false)?;
        settle_between_runs();
        Some(report)
    };
    let thresholds = &args.thresholds;
    for &threshold in thresholds {
        if crate::interrupt::requested() {
            break;
        }
        let mut config = settings(Policy::Preempt, mixed);
        config.sched.starvation_threshold = threshold;
        let report = run_config(config, mixed, &work, true)?;
        settle_between_runs();
        runs.push(Run {
            label: format!("preempt {threshold}"),
            threshold: Some(threshold),
            report,
        });
    }
    if !args.no_wait && !crate::interrupt::requested() {
        let report = run_config(settings(Policy::Wait, mixed), mixed, &work, true)?;
        settle_between_runs();
        runs.push(Run {
            label: "wait".into(),
            threshold: None,
            report,
        });
    }
    let solo_rate = solo.as_ref().map(|s| per_sec(s, Priority::LOW));
    crate::interrupt::check_any(runs.len())?;
    let planned = thresholds.len() + usize::from(!args.no_wait);
    let files = write_figures(&runs, mixed)?;
    if mixed.json {
        print_json(&runs, solo.as_ref(), runs.len() < planned, &files);
    } else {
        print_tables(args, &runs, solo_rate);
        crate::interrupt::print_if_cut(runs.len(), planned);
        print_files(&files);
    }
    Ok(())
}

/// Class CDFs per run, and the threshold sweep: the urgent p99 and the low class's rate.
fn write_figures(runs: &[Run], mixed: &MixedArgs) -> Result<Vec<PathBuf>, String> {
    let labeled: Vec<Labeled> = runs
        .iter()
        .map(|r| Labeled {
            label: r.label.clone(),
            stats: &r.report.stats,
            kinds: &r.report.kinds,
            elapsed: r.report.elapsed,
        })
        .collect();
    figures::write(
        &mixed.figures,
        "starvation",
        Some(Group::Classes),
        &labeled,
        |dir| {
            let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
            let p99 = Curve {
                name: "urgent p99".into(),
                values: runs
                    .iter()
                    .map(|r| {
                        let c = r.report.stats.class(Priority::HIGH);
                        (c.latency.count() > 0).then(|| c.latency.summary().p99)
                    })
                    .collect(),
            };
            let low = Curve {
                name: "low priority".into(),
                values: runs
                    .iter()
                    .map(|r| Some(per_sec(&r.report, Priority::LOW)))
                    .collect(),
            };
            let mut files = Vec::new();
            files.extend(plot::sweep(
                dir,
                "sweep-urgent-p99.svg",
                "urgent latency (p99) by starvation threshold",
                ("run", "p99 latency (us, log scale)"),
                &labels,
                &[p99],
                true,
            )?);
            files.extend(plot::sweep(
                dir,
                "sweep-low-rate.svg",
                "low-priority work served by starvation threshold",
                ("run", "committed per second"),
                &labels,
                &[low],
                false,
            )?);
            Ok(files)
        },
    )
}

fn print_json(runs: &[Run], solo: Option<&RunReport>, interrupted: bool, files: &[PathBuf]) {
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            let elapsed = secs(r.report.elapsed);
            json!({
                "policy": r.report.config.sched.policy.name(),
                "threshold": r.threshold,
                "classes": {
                    "high": class_json(r.report.stats.class(Priority::HIGH), elapsed),
                    "low": class_json(r.report.stats.class(Priority::LOW), elapsed),
                },
                "low_share": worker_share(r.report.stats.class(Priority::LOW), &r.report),
                "high_share": worker_share(r.report.stats.class(Priority::HIGH), &r.report),
                "starvation_skips": r.report.dispatch.starvation_skips,
                "requests": r.report.dispatch.requests,
                "arrived_high": r.report.dispatch.arrived_high,
                "unfinished_high": r.report.dispatch.unfinished_high,
                "warnings": r.report.dispatch.warnings(),
                "blocked_workers": r.report.blocked.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        })
        .collect();
    let solo = solo.map(|s| {
        json!({
            "low": class_json(s.stats.class(Priority::LOW), secs(s.elapsed)),
            "low_share": worker_share(s.stats.class(Priority::LOW), s),
        })
    });
    let out = json!({ "runs": runs, "solo": solo, "interrupted": interrupted });
    println!("{}", with_files(out, files));
}

fn print_tables(args: &CompareStarvationArgs, runs: &[Run], solo_rate: Option<f64>) {
    println!("{}", describe(&args.mixed));
    if let Some(rate) = solo_rate {
        println!("low-priority work alone: {rate:.1} per s");
    }
    println!();
    println!(
        "per run: urgent and low-priority throughput and latency (microseconds), the share of \
         worker time each class ran, and pushes the dispatcher held back"
    );
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let (high, low) = (
                r.report.stats.class(Priority::HIGH),
                r.report.stats.class(Priority::LOW),
            );
            let (hl, ll) = (high.latency.summary(), low.latency.summary());
            let low_rate = per_sec(&r.report, Priority::LOW);
            vec![
                r.label.clone(),
                format!("{:.0}", per_sec(&r.report, Priority::HIGH)),
                us(hl.p50),
                us(hl.p99),
                format!("{low_rate:.1}"),
                solo_rate.map_or("-".into(), |s| {
                    if s > 0.0 {
                        format!("{:.2}", low_rate / s)
                    } else {
                        "-".into()
                    }
                }),
                us(ll.p50),
                us(ll.p99),
                format!("{:.2}", worker_share(low, &r.report)),
                format!("{:.2}", worker_share(high, &r.report)),
                r.report.dispatch.starvation_skips.to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            "run",
            "urgent/s",
            "urgent p50",
            "urgent p99",
            "low/s",
            "low/solo",
            "low p50",
            "low p99",
            "low share",
            "urgent share",
            "held back",
        ],
        &rows,
    );
    for r in runs {
        for w in r.report.dispatch.warnings() {
            println!("warning: {}: {w}", r.label);
        }
        for b in &r.report.blocked {
            println!("warning: {}: {b}", r.label);
        }
        let failed = r.report.stats.class(Priority::HIGH).failed
            + r.report.stats.class(Priority::LOW).failed;
        if failed > 0 {
            println!("warning: {}: {failed} transactions failed", r.label);
        }
    }
}
