//! `overtake bench tpcc`: load, run the TPC-C mix closed-loop, report.

use std::time::Duration;

use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::driver::{ClosedLoopConfig, TypeReport, run_closed_loop};
use overtake_workload::tpcc::{TxnType, consistency};
use serde_json::json;

use crate::args::TpccArgs;
use crate::output::{
    latency_cells, latency_json, load_database, print_table, progress, rss_mib, secs,
};

pub fn run(args: &TpccArgs) -> Result<(), String> {
    let loaded = load_database(args.warehouses, args.seed, false, args.json)?;
    let (db, tables) = (&loaded.db, &loaded.tpcc);
    let constants = NuRandConstants::for_run(
        &loaded.loaded.constants,
        &mut TpccRng::new(args.seed ^ 0xC0FFEE),
    );
    let config = ClosedLoopConfig {
        warehouses: args.warehouses,
        workers: usize::from(args.workers),
        duration: Duration::from_secs_f64(args.duration),
        isolation: args.isolation.engine(),
        constants,
        seed: args.seed,
    };
    let bar = progress((args.duration * 10.0) as u64, "running", args.json);
    let report = run_closed_loop(db, tables, &config, &|elapsed| {
        bar.set_position((elapsed.as_secs_f64() * 10.0) as u64);
    });
    bar.finish_and_clear();
    let stats_at_end = db.stats();
    let census_at_end = db.census();
    db.collect_garbage();
    let census_after_collect = db.census();
    let rss_after_run = rss_mib();
    let consistency = if args.check {
        let bar = progress(1, "checking", args.json);
        let report =
            consistency::check(db, tables, false).map_err(|e| format!("consistency check: {e}"))?;
        bar.finish_and_clear();
        report.summary()
    } else {
        "not checked".to_owned()
    };

    let elapsed = secs(report.elapsed);
    let per_sec = |r: &TypeReport| r.committed as f64 / elapsed;
    let total = report.total();
    if args.json {
        let mut by_type = serde_json::Map::new();
        for kind in TxnType::ALL {
            let r = &report.by_type[kind.index()];
            by_type.insert(
                kind.name().to_owned(),
                json!({
                    "per_sec": per_sec(r),
                    "committed": r.committed,
                    "aborted": r.aborted(),
                    "conflicts": r.conflicts,
                    "validation_failures": r.validation_failures,
                    "user_rollbacks": r.user_rollbacks,
                    "errors": r.errors,
                    "latency_us": latency_json(&r.latency.summary()),
                }),
            );
        }
        let out = json!({
            "benchmark": "tpcc",
            "warehouses": args.warehouses,
            "workers": args.workers,
            "isolation": args.isolation.name(),
            "duration_s": elapsed,
            "load": {
                "seconds": secs(loaded.loaded.elapsed),
                "rows": loaded.loaded.rows,
                "rss_mib": loaded.rss_mib,
                "rss_mib_per_warehouse": loaded.rss_mib.map(|r| r / args.warehouses as f64),
            },
            "total": {
                "per_sec": per_sec(&total),
                "per_sec_per_worker": per_sec(&total) / f64::from(args.workers),
                "committed": total.committed,
                "aborted": total.aborted(),
                "conflicts": total.conflicts,
                "validation_failures": total.validation_failures,
                "user_rollbacks": total.user_rollbacks,
                "errors": total.errors,
                "latency_us": latency_json(&total.latency.summary()),
            },
            "by_type": by_type,
            "versions": {
                "created": stats_at_end.versions_created,
                "reclaimed": stats_at_end.versions_reclaimed,
                "linked_at_end": census_at_end.linked_versions,
                "unreclaimed_at_end": census_at_end.unreclaimed_versions,
                "unreclaimed_deletes_at_end": census_at_end.unreclaimed_deletes,
                "unreclaimed_after_collect": census_after_collect.unreclaimed_versions,
            },
            "rss_mib_after_run": rss_after_run,
            "first_error": report.first_error.as_ref().map(ToString::to_string),
            "consistency": consistency,
        });
        println!("{out}");
        return Ok(());
    }

    println!(
        "TPC-C: {} warehouse(s), {} worker(s), {}, {:.1} s",
        args.warehouses,
        args.workers,
        args.isolation.name(),
        elapsed
    );
    println!(
        "load: {} rows in {:.2} s; resident memory {}",
        loaded.loaded.rows,
        secs(loaded.loaded.elapsed),
        loaded.rss_mib.map_or("unknown".into(), |r| format!(
            "{r:.0} MiB ({:.0} MiB per warehouse)",
            r / args.warehouses as f64
        ))
    );
    println!();
    let mut rows = Vec::new();
    for kind in TxnType::ALL
        .iter()
        .map(|k| (k.name(), &report.by_type[k.index()]))
        .chain([("total", &total)])
    {
        let (name, r) = kind;
        let mut row = vec![
            name.to_owned(),
            format!("{:.0}", per_sec(r)),
            r.committed.to_string(),
            r.conflicts.to_string(),
            r.validation_failures.to_string(),
            r.user_rollbacks.to_string(),
        ];
        row.extend(latency_cells(&r.latency.summary()));
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
    if let Some(e) = &report.first_error {
        println!("errors: {} (first: {e})", total.errors);
    }
    println!("consistency: {consistency}");
    Ok(())
}
