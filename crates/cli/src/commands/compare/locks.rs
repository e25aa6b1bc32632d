//! `overtake compare locks`: TPC-C under two-phase locking (the experiment of `bench locks`),
//! every lock policy at every think time on one loaded database, with urgent speedups and
//! background penalties against `standard`, plus McWherter's question: CPU priority only, lock
//! priority only, both, neither, and the MVCC mode.

use clap::Args;
use overtake_engine::{Concurrency, LockPolicy};
use serde::Serialize;

use crate::commands::bench::locks::{
    LocksArgs, LocksRun, RunResult, RunSpec, load, parse_policy, run_one, write_figures,
};
use crate::commands::flags::{PolicyArg, each_once, lock_policy_name};
use crate::harness::interrupt;
use crate::report::figures::print_files;
use crate::report::{print_json, print_table, us};

#[derive(Debug, Args)]
pub struct CompareLocksArgs {
    #[command(flatten)]
    pub locks: LocksArgs,
    /// Lock policies to compare (standard is always run: it is the baseline).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "standard,nprio,nprio-inherit,pabort,pow,cr,wdl1,cats",
        value_parser = lock_policy_name
    )]
    pub policies: Vec<String>,
    /// Mean think times to sweep, in microseconds, from light load to saturation.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,3000,1000,300,0",
        value_parser = clap::value_parser!(u64).range(0..=10_000_000)
    )]
    pub think_us: Vec<u64>,
    /// Skip the runs that separate CPU priority from lock priority (and the MVCC reference).
    #[arg(long)]
    pub no_mechanisms: bool,
}

pub fn compare(args: &CompareLocksArgs) -> Result<(), String> {
    let common = &args.locks;
    each_once("--policies", &args.policies, String::clone)?;
    each_once("--think-us", &args.think_us, u64::to_string)?;
    common.figures.prepare()?;
    let (mut loaded, constants) = load(common)?;
    let mut sweep = Vec::new();
    // Ctrl-C ends the sweep at a think time's end: every think time shown has all its runs.
    for &think_us in &args.think_us {
        if interrupt::requested() {
            break;
        }
        let mut results = Vec::new();
        for spec in specs(args, think_us)? {
            results.push(run_one(&mut loaded, constants, common, &spec, false)?);
        }
        if !common.json {
            print_think_time(args, think_us, &results);
        }
        sweep.push((think_us, results));
    }
    interrupt::check_any(sweep.len())?;
    let files = write_figures(common, &[], &sweep)?;
    if common.json {
        let out = LocksSweep {
            clients: common.clients,
            hp_share: common.hp_share,
            workers: common.workers,
            warehouses: common.warehouses,
            cpu: common.cpu.policy().name(),
            interrupted: sweep.len() < args.think_us.len(),
            sweep: sweep
                .iter()
                .map(|(think_us, results)| {
                    let base = &results[0];
                    ThinkTime {
                        think_us: *think_us,
                        runs: results
                            .iter()
                            .map(|r| LocksRun {
                                urgent_speedup: Some(speedup(base, r)),
                                background_penalty: Some(penalty(base, r)),
                                ..LocksRun::new(r)
                            })
                            .collect(),
                    }
                })
                .collect(),
        };
        print_json(&out, &files)?;
    } else {
        interrupt::print_if_cut(sweep.len(), args.think_us.len());
        print_files(&files);
    }
    Ok(())
}

/// What `compare locks --json` prints: the runs of each think time, with the urgent speedup and
/// the background penalty against `standard` at that think time.
#[derive(Debug, Serialize)]
struct LocksSweep {
    clients: u32,
    hp_share: f64,
    workers: u16,
    warehouses: i64,
    cpu: &'static str,
    sweep: Vec<ThinkTime>,
    interrupted: bool,
}

#[derive(Debug, Serialize)]
struct ThinkTime {
    think_us: u64,
    runs: Vec<LocksRun>,
}

