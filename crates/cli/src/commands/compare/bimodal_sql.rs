//! `overtake compare bimodal-sql`: Aspen's bimodal workload over the wire. Sessions without
//! priorities send short point reads and long scans (pgbench, unchanged, open loop) to Overtake
//! under `--policy wait` and `--policy quantum`, and to PostgreSQL 15, at a range of short-read
//! rates; reported per run with the short reads' p99, and per server Aspen's metric: the highest
//! short-read rate served with its p99 under the SLO.
//!
//! The runs are driven by `scripts/bimodal-sql.sh`, which writes one CSV line per finished run;
//! this command starts it (`script`) and reports the lines. It must never report a run the
//! script did not finish.

use clap::Args;
use serde::Serialize;

use crate::report::{print_json, print_table};

/// Every server configuration the script knows, in the order it runs them.
const CONFIGS: [&str; 3] = ["overtake:wait", "overtake:quantum", "postgres:default"];

#[derive(Debug, Args)]
pub struct CompareBimodalSqlArgs {
    /// Seconds per run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=3600))]
    pub seconds: u32,
    /// The short reads' offered rates per second (8 sessions): one run per rate and server.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,2000,4000,8000",
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub rates: Vec<u32>,
    /// The long scans' offered rate per second (2 sessions, each scan reads 200,000 rows).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub long_rate: u32,
    /// The short reads' p99 limit, in microseconds, of Aspen's metric.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=60_000_000))]
    pub slo_us: u64,
    /// Which servers (default: all), from overtake:wait, overtake:quantum, postgres:default.
    #[arg(long, value_delimiter = ',', value_parser = parse_config)]
    pub configs: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn parse_config(s: &str) -> Result<String, String> {
    if CONFIGS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "unknown server `{s}`; they are {}",
            CONFIGS.join(", ")
        ))
    }
}

/// One run as the script wrote it.
#[derive(Debug, Serialize, PartialEq)]
struct Run {
    server: String,
    config: String,
    offered_per_sec: f64,
    short: Latency,
    long: Latency,
    /// Statements pgbench reported failed.
    failed: u64,
}

#[derive(Debug, Serialize, PartialEq)]
struct Latency {
    per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    /// None for the long scans (too few in a run for it to mean anything).
    p999_us: Option<f64>,
}

/// Aspen's metric for one server configuration.
#[derive(Debug, Serialize, PartialEq)]
struct Slo {
    server: String,
    config: String,
    /// The highest short-read throughput of a run whose short p99 kept under the SLO (none if
    /// no run did).
    short_per_sec: Option<f64>,
    /// That over `overtake:wait`'s (none without a figure for both).
    rel_wait: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Report {
    seconds: u32,
    long_rate: u32,
    slo_us: u64,
    runs: Vec<Run>,
    slo: Vec<Slo>,
}

fn parse_line(line: &str) -> Result<Run, String> {
    let f: Vec<&str> = line.split(',').collect();
    let [
        server,
        config,
        offered,
        s_rate,
        s50,
        s99,
        s999,
        l_rate,
        l50,
        l99,
        failed,
    ] = &f[..]
    else {
        return Err(format!(
            "a run's line has {} fields, not 11: {line}",
            f.len()
        ));
    };
    let num = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("`{v}` is not a figure in: {line}"))
    };
    Ok(Run {
        server: (*server).to_owned(),
        config: (*config).to_owned(),
        offered_per_sec: num(offered)?,
        short: Latency {
            per_sec: num(s_rate)?,
            p50_us: num(s50)?,
            p99_us: num(s99)?,
            p999_us: Some(num(s999)?),
        },
        long: Latency {
            per_sec: num(l_rate)?,
            p50_us: num(l50)?,
            p99_us: num(l99)?,
            p999_us: None,
        },
        failed: failed
            .parse()
            .map_err(|_| format!("`{failed}` is not a count in: {line}"))?,
    })
}

/// Per server configuration, in the order first run: the highest short throughput under the
/// SLO, and its ratio to `overtake:wait`'s.
fn slo(runs: &[Run], slo_us: u64) -> Vec<Slo> {
    let mut configs: Vec<(&str, &str)> = Vec::new();
    for r in runs {
        if !configs.contains(&(&r.server, &r.config)) {
            configs.push((&r.server, &r.config));
        }
    }
    let best = |server: &str, config: &str| {
        runs.iter()
            .filter(|r| r.server == server && r.config == config)
            .filter(|r| r.short.p99_us <= slo_us as f64)
            .map(|r| r.short.per_sec)
            .reduce(f64::max)
    };
    let wait = best("overtake", "wait");
    configs
        .into_iter()
        .map(|(server, config)| {
            let short_per_sec = best(server, config);
            Slo {
                server: server.to_owned(),
                config: config.to_owned(),
                short_per_sec,
                rel_wait: short_per_sec.zip(wait).map(|(s, w)| s / w),
            }
        })
        .collect()
}

