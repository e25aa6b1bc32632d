//! What a run of the mixed workload reports: [`MixedRun`] (the JSON of `bench mixed` and of each
//! run of `compare mixed`), the tables read from it, and the figures. Only reads finished runs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use overtake_engine::Priority;
use overtake_sched::{ClassStats, Policy};
use overtake_workload::drivers::open_loop::RunReport;
use serde::Serialize;

use super::{HighArg, LowArg, MixedArgs, open_loop_arrivals};
use crate::report::figures::{self, Group, Labeled};
use crate::report::tail::{self, TailReport};
use crate::report::{ClassReport, print_table, secs, us};

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

/// The classes a run has, most urgent first, with their names and what they are.
pub fn classes(args: &MixedArgs) -> Vec<(Priority, String)> {
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

/// One run of the mixed workload: what `--json` prints for it, and what the tables read.
#[derive(Debug, Serialize)]
pub struct MixedRun {
    pub policy: &'static str,
    pub lp: &'static str,
    pub hp: &'static str,
    pub workers: u16,
    pub warehouses: i64,
    pub duration_s: f64,
    pub arrival_interval_us: u64,
    pub hp_queue: u32,
    pub lp_queue: u32,
    pub yield_interval: u32,
    pub starvation_threshold: f64,
    pub promote_after: u32,
    pub mechanism: &'static str,
    pub signal_delay_us: u64,
    pub huge_pages: bool,
    pub durability: Option<&'static str>,
    pub mp: Option<&'static str>,
    pub mp_interval_us: Option<u64>,
    /// Per class, most urgent first in the tables (by name here).
    pub classes: BTreeMap<&'static str, ClassReport>,
    /// Preemptions of low-priority work.
    pub preemptions: u64,
    /// Share of the workers' time each class spent running.
    pub worker_time: BTreeMap<&'static str, f64>,
    /// Per kind of transaction that ran.
    pub kinds: BTreeMap<&'static str, ClassReport>,
    /// With `--tail-report`.
    pub tail: Option<TailReport>,
    pub warnings: Vec<String>,
    pub blocked_workers: Vec<String>,
    pub machinery: Machinery,
}

/// What the dispatcher and the preemption mechanism did in a run.
#[derive(Debug, Serialize)]
pub struct Machinery {
    pub arrived_high: u64,
    pub late_high: u64,
    pub requests: u64,
    pub signals_sent: u64,
    pub injected: u64,
    pub deferred: u64,
    pub served: u64,
    pub starvation_skips: u64,
    pub unfinished_high: usize,
}

impl MixedRun {
    pub fn new(report: &RunReport, args: &MixedArgs) -> Self {
        let elapsed = secs(report.elapsed);
        let classes = classes(args);
        let p = report.preempt;
        MixedRun {
            policy: report.config.sched.policy.name(),
            lp: args.lp.name(),
            hp: args.hp.name(),
            workers: args.workers,
            warehouses: args.warehouses.unwrap_or(i64::from(args.workers)),
            duration_s: elapsed,
            arrival_interval_us: args.arrival_interval_us,
            hp_queue: args.hp_queue,
            lp_queue: args.lp_queue,
            yield_interval: args.yield_interval,
            starvation_threshold: args.starvation_threshold,
            promote_after: args.promote_after,
            mechanism: args.preempt_mechanism.delivery().name(),
            signal_delay_us: args.signal_delay_us,
            huge_pages: args.huge_pages,
            durability: args.durability.map(|d| d.engine().name()),
            mp: args.mp.map(|_| "tpcc"),
            mp_interval_us: args.mp.map(|_| args.mp_interval_us),
            classes: classes
                .iter()
                .map(|(p, _)| {
                    (
                        p.as_str(),
                        ClassReport::new(report.stats.class(*p), elapsed),
                    )
                })
                .collect(),
            preemptions: report.stats.class(Priority::LOW).preemptions,
            worker_time: classes
                .iter()
                .map(|(p, _)| (p.as_str(), worker_share(report.stats.class(*p), report)))
                .collect(),
            kinds: report
                .kinds
                .iter()
                .zip(&report.stats.kinds)
                .filter(|(_, c)| c.committed + c.rolled_back + c.failed > 0)
                .map(|(name, c)| (*name, ClassReport::new(c, elapsed)))
                .collect(),
            tail: args.tail_report.then(|| TailReport::new(report, &classes)),
            warnings: report.dispatch.warnings_about(open_loop_arrivals(args)),
            blocked_workers: report.blocked.iter().map(ToString::to_string).collect(),
            machinery: Machinery {
                arrived_high: report.dispatch.arrived_high,
                late_high: report.dispatch.late_high,
                requests: report.dispatch.requests,
                signals_sent: p.signals_sent,
                injected: p.injected,
                deferred: p.deferred,
                served: p.served,
                starvation_skips: report.dispatch.starvation_skips,
                unfinished_high: report.dispatch.unfinished_high,
            },
        }
    }

    /// The figures of one class.
    fn class(&self, p: Priority) -> &ClassReport {
        &self.classes[p.as_str()]
    }
}

/// A comparison of policies: its runs in order, and whether Ctrl-C cut it short.
#[derive(Debug, Serialize)]
pub struct MixedComparison {
    pub runs: Vec<MixedRun>,
    pub interrupted: bool,
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
fn class_rows(runs: &[MixedRun], priority: Priority) -> Vec<Vec<String>> {
    let wait = runs.iter().find(|r| r.policy == Policy::Wait.name());
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.3}", a / b)
        } else {
            "-".into()
        }
    };
    runs.iter()
        .map(|r| {
            let c = r.class(priority);
            let (l, d) = (&c.latency_us, &c.sched_delay_us);
            let mut row = vec![
                r.policy.to_owned(),
                format!("{:.0}", c.per_sec),
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
                let wc = w.class(priority);
                row.push(ratio(l.p99, wc.latency_us.p99));
                row.push(ratio(c.per_sec, wc.per_sec));
            }
            row
        })
        .collect()
}

