//! `--plot DIR` and `--csv FILE` for the commands that run the scheduler: which figures a set of
//! runs makes (a latency CDF per class with a line per run, throughput bars), and the raw
//! per-transaction file. Sweeps draw their own curves with [`crate::report::plot::sweep`].
//!
//! Output files are checked before the runs (a directory that cannot be made, a file that
//! cannot be written, is an error before any measurement) and written after them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use overtake_engine::Priority;
use overtake_sched::{RunStats, Status};

use crate::report::plot::{self, Distribution};

/// Figures and raw data of a run (or of every run of a comparison).
#[derive(Debug, Args, Clone, Default)]
pub struct FigureArgs {
    /// Write SVG figures into this directory (created if needed): latency CDFs per class (a line
    /// per run), throughput bars, and for sweeps a curve per policy.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Write every transaction's latency to this CSV file (one row per transaction: run, class,
    /// kind, arrival, queueing, latency, time preempted, status).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

impl FigureArgs {
    /// Checks that the outputs can be written, before anything runs.
    pub fn prepare(&self) -> Result<(), String> {
        if let Some(dir) = &self.plot {
            plot::prepare_dir(dir)?;
        }
        if let Some(file) = &self.csv {
            std::fs::File::create(file)
                .map_err(|e| format!("cannot write the CSV file {}: {e}", file.display()))?;
        }
        Ok(())
    }

    /// True if the runs must keep a record of every job.
    pub fn records_jobs(&self) -> bool {
        self.csv.is_some()
    }
}

/// One run as the figures see it.
pub struct Labeled<'a> {
    /// The run's name in legends and in the CSV file (e.g. its policy).
    pub label: String,
    pub stats: &'a RunStats,
    pub kinds: &'a [&'static str],
    pub elapsed: Duration,
}

/// How latency figures group transactions.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// One figure per priority class (workloads with priorities).
    Classes,
    /// One figure per kind of transaction (workloads without priorities, like the bimodal one).
    Kinds,
}

/// The classes that ran in any of `runs`, most urgent first.
fn classes(runs: &[Labeled]) -> Vec<Priority> {
    Priority::ALL
        .into_iter()
        .rev()
        .filter(|p| runs.iter().any(|r| r.stats.class(*p).latency.count() > 0))
        .collect()
}

/// Draws the figures of `runs` into `dir`: `latency-<class>.svg` per class (or
/// `latency-<kind>.svg` per kind) and `throughput.svg`. Returns the files written.
pub fn latency_figures(
    dir: &Path,
    what: &str,
    group: Group,
    runs: &[Labeled],
) -> Result<Vec<PathBuf>, String> {
    if group == Group::Kinds {
        return kind_figures(dir, what, runs);
    }
    let mut written = Vec::new();
    for class in classes(runs) {
        let lines: Vec<Distribution> = runs
            .iter()
            .map(|r| Distribution {
                name: r.label.clone(),
                points: r.stats.class(class).latency.cdf(),
            })
            .collect();
        let title = format!("{what}: {class} priority, latency of committed transactions");
        written.extend(plot::latency_cdf(
            dir,
            &format!("latency-{class}.svg"),
            &title,
            &lines,
        )?);
    }
    let bars: Vec<(String, f64)> = runs
        .iter()
        .flat_map(|r| {
            classes(std::slice::from_ref(r)).into_iter().map(|class| {
                let per_sec = r.stats.class(class).committed as f64 / r.elapsed.as_secs_f64();
                (format!("{} {class}", r.label), per_sec)
            })
        })
        .collect();
    let title = format!("{what}: committed transactions per second");
    written.extend(plot::bars(
        dir,
        "throughput.svg",
        &title,
        "committed per second",
        &bars,
    )?);
    Ok(written)
}

fn kind_figures(dir: &Path, what: &str, runs: &[Labeled]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    let kinds = runs.first().map_or(&[][..], |r| r.kinds);
    for (k, kind) in kinds.iter().enumerate() {
        let lines: Vec<Distribution> = runs
            .iter()
            .filter_map(|r| {
                let stats = r.stats.kinds.get(k)?;
                Some(Distribution {
                    name: r.label.clone(),
                    points: stats.latency.cdf(),
                })
            })
            .collect();
        let title = format!("{what}: {kind} requests, latency");
        written.extend(plot::latency_cdf(
            dir,
            &format!("latency-{kind}.svg"),
            &title,
            &lines,
        )?);
    }
    let bars: Vec<(String, f64)> = runs
        .iter()
        .map(|r| {
            let committed: u64 = r.stats.kinds.iter().map(|k| k.committed).sum();
            (r.label.clone(), committed as f64 / r.elapsed.as_secs_f64())
        })
        .collect();
    let title = format!("{what}: requests served per second");
    written.extend(plot::bars(
        dir,
        "throughput.svg",
        &title,
        "served per second",
        &bars,
    )?);
    Ok(written)
}

/// Writes every recorded job of `runs` to `file`.
pub fn write_csv(file: &Path, runs: &[Labeled]) -> Result<(), String> {
    let err = |e: std::io::Error| format!("cannot write the CSV file {}: {e}", file.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).map_err(err)?);
    writeln!(
        out,
        "run,class,kind,arrival_us,queued_us,latency_us,preempted_us,status"
    )
    .map_err(err)?;
    let us = |ns: u64| ns as f64 / 1_000.0;
    for run in runs {
        for j in &run.stats.jobs {
            let status = match j.status {
                Status::Committed => "committed",
                Status::RolledBack => "rolled back",
                _ => "failed",
            };
            writeln!(
                out,
                "{},{},{},{:.3},{:.3},{:.3},{:.3},{status}",
                run.label,
                j.priority,
                run.kinds.get(j.kind).copied().unwrap_or("?"),
                us(j.arrival_ns),
                us(j.queued_ns),
                us(j.latency_ns),
                us(j.preempted_ns),
            )
            .map_err(err)?;
        }
    }
    out.flush().map_err(err)
}

/// Writes what `args` ask for from `runs`: latency figures grouped by `group` (none: the caller
/// draws its own), the `extra` figures the caller draws, and the CSV file. Returns the files
/// written, to be listed in the output.
pub fn write(
    args: &FigureArgs,
    what: &str,
    group: Option<Group>,
    runs: &[Labeled],
    extra: impl FnOnce(&Path) -> Result<Vec<PathBuf>, String>,
) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    if let Some(dir) = &args.plot {
        if let Some(group) = group {
            files.extend(latency_figures(dir, what, group, runs)?);
        }
        files.extend(extra(dir)?);
    }
    if let Some(file) = &args.csv {
        write_csv(file, runs)?;
        files.push(file.clone());
    }
    Ok(files)
}

/// Lists `files` after a text report.
pub fn print_files(files: &[PathBuf]) {
    for f in files {
        println!("wrote {}", f.display());
    }
}
