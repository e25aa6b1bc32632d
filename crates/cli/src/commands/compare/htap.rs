//! `overtake compare htap`: TPC-C clients (time-sensitive) beside CH-benCHmark analytic
//! sessions (background) over the wire, on Overtake and on PostgreSQL 15 with the same clients
//! (go-tpc, unchanged), under Overtake's priorities and PostgreSQL's OS knobs.
//!
//! The runs are driven by `scripts/htap.sh` (servers, loads, go-tpc, PostgreSQL's knobs), which
//! writes one CSV line per finished run; this command starts it (`script`), reads the lines and reports them
//! with their ratios to the SOLO runs of the same server, and for Overtake's runs where each
//! priority level's transactions spent their time (the script's `class` lines, read from
//! `overtake_stat_classes`). It must never report a run the script did not finish: a line is
//! written only once its run's figures are in.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::classes::ClassTime;
use crate::report::{print_json, print_table};

/// Every run the script knows, as `server:config`, in the order it runs them.
const CONFIGS: [&str; 13] = [
    "postgres:solo-tp",
    "postgres:solo-ap",
    "postgres:default",
    "postgres:ap-nice-19",
    "postgres:ap-sched-idle",
    "postgres:tp-sched-fifo",
    "postgres:cgroup-weights",
    "overtake:solo-tp",
    "overtake:solo-ap",
    "overtake:same",
    "overtake:priorities-wait",
    "overtake:priorities-cooperative",
    "overtake:priorities-preempt",
];

#[derive(Debug, Args)]
pub struct CompareHtapArgs {
    /// Seconds per run.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(3..=3600))]
    pub seconds: u32,
    /// go-tpc's TPC-C threads (closed loop, no think time), at the time-sensitive level.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub tp_threads: u32,
    /// go-tpc's analytic threads, at the background level.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub ap_threads: u32,
    /// The CH-benCHmark queries each analytic thread runs in turn (go-tpc's names, q1 to q22).
    #[arg(long, default_value = "q2", value_parser = parse_queries)]
    pub queries: String,
    /// Which runs, as server:config (default: all of them), e.g.
    /// `overtake:solo-tp,overtake:priorities-preempt,postgres:solo-tp,postgres:ap-sched-idle`.
    #[arg(long, value_delimiter = ',', value_parser = parse_config)]
    pub configs: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Draw the runs into SVG figures in DIR: New-Order latency CDFs per server (through
    /// go-tpc's percentiles), TPC-C throughput and analytic queries per minute per run.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

fn parse_queries(s: &str) -> Result<String, String> {
    let valid = |q: &str| {
        q.strip_prefix('q')
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| (1..=22).contains(&n))
    };
    match s.split(',').find(|q| !valid(q)) {
        Some(bad) => Err(format!("`{bad}` is not a CH-benCHmark query (q1 to q22)")),
        None => Ok(s.to_owned()),
    }
}

fn parse_config(s: &str) -> Result<String, String> {
    if CONFIGS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "unknown run `{s}`; the runs are {}",
            CONFIGS.join(", ")
        ))
    }
}

/// One run's figures as the script wrote them (`scripts/tiers-sql.sh` writes its mixes' runs
/// so too).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Line {
    pub(super) server: String,
    pub(super) config: String,
    pub(super) tp_per_sec: f64,
    /// New-Order's latency at go-tpc's percentiles ([`PERCENTILES`]), microseconds.
    pub(super) latency_us: [f64; 6],
    pub(super) ap_queries: u64,
    pub(super) seconds: u64,
    pub(super) errors: u64,
}

/// The fractions go-tpc reports New-Order's latency at: p50, p90, p95, p99, p99.9 and the most.
const PERCENTILES: [f64; 6] = [0.5, 0.9, 0.95, 0.99, 0.999, 1.0];

pub(super) fn parse_line(line: &str) -> Result<Line, String> {
    let f: Vec<&str> = line.split(',').collect();
    let [server, config, tp, lat @ .., ap, seconds, errors] = &f[..] else {
        return Err(format!(
            "a run's line has {} fields, not 12: {line}",
            f.len()
        ));
    };
    let num = |v: &str| {
        v.parse::<f64>()
            .map_err(|_| format!("`{v}` is not a number in: {line}"))
    };
    let int = |v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("`{v}` is not a count in: {line}"))
    };
    let latency: Vec<f64> = lat.iter().map(|v| num(v)).collect::<Result<_, _>>()?;
    let latency_us = <[f64; 6]>::try_from(latency)
        .map_err(|_| format!("a run's line has {} fields, not 12: {line}", f.len()))?;
    Ok(Line {
        server: (*server).to_owned(),
        config: (*config).to_owned(),
        tp_per_sec: num(tp)?,
        latency_us,
        ap_queries: int(ap)?,
        seconds: int(seconds)?.max(1),
        errors: int(errors)?,
    })
}

#[derive(Debug, Serialize, PartialEq)]
struct Tp {
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    p999_us: f64,
    /// p99 over the same server's SOLO TP p99 (none without that run).
    rel_solo_p99: Option<f64>,
}

