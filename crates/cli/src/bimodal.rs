//! `bench bimodal` and `compare bimodal`: Aspen's bimodal workload (requests without priorities,
//! 99.5% short, 0.5% long, Poisson arrivals at a share of measured capacity) under run-to-
//! completion and under the quantum policy and its ablations.

use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_sched::{Arrivals, LocalFeed, Policy, RunReport, SchedConfig};
use overtake_workload::bimodal::{Bimodal, KINDS, PoissonArrivals, Request};
use overtake_workload::rng::TpccRng;
use serde_json::{Value, json};

use crate::args::{BenchBimodalArgs, BimodalArgs, BimodalPolicyArg, CompareBimodalArgs};
use crate::output::{class_json, print_table, progress, run_progress, ticker, us};

/// The workload, loaded and measured once for every run.
struct Prepared {
    workload: Arc<Bimodal>,
    short: Duration,
    long: Duration,
    /// Requests per second the workers served closed-loop.
    capacity: f64,
    /// Offered arrivals per second.
    rate: f64,
}

/// No arrivals: the capacity probe's work comes from the workers' own closed loops.
struct NoArrivals;

impl Arrivals<Request> for NoArrivals {
    fn high(&mut self, _: Instant, _: &mut Vec<(Request, Instant)>) -> Option<Instant> {
        None
    }

    fn low(&mut self) -> Option<Request> {
        None
    }
}

/// How long the capacity probe runs.
const PROBE: Duration = Duration::from_millis(1_500);