/// Prints the runs' tables (one run for `bench`, several for `compare`).
pub fn print_comparison(runs: &[RunReport], args: &MixedArgs) {
    let reports: Vec<MixedRun> = runs.iter().map(|r| MixedRun::new(r, args)).collect();
    println!("{}", describe(args));
    let with_wait = reports.iter().any(|r| r.policy == Policy::Wait.name());
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
        print_table(&header, &class_rows(&reports, *priority));
    }
    println!();
    println!(
        "where the worker time went: running each class (switches included), and the rest \
         (idle, dispatching, unfinished jobs)"
    );
    let time_rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let shares: Vec<f64> = classes
                .iter()
                .map(|(p, _)| r.worker_time[p.as_str()])
                .collect();
            let mut row = vec![r.policy.to_owned()];
            row.extend(shares.iter().map(|s| format!("{:.1}%", s * 100.0)));
            row.push(format!(
                "{:.1}%",
                (1.0 - shares.iter().sum::<f64>()) * 100.0
            ));
            row.extend(classes.iter().map(|(p, _)| us(r.class(*p).running_us.mean)));
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
    let breakdown_rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| {
            classes.iter().map(|&(p, _)| {
                let b = r.class(p).breakdown_us;
                vec![
                    r.policy.to_owned(),
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
        let rows: Vec<Vec<String>> = reports
            .iter()
            .map(|r| {
                let l = r.class(Priority::LOW);
                let wasted = l.wasted_ms / 1e3;
                vec![
                    r.policy.to_owned(),
                    l.committed.to_string(),
                    l.attempts.to_string(),
                    if l.committed > 0 {
                        format!("{:.1}", l.attempts as f64 / l.committed as f64)
                    } else {
                        "-".to_owned()
                    },
                    l.promoted.to_string(),
                    format!("{wasted:.2} s"),
                    format!(
                        "{:.1}%",
                        100.0 * wasted / (r.duration_s * f64::from(args.workers))
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
    for r in &reports {
        let m = &r.machinery;
        let (high, low) = (r.class(Priority::HIGH), r.class(Priority::LOW));
        let failed = high.failed + low.failed;
        println!(
            "{}: {} requests, {} signals, {} injected, {} deferred, {} served; {} urgent unfinished \
             at the end{}",
            r.policy,
            m.requests,
            m.signals_sent,
            m.injected,
            m.deferred,
            m.served,
            m.unfinished_high,
            if failed > 0 {
                format!(
                    "; {failed} failed ({})",
                    low.first_error
                        .as_ref()
                        .or(high.first_error.as_ref())
                        .cloned()
                        .unwrap_or_default()
                )
            } else {
                String::new()
            }
        );
    }
    if args.tail_report {
        for r in runs {
            tail::print(r, &classes);
        }
    }
    for r in &reports {
        for w in r.warnings.iter().chain(&r.blocked_workers) {
            println!("warning: {}: {w}", r.policy);
        }
    }
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
pub fn write_figures(runs: &[RunReport], args: &MixedArgs) -> Result<Vec<PathBuf>, String> {
    figures::write(
        &args.figures,
        "mixed workload",
        Some(Group::Classes),
        &labeled(runs),
        |_| Ok(Vec::new()),
    )
}
