//! Databases kept in a directory (`--data-dir`): opened (recovered from their log, or created and
//! loaded and logged the first time) for `bench tpcc`, and `check tpcc`, which recovers one and
//! checks the TPC-C consistency conditions.
//!
//! Opening for a check never writes to the directory (no logging, the log is read as it is).

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use overtake_engine::{
    Database, Durability, Isolation, KeyRange, Options, Priority, Recovered, ScanOptions,
};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::load::{LoadOptions, Loaded, expected_rows, load};
use overtake_workload::tpcc::{TpccTables, consistency};
use serde_json::{Value, json};

use crate::args::{CheckTpccArgs, TpccArgs};
use crate::output::{LoadedDb, load_database, progress, rss_mib};

/// The TPC-C database of a `bench tpcc` run: kept in `--data-dir` if given, else in memory.
pub fn tpcc_database(args: &TpccArgs) -> Result<LoadedDb, String> {
    let (seed, json) = (args.run.seed, args.run.json);
    match &args.data_dir {
        Some(dir) => open_tpcc(dir, args.durability.engine(), args.warehouses, seed, json),
        None => load_database(args.warehouses, seed, false, json),
    }
}

/// Opens the TPC-C database kept in `dir`: recovered if it holds one (which must have
/// `warehouses` warehouses), else created, loaded and logged.
pub fn open_tpcc(
    dir: &Path,
    durability: Durability,
    warehouses: i64,
    seed: u64,
    json: bool,
) -> Result<LoadedDb, String> {
    let bar = progress(1, "recovering", json);
    let db = Database::open(dir, Options::default().durability(durability))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let recovered = db.recovered().cloned();
    if recovered.as_ref().is_some_and(|r| r.tables > 0) {
        let tpcc = TpccTables::open(&db)
            .map_err(|e| format!("{}: not a TPC-C database: {e}", dir.display()))?;
        let found = count_warehouses(&db, &tpcc)?;
        if found != warehouses {
            return Err(format!(
                "{} holds {found} warehouse(s), not {warehouses}: give --warehouses {found}",
                dir.display()
            ));
        }
        let elapsed = recovered
            .as_ref()
            .map_or_else(Default::default, |r| r.elapsed);
        return Ok(LoadedDb {
            rss_mib: rss_mib(),
            db: Arc::new(db),
            tpcc,
            ch: None,
            // The load's NURand constants come from the seed, as when it was loaded.
            loaded: Loaded {
                constants: NuRandConstants::for_load(&mut TpccRng::new(seed)),
                rows: 0,
                elapsed,
            },
            recovered,
        });
    }
    let tpcc = TpccTables::create(&db).map_err(|e| format!("creating the TPC-C schema: {e}"))?;
    let bar = progress(expected_rows(warehouses), "loading", json);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let options = LoadOptions {
        warehouses,
        threads,
        seed,
    };
    let loaded = load(&db, &tpcc, &options, &|rows| bar.inc(rows))
        .map_err(|e| format!("loading TPC-C: {e}"))?;
    bar.finish_and_clear();
    db.collect_garbage();
    Ok(LoadedDb {
        rss_mib: rss_mib(),
        db: Arc::new(db),
        tpcc,
        ch: None,
        loaded,
        recovered,
    })
}

/// Rows of the warehouse table.
fn count_warehouses(db: &Database, tpcc: &TpccTables) -> Result<i64, String> {
    let mut txn = db
        .begin(Priority::LOW, Isolation::Snapshot)
        .map_err(|e| e.to_string())?;
    let mut n = 0;
    txn.scan(
        &tpcc.warehouse,
        &KeyRange::all(),
        ScanOptions::forward(),
        |_| {
            n += 1;
            ControlFlow::Continue(())
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(n)
}

/// What recovery found, as JSON (`null` for an in-memory database).
pub fn recovered_json(r: Option<&Recovered>) -> Value {
    r.map_or(Value::Null, |r| {
        json!({
            "log_bytes": r.log_bytes,
            "transactions": r.transactions,
            "tables": r.tables,
            "torn_bytes": r.torn_bytes,
            "seconds": r.elapsed.as_secs_f64(),
        })
    })
}

/// A line saying what recovery found (and cut), for text output.
pub fn recovered_line(r: &Recovered) -> String {
    let torn = if r.torn_bytes > 0 {
        format!(
            "; cut {} byte(s) of a record the last crash tore",
            r.torn_bytes
        )
    } else {
        String::new()
    };
    format!(
        "recovered {}: {} transaction(s), {} table(s), {} bytes of log in {:.2} s{torn}",
        r.log.display(),
        r.transactions,
        r.tables,
        r.log_bytes,
        r.elapsed.as_secs_f64()
    )
}

/// `overtake check tpcc`.
pub fn check(args: &CheckTpccArgs) -> Result<(), String> {
    if !args.data_dir.is_dir() {
        return Err(format!("{}: no such directory", args.data_dir.display()));
    }
    let started = Instant::now();
    let db = Database::open(
        &args.data_dir,
        Options::default().durability(Durability::Off),
    )
    .map_err(|e| e.to_string())?;
    let recovered = db.recovered().cloned();
    let tpcc = TpccTables::open(&db)
        .map_err(|e| format!("{}: not a TPC-C database: {e}", args.data_dir.display()))?;
    let warehouses = count_warehouses(&db, &tpcc)?;
    let report =
        consistency::check(&db, &tpcc, false).map_err(|e| format!("consistency check: {e}"))?;
    let ok = report.is_ok();
    if args.json {
        println!(
            "{}",
            json!({
                "consistency": if ok { "ok".to_owned() } else { report.summary() },
                "warehouses": warehouses,
                "recovered": recovered_json(recovered.as_ref()),
                "seconds": started.elapsed().as_secs_f64(),
            })
        );
    } else {
        if let Some(r) = &recovered {
            println!("{}", recovered_line(r));
        }
        println!(
            "{warehouses} warehouse(s); consistency: {}",
            report.summary()
        );
    }
    if ok {
        Ok(())
    } else {
        Err("the TPC-C consistency conditions do not hold".into())
    }
}
