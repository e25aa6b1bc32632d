//! Databases kept in a directory (`--data-dir`): opened (recovered from their log, or created and
//! loaded and logged the first time) for `bench tpcc`, and `check tpcc`, which recovers one and
//! checks the TPC-C consistency conditions.
//!
//! Opening for a check never writes to the directory (no logging, the log is read as it is).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use overtake_engine::{
    CheckpointError, Database, Durability, Isolation, KeyRange, Options, Priority, Recovered,
    ScanOptions,
};
use overtake_workload::ack::{AckLog, OrderId};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::load::{LoadOptions, Loaded, expected_rows, load};
use overtake_workload::tpcc::{TpccTables, consistency};
use serde::Serialize;

use crate::harness::database::{LoadedDb, rss_mib};
use crate::report::progress::progress;

/// The empty table whose presence says the load finished (its creation is logged after the
/// load's last row): a directory without it holds a load a crash cut short.
const LOADED: &str = "overtake_tpcc_loaded";

fn loaded_marker() -> overtake_engine::TableSchema {
    overtake_engine::TableSchema::builder(LOADED)
        .column("done", overtake_engine::ColumnType::Int64)
        .primary_key(&["done"])
        .build()
        .expect("a valid schema")
}

/// A kept database whose load a crash cut short: it cannot be run or checked, only loaded again.
pub const INCOMPLETE_LOAD: &str = "holds a TPC-C load a crash cut short (remove it to load again)";

/// Opens the TPC-C database kept in `dir`: recovered if it holds one (which must have
/// `warehouses` warehouses), else created, loaded, logged and checkpointed.
pub fn open_tpcc(
    dir: &Path,
    options: Options,
    warehouses: i64,
    seed: u64,
    json: bool,
) -> Result<LoadedDb, String> {
    let bar = progress(1, "recovering", json);
    let db = Database::open(dir, options).map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let recovered = db.recovered().cloned();
    if recovered.as_ref().is_some_and(|r| r.tables > 0) {
        if db.table(LOADED).is_err() {
            return Err(format!("{} {INCOMPLETE_LOAD}", dir.display()));
        }
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
    db.create_table(loaded_marker())
        .map_err(|e| format!("recording the finished load: {e}"))?;
    bar.finish_and_clear();
    // The next open then loads the rows instead of replaying the load's transactions (without
    // a log there is nothing to checkpoint).
    match db.checkpoint() {
        Ok(_) | Err(CheckpointError::NotLogged) => {}
        Err(e) => return Err(format!("checkpointing the load: {e}")),
    }
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

/// What recovery found (`null` in JSON for an in-memory database).
#[derive(Clone, Debug, Serialize)]
pub struct RecoveredReport {
    #[serde(skip)]
    pub dir: PathBuf,
    pub checkpoint: Option<String>,
    pub checkpoint_rows: u64,
    pub segments: usize,
    pub log_bytes: u64,
    pub transactions: u64,
    pub tables: usize,
    pub torn_bytes: u64,
    pub seconds: f64,
    pub log_seconds: f64,
}

impl From<&Recovered> for RecoveredReport {
    fn from(r: &Recovered) -> Self {
        RecoveredReport {
            dir: r.dir.clone(),
            checkpoint: r.checkpoint.as_ref().map(|c| c.display().to_string()),
            checkpoint_rows: r.checkpoint_rows,
            segments: r.segments,
            log_bytes: r.log_bytes,
            transactions: r.transactions,
            tables: r.tables,
            torn_bytes: r.torn_bytes,
            seconds: r.elapsed.as_secs_f64(),
            log_seconds: r.log_elapsed.as_secs_f64(),
        }
    }
}

/// A line saying what recovery found (and cut), for text output.
impl std::fmt::Display for RecoveredReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let torn = if self.torn_bytes > 0 {
            format!(
                "; cut {} byte(s) of a record the last crash tore",
                self.torn_bytes
            )
        } else {
            String::new()
        };
        let checkpoint = match &self.checkpoint {
            Some(c) => {
                let c = Path::new(c);
                format!(
                    "{} row(s) from {}, then ",
                    self.checkpoint_rows,
                    c.file_name().map_or(c.as_os_str(), |n| n).to_string_lossy()
                )
            }
            None => String::new(),
        };
        write!(
            f,
            "recovered {}: {checkpoint}{} transaction(s) from {} log segment(s) ({} bytes), {} \
             table(s), in {:.2} s{torn}",
            self.dir.display(),
            self.transactions,
            self.segments,
            self.log_bytes,
            self.tables,
            self.seconds
        )
    }
}

/// What checking a kept database found.
pub struct Verdict {
    /// `None`: the load was cut short (nothing to check).
    pub consistency: Option<String>,
    pub consistent: bool,
    pub warehouses: i64,
    pub recovered: Option<Recovered>,
    /// Orders the ledger holds, and those of them recovery did not find.
    pub acknowledged: usize,
    pub missing: Vec<OrderId>,
}

impl Verdict {
    /// True if the database is consistent and holds every acknowledged order.
    pub fn ok(&self) -> bool {
        self.consistent && self.missing.is_empty()
    }
}

/// Recovers the database in `dir` without writing to it, checks the TPC-C consistency
/// conditions and, with `ack`, that every order the ledger holds was recovered.
pub fn verify(dir: &Path, ack: Option<&Path>) -> Result<Verdict, String> {
    if !dir.is_dir() {
        return Err(format!("{}: no such directory", dir.display()));
    }
    let db = Database::open(dir, Options::default().durability(Durability::Off))
        .map_err(|e| e.to_string())?;
    let recovered = db.recovered().cloned();
    let acknowledged = match ack {
        Some(path) if path.exists() => {
            AckLog::read(path).map_err(|e| format!("{}: {e}", path.display()))?
        }
        _ => Vec::new(),
    };
    if db.table(LOADED).is_err() {
        // A load cut short acknowledged no order (the ledger is written by runs after it).
        return Ok(Verdict {
            consistency: None,
            consistent: acknowledged.is_empty(),
            warehouses: 0,
            recovered,
            missing: acknowledged.clone(),
            acknowledged: acknowledged.len(),
        });
    }
    let tpcc = TpccTables::open(&db)
        .map_err(|e| format!("{}: not a TPC-C database: {e}", dir.display()))?;
    let warehouses = count_warehouses(&db, &tpcc)?;
    let report =
        consistency::check(&db, &tpcc, false).map_err(|e| format!("consistency check: {e}"))?;
    let mut txn = db
        .begin(Priority::LOW, Isolation::Snapshot)
        .map_err(|e| e.to_string())?;
    let mut missing = Vec::new();
    for &(w, d, o) in &acknowledged {
        let key = tpcc
            .order
            .key()
            .int(w)
            .int(d)
            .int(o)
            .finish()
            .map_err(|e| e.to_string())?;
        if !txn.exists(&tpcc.order, &key).map_err(|e| e.to_string())? {
            missing.push((w, d, o));
        }
    }
    drop(txn);
    Ok(Verdict {
        consistent: report.is_ok(),
        consistency: Some(if report.is_ok() {
            "ok".to_owned()
        } else {
            report.summary()
        }),
        warehouses,
        recovered,
        acknowledged: acknowledged.len(),
        missing,
    })
}
