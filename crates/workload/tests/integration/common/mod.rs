//! Shared fixtures for the workload's integration tests.

use overtake_engine::{Database, Options};
use overtake_workload::rng::NuRandConstants;
use overtake_workload::tpcc::TpccTables;
use overtake_workload::tpcc::load::{LoadOptions, load};

/// A fresh database holding a TPC-C load of `warehouses` (two loader threads), and the NURand
/// constants the data was generated with.
pub fn tpcc_database(warehouses: i64, seed: u64) -> (Database, TpccTables, NuRandConstants) {
    let db = Database::in_memory(Options::default());
    let tables = TpccTables::create(&db).expect("schema");
    let options = LoadOptions {
        warehouses,
        threads: 2,
        seed,
    };
    let loaded = load(&db, &tables, &options, &|_| {}).expect("load");
    (db, tables, loaded.constants)
}