pub fn compare(args: &CompareBimodalSqlArgs) -> Result<(), String> {
    let configs = if args.configs.is_empty() {
        CONFIGS.join(" ")
    } else {
        args.configs.join(" ")
    };
    let rates: Vec<String> = args.rates.iter().map(u32::to_string).collect();
    let finished = super::script::run(
        "bimodal-sql.sh",
        &[
            args.seconds.to_string(),
            rates.join(","),
            args.long_rate.to_string(),
            configs,
        ],
    )?;
    let runs = finished
        .lines
        .iter()
        .map(|l| parse_line(l))
        .collect::<Result<Vec<_>, _>>()?;
    let report = Report {
        seconds: args.seconds,
        long_rate: args.long_rate,
        slo_us: args.slo_us,
        slo: slo(&runs, args.slo_us),
        runs,
    };
    if args.json {
        print_json(&report, &[])?;
    } else {
        print(&report);
    }
    finished.result()
}

fn print(report: &Report) {
    println!(
        "Short reads (8 sessions) beside long scans (2 sessions, {}/s), no priorities; {} s per run",
        report.long_rate, report.seconds
    );
    let ms = |us: f64| format!("{:.2}", us / 1000.0);
    let rows: Vec<Vec<String>> = report
        .runs
        .iter()
        .map(|r| {
            vec![
                r.server.clone(),
                r.config.clone(),
                format!("{:.0}", r.offered_per_sec),
                format!("{:.0}", r.short.per_sec),
                ms(r.short.p50_us),
                ms(r.short.p99_us),
                r.short.p999_us.map_or("-".into(), ms),
                format!("{:.1}", r.long.per_sec),
                ms(r.long.p50_us),
                ms(r.long.p99_us),
                r.failed.to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            "server",
            "config",
            "offered/s",
            "short/s",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "long/s",
            "long p50 ms",
            "long p99 ms",
            "failed",
        ],
        &rows,
    );
    println!(
        "\nShort reads per second with their p99 under {} ms (Aspen's metric):",
        report.slo_us as f64 / 1000.0
    );
    let rows: Vec<Vec<String>> = report
        .slo
        .iter()
        .map(|s| {
            vec![
                s.server.clone(),
                s.config.clone(),
                s.short_per_sec.map_or("none".into(), |v| format!("{v:.0}")),
                s.rel_wait.map_or("-".into(), |v| format!("{v:.2}")),
            ]
        })
        .collect();
    print_table(&["server", "config", "short/s under SLO", "vs wait"], &rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slo_figure_is_the_best_run_under_the_limit_and_its_ratio_to_wait() {
        let runs: Vec<Run> = [
            "overtake,wait,1000,990,150,8000,9000,20,30000,60000,0",
            "overtake,wait,2000,1990,150,12000,19000,20,30000,60000,0",
            "overtake,quantum,1000,1000,180,3000,5000,20,30000,60000,0",
            "overtake,quantum,2000,2000,180,4000,6000,20,30000,60000,0",
            "postgres,default,1000,1000,150,11000,12000,20,15000,30000,1",
        ]
        .iter()
        .map(|l| parse_line(l).expect("a valid line"))
        .collect();
        let slo = slo(&runs, 10_000);
        assert_eq!(slo.len(), 3);
        assert_eq!(
            (slo[0].short_per_sec, slo[0].rel_wait),
            (Some(990.0), Some(1.0))
        );
        assert_eq!(slo[1].short_per_sec, Some(2000.0));
        assert_eq!(slo[1].rel_wait, Some(2000.0 / 990.0));
        assert_eq!((slo[2].short_per_sec, slo[2].rel_wait), (None, None));
        assert_eq!(runs[4].failed, 1);
    }

    #[test]
    fn bad_lines_and_flags_are_errors() {
        assert!(parse_line("overtake,wait,1").is_err());
        assert!(parse_line("overtake,wait,x,1,1,1,1,1,1,1,0").is_err());
        assert!(parse_line("overtake,wait,1,1,1,-1,1,1,1,1,0").is_err());
        assert!(parse_line("overtake,wait,1,1,1,1,1,1,1,1,x").is_err());
        assert!(parse_config("overtake:quantum").is_ok());
        assert!(parse_config("overtake:preempt").is_err());
    }
}