fn prepare(args: &BimodalArgs) -> Result<Prepared, String> {
    let bar = progress(1, "loading", args.json);
    let mut workload = Bimodal::load().map_err(|e| format!("loading the bimodal table: {e}"))?;
    workload
        .age(args.seed)
        .map_err(|e| format!("updating the bimodal table: {e}"))?;
    workload.calibrate(Duration::from_micros(args.long_us));
    let mut rng = TpccRng::new(args.seed ^ 0x5eed);
    // Warm the table up, then measure each kind alone.
    workload.service_times(2_000, &mut rng);
    let (short, long) = workload.service_times(5_000, &mut rng);
    bar.finish_and_clear();
    let workload = Arc::new(workload);
    // Capacity: the mix run closed-loop (each worker always busy) on the same scheduler, so that
    // its per-request cost is included.
    let feeds = (0..args.workers)
        .map(|w| {
            let workload = Arc::clone(&workload);
            let mut rng = TpccRng::new(args.seed.wrapping_add(u64::from(w) + 1));
            Some(Box::new(move || Some(workload.next_request(&mut rng))) as LocalFeed<Request>)
        })
        .collect();
    let probe = SchedConfig {
        duration: PROBE,
        ..sched_config(BimodalPolicyArg::Wait, args)
    };
    let bar = run_progress(PROBE.as_secs_f64(), "capacity", args.json);
    let measured = overtake_sched::run(
        &probe,
        Arc::clone(&workload),
        &mut NoArrivals,
        feeds,
        &ticker(&bar),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let served: u64 = measured.stats.kinds.iter().map(|k| k.committed).sum();
    let capacity = served as f64 / measured.elapsed.as_secs_f64();
    if capacity <= 0.0 {
        return Err("the capacity probe committed no request".into());
    }
    Ok(Prepared {
        workload,
        short,
        long,
        capacity,
        rate: capacity * args.load,
    })
}

fn sched_config(policy: BimodalPolicyArg, args: &BimodalArgs) -> SchedConfig {
    let (policy, two_queues, skip_needless) = policy.settings();
    SchedConfig {
        policy,
        workers: usize::from(args.workers),
        hp_queue: args.queue as usize,
        lp_queue: 1,
        quantum: Duration::from_micros(args.quantum_us),
        two_queues,
        skip_needless,
        delivery: args.preempt_mechanism.delivery(),
        signal_delay: Duration::from_micros(args.signal_delay_us),
        duration: Duration::from_secs_f64(args.duration),
        ..SchedConfig::default()
    }
}

/// One run of `config` on the prepared workload.
fn run_one(
    name: &str,
    config: &SchedConfig,
    prepared: &Prepared,
    args: &BimodalArgs,
) -> Result<RunReport, String> {
    config.validate().map_err(|e| e.to_string())?;
    let mut arrivals =
        PoissonArrivals::new(Arc::clone(&prepared.workload), prepared.rate, args.seed);
    let bar = run_progress(args.duration, name, args.json);
    let report = overtake_sched::run(
        config,
        Arc::clone(&prepared.workload),
        &mut arrivals,
        Vec::new(),
        &ticker(&bar),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(report)
}

/// Share of the offered requests a run must serve within its duration to count as keeping up.
const KEPT_UP: f64 = 0.98;

/// Why this run's latencies are mostly queueing, if they are: the dispatcher's warnings, and a
/// run that served under 98% of the offered requests. The capacity is measured closed-loop just
/// before the runs, and this VM's speed moves by a quarter between minutes, so a load of 0.7 can
/// be an overload by the time a policy runs; a policy that then starves its preempted tasks (two
/// queues) shows latencies of seconds, which are the overload, not the policy.
fn warnings(r: &RunReport, prepared: &Prepared) -> Vec<String> {
    let mut out = r.dispatch.warnings();
    let served: u64 = r.stats.kinds.iter().map(|k| k.committed).sum();
    out.extend(shortfall(served, r.elapsed.as_secs_f64(), prepared.rate));
    out
}

/// The warning for a run that served `served` requests in `elapsed_s` seconds of `offered` per
/// second, if that is under [`KEPT_UP`] of them.
fn shortfall(served: u64, elapsed_s: f64, offered: f64) -> Option<String> {
    let served_per_sec = served as f64 / elapsed_s;
    (served_per_sec < KEPT_UP * offered).then(|| {
        format!(
            "the worker could not keep up: it served {served_per_sec:.0} requests/s of the \
             {offered:.0}/s offered ({:.1}%), so the latencies shown are mostly queueing",
            served_per_sec * 100.0 / offered
        )
    })
}

fn run_json(name: &str, r: &RunReport, prepared: &Prepared) -> Value {
    let elapsed = r.elapsed.as_secs_f64();
    json!({
        "policy": name,
        "quantum_us": r.config.quantum.as_secs_f64() * 1e6,
        "two_queues": r.config.two_queues,
        "skip_needless": r.config.skip_needless,
        "classes": {
            "short": class_json(&r.stats.kinds[0], elapsed),
            "long": class_json(&r.stats.kinds[1], elapsed),
        },
        "preemptions": {
            "sent": r.dispatch.quantum_preemptions,
            "skipped": r.dispatch.quantum_skipped,
            "served": r.preempt.served,
            "signals": r.preempt.signals_sent,
        },
        "arrived": r.dispatch.arrived_high,
        "unfinished": r.dispatch.unfinished_high,
        "warnings": warnings(r, prepared),
    })
}

fn print_runs(runs: &[(String, RunReport)], prepared: &Prepared, args: &BimodalArgs) {
    println!(
        "bimodal workload: {} worker(s), {} s each; {:.0} requests/s offered ({:.0}% of the \
         {:.0}/s served closed-loop); short {} us, long {} us ({} rows scanned) when run alone; \
         quantum {} us",
        args.workers,
        args.duration,
        prepared.rate,
        args.load * 100.0,
        prepared.capacity,
        us(prepared.short.as_secs_f64() * 1e6),
        us(prepared.long.as_secs_f64() * 1e6),
        prepared.workload.long_len(),
        args.quantum_us
    );
    let wait = runs.iter().find(|(n, _)| n == "wait").map(|(_, r)| r);
    for (title, kind) in [("short requests (99.5%)", 0), ("long requests (0.5%)", 1)] {
        println!();
        println!("{title}: end-to-end latency in microseconds");
        let rows: Vec<Vec<String>> = runs
            .iter()
            .map(|(name, r)| {
                let c = &r.stats.kinds[kind];
                let l = c.latency.summary();
                let per_s = c.committed as f64 / r.elapsed.as_secs_f64();
                let base = wait.map(|w| &w.stats.kinds[kind]);
                let ratio = |mine: f64, theirs: Option<f64>| {
                    theirs
                        .filter(|t| *t > 0.0)
                        .map_or("-".to_owned(), |t| format!("{:.3}", mine / t))
                };
                vec![
                    name.clone(),
                    format!("{per_s:.0}"),
                    us(l.p50),
                    us(l.p99),
                    us(l.p999),
                    us(l.max),
                    ratio(l.p99, base.map(|b| b.latency.summary().p99)),
                    ratio(
                        per_s,
                        base.zip(wait)
                            .map(|(b, w)| b.committed as f64 / w.elapsed.as_secs_f64()),
                    ),
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
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|(name, r)| {
            KINDS.iter().enumerate().map(move |(kind, kind_name)| {
                let b = r.stats.kinds[kind].breakdown();
                vec![
                    name.clone(),
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
    println!("quantum ends: preemptions asked for, and skipped because nothing else waited");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(name, r)| {
            let (sent, skipped) = (r.dispatch.quantum_preemptions, r.dispatch.quantum_skipped);
            let share = if sent + skipped > 0 {
                format!("{:.1}%", skipped as f64 * 100.0 / (sent + skipped) as f64)
            } else {
                "-".to_owned()
            };
            vec![
                name.clone(),
                sent.to_string(),
                skipped.to_string(),
                share,
                r.preempt.signals_sent.to_string(),
            ]
        })
        .collect();
    print_table(
        &["policy", "sent", "skipped", "skipped share", "signals"],
        &rows,
    );
    for (name, r) in runs {
        for w in warnings(r, prepared) {
            println!("warning ({name}): {w}");
        }
    }
}

fn report(runs: &[(String, RunReport)], prepared: &Prepared, args: &BimodalArgs) {
    if args.json {
        let out = json!({
            "workers": args.workers,
            "duration_s": args.duration,
            "load": args.load,
            "offered_per_sec": prepared.rate,
            "capacity_per_sec": prepared.capacity,
            "short_service_us": prepared.short.as_secs_f64() * 1e6,
            "long_service_us": prepared.long.as_secs_f64() * 1e6,
            "long_rows": prepared.workload.long_len(),
            "runs": runs.iter().map(|(n, r)| run_json(n, r, prepared)).collect::<Vec<_>>(),
        });
        println!("{out}");
    } else {
        print_runs(runs, prepared, args);
    }
}

pub fn bench(args: &BenchBimodalArgs) -> Result<(), String> {
    let prepared = prepare(&args.bimodal)?;
    let mut config = sched_config(args.policy, &args.bimodal);
    if config.policy == Policy::Quantum {
        config.two_queues &= !args.no_two_queues;
        config.skip_needless &= !args.no_skip;
    }
    let name = match (config.policy, config.two_queues, config.skip_needless) {
        (Policy::Quantum, false, false) => "quantum-one-queue-no-skip",
        (Policy::Quantum, false, true) => "quantum-one-queue",
        (Policy::Quantum, true, false) => "quantum-no-skip",
        _ => args.policy.name(),
    };
    let run = run_one(name, &config, &prepared, &args.bimodal)?;
    report(&[(name.to_owned(), run)], &prepared, &args.bimodal);
    Ok(())
}

pub fn compare(args: &CompareBimodalArgs) -> Result<(), String> {
    let prepared = prepare(&args.bimodal)?;
    let mut runs = Vec::new();
    for &policy in &args.policies {
        let config = sched_config(policy, &args.bimodal);
        runs.push((
            policy.name().to_owned(),
            run_one(policy.name(), &config, &prepared, &args.bimodal)?,
        ));
        crate::mixed::settle_between_runs();
    }
    report(&runs, &prepared, &args.bimodal);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_serving_under_98_percent_of_the_offered_load_is_flagged() {
        assert_eq!(shortfall(990_000, 10.0, 100_000.0), None);
        let warning = shortfall(945_000, 10.0, 100_000.0).expect("94.5% served");
        assert!(warning.contains("94500 requests/s of the 100000/s offered (94.5%)"));
    }
}
