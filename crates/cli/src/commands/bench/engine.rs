//! `overtake bench engine`: TPC-C transactions one after another on the calling thread, straight
//! on the engine, with no scheduler, dispatcher, clients or retries.
//!
//! It reports the engine's own cost per transaction type, which is what to profile when the
//! engine is to get faster. `bench tpcc` adds the scheduler, and its dispatcher spins on the other
//! core, so a whole-process profile of it is mostly the dispatcher. Here the requests are
//! generated before the clock starts, and the timed loop is one function, `run_engine_direct`,
//! so that callgrind can count only it:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*run_engine_direct*' \
//!     overtake bench engine --type new-order --count 3000
//! ```
//!
//! Instruction counts from callgrind do not vary with machine noise; the wall times printed here
//! do, so compare builds by alternating runs.

use std::collections::BTreeMap;
use std::time::Instant;

use overtake_engine::{AbortReason, Database, Error, Isolation, Priority};
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::load::GROWTH_PER_TRANSACTION;
use overtake_workload::tpcc::request::TpccRequest;
use overtake_workload::tpcc::{TpccTables, TxnType};
use serde::Serialize;

use crate::commands::flags::TpccRunOptions;
use crate::harness::database::{consistency_after_run, load_database, rss_mib};
use crate::report::{print_json, print_table};
use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Which transactions to run: the standard mix, or only one type.
    #[arg(long = "type", value_enum, default_value_t = TxnTypeArg::Mix)]
    pub txn_type: TxnTypeArg,
    /// Transactions to run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub count: u64,
    /// Number of warehouses (each transaction's home warehouse takes turns).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    #[command(flatten)]
    pub run: TpccRunOptions,
}

/// A TPC-C transaction type, or the standard mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TxnTypeArg {
    Mix,
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxnTypeArg {
    /// The one type asked for (`None`: the mix).
    pub fn only(self) -> Option<overtake_workload::tpcc::TxnType> {
        use overtake_workload::tpcc::TxnType;
        match self {
            TxnTypeArg::Mix => None,
            TxnTypeArg::NewOrder => Some(TxnType::NewOrder),
            TxnTypeArg::Payment => Some(TxnType::Payment),
            TxnTypeArg::OrderStatus => Some(TxnType::OrderStatus),
            TxnTypeArg::Delivery => Some(TxnType::Delivery),
            TxnTypeArg::StockLevel => Some(TxnType::StockLevel),
        }
    }
}

/// What the transactions of one type did.
#[derive(Clone, Debug, Default)]
struct TypeTally {
    committed: u64,
    rolled_back: u64,
    failed: u64,
    nanos: u64,
}

impl TypeTally {
    fn count(&self) -> u64 {
        self.committed + self.rolled_back + self.failed
    }

    fn mean_us(&self) -> f64 {
        self.nanos as f64 / 1e3 / self.count().max(1) as f64
    }
}

/// The tallies of a run, by [`TxnType::index`], and the first failure's message.
struct Tallies {
    types: [TypeTally; TxnType::ALL.len()],
    first_error: Option<String>,
}

/// What `bench engine` reports.
#[derive(Debug, Serialize)]
struct EngineReport {
    benchmark: &'static str,
    #[serde(rename = "type")]
    txn_type: Option<String>,
    warehouses: i64,
    isolation: &'static str,
    count: usize,
    duration_s: f64,
    per_sec: f64,
    /// Per type that ran.
    by_type: BTreeMap<&'static str, TypeReport>,
    first_error: Option<String>,
    rss_mib_after_load: Option<f64>,
    rss_mib_after_run: Option<f64>,
    consistency: String,
}

#[derive(Debug, Serialize)]
struct TypeReport {
    count: u64,
    per_sec: f64,
    committed: u64,
    rolled_back: u64,
    failed: u64,
    latency_us: MeanLatency,
}

#[derive(Debug, Serialize)]
struct MeanLatency {
    mean: f64,
}

