//! `overtake compare bimodal`: the bimodal workload of `bench bimodal` under several policies
//! (and the quantum's ablations), with ratios to `wait`; with `--sweep`, every policy at a range
//! of loads and Aspen's metric: the highest load at which the short requests' p99 stays under a
//! limit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::commands::bench::bimodal::{
    BimodalArgs, BimodalPolicyArg, BimodalRun, Prepared, Run, Setup, describe, prepare,
    print_preemptions, report, run_config, run_one, warnings, write_figures,
};
use crate::commands::bench::mixed::settle_between_runs;
use crate::commands::flags::{each_once, load_share};
use crate::harness::interrupt;
use crate::report::figures::print_files;
use crate::report::{print_json, print_table, us};

#[derive(Debug, Args)]
pub struct CompareBimodalArgs {
    /// Policies to run, in order (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "wait,quantum"
    )]
    pub policies: Vec<BimodalPolicyArg>,
    /// Run every policy at every load of --loads instead of at --load, and report Aspen's metric:
    /// the highest load (and short-request throughput) at which the short requests' p99 stays
    /// under --slo-us.
    #[arg(long)]
    pub sweep: bool,
    /// Loads of the sweep.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.3,0.4,0.5,0.6,0.7,0.8,0.9",
        value_parser = load_share
    )]
    pub loads: Vec<f64>,
    /// The short requests' p99 limit of the sweep, in microseconds (default: ten times the short
    /// service time, and at least twice the quantum: a short request that arrives while a long
    /// one runs waits up to a quantum under any quantum policy).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub slo_us: Option<u64>,
    #[command(flatten)]
    pub bimodal: BimodalArgs,
}

pub fn compare(args: &CompareBimodalArgs) -> Result<(), String> {
    if args.policies.is_empty() {
        return Err("--policies needs at least one policy".into());
    }
    each_once("--policies", &args.policies, |p| p.name().to_owned())?;
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
        if interrupt::requested() {
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
            settle_between_runs();
        }
    }
    interrupt::check_any(runs.len())?;
    let planned = loads.len();
    let loads = &loads[..loads_done];
    if !args.sweep {
        let files = write_figures(&runs, &[], &args.bimodal)?;
        return report(&runs, &prepared, &args.bimodal, &files);
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
    )?;
    if !args.bimodal.json {
        interrupt::print_if_cut(loads.len(), planned);
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
) -> Result<(), String> {
    if args.json {
        let out = BimodalSweep {
            setup: Setup::new(prepared, args),
            slo_us,
            sweep: loads
                .iter()
                .map(|&load| AtLoad {
                    load,
                    runs: runs
                        .iter()
                        .filter(|r| r.load == load)
                        .map(BimodalRun::new)
                        .collect(),
                })
                .collect(),
            slo: policies
                .iter()
                .map(|&p| {
                    let point = slo_point(runs, p, slo_us);
                    let at = SloPoint {
                        load: point.map(|r| r.load),
                        short_per_sec: point.map_or(0.0, short_per_sec),
                    };
                    (p.to_owned(), at)
                })
                .collect(),
        };
        return print_json(&out, files);
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
    Ok(())
}

/// What `compare bimodal --sweep --json` prints: the runs at each load, and per policy the point
/// of Aspen's metric.
#[derive(Debug, Serialize)]
struct BimodalSweep {
    #[serde(flatten)]
    setup: Setup,
    slo_us: f64,
    sweep: Vec<AtLoad>,
    slo: BTreeMap<String, SloPoint>,
}

#[derive(Debug, Serialize)]
struct AtLoad {
    load: f64,
    runs: Vec<BimodalRun>,
}

/// The highest load within the SLO (`null`: none), and the short requests served there.
#[derive(Debug, Serialize)]
struct SloPoint {
    load: Option<f64>,
    short_per_sec: f64,
}