#[derive(Debug, Serialize, PartialEq)]
struct Ap {
    per_min: f64,
    /// Queries per minute over the same server's SOLO AP run's (none without it).
    rel_solo: Option<f64>,
}

#[derive(Debug, Serialize, PartialEq)]
struct Run {
    server: String,
    config: String,
    /// None in the SOLO AP run (no TPC-C clients).
    tp: Option<Tp>,
    /// None in the SOLO TP run (no analytic sessions).
    ap: Option<Ap>,
    /// Lines of go-tpc's output that reported an error.
    errors: u64,
    /// Overtake's runs: where each level's transactions spent their time (empty for
    /// PostgreSQL, which does not say).
    classes: Vec<ClassTime>,
}

#[derive(Debug, Serialize)]
struct HtapReport {
    seconds: u32,
    tp_threads: u32,
    ap_threads: u32,
    queries: String,
    runs: Vec<Run>,
}

/// The runs with their ratios to their server's SOLO runs, and Overtake's with their classes.
fn runs(lines: &[Line], classes: &[(String, ClassTime)]) -> Vec<Run> {
    let solo = |server: &str, config: &str| {
        lines
            .iter()
            .find(|l| l.server == server && l.config == config)
    };
    lines
        .iter()
        .map(|l| {
            let per_min = l.ap_queries as f64 * 60.0 / l.seconds as f64;
            let p99 = |l: &Line| l.latency_us[3];
            let solo_tp = solo(&l.server, "solo-tp").filter(|s| p99(s) > 0.0);
            let solo_ap = solo(&l.server, "solo-ap").filter(|s| s.ap_queries > 0);
            Run {
                server: l.server.clone(),
                config: l.config.clone(),
                tp: (l.config != "solo-ap").then(|| Tp {
                    per_sec: l.tp_per_sec,
                    p50_us: l.latency_us[0],
                    p99_us: p99(l),
                    p999_us: l.latency_us[4],
                    rel_solo_p99: solo_tp.map(|s| p99(l) / p99(s)),
                }),
                ap: (l.config != "solo-tp").then(|| Ap {
                    per_min,
                    rel_solo: solo_ap
                        .map(|s| per_min / (s.ap_queries as f64 * 60.0 / s.seconds as f64)),
                }),
                errors: l.errors,
                classes: super::classes::of_run(classes, &l.server, &l.config),
            }
        })
        .collect()
}

pub fn compare(args: &CompareHtapArgs) -> Result<(), String> {
    let configs = if args.configs.is_empty() {
        CONFIGS.join(" ")
    } else {
        args.configs.join(" ")
    };
    let finished = super::script::run(
        "htap.sh",
        &[
            args.seconds.to_string(),
            args.tp_threads.to_string(),
            args.ap_threads.to_string(),
            args.queries.clone(),
            configs,
        ],
    )?;
    let (lines, classes) = super::classes::split(&finished.lines, parse_line)?;
    let report = HtapReport {
        seconds: args.seconds,
        tp_threads: args.tp_threads,
        ap_threads: args.ap_threads,
        queries: args.queries.clone(),
        runs: runs(&lines, &classes),
    };
    let files = match &args.plot {
        Some(dir) => plot(dir, &lines)?,
        None => Vec::new(),
    };
    if args.json {
        print_json(&report, &files)?;
    } else {
        print(&report);
        for f in &files {
            println!("figure: {}", f.display());
        }
    }
    finished.result()
}

/// The figures of `--plot`: per server, New-Order's latency CDF of each run with TPC-C clients
/// (drawn through go-tpc's percentiles: it reports no more of the distribution); TPC-C
/// throughput and analytic queries per minute per run.
fn plot(dir: &Path, lines: &[Line]) -> Result<Vec<PathBuf>, String> {
    use crate::report::plot::{Distribution, bars, latency_cdf, prepare_dir};
    prepare_dir(dir)?;
    let mut files = Vec::new();
    for server in ["overtake", "postgres"] {
        let cdfs: Vec<Distribution> = lines
            .iter()
            .filter(|l| l.server == server && l.config != "solo-ap")
            .map(|l| Distribution {
                name: l.config.clone(),
                points: l.latency_us.iter().copied().zip(PERCENTILES).collect(),
            })
            .collect();
        let title = format!("{server}: New-Order latency beside CH queries (go-tpc's percentiles)");
        files.extend(latency_cdf(
            dir,
            &format!("htap-{server}-latency.svg"),
            &title,
            &cdfs,
        )?);
    }
    let name = |l: &Line| format!("{} {}", l.server, l.config);
    let tp: Vec<(String, f64)> = lines
        .iter()
        .filter(|l| l.config != "solo-ap")
        .map(|l| (name(l), l.tp_per_sec))
        .collect();
    files.extend(bars(
        dir,
        "htap-tp-throughput.svg",
        "TPC-C transactions per second",
        "transactions/s",
        &tp,
    )?);
    let ap: Vec<(String, f64)> = lines
        .iter()
        .filter(|l| l.config != "solo-tp")
        .map(|l| (name(l), l.ap_queries as f64 * 60.0 / l.seconds as f64))
        .collect();
    files.extend(bars(
        dir,
        "htap-ap-queries.svg",
        "CH-benCHmark queries per minute",
        "queries/min",
        &ap,
    )?);
    Ok(files)
}

