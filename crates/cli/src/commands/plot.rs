//! `overtake plot wire`: figures from `scripts/wire-vs-postgres.sh`'s CSV file. For each
//! workload, both servers' throughput by client count and each server's CPU per statement; the
//! script measured, this only draws (a run missing from the file draws no point).
//!
//! Must never: invent a value for a run the file does not hold, or accept a malformed file
//! silently (a bad line is an error naming it).

use std::collections::BTreeMap;

use crate::report::plot::{self, Curve};
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum Plot {
    /// `scripts/wire-vs-postgres.sh`'s CSV: per workload, both servers' throughput and CPU per
    /// statement by client count.
    Wire(PlotWireArgs),
}

/// `plot wire`: where the runs are and where the figures go.
#[derive(Debug, Args)]
pub struct PlotWireArgs {
    /// The CSV file the script wrote (its fourth argument).
    pub csv: std::path::PathBuf,
    /// Write the SVG figures into this directory (created if needed).
    #[arg(long, value_name = "DIR")]
    pub plot: std::path::PathBuf,
}

/// The script's servers, in the order they are drawn, with the names the figures give them.
const SERVERS: [(&str, &str); 2] = [("postgres", "PostgreSQL 15"), ("overtake", "Overtake")];

/// One run: a server serving a workload to some clients.
#[derive(Debug)]
struct Run {
    workload: String,
    clients: u32,
    server: String,
    tps: f64,
    server_us: Option<f64>,
}

fn parse(text: &str) -> Result<Vec<Run>, String> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, h)| h).unwrap_or_default();
    if !header.starts_with("workload,clients,server,tps,server_us_per_statement") {
        return Err(format!(
            "not a CSV file of scripts/wire-vs-postgres.sh: its header is {header:?}"
        ));
    }
    let mut runs = Vec::new();
    for (i, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let fields: Vec<&str> = line.split(',').collect();
        let [workload, clients, server, tps, server_us, ..] = fields.as_slice() else {
            return Err(bad("fewer than five fields"));
        };
        runs.push(Run {
            workload: (*workload).to_owned(),
            clients: clients.parse().map_err(|_| bad("clients is not a count"))?,
            server: (*server).to_owned(),
            tps: tps.parse().map_err(|_| bad("tps is not a number"))?,
            // The script leaves it empty when it could not measure it.
            server_us: server_us.parse().ok(),
        });
    }
    if runs.is_empty() {
        return Err("the CSV file holds no run".into());
    }
    Ok(runs)
}

pub fn run(args: &PlotWireArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.csv)
        .map_err(|e| format!("cannot read {}: {e}", args.csv.display()))?;
    let runs = parse(&text)?;
    plot::prepare_dir(&args.plot)?;
    let mut workloads: BTreeMap<&str, Vec<&Run>> = BTreeMap::new();
    for r in &runs {
        workloads.entry(&r.workload).or_default().push(r);
    }
    for (workload, runs) in workloads {
        let mut clients: Vec<u32> = runs.iter().map(|r| r.clients).collect();
        clients.sort_unstable();
        clients.dedup();
        let labels: Vec<String> = clients.iter().map(u32::to_string).collect();
        // Repeated runs of one point are averaged.
        let curves = |value: &dyn Fn(&Run) -> Option<f64>| -> Vec<Curve> {
            SERVERS
                .iter()
                .map(|(server, name)| Curve {
                    name: (*name).to_owned(),
                    values: clients
                        .iter()
                        .map(|c| {
                            let vs: Vec<f64> = runs
                                .iter()
                                .filter(|r| r.clients == *c && r.server == *server)
                                .filter_map(|r| value(r))
                                .collect();
                            (!vs.is_empty()).then(|| vs.iter().sum::<f64>() / vs.len() as f64)
                        })
                        .collect(),
                })
                .collect()
        };
        let mut files = Vec::new();
        files.extend(plot::sweep(
            &args.plot,
            &format!("wire-{workload}-tps.svg"),
            &format!("{workload}: transactions per second by clients"),
            ("pgbench clients", "transactions per second"),
            &labels,
            &curves(&|r| Some(r.tps)),
            false,
        )?);
        files.extend(plot::sweep(
            &args.plot,
            &format!("wire-{workload}-cpu.svg"),
            &format!("{workload}: server CPU per statement by clients"),
            ("pgbench clients", "server CPU per statement (us)"),
            &labels,
            &curves(&|r| r.server_us),
            false,
        )?);
        for f in files {
            println!("wrote {}", f.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn a_bad_file_is_an_error_naming_the_line() {
        assert!(parse("a,b\n").unwrap_err().contains("header"));
        let header = "workload,clients,server,tps,server_us_per_statement,x,p50,p99\n";
        assert!(parse(header).unwrap_err().contains("no run"));
        let e = parse(&format!("{header}select,eight,postgres,1,2\n")).unwrap_err();
        assert!(e.contains("line 2") && e.contains("clients"), "{e}");
        let runs = parse(&format!("{header}select,8,overtake,100.5,,3,,\n")).expect("parses");
        assert_eq!((runs[0].clients, runs[0].tps), (8, 100.5));
        assert_eq!(runs[0].server_us, None, "not measured");
    }
}