pub fn run(args: &EngineArgs) -> Result<(), String> {
    crate::harness::resources::check(args.warehouses, 1, args.count * GROWTH_PER_TRANSACTION)?;
    let loaded = load_database(args.warehouses, args.run.seed, false, args.run.json)?;
    let (db, tables) = (&loaded.db, &loaded.tpcc);
    let constants = loaded.run_constants(args.run.seed);
    let requests = generate(args, &constants);
    let start = Instant::now();
    let tallies = run_engine_direct(db, tables, &requests, args.run.isolation.engine());
    let elapsed = start.elapsed().as_secs_f64();
    let rss_after_run = rss_mib();
    let consistency = consistency_after_run(db, tables, args.run.check, args.run.json)?;
    let committed: u64 = tallies.types.iter().map(|t| t.committed).sum();
    let ran: Vec<TxnType> = TxnType::ALL
        .into_iter()
        .filter(|k| tallies.types[k.index()].count() > 0)
        .collect();
    let out = EngineReport {
        benchmark: "engine",
        txn_type: args
            .txn_type
            .to_possible_value()
            .map(|v| v.get_name().to_owned()),
        warehouses: args.warehouses,
        isolation: args.run.isolation.name(),
        count: requests.len(),
        duration_s: elapsed,
        per_sec: committed as f64 / elapsed,
        by_type: ran
            .iter()
            .map(|&kind| {
                let t = &tallies.types[kind.index()];
                let tally = TypeReport {
                    count: t.count(),
                    per_sec: t.committed as f64 / elapsed,
                    committed: t.committed,
                    rolled_back: t.rolled_back,
                    failed: t.failed,
                    latency_us: MeanLatency { mean: t.mean_us() },
                };
                (kind.name(), tally)
            })
            .collect(),
        first_error: tallies.first_error,
        rss_mib_after_load: loaded.rss_mib,
        rss_mib_after_run: rss_after_run,
        consistency,
    };
    if args.run.json {
        return print_json(&out, &[]);
    }
    println!(
        "TPC-C on the engine directly: {} transactions ({:?}), {} warehouse(s), {}, one thread, \
         no scheduler, no retries",
        out.count, args.txn_type, out.warehouses, out.isolation
    );
    let rows: Vec<Vec<String>> = ran
        .iter()
        .map(|kind| {
            let t = &out.by_type[kind.name()];
            vec![
                kind.name().to_owned(),
                t.count.to_string(),
                t.committed.to_string(),
                t.rolled_back.to_string(),
                t.failed.to_string(),
                format!("{:.1}", t.latency_us.mean),
            ]
        })
        .collect();
    print_table(
        &[
            "type",
            "count",
            "committed",
            "rolled back",
            "failed",
            "mean us",
        ],
        &rows,
    );
    println!("committed per second: {:.0} ({elapsed:.2} s)", out.per_sec);
    if let Some(e) = &out.first_error {
        println!("first failure: {e}");
    }
    if let (Some(load), Some(run)) = (out.rss_mib_after_load, out.rss_mib_after_run) {
        println!("memory: {load:.0} MiB after loading, {run:.0} MiB after the run");
    }
    println!("consistency: {}", out.consistency);
    Ok(())
}

/// `args.count` requests: the standard mix, or the mix's requests of one type. Home warehouses
/// take turns.
fn generate(args: &EngineArgs, constants: &NuRandConstants) -> Vec<TpccRequest> {
    let mut rng = TpccRng::new(args.run.seed ^ 0x5EED);
    let only = args.txn_type.only();
    let mut requests = Vec::with_capacity(args.count as usize);
    let mut home = 0;
    while (requests.len() as u64) < args.count {
        let request = TpccRequest::generate(
            &mut rng,
            constants,
            home % args.warehouses + 1,
            args.warehouses,
        );
        if only.is_none_or(|k| k == request.kind()) {
            requests.push(request);
            home += 1;
        }
    }
    requests
}

/// Runs every request in its own transaction, each begun, run and committed on this thread, and
/// times each. Not inlined, so that a profiler can count it alone.
#[inline(never)]
fn run_engine_direct(
    db: &Database,
    tables: &TpccTables,
    requests: &[TpccRequest],
    isolation: Isolation,
) -> Tallies {
    let mut tallies = Tallies {
        types: Default::default(),
        first_error: None,
    };
    for request in requests {
        let began = Instant::now();
        let result = db.begin(Priority::HIGH, isolation).and_then(|mut txn| {
            request.execute(&mut txn, tables)?;
            Ok(txn.commit()?)
        });
        let tally = &mut tallies.types[request.kind().index()];
        tally.nanos += began.elapsed().as_nanos() as u64;
        match result {
            Ok(()) => tally.committed += 1,
            Err(Error::Aborted(AbortReason::UserRollback)) => tally.rolled_back += 1,
            Err(e) => {
                tally.failed += 1;
                tallies.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    tallies
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::flags::{IsolationArg, TpccRunOptions};

    fn args(txn_type: TxnTypeArg, count: u64, warehouses: i64) -> EngineArgs {
        EngineArgs {
            txn_type,
            count,
            warehouses,
            run: TpccRunOptions {
                isolation: IsolationArg::Serializable,
                check: false,
                json: false,
                seed: 3,
            },
        }
    }

    fn constants() -> NuRandConstants {
        let load = NuRandConstants::for_load(&mut TpccRng::new(1));
        NuRandConstants::for_run(&load, &mut TpccRng::new(2))
    }

    #[test]
    fn one_type_gives_exactly_that_many_of_it_with_homes_taking_turns() {
        let requests = generate(&args(TxnTypeArg::Delivery, 9, 3), &constants());
        assert_eq!(requests.len(), 9);
        assert!(requests.iter().all(|r| r.kind() == TxnType::Delivery));
        let homes: Vec<i64> = requests
            .iter()
            .map(|r| match r {
                TpccRequest::Delivery(d) => d.w_id,
                _ => unreachable!("only deliveries"),
            })
            .collect();
        assert_eq!(homes, [1, 2, 3, 1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn the_mix_has_every_type() {
        let requests = generate(&args(TxnTypeArg::Mix, 2_000, 1), &constants());
        for kind in TxnType::ALL {
            assert!(
                requests.iter().any(|r| r.kind() == kind),
                "{} missing from 2,000 of the mix",
                kind.name()
            );
        }
    }
}
