//! `overtake compare holder`: the paused lock holder (see `overtake_workload::holder`) under each
//! lock policy, a few rounds each: how long the urgent transaction waited for the lock, how long
//! it took in all, how many attempts the holder needed, and whether the row shows both commits
//! exactly once.

use std::time::Duration;

use clap::Args;
use overtake_engine::LockPolicy;
use overtake_workload::compute::ComputeTask;
use overtake_workload::holder::{HolderRound, HolderSetup, run_round, sched_config};
use serde::Serialize;

use crate::commands::flags::{MechanismArg, each_once, lock_policy_name};
use crate::harness::interrupt;
use crate::report::{print_json, print_table, us};

#[derive(Debug, Args)]
pub struct CompareHolderArgs {
    /// Lock policies to compare.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "standard,nprio-inherit,pabort,pow,cr",
        value_parser = lock_policy_name
    )]
    pub policies: Vec<String>,
    /// Rounds per policy (each on a fresh table).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rounds: u32,
    /// How long the holder computes while it holds the lock, in milliseconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub hold_ms: u64,
    /// When the urgent transaction arrives, in milliseconds after the holder took the lock.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub ask_after_ms: u64,
    /// Reprieve of the `cr` policy, in microseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub reprieve_us: u64,
    /// A time-sensitive computation of this many milliseconds arrives on the holder's worker
    /// once it has the lock (0: none): UFS's lock-holder experiment, where only a lift into the
    /// waiter's level (`nprio-inherit`) lets the background holder finish before it.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub competitor_ms: u64,
    /// How preemption requests reach the worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Median and maximum of microsecond figures.
fn median_max(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

pub fn compare(args: &CompareHolderArgs) -> Result<(), String> {
    each_once("--policies", &args.policies, String::clone)?;
    let reprieve = Duration::from_micros(args.reprieve_us);
    let policies: Vec<LockPolicy> = args
        .policies
        .iter()
        .map(|name| {
            LockPolicy::parse(name, reprieve).ok_or_else(|| format!("unknown lock policy {name}"))
        })
        .collect::<Result<_, _>>()?;
    let mut sched = sched_config();
    sched.delivery = args.preempt_mechanism.delivery();
    sched.validate().map_err(|e| e.to_string())?;
    let hold = ComputeTask::calibrate(Duration::from_millis(args.hold_ms));
    let competitor = (args.competitor_ms > 0)
        .then(|| ComputeTask::calibrate(Duration::from_millis(args.competitor_ms)));
    let mut results: Vec<(LockPolicy, Vec<HolderRound>)> = Vec::new();
    for &policy in &policies {
        if interrupt::requested() {
            break;
        }
        let setup = HolderSetup {
            policy,
            hold: hold.clone(),
            ask_after: Duration::from_millis(args.ask_after_ms),
            sched: sched.clone(),
            competitor: competitor.clone(),
        };
        let rounds = (0..args.rounds)
            .map(|_| run_round(&setup).map_err(|e| format!("{}: {e}", policy.name())))
            .collect::<Result<Vec<_>, _>>()?;
        results.push((policy, rounds));
    }
    interrupt::check_any(results.len())?;
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let report = HolderReport {
        hold_ms: args.hold_ms,
        ask_after_ms: args.ask_after_ms,
        competitor_ms: args.competitor_ms,
        interrupted: results.len() < policies.len(),
        runs: results
            .iter()
            .map(|(policy, rounds)| PolicyRounds {
                lock_policy: policy.name(),
                rounds: rounds
                    .iter()
                    .map(|r| Round {
                        urgent_lock_wait_us: micros(r.urgent_lock_wait),
                        urgent_latency_us: micros(r.urgent_latency),
                        holder_attempts: r.holder_attempts,
                        row: r.row,
                        committed: r.committed,
                    })
                    .collect(),
            })
            .collect(),
    };
    if args.json {
        return print_json(&report, &[]);
    }
    println!(
        "paused lock holder: one worker; the holder locks a row and computes {} ms, an urgent \
         transaction asks for the row {} ms later; {} rounds per policy (microseconds)",
        args.hold_ms, args.ask_after_ms, args.rounds
    );
    if args.competitor_ms > 0 {
        println!(
            "a time-sensitive computation of {} ms arrives on the worker once the holder has the \
             lock",
            args.competitor_ms
        );
    }
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(
            |PolicyRounds {
                 lock_policy,
                 rounds,
             }| {
                let (wait50, wait_max) =
                    median_max(rounds.iter().map(|r| r.urgent_lock_wait_us).collect());
                let (lat50, lat_max) =
                    median_max(rounds.iter().map(|r| r.urgent_latency_us).collect());
                let attempts: u32 = rounds.iter().map(|r| r.holder_attempts).sum();
                let intact = rounds.iter().filter(|r| r.committed && r.row == 11).count();
                vec![
                    (*lock_policy).to_owned(),
                    us(wait50),
                    us(wait_max),
                    us(lat50),
                    us(lat_max),
                    format!("{:.1}", f64::from(attempts) / rounds.len() as f64),
                    format!("{intact}/{}", rounds.len()),
                ]
            },
        )
        .collect();
    print_table(
        &[
            "policy",
            "lock wait p50",
            "lock wait max",
            "urgent p50",
            "urgent max",
            "holder attempts",
            "rows ok",
        ],
        &rows,
    );
    interrupt::print_if_cut(results.len(), policies.len());
    Ok(())
}

/// What `compare holder --json` prints: every round of every policy.
#[derive(Debug, Serialize)]
struct HolderReport {
    hold_ms: u64,
    ask_after_ms: u64,
    competitor_ms: u64,
    runs: Vec<PolicyRounds>,
    interrupted: bool,
}

#[derive(Debug, Serialize)]
struct PolicyRounds {
    lock_policy: &'static str,
    rounds: Vec<Round>,
}

/// One round: how long the urgent transaction waited for the lock and took in all, how many
/// attempts the holder needed, and the row's value and whether both committed.
#[derive(Debug, Serialize)]
struct Round {
    urgent_lock_wait_us: f64,
    urgent_latency_us: f64,
    holder_attempts: u32,
    row: i64,
    committed: bool,
}
