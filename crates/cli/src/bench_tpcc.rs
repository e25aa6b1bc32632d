//! `overtake bench tpcc`: load, run the TPC-C mix closed-loop on scheduler workers, report. With
//! `--interrupt-interval-us`, the dispatcher also interrupts every worker at that interval without
//! giving it work, which measures the preemption mechanism's own cost against the same run
//! without interrupts.

use std::time::Duration;

use overtake_sched::ClassStats;
use overtake_workload::ack::AckLog;
use overtake_workload::drivers::closed_loop::{ClosedLoopConfig, run_closed_loop};
use overtake_workload::drivers::open_loop::RunReport;
use overtake_workload::tpcc::TxnType;
use overtake_workload::tpcc::load::GROWTH_PER_WORKER_SECOND;
use serde_json::json;

use crate::args::TpccArgs;
use crate::output::{
    class_json, consistency_after_run, latency_cells, print_table, rss_mib, run_progress, secs,
    ticker,
};

pub fn run(args: &TpccArgs) -> Result<(), String> {
    if let Some(clients) = args.clients {
        return crate::bench_clients::run(args, clients);
    }
    let delivery = args.preempt_mechanism.delivery();
    if args.interrupt_interval_us.is_some() {
        delivery.check().map_err(|e| e.to_string())?;
    }
    let growth = (GROWTH_PER_WORKER_SECOND as f64 * f64::from(args.workers) * args.duration) as u64;
    let prefault = args.prefault_mib.map_or(growth, |mib| mib << 20);
    crate::resources::check(
        args.warehouses,
        usize::from(args.workers),
        growth.max(prefault),
    )?;
    let loaded = crate::kept::tpcc_database(args)?;
    let log_before = loaded.db.log_stats();
    let checkpoints_before = loaded.db.checkpoint_stats();
    // The run's growth then reuses memory already backed (see `prefault_heap`).
    let prefault_time = overtake_runtime::os::memory::prefault_heap(
        usize::try_from(prefault).unwrap_or(usize::MAX),
    );
    let (db, tables) = (&loaded.db, &loaded.tpcc);
    let constants = loaded.run_constants(args.run.seed);
    let ack = match &args.ack_log {
        Some(path) => Some(std::sync::Arc::new(
            AckLog::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
        )),
        None => None,
    };
    let config = ClosedLoopConfig {
        warehouses: args.warehouses,
        workers: usize::from(args.workers),
        duration: Duration::from_secs_f64(args.duration),
        isolation: args.run.isolation.engine(),
        constants,
        seed: args.run.seed,
        interrupt_interval: args.interrupt_interval_us.map(Duration::from_micros),
        delivery,
        signal_delay: Duration::from_micros(args.signal_delay_us),
        pin: true,
        ack,
    };
    let bar = run_progress(args.duration, "running", args.run.json);
    let report = run_closed_loop(std::sync::Arc::clone(db), tables, &config, &ticker(&bar))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let stats_at_end = db.stats();
    let census_at_end = db.census();
    db.collect_garbage();
    let census_after_collect = db.census();
    let rss_after_run = rss_mib();
    let consistency = consistency_after_run(db, tables, args.run.check, args.run.json)?;

    let elapsed = secs(report.elapsed);
    let per_sec = |c: &ClassStats| c.committed as f64 / elapsed;
    let mut total = ClassStats::default();
    for kind in TxnType::ALL {
        total.merge(&report.stats.kinds[kind.index()]);
    }
    let interrupts = interrupts_json(args, &report);
    let log = match (log_before, db.log_stats()) {
        (Some(before), Some(after)) => Some(after.since(&before)),
        _ => None,
    };
    let flush_us = |l: &overtake_engine::LogStats, q: f64| {
        overtake_engine::LogStats::histogram_quantile(&l.flush_histogram, q).as_micros() as u64
    };
    let mode = args
        .kept
        .data_dir
        .as_ref()
        .map_or("in memory", |_| args.kept.durability().engine().name());
    // Checkpoints taken during the run (the one after a load is not counted).
    let checkpoints = match (checkpoints_before, db.checkpoint_stats()) {
        (Some(before), Some(after)) => Some((
            after.taken - before.taken,
            after.failed - before.failed,
            after.last,
            after.last_error,
        )),
        _ => None,
    };
    let checkpoints_json = checkpoints.as_ref().map(|(taken, failed, last, error)| {
        json!({
            "taken": taken,
            "failed": failed,
            "last_seconds": last.as_ref().map(|c| c.elapsed.as_secs_f64()),
            "last_mib": last.as_ref().map(|c| c.bytes as f64 / f64::from(1 << 20)),
            "last_rows": last.as_ref().map(|c| c.rows),
            "last_error": error,
        })
    });
    let log_json = json!({
        "mode": mode,
        "flushes": log.map(|l| l.flushes),
        "bytes": log.map(|l| l.bytes),
        "flushes_per_sec": log.map(|l| l.flushes as f64 / elapsed),
        "transactions_per_flush": log.map(|l| total.committed as f64 / l.flushes.max(1) as f64),
        "flush_mean_us": log.map(|l| l.mean_flush().as_secs_f64() * 1e6),
        "flush_p99_us_under": log.map(|l| flush_us(&l, 0.99)),
        "checkpoints": checkpoints_json,
    });
    if args.run.json {
        let mut by_type = serde_json::Map::new();
        for kind in TxnType::ALL {
            let c = &report.stats.kinds[kind.index()];
            by_type.insert(kind.name().to_owned(), class_json(c, elapsed));
        }
        let mut total_json = class_json(&total, elapsed);
        total_json["per_sec_per_worker"] = json!(per_sec(&total) / f64::from(args.workers));
        let out = json!({
            "benchmark": "tpcc",
            "warehouses": args.warehouses,
            "workers": args.workers,
            "isolation": args.run.isolation.name(),
            "duration_s": elapsed,
            "load": {
                "seconds": secs(loaded.loaded.elapsed),
                "rows": loaded.loaded.rows,
                "rss_mib": loaded.rss_mib,
                "rss_mib_per_warehouse": loaded.rss_mib.map(|r| r / args.warehouses as f64),
                "prefault_mib": prefault >> 20,
                "prefault_seconds": secs(prefault_time),
            },
            "total": total_json,
            "by_type": by_type,
            "interrupts": interrupts,
            "versions": {
                "created": stats_at_end.versions_created,
                "reclaimed": stats_at_end.versions_reclaimed,
                "linked_at_end": census_at_end.linked_versions,
                "unreclaimed_at_end": census_at_end.unreclaimed_versions,
                "unreclaimed_deletes_at_end": census_at_end.unreclaimed_deletes,
                "unreclaimed_after_collect": census_after_collect.unreclaimed_versions,
            },
            "rss_mib_after_run": rss_after_run,
            "first_error": total.first_error.as_ref().map(ToString::to_string),
            "consistency": consistency,
            "durability": log_json,
            "recovered": crate::kept::recovered_json(loaded.recovered.as_ref()),
        });
        println!("{out}");
        return Ok(());
    }

    println!(
        "TPC-C: {} warehouse(s), {} worker(s), {}, {:.1} s; durability {mode}",
        args.warehouses,
        args.workers,
        args.run.isolation.name(),
        elapsed
    );
    if let Some(r) = &loaded.recovered {
        println!("{}", crate::kept::recovered_line(r));
    }
    if let Some(l) = log {
        println!(
            "log: {} flushes ({:.0} per s, {:.1} transactions each, {:.0} us on average, 99% \
             under {} us), {:.1} MiB written",
            l.flushes,
            l.flushes as f64 / elapsed,
            total.committed as f64 / l.flushes.max(1) as f64,
            l.mean_flush().as_secs_f64() * 1e6,
            flush_us(&l, 0.99),
            l.bytes as f64 / f64::from(1 << 20)
        );
        if let Some((taken, failed, last, error)) = &checkpoints {
            let last = last.as_ref().map_or(String::new(), |c| {
                format!(
                    " (the last: {} rows, {:.1} MiB in {:.2} s)",
                    c.rows,
                    c.bytes as f64 / f64::from(1 << 20),
                    c.elapsed.as_secs_f64()
                )
            });
            println!("checkpoints: {taken} during the run{last}");
            if *failed > 0 {
                println!(
                    "warning: {failed} checkpoint(s) failed: {}",
                    error.as_deref().unwrap_or("(a later one succeeded)")
                );
            }
        }
        if total.durable_wait.count() > 0 {
            let d = total.durable_wait.summary();
            println!(
                "commit to durable: p50 {:.0} us, p99 {:.0} us, max {:.0} us ({} commits waited)",
                d.p50, d.p99, d.max, d.count
            );
        }
    }
    println!(
        "load: {} rows in {:.2} s; resident memory {}; then {} MiB of heap faulted in ({:.2} s)",
        loaded.loaded.rows,
        secs(loaded.loaded.elapsed),
        loaded.rss_mib.map_or("unknown".into(), |r| format!(
            "{r:.0} MiB ({:.0} MiB per warehouse)",
            r / args.warehouses as f64
        )),
        prefault >> 20,
        secs(prefault_time)
    );
    println!();
    let mut rows = Vec::new();
    let names = TxnType::ALL.iter().map(|k| k.name()).chain(["total"]);
    let stats = TxnType::ALL
        .iter()
        .map(|k| &report.stats.kinds[k.index()])
        .chain([&total]);
    for (name, c) in names.zip(stats) {
        let mut row = vec![
            name.to_owned(),
            format!("{:.0}", per_sec(c)),
            c.committed.to_string(),
            c.conflicts.to_string(),
            c.validation_failures.to_string(),
            c.rolled_back.to_string(),
        ];
        row.extend(latency_cells(&c.latency.summary()));
        rows.push(row);
    }
    print_table(
        &[
            "txn",
            "per s",
            "committed",
            "conflicts",
            "validation",
            "rollbacks",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us",
        ],
        &rows,
    );
    println!();
    println!(
        "throughput per worker: {:.0} committed/s",
        per_sec(&total) / f64::from(args.workers)
    );
    if let Some(us) = args.interrupt_interval_us {
        let p = report.preempt;
        println!(
            "interrupts: every {us} us by {} (signal after {} us): {} requests, {} signals, {} \
             injected, {} served",
            args.preempt_mechanism.delivery().name(),
            args.signal_delay_us,
            report.dispatch.requests,
            p.signals_sent,
            p.injected,
            p.served
        );
    }
    println!(
        "versions: {} created, {} reclaimed during the run; at the end {} linked, {} unreclaimed \
         ({} after a final collection)",
        stats_at_end.versions_created,
        stats_at_end.versions_reclaimed,
        census_at_end.linked_versions,
        census_at_end.unreclaimed_versions,
        census_after_collect.unreclaimed_versions,
    );
    if let Some(rss) = rss_after_run {
        println!("resident memory after the run: {rss:.0} MiB");
    }
    if let Some(e) = &total.first_error {
        println!("errors: {} (first: {e})", total.failed);
    }
    println!("consistency: {consistency}");
    Ok(())
}

fn interrupts_json(args: &TpccArgs, report: &RunReport) -> serde_json::Value {
    let p = report.preempt;
    json!({
        "interval_us": args.interrupt_interval_us,
        "mechanism": args.preempt_mechanism.delivery().name(),
        "signal_delay_us": args.signal_delay_us,
        "requests": report.dispatch.requests,
        "signals_sent": p.signals_sent,
        "injected": p.injected,
        "deferred": p.deferred,
        "served": p.served,
    })
}
