//! `overtake bench tpcc --clients N`: closed-loop TPC-C clients with think time and a share of
//! urgent transactions, submitting through the scheduler's public API; reports each class's
//! latency (submission to end) and where its time went.

use std::sync::Arc;
use std::time::Duration;

use overtake_engine::Priority;
use overtake_sched::SchedConfig;
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};
use serde_json::json;

use crate::args::TpccArgs;
use crate::output::{
    class_json, consistency_after_run, latency_cells, print_table, run_progress, ticker, us,
};

pub fn run(args: &TpccArgs, clients: u32) -> Result<(), String> {
    let loaded = crate::kept::tpcc_database(args)?;
    let constants = loaded.run_constants(args.run.seed);
    let sched = SchedConfig::default()
        .policy(args.policy.policy())
        .workers(usize::from(args.workers))
        .inboxes(clients as usize, clients as usize)
        .delivery(args.preempt_mechanism.delivery())
        .signal_delay(Duration::from_micros(args.signal_delay_us));
    let config = ClientsConfig {
        think: Duration::from_micros(args.think_us),
        hp_share: args.hp_share,
        warehouses: args.warehouses,
        sched,
        isolation: args.run.isolation.engine(),
        seed: args.run.seed,
        session_threads: args.session_threads.map(|s| s.scheduling()).transpose()?,
        ..ClientsConfig::new(clients as usize, SchedConfig::default(), constants)
    };
    let bar = run_progress(args.duration, "running", args.run.json);
    let report = run_clients(
        Arc::clone(&loaded.db),
        &loaded.tpcc,
        &config,
        Duration::from_secs_f64(args.duration),
        &ticker(&bar),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let consistency =
        consistency_after_run(&loaded.db, &loaded.tpcc, args.run.check, args.run.json)?;
    let elapsed = report.elapsed.as_secs_f64();
    let classes = [Priority::HIGH, Priority::LOW];
    if args.run.json {
        let by_class: serde_json::Map<_, _> = classes
            .iter()
            .map(|&p| {
                (
                    p.as_str().to_owned(),
                    class_json(report.scheduler.stats.class(p), elapsed),
                )
            })
            .collect();
        println!(
            "{}",
            json!({
                "benchmark": "tpcc",
                "clients": clients,
                "think_us": args.think_us,
                "hp_share": args.hp_share,
                "policy": config.sched.policy.name(),
                "workers": args.workers,
                "warehouses": args.warehouses,
                "duration_s": elapsed,
                "classes": by_class,
                "overloaded": report.overloaded,
                "consistency": consistency,
                "preempt": {
                    "signals_sent": report.scheduler.preempt.signals_sent,
                    "served": report.scheduler.preempt.served,
                },
            })
        );
        return Ok(());
    }
    println!(
        "TPC-C, {clients} closed-loop clients (think {} us mean, {:.0}% urgent), {} worker(s), {} \
         warehouse(s), policy {}, {:.1} s",
        args.think_us,
        args.hp_share * 100.0,
        args.workers,
        args.warehouses,
        config.sched.policy.name(),
        elapsed
    );
    let rows: Vec<Vec<String>> = classes
        .iter()
        .map(|&p| {
            let c = report.scheduler.stats.class(p);
            let b = c.breakdown();
            let mut row = vec![
                p.as_str().to_owned(),
                format!("{:.0}", c.committed as f64 / elapsed),
                c.preemptions.to_string(),
            ];
            row.extend(latency_cells(&c.latency.summary()));
            row.extend([us(b.queued), us(b.running), us(b.preempted), us(b.waiting)]);
            row
        })
        .collect();
    print_table(
        &[
            "class",
            "per s",
            "preempted",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us",
            "queued",
            "running",
            "paused",
            "waiting",
        ],
        &rows,
    );
    println!(
        "latency: submission to end; queued/running/paused/waiting: mean microseconds per \
         transaction; {} submissions found every inbox full and were retried",
        report.overloaded
    );
    for &p in &classes {
        let d = report.scheduler.stats.class(p).durable_wait.summary();
        if d.count > 0 {
            println!(
                "{p}: commit to durable p50 {:.0} us, p99 {:.0} us, max {:.0} us",
                d.p50, d.p99, d.max
            );
        }
    }
    println!("consistency: {consistency}");
    Ok(())
}
