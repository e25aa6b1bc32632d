//! Command-line flags. Ranges are enforced here so that bad values are refused with a clear message
//! before any work starts.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Overtake: a main-memory transaction engine in which urgent transactions overtake long ones.
#[derive(Debug, Parser)]
#[command(name = "overtake", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one benchmark configuration.
    #[command(subcommand)]
    Bench(Bench),
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// TPC-C: load, run the standard mix closed-loop, report throughput and latency per type.
    Tpcc(TpccArgs),
    /// CH-benCHmark Query 2 alone: load, run it repeatedly, report its runtime.
    Q2(Q2Args),
}

/// Isolation level of the benchmark's transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IsolationArg {
    /// Snapshot isolation.
    Snapshot,
    /// Serializable (snapshot isolation plus commit-time validation).
    Serializable,
}

impl IsolationArg {
    pub fn engine(self) -> overtake_engine::Isolation {
        match self {
            IsolationArg::Snapshot => overtake_engine::Isolation::Snapshot,
            IsolationArg::Serializable => overtake_engine::Isolation::Serializable,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IsolationArg::Snapshot => "snapshot",
            IsolationArg::Serializable => "serializable",
        }
    }
}

#[derive(Debug, Args)]
pub struct TpccArgs {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Worker threads running the mix (worker i's home warehouse is i mod warehouses + 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub workers: u16,
    /// Seconds to run the mix.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Isolation level.
    #[arg(long, value_enum, default_value_t = IsolationArg::Serializable)]
    pub isolation: IsolationArg,
    /// Check the TPC-C consistency conditions after the run.
    #[arg(long)]
    pub check: bool,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data and transaction generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

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

fn positive_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be more than 0 and at most 86400 seconds"))
    }
}
