//! `overtake compare holder`: the paused lock holder (see `overtake_workload::holder`) under each
//! lock policy, a few rounds each: how long the urgent transaction waited for the lock, how long
//! it took in all, how many attempts the holder needed, and whether the row shows both commits
//! exactly once.

use std::time::Duration;

use overtake_engine::LockPolicy;
use overtake_workload::compute::ComputeTask;
use overtake_workload::holder::{HolderRound, HolderSetup, run_round, sched_config};
use serde_json::json;

use crate::args::CompareHolderArgs;
use crate::output::{print_table, us};

/// Median and maximum of microsecond figures.
fn median_max(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

pub fn compare(args: &CompareHolderArgs) -> Result<(), String> {
    crate::args::each_once("--policies", &args.policies, String::clone)?;
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
        if crate::interrupt::requested() {
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
    crate::interrupt::check_any(results.len())?;
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    if args.json {
        let runs: Vec<_> = results
            .iter()
            .map(|(policy, rounds)| {
                json!({
                    "lock_policy": policy.name(),
                    "rounds": rounds.iter().map(|r| json!({
                        "urgent_lock_wait_us": micros(r.urgent_lock_wait),
                        "urgent_latency_us": micros(r.urgent_latency),
                        "holder_attempts": r.holder_attempts,
                        "row": r.row,
                        "committed": r.committed,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "hold_ms": args.hold_ms,
                "ask_after_ms": args.ask_after_ms,
                "competitor_ms": args.competitor_ms,
                "runs": runs,
                "interrupted": results.len() < policies.len(),
            })
        );
        return Ok(());
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
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(policy, rounds)| {
            let (wait50, wait_max) =
                median_max(rounds.iter().map(|r| micros(r.urgent_lock_wait)).collect());
            let (lat50, lat_max) =
                median_max(rounds.iter().map(|r| micros(r.urgent_latency)).collect());
            let attempts: u32 = rounds.iter().map(|r| r.holder_attempts).sum();
            let intact = rounds.iter().filter(|r| r.committed && r.row == 11).count();
            vec![
                policy.name().to_owned(),
                us(wait50),
                us(wait_max),
                us(lat50),
                us(lat_max),
                format!("{:.1}", f64::from(attempts) / rounds.len() as f64),
                format!("{intact}/{}", rounds.len()),
            ]
        })
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
    crate::interrupt::print_if_cut(results.len(), policies.len());
    Ok(())
}
