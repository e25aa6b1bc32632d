//! `overtake compare locks-sql`: lock scheduling over the wire. High- and normal-priority TPC-C
//! clients (go-tpc, unchanged) on one warehouse, saturated, against Overtake under two-phase
//! locking with each lock policy and against PostgreSQL 15 (which has no priority in its lock
//! manager), with the urgent speedup and the other clients' penalty against `standard`, the
//! FIFO lock manager.
//!
//! The runs are driven by `scripts/locks-sql.sh`, which writes a line per client group per
//! finished run (and Overtake's `class` lines); this command reads and reports them. It must
//! never report a run the script did not finish, nor a ratio without its baseline run.

use clap::Args;
use serde::Serialize;

use super::classes::ClassTime;
use crate::commands::flags::{each_once, lock_policy_name};
use crate::report::{print_json, print_table};

#[derive(Debug, Args)]
pub struct CompareLocksSqlArgs {
    /// Seconds per run.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(3..=3600))]
    pub seconds: u32,
    /// go-tpc threads of the high-priority client (`priority=high`).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub high_threads: u32,
    /// go-tpc threads of the other client (the default level).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub low_threads: u32,
    /// Overtake's lock policies to run (standard, the baseline, is always run first).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pow,nprio-inherit",
        value_parser = lock_policy_name
    )]
    pub policies: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One client group's figures in one run, as the script wrote them.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Group {
    server: String,
    /// The lock policy, or `postgres`.
    config: String,
    /// `high` or `low`.
    group: String,
    /// Committed transactions (all five kinds) per second.
    per_sec: f64,
    committed: u64,
    /// Transactions that ended in an error (a lock policy's abort, a deadlock).
    aborted: u64,
    /// Mean response time of the committed transactions.
    mean_us: f64,
    /// New-Order's.
    p50_us: f64,
    p99_us: f64,
    seconds: u64,
}

