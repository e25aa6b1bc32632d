//! The databases a run needs: TPC-C (and the CH-benCHmark tables) loaded in memory or into a
//! fresh directory with a progress bar, the consistency check after a run, and this process's
//! memory readings. A load that fails is an error naming its step, never a partial database
//! passed on.

use std::sync::Arc;

use overtake_engine::{Database, Options};
use overtake_workload::ch::ChTables;
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::load::{LoadOptions, Loaded, expected_rows, load};
use overtake_workload::tpcc::{TpccTables, consistency};

use crate::report::progress::progress;

/// Resident set size of this process in MiB, from /proc (None where unavailable).
pub fn rss_mib() -> Option<f64> {
    Some(proc_kib("/proc/self/status", "VmRSS:")? as f64 / 1024.0)
}

/// The value in KiB of the line starting with `field` (e.g. `VmRSS:`) of a /proc file.
pub fn proc_kib(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A database holding TPC-C (and the CH-benCHmark tables when `with_ch`).
pub struct LoadedDb {
    pub db: Arc<Database>,
    pub tpcc: TpccTables,
    pub ch: Option<ChTables>,
    pub loaded: Loaded,
    pub rss_mib: Option<f64>,
    /// What opening a kept database recovered (`None`: in memory).
    pub recovered: Option<overtake_engine::Recovered>,
}

impl LoadedDb {
    /// The NURand constants of a run over this database (derived from the load's by clause
    /// 2.1.6.1), from the run's seed.
    pub fn run_constants(&self, seed: u64) -> NuRandConstants {
        NuRandConstants::for_run(&self.loaded.constants, &mut TpccRng::new(seed ^ 0xC0FFEE))
    }
}

/// Creates and loads the database in memory, with a progress bar.
pub fn load_database(
    warehouses: i64,
    seed: u64,
    with_ch: bool,
    json: bool,
) -> Result<LoadedDb, String> {
    load_into(
        Database::in_memory(Options::default()),
        warehouses,
        seed,
        with_ch,
        json,
    )
}

/// Loads a fresh database (in memory or newly opened in a directory), with a progress bar.
pub fn load_into(
    db: Database,
    warehouses: i64,
    seed: u64,
    with_ch: bool,
    json: bool,
) -> Result<LoadedDb, String> {
    let tpcc = TpccTables::create(&db).map_err(|e| format!("creating the TPC-C schema: {e}"))?;
    let bar = progress(expected_rows(warehouses), "loading", json);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let loaded = load(
        &db,
        &tpcc,
        &LoadOptions {
            warehouses,
            threads,
            seed,
        },
        &|rows| bar.inc(rows),
    )
    .map_err(|e| format!("loading TPC-C: {e}"))?;
    bar.finish_and_clear();
    let ch = if with_ch {
        let ch = ChTables::create(&db).map_err(|e| format!("creating the CH tables: {e}"))?;
        ch.load(&db, seed)
            .map_err(|e| format!("loading the CH tables: {e}"))?;
        Some(ch)
    } else {
        None
    };
    // Settle what the load left to reclaim before measuring memory.
    db.collect_garbage();
    Ok(LoadedDb {
        rss_mib: rss_mib(),
        db: Arc::new(db),
        tpcc,
        ch,
        loaded,
        recovered: None,
    })
}

/// The TPC-C consistency conditions checked over `db` after a run, with a progress bar (`ok` or
/// the first failed condition), or "not checked" unless `check`.
pub fn consistency_after_run(
    db: &Database,
    tables: &TpccTables,
    check: bool,
    json: bool,
) -> Result<String, String> {
    if !check {
        return Ok("not checked".to_owned());
    }
    let bar = progress(1, "checking", json);
    let report =
        consistency::check(db, tables, false).map_err(|e| format!("consistency check: {e}"))?;
    bar.finish_and_clear();
    Ok(report.summary())
}
