//! `overtake compare starvation`: starvation control under sustained overload, PreemptDB's Figure
//! 12 scaled to these workers. Urgent work arrives faster than a worker can serve it (by default
//! 100 New-Order/Payment per millisecond per worker, a batch every millisecond into an urgent
//! queue of 100), low-priority work (Query 2 by default) fills every worker it can get, and each
//! run uses one starvation threshold; `wait` and the low-priority work alone (its solo rate) are
//! the references. Each run loads its own database.

use std::path::PathBuf;

use clap::Args;
use overtake_engine::Priority;
use overtake_sched::Policy;
use overtake_workload::drivers::open_loop::RunReport;
use serde::Serialize;

use crate::commands::bench::mixed::{
    Calibrated, MixedArgs, check_can_preempt, check_resources, describe, run_config,
    set_huge_pages, settings, settle_between_runs, worker_share,
};
use crate::commands::flags::{each_once, non_negative};
use crate::harness::interrupt;
use crate::report::figures::{self, Group, Labeled, print_files};
use crate::report::plot::{self, Curve};
use crate::report::{ClassReport, print_json, print_table, secs, us};

#[derive(Debug, Args)]
pub struct CompareStarvationArgs {
    /// Starvation thresholds, one `preempt` run each (0 never lets urgent work take the worker
    /// from waiting low-priority work; 1 and above never limit).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,0.25,0.5,0.75,1,100",
        value_parser = non_negative
    )]
    pub thresholds: Vec<f64>,
    /// Skip the `wait` run.
    #[arg(long)]
    pub no_wait: bool,
    /// Skip the run of the low-priority work alone (its solo rate, which the other runs are
    /// compared with).
    #[arg(long)]
    pub no_solo: bool,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

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
    each_once("--thresholds", &args.thresholds, f64::to_string)?;
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
        if interrupt::requested() {
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
    if !args.no_wait && !interrupt::requested() {
        let report = run_config(settings(Policy::Wait, mixed), mixed, &work, true)?;
        settle_between_runs();
        runs.push(Run {
            label: "wait".into(),
            threshold: None,
            report,
        });
    }
    let solo_rate = solo.as_ref().map(|s| per_sec(s, Priority::LOW));
    interrupt::check_any(runs.len())?;
    let planned = thresholds.len() + usize::from(!args.no_wait);
    let files = write_figures(&runs, mixed)?;
    if mixed.json {
        let out = StarvationReport {
            runs: runs.iter().map(StarvationRun::new).collect(),
            solo: solo.as_ref().map(Solo::new),
            interrupted: runs.len() < planned,
        };
        print_json(&out, &files)?;
    } else {
        print_tables(args, &runs, solo_rate);
        interrupt::print_if_cut(runs.len(), planned);
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

/// What `compare starvation --json` prints.
#[derive(Debug, Serialize)]
struct StarvationReport {
    runs: Vec<StarvationRun>,
    /// The low-priority work alone (`null` with `--no-solo`).
    solo: Option<Solo>,
    interrupted: bool,
}

/// One run: `wait`, or `preempt` at one starvation threshold.
#[derive(Debug, Serialize)]
struct StarvationRun {
    #[serde(skip)]
    label: String,
    policy: &'static str,
    threshold: Option<f64>,
    classes: Classes,
    /// Shares of the workers' time each class ran.
    low_share: f64,
    high_share: f64,
    /// Pushes of urgent work the dispatcher held back.
    starvation_skips: u64,
    requests: u64,
    arrived_high: u64,
    unfinished_high: usize,
    warnings: Vec<String>,
    blocked_workers: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Classes {
    high: ClassReport,
    low: ClassReport,
}

#[derive(Debug, Serialize)]
struct Solo {
    low: ClassReport,
    low_share: f64,
}

impl StarvationRun {
    fn new(r: &Run) -> Self {
        let report = &r.report;
        let elapsed = secs(report.elapsed);
        let (high, low) = (
            report.stats.class(Priority::HIGH),
            report.stats.class(Priority::LOW),
        );
        StarvationRun {
            label: r.label.clone(),
            policy: report.config.sched.policy.name(),
            threshold: r.threshold,
            classes: Classes {
                high: ClassReport::new(high, elapsed),
                low: ClassReport::new(low, elapsed),
            },
            low_share: worker_share(low, report),
            high_share: worker_share(high, report),
            starvation_skips: report.dispatch.starvation_skips,
            requests: report.dispatch.requests,
            arrived_high: report.dispatch.arrived_high,
            unfinished_high: report.dispatch.unfinished_high,
            warnings: report.dispatch.warnings(),
            blocked_workers: report.blocked.iter().map(ToString::to_string).collect(),
        }
    }
}

impl Solo {
    fn new(s: &RunReport) -> Self {
        Solo {
            low: ClassReport::new(s.stats.class(Priority::LOW), secs(s.elapsed)),
            low_share: worker_share(s.stats.class(Priority::LOW), s),
        }
    }
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
    let reports: Vec<StarvationRun> = runs.iter().map(StarvationRun::new).collect();
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let (high, low) = (&r.classes.high, &r.classes.low);
            let (hl, ll) = (&high.latency_us, &low.latency_us);
            let low_rate = low.per_sec;
            vec![
                r.label.clone(),
                format!("{:.0}", high.per_sec),
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
                format!("{:.2}", r.low_share),
                format!("{:.2}", r.high_share),
                r.starvation_skips.to_string(),
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
    for r in &reports {
        for w in r.warnings.iter().chain(&r.blocked_workers) {
            println!("warning: {}: {w}", r.label);
        }
        let failed = r.classes.high.failed + r.classes.low.failed;
        if failed > 0 {
            println!("warning: {}: {failed} transactions failed", r.label);
        }
    }
}
