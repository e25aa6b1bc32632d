//! `overtake compare tiers-sql`: UFS's experiment over the wire. CPU-bursty TPC-C sessions
//! (go-tpc's closed loops) beside CPU-bound CH-benCHmark sessions (Query 2 back to back) in
//! UFS's mixes — SOLO, MIN:MAX, 50:50 — and two background groups weighted 2:3, their tiers and
//! weights given to Overtake's own scheduler, to the OS's schedulers through Overtake's session
//! threads, and to the OS's schedulers on PostgreSQL 15's backends.
//!
//! The runs are driven by `scripts/tiers-sql.sh`, which writes a line per finished run (and
//! Overtake's `class` lines); this command reads and reports them with their ratios to the
//! same server and scheduler's runs of each kind alone. It must never report a run the script
//! did not finish, nor a ratio without its baseline run.

use clap::Args;
use serde::Serialize;

use super::classes::ClassTime;
use super::htap::{Line, parse_line};
use super::tiers::TiersSchedulerArg;
use crate::report::{print_json, print_table};

/// The servers `compare tiers-sql` can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServerArg {
    Overtake,
    Postgres,
}

impl ServerArg {
    fn name(self) -> &'static str {
        match self {
            ServerArg::Overtake => "overtake",
            ServerArg::Postgres => "postgres",
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareTiersSqlArgs {
    /// Schedulers: `overtake` (Overtake's tiers, its sessions' statements tasks on its
    /// workers; Overtake only) and the OS's (`eevdf`: a CPU cgroup per group, weighted; `idle`:
    /// background sessions SCHED_IDLE; `fifo`, `rr`: time-sensitive sessions SCHED_FIFO /
    /// SCHED_RR 99), on Overtake's session threads and on PostgreSQL's backends.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "overtake,eevdf,idle,fifo,rr"
    )]
    pub schedulers: Vec<TiersSchedulerArg>,
    /// The servers to run.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "overtake,postgres"
    )]
    pub servers: Vec<ServerArg>,
    /// Seconds per run.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..=3600))]
    pub seconds: u32,
    /// Bursty sessions (go-tpc TPC-C threads), and as many bound ones; each weights group has
    /// twice as many.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub sessions: u32,
    /// Skip the shares-by-weight runs.
    #[arg(long)]
    pub no_weights: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// UFS's mixes, in the order they run.
const MIXES: [&str; 4] = ["solo", "bound", "minmax", "5050"];

/// The runs to ask the script for, as server:scheduler:mix.
fn plan(args: &CompareTiersSqlArgs) -> Result<Vec<String>, String> {
    crate::commands::flags::each_once("--schedulers", &args.schedulers, |s| s.name().to_owned())?;
    crate::commands::flags::each_once("--servers", &args.servers, |s| s.name().to_owned())?;
    if args.schedulers.contains(&TiersSchedulerArg::Ufs) {
        return Err(
            "ufs: not over the wire here (it needs overtake-ufs loaded, and \
                    PostgreSQL's backends in cgroups named by tier); `compare tiers` runs it"
                .to_owned(),
        );
    }
    let mut runs = Vec::new();
    for &scheduler in &args.schedulers {
        for &server in &args.servers {
            if server == ServerArg::Postgres && scheduler == TiersSchedulerArg::Overtake {
                continue;
            }
            let weights = !args.no_weights
                && matches!(
                    scheduler,
                    TiersSchedulerArg::Overtake | TiersSchedulerArg::Eevdf
                );
            for mix in MIXES.iter().chain(weights.then_some(&"weights")) {
                runs.push(format!("{}:{}:{mix}", server.name(), scheduler.name()));
            }
        }
    }
    if runs.is_empty() {
        return Err("nothing to run: PostgreSQL has no scheduler of its own".to_owned());
    }
    Ok(runs)
}

/// A weights run as the script wrote it.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct WeightsRun {
    server: String,
    scheduler: String,
    weights: [u32; 2],
    /// Query 2s each group completed.
    queries: [u64; 2],
    /// The first group's share of the queries both completed.
    share_first: Option<f64>,
    /// Its share by weight.
    want: f64,
    errors: u64,
}

