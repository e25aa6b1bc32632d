//! The `overtake` command line: one module per command family (`bench`, `compare`, `check`,
//! `serve`, `plot`), each command's flags beside the code that runs it, and the flags several
//! families take in [`flags`]. Ranges are enforced by the parser, so a bad value is refused with
//! a clear message before any work starts.
//!
//! A command reports through a report type of its own (`Serialize` for `--json`, the same value
//! for the tables); it must never panic on bad input.

use clap::{Parser, Subcommand};

pub mod bench;
pub mod check;
pub mod compare;
pub mod flags;
pub mod plot;
pub mod serve;

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
    Bench(bench::Bench),
    /// Run several configurations one after another and compare them side by side.
    #[command(subcommand)]
    Compare(compare::Compare),
    /// Recover a kept database and check it.
    #[command(subcommand)]
    Check(check::Check),
    /// Kill a logging TPC-C run with SIGKILL at random times, recover, and check that nothing
    /// acknowledged was lost and the database is consistent.
    CrashTest(check::crash_test::CrashTestArgs),
    /// Serve SQL over PostgreSQL's wire protocol (psql, pgbench, drivers), each session's
    /// statements at its priority (`SET priority = 'high'`).
    Serve(serve::ServeArgs),
    /// Draw figures from the CSV file of a script that ran clients against the server.
    #[command(subcommand)]
    Plot(plot::Plot),
}

impl Command {
    /// Whether Ctrl-C should end the command after its run in progress (comparisons and the
    /// crash test, whose finished runs are worth printing) rather than at once. `serve` installs
    /// its own handler.
    pub fn ends_after_run(&self) -> bool {
        matches!(self, Command::Compare(_) | Command::CrashTest(_))
    }
}

/// Runs `command`. `Ok(false)`: the command reported its own failure (a check that found a
/// problem) in its output, which must stay one JSON object under `--json`.
pub fn run(command: &Command) -> Result<bool, String> {
    let done = |r: Result<(), String>| r.map(|()| true);
    match command {
        Command::Bench(b) => done(bench::run(b)),
        Command::Compare(c) => done(compare::run(c)),
        Command::Check(check::Check::Tpcc(a)) => check::tpcc::check(a),
        Command::CrashTest(a) => check::crash_test::run(a),
        Command::Serve(a) => done(serve::run(a)),
        Command::Plot(plot::Plot::Wire(a)) => done(plot::run(a)),
    }
}

#[cfg(test)]
mod tests {
    use super::bench::Bench;
    use super::bench::engine::TxnTypeArg;
    use super::compare::Compare;
    use super::flags::CcArg;
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("overtake").chain(args.iter().copied()))
    }

    /// Asserts that every command line in `bad` is refused.
    fn assert_refused(bad: &[&[&str]]) {
        for args in bad {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn bimodal_flags_are_checked_and_ablations_named() {
        assert_refused(&[
            &["bench", "bimodal", "--load", "0"][..],
            &["bench", "bimodal", "--load", "2.5"],
            &["bench", "bimodal", "--load", "lots"],
            &["bench", "bimodal", "--quantum-us", "0"],
            &["bench", "bimodal", "--policy", "preempt"],
            &["compare", "bimodal", "--policies", "wait,fifo"],
            &["bench", "tpcc", "--clients", "0"],
            &["bench", "tpcc", "--clients", "4", "--hp-share", "1.5"],
            &["bench", "tpcc", "--clients", "4", "--hp-share", "NaN"],
        ]);
        let Ok(Cli {
            command: Command::Compare(Compare::Bimodal(c)),
        }) = parse(&[
            "compare",
            "bimodal",
            "--policies",
            "wait,quantum,quantum-one-queue,quantum-no-skip",
        ])
        else {
            panic!("a valid compare bimodal");
        };
        let settings: Vec<_> = c.policies.iter().map(|p| p.settings()).collect();
        use overtake_sched::Policy;
        assert_eq!(
            settings,
            vec![
                (Policy::Wait, true, true),
                (Policy::Quantum, true, true),
                (Policy::Quantum, false, true),
                (Policy::Quantum, true, false),
            ]
        );
        assert!((c.bimodal.load - 0.7).abs() < 1e-12, "default load");
    }

    #[test]
    fn lock_flags_name_real_policies() {
        assert_refused(&[
            &["bench", "locks", "--lock-policy", "wound-wait"][..],
            &["bench", "locks", "--cc", "occ"],
            &["bench", "locks", "--clients", "0"],
            &["compare", "locks", "--policies", "pow,fifo"],
            &["compare", "locks", "--think-us", "100,-1"],
            &["compare", "locks", "--hp-share", "2"],
        ]);
        let Ok(Cli {
            command: Command::Compare(Compare::Locks(c)),
        }) = parse(&[
            "compare",
            "locks",
            "--policies",
            "pow,pabort",
            "--think-us",
            "0,500",
        ])
        else {
            panic!("a valid compare locks");
        };
        assert_eq!(c.policies, ["pow", "pabort"]);
        assert_eq!(c.think_us, [0, 500]);
        assert_eq!(c.locks.warehouses, 10, "POW's default");
        let Ok(Cli {
            command: Command::Bench(Bench::Locks(b)),
        }) = parse(&["bench", "locks", "--cc", "2pl", "--lock-policy", "cr"])
        else {
            panic!("a valid bench locks");
        };
        assert_eq!((b.cc, b.lock_policy.as_str()), (CcArg::TwoPl, "cr"));
    }

    #[test]
    fn prefault_is_a_size_for_closed_loop_runs() {
        assert_refused(&[
            &["bench", "tpcc", "--prefault-mib", "-1"][..],
            &["bench", "tpcc", "--prefault-mib", "lots"],
            &["bench", "tpcc", "--prefault-mib", "2000000"],
            &["bench", "tpcc", "--clients", "2", "--prefault-mib", "10"],
        ]);
        let Ok(Cli {
            command: Command::Bench(Bench::Tpcc(t)),
        }) = parse(&["bench", "tpcc", "--prefault-mib", "0"])
        else {
            panic!("a valid bench tpcc");
        };
        assert_eq!(t.prefault_mib, Some(0));
    }

    #[test]
    fn engine_flags_name_a_type_and_a_count() {
        assert_refused(&[
            &["bench", "engine", "--type", "new_order_fast"][..],
            &["bench", "engine", "--count", "0"],
            &["bench", "engine", "--warehouses", "0"],
        ]);
        let Ok(Cli {
            command: Command::Bench(Bench::Engine(e)),
        }) = parse(&["bench", "engine", "--type", "stock-level", "--count", "7"])
        else {
            panic!("a valid bench engine");
        };
        use overtake_workload::tpcc::TxnType;
        assert_eq!((e.txn_type.only(), e.count), (Some(TxnType::StockLevel), 7));
        assert_eq!(TxnTypeArg::Mix.only(), None);
    }
}