/// The runs of one think time: the lock policies (standard first), then the mechanisms.
fn specs(args: &CompareLocksArgs, think_us: u64) -> Result<Vec<RunSpec>, String> {
    let common = &args.locks;
    let mut names: Vec<&str> = vec!["standard"];
    names.extend(
        args.policies
            .iter()
            .map(String::as_str)
            .filter(|&n| n != "standard"),
    );
    let mut out = Vec::new();
    for name in names {
        out.push(RunSpec {
            label: name.to_owned(),
            concurrency: Concurrency::TwoPhaseLocking(parse_policy(name, common)?),
            cpu: common.cpu,
            think_us,
        });
    }
    if !args.no_mechanisms {
        let two_pl = |p| Concurrency::TwoPhaseLocking(p);
        for (label, concurrency, cpu) in [
            ("neither", two_pl(LockPolicy::Standard), PolicyArg::Wait),
            ("cpu only", two_pl(LockPolicy::Standard), PolicyArg::Preempt),
            (
                "lock only",
                two_pl(LockPolicy::NPrioInherit),
                PolicyArg::Wait,
            ),
            (
                "cpu+lock",
                two_pl(LockPolicy::NPrioInherit),
                PolicyArg::Preempt,
            ),
            ("mvcc", Concurrency::Mvcc, PolicyArg::Preempt),
        ] {
            out.push(RunSpec {
                label: label.to_owned(),
                concurrency,
                cpu,
                think_us,
            });
        }
    }
    Ok(out)
}

/// Urgent mean response time under `standard` over under `r` (above 1: `r` serves them faster).
fn speedup(base: &RunResult, r: &RunResult) -> f64 {
    base.high.latency.summary().mean / r.high.latency.summary().mean
}

/// Background mean response time under `r` over under `standard` (above 1: `r` slows them).
fn penalty(base: &RunResult, r: &RunResult) -> f64 {
    r.low.latency.summary().mean / base.low.latency.summary().mean
}

fn print_think_time(args: &CompareLocksArgs, think_us: u64, results: &[RunResult]) {
    let common = &args.locks;
    println!(
        "\nthink {think_us} us: {} clients, {:.0}% urgent, {} worker(s), {} warehouse(s), {:.1} s \
         per run; lock policies under CPU policy {}",
        common.clients,
        common.hp_share * 100.0,
        common.workers,
        common.warehouses,
        common.duration,
        common.cpu.policy().name()
    );
    let base = &results[0];
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let (h, l) = (r.high.latency.summary(), r.low.latency.summary());
            let mut both = r.high.clone();
            both.merge(&r.low);
            vec![
                r.spec.label.clone(),
                format!("{:.1}", r.active_clients()),
                us(h.mean),
                us(h.p99),
                format!("{:.2}", speedup(base, r)),
                us(l.mean),
                us(l.p99),
                format!("{:.2}", penalty(base, r)),
                format!("{:.0}", both.committed as f64 / r.elapsed),
                both.lock_aborts.to_string(),
                both.deadlocks.to_string(),
                format!("{:.2}", both.lock_waits_per_attempt()),
                us(r.high.breakdown().waiting),
                match r.consistent {
                    Some(true) => "ok".to_owned(),
                    Some(false) => "FAILED".to_owned(),
                    None => "-".to_owned(),
                },
            ]
        })
        .collect();
    print_table(
        &[
            "config",
            "active",
            "HP mean us",
            "HP p99 us",
            "HP speedup",
            "LP mean us",
            "LP p99 us",
            "LP penalty",
            "per s",
            "aborts",
            "deadlocks",
            "waits/txn",
            "HP lock wait",
            "consistent",
        ],
        &rows,
    );
    let b = &base.high;
    let lock_share = b.breakdown().waiting / b.latency.summary().mean.max(f64::MIN_POSITIVE);
    if lock_share < 0.1 {
        println!(
            "note: under standard, urgent transactions spent {:.0}% of their response time \
             waiting for locks: this load is not lock-bound, so lock policies have little to \
             change (fewer --warehouses make the warehouse rows hot locks)",
            lock_share * 100.0
        );
    }
    println!(
        "speedup: standard's urgent mean response over this row's; penalty: this row's background \
         mean over standard's; active: clients with a transaction in flight (Little's law); \
         aborts: preemptive and wait-depth aborts; HP lock wait: mean us an urgent transaction \
         spent parked. Rows after the policies: neither = standard locks + wait, cpu only = \
         standard + preempt, lock only = nprio-inherit + wait, cpu+lock = nprio-inherit + \
         preempt, mvcc = no locks + preempt."
    );
}
