//! `overtake check tpcc`: recovers a kept TPC-C database (read only: nothing is logged, the log
//! is read as it is) and checks the TPC-C consistency conditions, and with `--ack-log` that every
//! acknowledged New-Order survived.

use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::harness::kept::{INCOMPLETE_LOAD, RecoveredReport, verify};
use crate::report::print_json;

/// `check tpcc`: a kept database, recovered and checked.
#[derive(Debug, Args)]
pub struct CheckTpccArgs {
    /// The database's directory (as given to `bench tpcc --data-dir`).
    #[arg(long, value_name = "DIR")]
    pub data_dir: std::path::PathBuf,
    /// Also check that every order this ledger holds (`bench tpcc --ack-log`) was recovered.
    #[arg(long, value_name = "FILE")]
    pub ack_log: Option<std::path::PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `check tpcc --json` prints.
#[derive(Debug, Serialize)]
struct CheckReport {
    consistency: String,
    warehouses: i64,
    recovered: Option<RecoveredReport>,
    /// Orders the ledger holds, and how many of them recovery did not find.
    acknowledged: usize,
    missing: usize,
    seconds: f64,
    /// The problem found, if any.
    error: Option<String>,
}

/// `overtake check tpcc`: `Ok(false)` when the check found a problem (reported in the output).
pub fn check(args: &CheckTpccArgs) -> Result<bool, String> {
    let started = Instant::now();
    let v = verify(&args.data_dir, args.ack_log.as_deref())?;
    let consistency = v
        .consistency
        .clone()
        .unwrap_or_else(|| INCOMPLETE_LOAD.to_owned());
    let problem = if v.ok() {
        None
    } else if !v.missing.is_empty() {
        Some(format!(
            "{} acknowledged order(s) were lost",
            v.missing.len()
        ))
    } else {
        Some("the TPC-C consistency conditions do not hold".to_owned())
    };
    if args.json {
        print_json(
            &CheckReport {
                consistency,
                warehouses: v.warehouses,
                recovered: v.recovered.as_ref().map(RecoveredReport::from),
                acknowledged: v.acknowledged,
                missing: v.missing.len(),
                seconds: started.elapsed().as_secs_f64(),
                error: problem.clone(),
            },
            &[],
        )?;
    } else {
        if let Some(r) = &v.recovered {
            println!("{}", RecoveredReport::from(r));
        }
        println!("{} warehouse(s); consistency: {consistency}", v.warehouses);
        if args.ack_log.is_some() {
            println!(
                "{} acknowledged order(s), {} missing{}",
                v.acknowledged,
                v.missing.len(),
                v.missing
                    .first()
                    .map_or(String::new(), |(w, d, o)| format!(" (first: {w} {d} {o})"))
            );
        }
    }
    if let (Some(problem), false) = (&problem, args.json) {
        eprintln!("error: {problem}");
    }
    Ok(problem.is_none())
}