fn print(report: &HtapReport) {
    println!(
        "TPC-C: {} go-tpc threads (New-Order latency); CH: {} threads running {}; {} s per run",
        report.tp_threads, report.ap_threads, report.queries, report.seconds
    );
    let ms = |us: f64| format!("{:.1}", us / 1000.0);
    let ratio = |r: Option<f64>| r.map_or("-".to_owned(), |r| format!("{r:.2}"));
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            let (tp, p50, p99, p999, rel) = match &r.tp {
                Some(t) => (
                    format!("{:.0}", t.per_sec),
                    ms(t.p50_us),
                    ms(t.p99_us),
                    ms(t.p999_us),
                    ratio(t.rel_solo_p99),
                ),
                None => {
                    let none = || "-".to_owned();
                    (none(), none(), none(), none(), none())
                }
            };
            let (ap, ap_rel) = match &r.ap {
                Some(a) => (format!("{:.1}", a.per_min), ratio(a.rel_solo)),
                None => ("-".to_owned(), "-".to_owned()),
            };
            vec![
                r.server.clone(),
                r.config.clone(),
                tp,
                p50,
                p99,
                p999,
                rel,
                ap,
                ap_rel,
                r.errors.to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            "server", "config", "tp/s", "p50 ms", "p99 ms", "p99.9 ms", "p99/solo", "ap/min",
            "ap/solo", "errors",
        ],
        &rows,
    );
    super::classes::print(
        report
            .runs
            .iter()
            .map(|r| (r.config.as_str(), r.classes.as_slice())),
        "a TPC-C transaction is one block; client: waiting between its statements",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::compare::classes::parse_class;

    #[test]
    fn runs_carry_ratios_to_their_own_servers_solo_runs() {
        let lines: Vec<Line> = [
            "overtake,solo-tp,1000.0,2000,3000,3500,4000,8000,9000,0,10,0",
            "overtake,solo-ap,0.0,0,0,0,0,0,0,30,10,0",
            "overtake,priorities-preempt,900.0,2000,3000,3500,5000,9000,9500,15,10,0",
            "postgres,default,500.0,3000,5000,6000,8000,16000,20000,40,10,2",
        ]
        .iter()
        .map(|l| parse_line(l).expect("a valid line"))
        .collect();
        let class = |l: &str| parse_class(l).expect("a valid class line");
        let classes = [
            class("class,priorities-preempt,high,90,10,5,100,2000,300,4000,0,0,10.5"),
            class("class,priorities-preempt,background,2,0,40,10,90000,50000,0,0,0,0"),
            class("class,solo-tp,high,1,0,0,1,1,1,1,1,1,1"),
        ];
        let runs = runs(&lines, &classes);
        assert_eq!(runs[0].ap, None, "SOLO TP has no analytic side");
        assert_eq!(runs[1].tp, None, "SOLO AP has no TPC-C side");
        let preempt = &runs[2];
        let tp = preempt.tp.as_ref().expect("tp");
        assert_eq!(tp.rel_solo_p99, Some(1.25));
        let ap = preempt.ap.as_ref().expect("ap");
        assert_eq!((ap.per_min, ap.rel_solo), (90.0, Some(0.5)));
        // PostgreSQL had no SOLO runs here: no ratios, never Overtake's.
        let pg = &runs[3];
        assert_eq!(pg.tp.as_ref().expect("tp").rel_solo_p99, None);
        assert_eq!(pg.ap.as_ref().expect("ap").rel_solo, None);
        assert_eq!(pg.errors, 2);
        // Each Overtake run has its own classes, as means per transaction; PostgreSQL none.
        assert!(pg.classes.is_empty());
        assert_eq!(runs[1].classes, Vec::new());
        let high = &preempt.classes[0];
        assert_eq!((high.transactions, high.rolled_back), (100, 10));
        assert_eq!((high.running_us, high.client_wait_us), (20.0, 40.0));
        assert_eq!(preempt.classes[1].preempted_us, 25_000.0);
        assert_eq!(runs[0].classes.len(), 1);
    }

    #[test]
    fn bad_lines_and_flags_are_errors() {
        assert!(parse_line("overtake,solo-tp,1").is_err());
        assert!(parse_line("overtake,solo-tp,x,1,1,1,1,1,1,1,1,1").is_err());
        assert!(parse_line("overtake,solo-tp,1,1,1,1,1,1,1,1,1").is_err());
        assert!(parse_queries("q1,q22").is_ok());
        assert!(parse_queries("q0").is_err());
        assert!(parse_queries("q2,drop").is_err());
        assert!(parse_config("overtake:priorities-preempt").is_ok());
        assert!(parse_config("overtake:default").is_err());
    }
}
