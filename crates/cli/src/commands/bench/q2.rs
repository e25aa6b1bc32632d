//! `overtake bench q2`: time CH-benCHmark Query 2 alone.

use std::time::Instant;

use overtake_engine::{Isolation, Priority};
use overtake_sched::LatencyHistogram;
use overtake_workload::ch::q2::query2;
use serde::Serialize;

use crate::harness::database::load_database;
use crate::report::progress::progress;
use crate::report::{print_json, secs};
use clap::Args;

#[derive(Debug, Args)]
pub struct Q2Args {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Number of times to run the query.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub runs: u32,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(args: &Q2Args) -> Result<(), String> {
    crate::harness::resources::check(args.warehouses, 1, 0)?;
    let loaded = load_database(args.warehouses, args.seed, true, args.json)?;
    let Some(ch) = loaded.ch.as_ref() else {
        return Err("the CH-benCHmark tables were not loaded".into());
    };
    let db = &loaded.db;
    let mut times = LatencyHistogram::new();
    let mut rows = 0;
    let bar = progress(u64::from(args.runs), "q2", args.json);
    for _ in 0..args.runs {
        let start = Instant::now();
        let mut txn = db
            .begin(Priority::LOW, Isolation::Snapshot)
            .map_err(|e| e.to_string())?;
        let result = query2(&mut txn, &loaded.tpcc, ch).map_err(|e| format!("query 2: {e}"))?;
        txn.commit().map_err(|e| e.to_string())?;
        times.record(start.elapsed());
        rows = result.len();
        bar.inc(1);
    }
    bar.finish_and_clear();
    let s = times.summary();
    let ms = |us: f64| us / 1000.0;
    let out = Q2Report {
        benchmark: "q2",
        warehouses: args.warehouses,
        runs: args.runs,
        rows,
        load_seconds: secs(loaded.loaded.elapsed),
        ms: Runtime {
            mean: ms(s.mean),
            p50: ms(s.p50),
            p90: ms(s.p90),
            p99: ms(s.p99),
            max: ms(s.max),
        },
    };
    if args.json {
        print_json(&out, &[])?;
    } else {
        println!(
            "CH-benCHmark Query 2: {} warehouse(s), {} runs, {} result rows",
            out.warehouses, out.runs, out.rows
        );
        let t = &out.ms;
        println!(
            "runtime ms: mean {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            t.mean, t.p50, t.p90, t.p99, t.max
        );
    }
    Ok(())
}

/// What `bench q2` reports.
#[derive(Debug, Serialize)]
struct Q2Report {
    benchmark: &'static str,
    warehouses: i64,
    runs: u32,
    /// Rows of the query's result.
    rows: usize,
    load_seconds: f64,
    /// The query's runtime, milliseconds.
    ms: Runtime,
}

#[derive(Debug, Serialize)]
struct Runtime {
    mean: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}
