//! `overtake bench q2`: time CH-benCHmark Query 2 alone.

use std::time::Instant;

use overtake_engine::{Isolation, Priority};
use overtake_sched::LatencyHistogram;
use overtake_workload::ch::q2::query2;
use serde_json::json;

use crate::args::Q2Args;
use crate::output::{load_database, progress, secs};

pub fn run(args: &Q2Args) -> Result<(), String> {
    crate::resources::check(args.warehouses, 1, 0)?;
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
    if args.json {
        println!(
            "{}",
            json!({
                "benchmark": "q2",
                "warehouses": args.warehouses,
                "runs": args.runs,
                "rows": rows,
                "load_seconds": secs(loaded.loaded.elapsed),
                "ms": {
                    "mean": ms(s.mean), "p50": ms(s.p50), "p90": ms(s.p90),
                    "p99": ms(s.p99), "max": ms(s.max),
                },
            })
        );
    } else {
        println!(
            "CH-benCHmark Query 2: {} warehouse(s), {} runs, {} result rows",
            args.warehouses, args.runs, rows
        );
        println!(
            "runtime ms: mean {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            ms(s.mean),
            ms(s.p50),
            ms(s.p90),
            ms(s.p99),
            ms(s.max)
        );
    }
    Ok(())
}