fn parse_weights(line: &str) -> Result<WeightsRun, String> {
    let f: Vec<&str> = line.split(',').collect();
    let [
        "weights",
        server,
        scheduler,
        w1,
        w2,
        q1,
        q2,
        _seconds,
        errors,
    ] = &f[..]
    else {
        return Err(format!("not a weights line of 9 fields: {line}"));
    };
    let int = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("`{v}` is not a count in: {line}"))
    };
    let weight = |v: &str| {
        v.parse::<u32>()
            .ok()
            .filter(|w| (1..=10_000).contains(w))
            .ok_or_else(|| format!("`{v}` is not a weight in: {line}"))
    };
    let (weights, queries) = ([weight(w1)?, weight(w2)?], [int(q1)?, int(q2)?]);
    let done = queries[0] + queries[1];
    Ok(WeightsRun {
        server: (*server).to_owned(),
        scheduler: (*scheduler).to_owned(),
        weights,
        queries,
        share_first: (done > 0).then(|| queries[0] as f64 / done as f64),
        want: f64::from(weights[0]) / f64::from(weights[0] + weights[1]),
        errors: int(errors)?,
    })
}

/// A script line: a mix's run or a weights run.
enum ScriptLine {
    Mix(Line),
    Weights(WeightsRun),
}

fn parse_run(line: &str) -> Result<ScriptLine, String> {
    if line.starts_with("weights,") {
        return parse_weights(line).map(ScriptLine::Weights);
    }
    let run = parse_line(line)?;
    match run.config.split_once('/') {
        Some((_, mix)) if MIXES.contains(&mix) => Ok(ScriptLine::Mix(run)),
        _ => Err(format!("`{}` is not scheduler/mix in: {line}", run.config)),
    }
}

#[derive(Debug, Serialize, PartialEq)]
struct Bursty {
    per_sec: f64,
    /// Over the same server and scheduler's SOLO run's (none without it).
    rel_solo: Option<f64>,
    /// New-Order's.
    p50_us: f64,
    p99_us: f64,
}

#[derive(Debug, Serialize, PartialEq)]
struct Bound {
    per_min: f64,
    /// Over the same server and scheduler's bound sessions alone (none without that run).
    rel_alone: Option<f64>,
}

#[derive(Debug, Serialize, PartialEq)]
struct MixRun {
    server: String,
    /// scheduler/mix, as the class lines name the run.
    #[serde(skip)]
    config: String,
    scheduler: String,
    mix: String,
    /// None when the mix has no bursty sessions.
    bursty: Option<Bursty>,
    /// None when the mix has no bound sessions.
    bound: Option<Bound>,
    errors: u64,
    /// Overtake's runs: where each level's transactions spent their time.
    classes: Vec<ClassTime>,
}

#[derive(Debug, Serialize)]
struct TiersSqlReport {
    seconds: u32,
    sessions: u32,
    runs: Vec<MixRun>,
    weights: Vec<WeightsRun>,
}

/// The mixes' runs with their ratios to the same server and scheduler's runs alone.
fn mix_runs(lines: &[Line], classes: &[(String, ClassTime)]) -> Vec<MixRun> {
    let alone = |server: &str, scheduler: &str, mix: &str| {
        lines
            .iter()
            .find(|l| l.server == server && l.config == format!("{scheduler}/{mix}"))
    };
    let per_min = |l: &Line| l.ap_queries as f64 * 60.0 / l.seconds as f64;
    let ratio = |a: f64, b: f64| (a > 0.0 && b > 0.0).then(|| a / b);
    lines
        .iter()
        .map(|l| {
            let (scheduler, mix) = l.config.split_once('/').unwrap_or((&l.config, ""));
            let solo = alone(&l.server, scheduler, "solo");
            let bound = alone(&l.server, scheduler, "bound");
            MixRun {
                server: l.server.clone(),
                config: l.config.clone(),
                scheduler: scheduler.to_owned(),
                mix: mix.to_owned(),
                bursty: (mix != "bound").then(|| Bursty {
                    per_sec: l.tp_per_sec,
                    rel_solo: solo.and_then(|s| ratio(l.tp_per_sec, s.tp_per_sec)),
                    p50_us: l.latency_us[0],
                    p99_us: l.latency_us[3],
                }),
                bound: (mix != "solo").then(|| Bound {
                    per_min: per_min(l),
                    rel_alone: bound.and_then(|b| ratio(per_min(l), per_min(b))),
                }),
                errors: l.errors,
                classes: super::classes::of_run(classes, &l.server, &l.config),
            }
        })
        .collect()
}

