//! `overtake bench sql`: what the SQL layer adds to a statement, measured on one thread with no
//! network and no scheduler. pgbench's select-only statement (`SELECT abalance FROM
//! pgbench_accounts WHERE aid = $1`, prepared once) runs through the executor with its parameter
//! decoded from text and its row encoded to text, each in a READ COMMITTED transaction of its
//! own; the same read runs straight on the engine (key built, row read, committed). The
//! difference is the SQL layer's CPU per statement: binding the parameter, interpreting the plan,
//! converting values, encoding the row. Alternating rounds; the machine's noise shows as the
//! spread between them.

use std::sync::Arc;
use std::time::Instant;

use overtake_engine::{Database, Isolation, Options, Priority};
use overtake_sql::bind::statement::{parse, prepare};
use overtake_sql::{Catalog, Command, Context, Datum, SqlType};
use serde::Serialize;

use crate::report::print_json;
use clap::Args;

/// `bench sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Statements per measurement.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub count: u64,
    /// Alternating measurements of each.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

const ACCOUNTS: i64 = 100_000;

pub fn run(args: &SqlArgs) -> Result<(), String> {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).map_err(|e| e.to_string())?;
    let sql = |text: &str| -> Result<overtake_sql::Prepared, String> {
        let stmt = parse(text).map_err(|e| e.to_string())?.remove(0);
        prepare(&catalog, &stmt, &[]).map_err(|e| e.to_string())
    };
    let create = sql(
        "CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int, abalance int, filler char(84))",
    )?;
    let Command::Ddl(ddl) = &create.command else {
        return Err("not DDL".into());
    };
    overtake_sql::exec::ddl::execute(&catalog, ddl, Priority::MEDIUM).map_err(|e| e.to_string())?;
    let table = catalog
        .table("pgbench_accounts")
        .map_err(|e| e.to_string())?;
    let mut txn = db
        .begin(Priority::MEDIUM, Isolation::Snapshot)
        .map_err(|e| e.to_string())?;
    let cx = Context::new(&[], 0);
    let rows =
        (1..=ACCOUNTS).map(|aid| vec![Datum::Int(aid), Datum::Int(1), Datum::Int(0), Datum::Null]);
    overtake_sql::exec::insert_rows(&mut txn, (&table, None), &[0, 1, 2, 3], rows, &cx)
        .map_err(|e| e.to_string())?;
    txn.commit().map_err(|e| e.to_string())?;

    let select = Arc::new(sql("SELECT abalance FROM pgbench_accounts WHERE aid = $1")?);
    let Command::Query(query) = &select.command else {
        return Err("not a query".into());
    };
    let engine_table = Arc::clone(&table.engine);
    let abalance = engine_table.column("abalance").ok_or("no abalance")?;
    let mut aid = 0i64;
    let mut next = || {
        aid = (aid + 7919) % ACCOUNTS; // a stride through the keys
        aid + 1
    };
    let mut engine_ns = Vec::new();
    let mut sql_ns = Vec::new();
    let mut sink = 0i64;
    for _ in 0..args.rounds {
        let start = Instant::now();
        for _ in 0..args.count {
            let key = engine_table
                .key()
                .int(next())
                .finish()
                .map_err(|e| e.to_string())?;
            let mut t = db
                .begin(Priority::MEDIUM, Isolation::ReadCommitted)
                .map_err(|e| e.to_string())?;
            sink += t
                .get(&engine_table, &key, |r| r.int(abalance))
                .map_err(|e| e.to_string())?
                .unwrap_or(0);
            t.commit().map_err(|e| e.to_string())?;
        }
        engine_ns.push(start.elapsed().as_nanos() as f64 / args.count as f64);
        let start = Instant::now();
        for _ in 0..args.count {
            let text = next().to_string();
            let params = [Datum::parse(
                &text,
                select.params.first().copied().unwrap_or(SqlType::Int4),
            )
            .map_err(|e| e.to_string())?];
            let mut t = db
                .begin(Priority::MEDIUM, Isolation::ReadCommitted)
                .map_err(|e| e.to_string())?;
            t.next_statement();
            let out = overtake_sql::exec::execute(&mut t, query, &Context::new(&params, 0))
                .map_err(|e| e.to_string())?;
            t.commit().map_err(|e| e.to_string())?;
            for row in &out.rows {
                for d in row {
                    sink += d.to_text().map_or(0, |s| s.len() as i64);
                }
            }
        }
        sql_ns.push(start.elapsed().as_nanos() as f64 / args.count as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (e, s) = (median(&mut engine_ns.clone()), median(&mut sql_ns.clone()));
    if args.json {
        print_json(
            &SqlReport {
                engine_ns: &engine_ns,
                sql_ns: &sql_ns,
                engine_median_ns: e,
                sql_median_ns: s,
                sql_layer_ns: s - e,
                checksum: sink,
            },
            &[],
        )?;
    } else {
        println!(
            "prepared primary-key SELECT, {} statements per round, {} rounds (median):",
            args.count, args.rounds
        );
        println!("  engine alone (key, read, commit):            {e:8.0} ns");
        println!("  through the SQL layer (+ bind, plan, encode): {s:8.0} ns");
        println!(
            "  the SQL layer's own work:                     {:8.0} ns",
            s - e
        );
        println!("  rounds: engine {engine_ns:.0?} ns, sql {sql_ns:.0?} ns (checksum {sink})");
    }
    Ok(())
}

/// What `bench sql --json` prints: nanoseconds per statement of each round, their medians, and
/// the checksum of the rows read (which keeps the reads from being optimized away).
#[derive(Debug, Serialize)]
struct SqlReport<'a> {
    engine_ns: &'a [f64],
    sql_ns: &'a [f64],
    engine_median_ns: f64,
    sql_median_ns: f64,
    sql_layer_ns: f64,
    checksum: i64,
}