fn parse_group(line: &str) -> Result<Group, String> {
    let f: Vec<&str> = line.split(',').collect();
    let [
        server,
        config,
        group,
        per_sec,
        committed,
        aborted,
        mean,
        p50,
        p99,
        seconds,
    ] = &f[..]
    else {
        return Err(format!(
            "a run's line has {} fields, not 10: {line}",
            f.len()
        ));
    };
    if !["high", "low"].contains(group) {
        return Err(format!("`{group}` is not a client group in: {line}"));
    }
    let num = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{v}` is not a figure in: {line}"))
    };
    let int = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("`{v}` is not a count in: {line}"))
    };
    Ok(Group {
        server: (*server).to_owned(),
        config: (*config).to_owned(),
        group: (*group).to_owned(),
        per_sec: num(per_sec)?,
        committed: int(committed)?,
        aborted: int(aborted)?,
        mean_us: num(mean)?,
        p50_us: num(p50)?,
        p99_us: num(p99)?,
        seconds: int(seconds)?.max(1),
    })
}

/// One run: both groups, and against `standard` (Overtake's runs but `standard` itself).
#[derive(Debug, Serialize, PartialEq)]
struct Run {
    server: String,
    config: String,
    high: Group,
    low: Group,
    /// High-priority mean response time under `standard` over under this policy.
    high_speedup: Option<f64>,
    /// The other clients' mean response time under this policy over under `standard`.
    low_penalty: Option<f64>,
    /// The other clients' committed transactions per second under this policy over under
    /// `standard` (a policy that aborts them shows here, not in the mean of those that
    /// committed).
    low_throughput: Option<f64>,
    classes: Vec<ClassTime>,
}

#[derive(Debug, Serialize)]
struct LocksSqlReport {
    seconds: u32,
    high_threads: u32,
    low_threads: u32,
    runs: Vec<Run>,
}

/// Pairs each run's two groups and sets its ratios to Overtake's `standard` run.
fn runs(groups: &[Group], classes: &[(String, ClassTime)]) -> Result<Vec<Run>, String> {
    let mut runs = Vec::new();
    for high in groups.iter().filter(|g| g.group == "high") {
        let low = groups
            .iter()
            .find(|g| g.group == "low" && g.server == high.server && g.config == high.config)
            .ok_or_else(|| {
                format!(
                    "{} {}: no line for the other clients",
                    high.server, high.config
                )
            })?;
        runs.push(Run {
            server: high.server.clone(),
            config: high.config.clone(),
            high: high.clone(),
            low: low.clone(),
            high_speedup: None,
            low_penalty: None,
            low_throughput: None,
            classes: super::classes::of_run(classes, &high.server, &high.config),
        });
    }
    let base = runs
        .iter()
        .find(|r| r.server == "overtake" && r.config == "standard")
        .map(|r| (r.high.mean_us, r.low.mean_us, r.low.per_sec));
    let ratio = |a: f64, b: f64| (a > 0.0 && b > 0.0).then(|| a / b);
    if let Some((high, low, low_per_sec)) = base {
        for r in runs
            .iter_mut()
            .filter(|r| r.server == "overtake" && r.config != "standard")
        {
            r.high_speedup = ratio(high, r.high.mean_us);
            r.low_penalty = ratio(r.low.mean_us, low);
            r.low_throughput = ratio(r.low.per_sec, low_per_sec);
        }
    }
    Ok(runs)
}

pub fn compare(args: &CompareLocksSqlArgs) -> Result<(), String> {
    each_once("--policies", &args.policies, String::clone)?;
    let mut policies = vec!["standard".to_owned()];
    policies.extend(args.policies.iter().filter(|p| *p != "standard").cloned());
    let finished = super::script::run(
        "locks-sql.sh",
        &[
            args.seconds.to_string(),
            args.high_threads.to_string(),
            args.low_threads.to_string(),
            policies.join(","),
        ],
    )?;
    let (groups, classes) = super::classes::split(&finished.lines, parse_group)?;
    let report = LocksSqlReport {
        seconds: args.seconds,
        high_threads: args.high_threads,
        low_threads: args.low_threads,
        runs: runs(&groups, &classes)?,
    };
    if args.json {
        print_json(&report, &[])?;
    } else {
        print(&report);
    }
    finished.result()
}

fn print(report: &LocksSqlReport) {
    println!(
        "TPC-C, 1 warehouse, no think time: {} high-priority go-tpc thread(s) beside {} at the \
         default level; Overtake under 2PL per lock policy, PostgreSQL 15; {} s per run",
        report.high_threads, report.low_threads, report.seconds
    );
    let ms = |us: f64| format!("{:.1}", us / 1000.0);
    let ratio = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}"));
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .flat_map(|r| {
            [
                (&r.high, ratio(r.high_speedup), "-".to_owned()),
                (&r.low, ratio(r.low_penalty), ratio(r.low_throughput)),
            ]
            .into_iter()
            .map(move |(g, vs_standard, throughput)| {
                vec![
                    r.server.clone(),
                    r.config.clone(),
                    g.group.clone(),
                    format!("{:.0}", g.per_sec),
                    g.aborted.to_string(),
                    ms(g.mean_us),
                    ms(g.p50_us),
                    ms(g.p99_us),
                    vs_standard,
                    throughput,
                ]
            })
        })
        .collect();
    print_table(
        &[
            "server",
            "config",
            "clients",
            "tps",
            "aborted",
            "mean ms",
            "NO p50 ms",
            "NO p99 ms",
            "speedup / penalty",
            "tps / standard",
        ],
        &rows,
    );
    super::classes::print(
        report
            .runs
            .iter()
            .map(|r| (r.config.as_str(), r.classes.as_slice())),
        "a TPC-C transaction is one block; locks: waiting for row locks",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::compare::classes::parse_class;

    fn groups(lines: &[&str]) -> Vec<Group> {
        lines
            .iter()
            .map(|l| parse_group(l).expect("a valid line"))
            .collect()
    }

    #[test]
    fn runs_pair_their_groups_and_compare_with_standard() {
        let groups = groups(&[
            "postgres,postgres,high,300.0,4500,0,3000,3100,11000,15",
            "postgres,postgres,low,900.0,13500,0,4000,4700,17000,15",
            "overtake,standard,high,100.0,1500,0,8000,6300,19000,15",
            "overtake,standard,low,400.0,6000,2000,8000,6800,22000,15",
            "overtake,pow,high,400.0,6000,0,2000,2600,11000,15",
            "overtake,pow,low,200.0,3000,9000,6000,4700,23000,15",
        ]);
        let class = |l: &str| parse_class(l).expect("a valid class line");
        let classes = [class("class,pow,high,90,10,5,100,2000,300,4000,0,0,10.5")];
        let runs = runs(&groups, &classes).expect("paired");
        assert_eq!(runs.len(), 3);
        // PostgreSQL has no lock policy: no ratios to Overtake's, and no classes.
        assert_eq!(runs[0].high_speedup, None);
        assert!(runs[0].classes.is_empty());
        // The baseline is not compared with itself.
        assert_eq!(runs[1].high_speedup, None);
        let pow = &runs[2];
        assert_eq!(pow.high_speedup, Some(4.0));
        assert_eq!(pow.low_penalty, Some(0.75));
        assert_eq!(pow.low_throughput, Some(0.5));
        assert_eq!(pow.low.aborted, 9000);
        assert_eq!(pow.classes.len(), 1);
    }

    #[test]
    fn without_the_baseline_there_are_no_ratios() {
        let groups = groups(&[
            "overtake,pow,high,400.0,6000,0,2000,2600,11000,15",
            "overtake,pow,low,200.0,3000,9000,6000,4700,23000,15",
        ]);
        let runs = runs(&groups, &[]).expect("paired");
        assert_eq!(runs[0].high_speedup, None);
        assert_eq!(runs[0].low_throughput, None);
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(parse_group("overtake,pow,high,1,1,1,1,1,1").is_err());
        assert!(parse_group("overtake,pow,middle,1,1,1,1,1,1,1").is_err());
        assert!(parse_group("overtake,pow,high,x,1,1,1,1,1,1").is_err());
        assert!(parse_group("overtake,pow,high,1,1,-1,1,1,1,1").is_err());
        let lone = groups(&["overtake,pow,high,400.0,6000,0,2000,2600,11000,15"]);
        assert!(runs(&lone, &[]).is_err(), "a run without its other group");
    }
}