pub fn compare(args: &CompareTiersSqlArgs) -> Result<(), String> {
    let planned = plan(args)?;
    let finished = super::script::run(
        "tiers-sql.sh",
        &[
            args.seconds.to_string(),
            args.sessions.to_string(),
            planned.join(" "),
        ],
    )?;
    let (lines, classes) = super::classes::split(&finished.lines, parse_run)?;
    let mut mixes = Vec::new();
    let mut weights = Vec::new();
    for line in lines {
        match line {
            ScriptLine::Mix(l) => mixes.push(l),
            ScriptLine::Weights(w) => weights.push(w),
        }
    }
    let report = TiersSqlReport {
        seconds: args.seconds,
        sessions: args.sessions,
        runs: mix_runs(&mixes, &classes),
        weights,
    };
    if args.json {
        print_json(&report, &[])?;
    } else {
        print(&report);
    }
    finished.result()
}

fn print(report: &TiersSqlReport) {
    println!(
        "{} bursty TPC-C sessions and {} bound CH Query 2 sessions (go-tpc, unchanged), \
         1 warehouse; Overtake's tiers, and the OS's schedulers on Overtake's session threads \
         and on PostgreSQL 15's backends; {} s per run",
        report.sessions, report.sessions, report.seconds
    );
    let ms = |us: f64| format!("{:.1}", us / 1000.0);
    let ratio = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}"));
    let dash = || "-".to_owned();
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            let b = r.bursty.as_ref();
            let g = r.bound.as_ref();
            vec![
                r.server.clone(),
                r.scheduler.clone(),
                r.mix.clone(),
                b.map_or_else(dash, |b| format!("{:.0}", b.per_sec)),
                b.map_or_else(dash, |b| ratio(b.rel_solo)),
                b.map_or_else(dash, |b| ms(b.p50_us)),
                b.map_or_else(dash, |b| ms(b.p99_us)),
                g.map_or_else(dash, |g| format!("{:.1}", g.per_min)),
                g.map_or_else(dash, |g| ratio(g.rel_alone)),
                r.errors.to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            "server",
            "scheduler",
            "mix",
            "bursty tx/s",
            "x SOLO",
            "NO p50 ms",
            "NO p99 ms",
            "bound q/min",
            "x alone",
            "errors",
        ],
        &rows,
    );
    if !report.weights.is_empty() {
        println!("\nshares by weight: two background groups of bound sessions");
        let rows: Vec<Vec<String>> = report
            .weights
            .iter()
            .map(|w| {
                vec![
                    w.server.clone(),
                    w.scheduler.clone(),
                    format!("{}:{}", w.weights[0], w.weights[1]),
                    format!("{} / {}", w.queries[0], w.queries[1]),
                    w.share_first.map_or_else(dash, |s| format!("{s:.3}")),
                    format!("{:.3}", w.want),
                ]
            })
            .collect();
        print_table(
            &[
                "server",
                "scheduler",
                "weights",
                "queries",
                "share of first",
                "by weight",
            ],
            &rows,
        );
    }
    super::classes::print(
        report
            .runs
            .iter()
            .map(|r| (r.config.as_str(), r.classes.as_slice())),
        "a TPC-C transaction or a query is one",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::compare::classes::parse_class;

    fn lines(text: &[&str]) -> Vec<Line> {
        text.iter()
            .map(|l| match parse_run(l).expect("a valid line") {
                ScriptLine::Mix(l) => l,
                ScriptLine::Weights(_) => panic!("not a mix line: {l}"),
            })
            .collect()
    }

    #[test]
    fn mixes_compare_with_their_own_servers_runs_alone() {
        let lines = lines(&[
            "overtake,overtake/solo,1000.0,2000,3000,4000,5000,6000,7000,0,20,0",
            "overtake,overtake/bound,0.0,0,0,0,0,0,0,40,20,0",
            "overtake,overtake/minmax,950.0,2100,3000,4000,5500,6000,7000,10,20,0",
            "postgres,eevdf/minmax,500.0,4000,6000,8000,9000,9000,9000,30,20,0",
        ]);
        let class = |l: &str| parse_class(l).expect("a valid class line");
        let classes = [class(
            "class,overtake/minmax,normal,900,0,5,100,2000,300,4000,0,0,10.5",
        )];
        let runs = mix_runs(&lines, &classes);
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[0].bound, None, "SOLO has no bound sessions");
        assert_eq!(runs[1].bursty, None, "bound has no bursty sessions");
        let minmax = &runs[2];
        assert_eq!(minmax.bursty.as_ref().unwrap().rel_solo, Some(0.95));
        assert_eq!(minmax.bound.as_ref().unwrap().rel_alone, Some(0.25));
        assert_eq!(minmax.bound.as_ref().unwrap().per_min, 30.0);
        assert_eq!(minmax.classes.len(), 1);
        // PostgreSQL's run has no SOLO run of its own here: no ratio to Overtake's.
        assert_eq!(runs[3].bursty.as_ref().unwrap().rel_solo, None);
        assert!(runs[3].classes.is_empty());
    }

    #[test]
    fn weights_lines_give_the_first_groups_share() {
        let ScriptLine::Weights(w) =
            parse_run("weights,postgres,eevdf,200,300,40,60,20,0").expect("valid")
        else {
            panic!("a weights line");
        };
        assert_eq!(w.share_first, Some(0.4));
        assert_eq!(w.want, 0.4);
        let ScriptLine::Weights(none) =
            parse_run("weights,overtake,overtake,200,300,0,0,20,3").expect("valid")
        else {
            panic!("a weights line");
        };
        assert_eq!(none.share_first, None, "no queries: no share");
    }

    #[test]
    fn bad_lines_and_plans_are_errors() {
        assert!(parse_run("weights,postgres,eevdf,200,0,40,60,20,0").is_err());
        assert!(parse_run("weights,postgres,eevdf,200,300,40,20,0").is_err());
        assert!(parse_run("overtake,overtake,1,1,1,1,1,1,1,0,20,0").is_err());
        assert!(parse_run("overtake,overtake/often,1,1,1,1,1,1,1,0,20,0").is_err());
        let args =
            |schedulers: Vec<TiersSchedulerArg>, servers: Vec<ServerArg>| CompareTiersSqlArgs {
                schedulers,
                servers,
                seconds: 5,
                sessions: 1,
                no_weights: false,
                json: false,
            };
        use TiersSchedulerArg::*;
        assert!(plan(&args(vec![Ufs], vec![ServerArg::Overtake])).is_err());
        assert!(plan(&args(vec![Overtake], vec![ServerArg::Postgres])).is_err());
        assert!(plan(&args(vec![Idle, Idle], vec![ServerArg::Postgres])).is_err());
        let runs = plan(&args(
            vec![Overtake, Eevdf, Idle],
            vec![ServerArg::Overtake, ServerArg::Postgres],
        ))
        .expect("a plan");
        assert!(runs.contains(&"overtake:overtake:weights".to_owned()));
        assert!(runs.contains(&"postgres:eevdf:weights".to_owned()));
        assert!(!runs.contains(&"postgres:idle:weights".to_owned()));
        assert!(!runs.iter().any(|r| r.starts_with("postgres:overtake")));
    }
}
