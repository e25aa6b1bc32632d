//! What a run of the bimodal workload reports: [`BimodalRun`] (the JSON of each run), the tables
//! read from it, and the figures (a latency CDF per kind, or curves over a sweep's loads). Only
//! reads finished runs.

use std::path::PathBuf;

use overtake_workload::bimodal::KINDS;
use serde::Serialize;

use super::{BimodalArgs, Prepared, Run, warnings};
use crate::report::figures::{self, Group, Labeled, print_files};
use crate::report::plot::{self, Curve};
use crate::report::{ClassReport, print_json, print_table, us};

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

/// One policy's run at one load: what `--json` prints for it, and what the tables read.
#[derive(Debug, Serialize)]
pub struct BimodalRun {
    pub policy: String,
    pub load: f64,
    pub offered_per_sec: f64,
    pub served_share: f64,
    pub quantum_us: f64,
    pub two_queues: bool,
    pub skip_needless: bool,
    pub classes: Kinds,
    pub preemptions: Preemptions,
    /// Share of the workers' time not idle.
    pub worker_busy_share: f64,
    pub arrived: u64,
    pub unfinished: usize,
    pub warnings: Vec<String>,
}

/// The short and the long requests.
#[derive(Debug, Serialize)]
pub struct Kinds {
    pub short: ClassReport,
    pub long: ClassReport,
}

impl Kinds {
    fn get(&self, kind: usize) -> &ClassReport {
        if kind == 0 { &self.short } else { &self.long }
    }
}

/// Quantum ends: preemptions asked for, skipped because nothing else waited, served, and the
/// signals sent for them.
#[derive(Debug, Serialize)]
pub struct Preemptions {
    pub sent: u64,
    pub skipped: u64,
    pub served: u64,
    pub signals: u64,
}

impl BimodalRun {
    pub fn new(r: &Run) -> Self {
        let report = &r.report;
        let elapsed = report.elapsed.as_secs_f64();
        BimodalRun {
            policy: r.name.clone(),
            load: r.load,
            offered_per_sec: r.rate,
            served_share: r.served_share(),
            quantum_us: report.config.sched.quantum.as_secs_f64() * 1e6,
            two_queues: report.config.sched.two_queues,
            skip_needless: report.config.sched.skip_needless,
            classes: Kinds {
                short: ClassReport::new(&report.stats.kinds[0], elapsed),
                long: ClassReport::new(&report.stats.kinds[1], elapsed),
            },
            preemptions: Preemptions {
                sent: report.dispatch.quantum_preemptions,
                skipped: report.dispatch.quantum_skipped,
                served: report.preempt.served,
                signals: report.preempt.signals_sent,
            },
            worker_busy_share: r.busy() / (elapsed * report.config.sched.workers as f64),
            arrived: report.dispatch.arrived_high,
            unfinished: report.dispatch.unfinished_high,
            warnings: warnings(r),
        }
    }
}

/// What `bench bimodal` and `compare bimodal` (without `--sweep`) print under `--json`.
#[derive(Debug, Serialize)]
struct BimodalReport {
    #[serde(flatten)]
    setup: Setup,
    load: f64,
    offered_per_sec: f64,
    short_engine_us: f64,
    long_engine_us: f64,
    long_rows: usize,
    runs: Vec<BimodalRun>,
}

/// What every bimodal report opens with: the runs' size and the capacity measured before them.
#[derive(Debug, Serialize)]
pub struct Setup {
    workers: u16,
    duration_s: f64,
    capacity_per_sec: f64,
    short_service_us: f64,
    long_service_us: f64,
}

impl Setup {
    pub fn new(prepared: &Prepared, args: &BimodalArgs) -> Self {
        Setup {
            workers: args.workers,
            duration_s: args.duration,
            capacity_per_sec: prepared.capacity,
            short_service_us: prepared.short_scheduled.as_secs_f64() * 1e6,
            long_service_us: prepared.long_scheduled.as_secs_f64() * 1e6,
        }
    }
}

pub fn describe(prepared: &Prepared, args: &BimodalArgs) -> String {
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
    let reports: Vec<BimodalRun> = runs.iter().map(BimodalRun::new).collect();
    let wait = reports.iter().find(|r| r.policy == "wait");
    for (title, kind) in [("short requests (99.5%)", 0), ("long requests (0.5%)", 1)] {
        println!();
        println!("{title}: end-to-end latency in microseconds");
        let rows: Vec<Vec<String>> = reports
            .iter()
            .map(|r| {
                let c = r.classes.get(kind);
                let l = &c.latency_us;
                let per_s = c.per_sec;
                let base = wait.map(|w| w.classes.get(kind));
                let ratio = |mine: f64, theirs: Option<f64>| {
                    theirs
                        .filter(|t| *t > 0.0)
                        .map_or("-".to_owned(), |t| format!("{:.3}", mine / t))
                };
                vec![
                    r.policy.clone(),
                    format!("{per_s:.0}"),
                    us(l.p50),
                    us(l.p99),
                    us(l.p999),
                    us(l.max),
                    ratio(l.p99, base.map(|b| b.latency_us.p99)),
                    ratio(per_s, base.map(|b| b.per_sec)),
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
    let rows: Vec<Vec<String>> = reports
        .iter()
        .flat_map(|r| {
            KINDS.iter().enumerate().map(move |(kind, kind_name)| {
                let b = r.classes.get(kind).breakdown_us;
                vec![
                    r.policy.clone(),
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
    for r in &reports {
        for w in &r.warnings {
            println!("warning ({}): {w}", r.policy);
        }
    }
}

/// Quantum ends asked for and skipped, and what each cost the worker (against `wait` at the same
/// load, when there is a `wait` run).
pub fn print_preemptions(runs: &[Run]) {
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
pub fn write_figures(
    runs: &[Run],
    loads: &[f64],
    args: &BimodalArgs,
) -> Result<Vec<PathBuf>, String> {
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

/// Prints the runs of `bench bimodal`, or of `compare bimodal` at one load.
pub fn report(
    runs: &[Run],
    prepared: &Prepared,
    args: &BimodalArgs,
    files: &[PathBuf],
) -> Result<(), String> {
    if args.json {
        let out = BimodalReport {
            setup: Setup::new(prepared, args),
            load: args.load,
            offered_per_sec: prepared.rate(args.load),
            short_engine_us: prepared.short.as_secs_f64() * 1e6,
            long_engine_us: prepared.long.as_secs_f64() * 1e6,
            long_rows: prepared.workload.long_len(),
            runs: runs.iter().map(BimodalRun::new).collect(),
        };
        print_json(&out, files)
    } else {
        print_runs(runs, prepared, args);
        print_files(files);
        Ok(())
    }
}
