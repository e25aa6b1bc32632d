//! `overtake bench tpcc --clients N`: closed-loop TPC-C clients with think time and a share of
//! urgent transactions, submitting through the scheduler's public API; reports each class's
//! latency (submission to end) and where its time went.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use overtake_engine::Priority;
use overtake_sched::SchedConfig;
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};
use serde::Serialize;

use super::{TpccArgs, tpcc_database};
use crate::harness::database::consistency_after_run;
use crate::report::progress::{run_progress, ticker};
use crate::report::{ClassReport, print_json, print_table, us};

pub fn run(args: &TpccArgs, clients: u32) -> Result<(), String> {
    let loaded = tpcc_database(args)?;
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
    let out = ClientsReport {
        benchmark: "tpcc",
        clients,
        think_us: args.think_us,
        hp_share: args.hp_share,
        policy: config.sched.policy.name(),
        workers: args.workers,
        warehouses: args.warehouses,
        duration_s: elapsed,
        classes: CLASSES
            .iter()
            .map(|&p| {
                (
                    p.as_str(),
                    ClassReport::new(report.scheduler.stats.class(p), elapsed),
                )
            })
            .collect(),
        overloaded: report.overloaded,
        consistency,
        preempt: Preempt {
            signals_sent: report.scheduler.preempt.signals_sent,
            served: report.scheduler.preempt.served,
        },
    };
    if args.run.json {
        print_json(&out, &[])
    } else {
        out.print();
        Ok(())
    }
}

/// The classes of a run, most urgent first.
const CLASSES: [Priority; 2] = [Priority::HIGH, Priority::LOW];

/// One `bench tpcc --clients` run.
#[derive(Debug, Serialize)]
struct ClientsReport {
    benchmark: &'static str,
    clients: u32,
    think_us: u64,
    hp_share: f64,
    policy: &'static str,
    workers: u16,
    warehouses: i64,
    duration_s: f64,
    classes: BTreeMap<&'static str, ClassReport>,
    /// Submissions that found every inbox full and were retried.
    overloaded: u64,
    consistency: String,
    preempt: Preempt,
}

#[derive(Debug, Serialize)]
struct Preempt {
    signals_sent: u64,
    served: u64,
}

impl ClientsReport {
    fn print(&self) {
        println!(
            "TPC-C, {} closed-loop clients (think {} us mean, {:.0}% urgent), {} worker(s), {} \
             warehouse(s), policy {}, {:.1} s",
            self.clients,
            self.think_us,
            self.hp_share * 100.0,
            self.workers,
            self.warehouses,
            self.policy,
            self.duration_s
        );
        let rows: Vec<Vec<String>> = CLASSES
            .iter()
            .map(|&p| {
                let c = &self.classes[p.as_str()];
                let b = c.breakdown_us;
                let mut row = vec![
                    p.as_str().to_owned(),
                    format!("{:.0}", c.per_sec),
                    c.preemptions.to_string(),
                ];
                row.extend(c.latency_us.cells());
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
            self.overloaded
        );
        for p in CLASSES {
            if let Some(d) = &self.classes[p.as_str()].durable_wait_us {
                println!(
                    "{p}: commit to durable p50 {:.0} us, p99 {:.0} us, max {:.0} us",
                    d.p50, d.p99, d.max
                );
            }
        }
        println!("consistency: {}", self.consistency);
    }
}
