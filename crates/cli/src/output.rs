//! Shared pieces of the command's output: progress bars (only on a terminal), loading the TPC-C +
//! CH database, memory readings, and table formatting.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use overtake_engine::{Database, Options};
use overtake_sched::LatencySummary;
use overtake_workload::ch::ChTables;
use overtake_workload::rng::{NuRandConstants, TpccRng};
use overtake_workload::tpcc::load::{LoadOptions, Loaded, expected_rows, load};
use overtake_workload::tpcc::{TpccTables, consistency};

/// A progress bar on stderr when it is a terminal and the output is not JSON; hidden otherwise.
pub fn progress(len: u64, message: &str, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {percent:>3}% {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_owned());
    bar
}

/// Resident set size of this process in MiB, from /proc (None where unavailable).
pub fn rss_mib() -> Option<f64> {
    Some(proc_kib("/proc/self/status", "VmRSS:")? as f64 / 1024.0)
}

/// The value in KiB of the line starting with `field` (e.g. `VmRSS:`) of a /proc file.
pub fn proc_kib(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A database holding TPC-C (and the CH-benCHmark tables when `with_ch`).
pub struct LoadedDb {
    pub db: Arc<Database>,
    pub tpcc: TpccTables,
    pub ch: Option<ChTables>,
    pub loaded: Loaded,
    pub rss_mib: Option<f64>,
    /// What opening a kept database recovered (`None`: in memory).
    pub recovered: Option<overtake_engine::Recovered>,
}

impl LoadedDb {
    /// The NURand constants of a run over this database (derived from the load's by clause
    /// 2.1.6.1), from the run's seed.
    pub fn run_constants(&self, seed: u64) -> NuRandConstants {
        NuRandConstants::for_run(&self.loaded.constants, &mut TpccRng::new(seed ^ 0xC0FFEE))
    }
}

/// Creates and loads the database in memory, with a progress bar.
pub fn load_database(
    warehouses: i64,
    seed: u64,
    with_ch: bool,
    json: bool,
) -> Result<LoadedDb, String> {
    load_into(
        Database::in_memory(Options::default()),
        warehouses,
        seed,
        with_ch,
        json,
    )
}

/// Loads a fresh database (in memory or newly opened in a directory), with a progress bar.
pub fn load_into(
    db: Database,
    warehouses: i64,
    seed: u64,
    with_ch: bool,
    json: bool,
) -> Result<LoadedDb, String> {
    let tpcc = TpccTables::create(&db).map_err(|e| format!("creating the TPC-C schema: {e}"))?;
    let bar = progress(expected_rows(warehouses), "loading", json);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let loaded = load(
        &db,
        &tpcc,
        &LoadOptions {
            warehouses,
            threads,
            seed,
        },
        &|rows| bar.inc(rows),
    )
    .map_err(|e| format!("loading TPC-C: {e}"))?;
    bar.finish_and_clear();
    let ch = if with_ch {
        let ch = ChTables::create(&db).map_err(|e| format!("creating the CH tables: {e}"))?;
        ch.load(&db, seed)
            .map_err(|e| format!("loading the CH tables: {e}"))?;
        Some(ch)
    } else {
        None
    };
    // Settle what the load left to reclaim before measuring memory.
    db.collect_garbage();
    Ok(LoadedDb {
        rss_mib: rss_mib(),
        db: Arc::new(db),
        tpcc,
        ch,
        loaded,
        recovered: None,
    })
}

/// Formats microseconds for a column headed "us": one decimal below 100, whole microseconds from
/// 100 up. Never another unit, so a column can be read (and compared) down its length.
pub fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The latency columns of a table row.
pub fn latency_cells(s: &LatencySummary) -> [String; 5] {
    [us(s.p50), us(s.p90), us(s.p99), us(s.p999), us(s.max)]
}

/// Latency percentiles as JSON, in microseconds.
pub fn latency_json(s: &LatencySummary) -> serde_json::Value {
    serde_json::json!({
        "p50": s.p50, "p90": s.p90, "p99": s.p99, "p999": s.p999, "max": s.max, "mean": s.mean,
    })
}

/// One class's (or kind's) figures as JSON, the same shape in every command: throughput,
/// outcomes, latency percentiles, scheduling delay, preemptions and the time breakdown.
pub fn class_json(c: &overtake_sched::ClassStats, elapsed: f64) -> serde_json::Value {
    let delay = c.sched_delay.summary();
    serde_json::json!({
        "per_sec": c.committed as f64 / elapsed,
        "committed": c.committed,
        "rolled_back": c.rolled_back,
        "failed": c.failed,
        "conflicts": c.conflicts,
        "validation_failures": c.validation_failures,
        "attempts": c.attempts(),
        "promoted": c.promoted,
        "wasted_ms": c.wasted_nanos as f64 / 1e6,
        "latency_us": latency_json(&c.latency.summary()),
        "sched_delay_us": { "p50": delay.p50, "p99": delay.p99, "max": delay.max },
        "preemptions": c.preemptions,
        "preempted_us": latency_json(&c.preempted.summary()),
        "running_us": latency_json(&c.running.summary()),
        "breakdown_us": c.breakdown(),
        "locks": lock_json(c),
        // Only where a sync log made commits wait.
        "durable_wait_us": (c.durable_wait.count() > 0)
            .then(|| latency_json(&c.durable_wait.summary())),
        "first_error": c.first_error.as_ref().map(ToString::to_string),
    })
}

/// A class's lock waits and lock aborts as JSON (all zero outside two-phase locking).
fn lock_json(c: &overtake_sched::ClassStats) -> serde_json::Value {
    let (queue, excess) = c.lock_wait_means_us();
    serde_json::json!({
        "waits": c.lock_waits,
        "waits_per_txn": c.lock_waits_per_attempt(),
        "queue_time_us_mean": queue,
        "wait_excess_us_mean": excess,
        "wait_remainder_us_mean": queue - excess,
        "preemptive_aborts": c.lock_aborts,
        "deadlocks": c.deadlocks,
    })
}

/// The TPC-C consistency conditions checked over `db` after a run, with a progress bar (`ok` or
/// the first failed condition), or "not checked" unless `check`.
pub fn consistency_after_run(
    db: &Database,
    tables: &TpccTables,
    check: bool,
    json: bool,
) -> Result<String, String> {
    if !check {
        return Ok("not checked".to_owned());
    }
    let bar = progress(1, "checking", json);
    let report =
        consistency::check(db, tables, false).map_err(|e| format!("consistency check: {e}"))?;
    bar.finish_and_clear();
    Ok(report.summary())
}

/// Prints rows as a left-aligned first column and right-aligned others.
pub fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate().take(columns) {
            if i == 0 {
                out.push_str(&format!("{cell:<w$}", w = widths[0]));
            } else {
                out.push_str(&format!("  {cell:>w$}", w = widths[i]));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// Seconds as a float.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A progress bar for a run of `seconds`, advanced by the run's tick callback.
pub fn run_progress(seconds: f64, label: &str, json: bool) -> ProgressBar {
    progress((seconds * 10.0) as u64, label, json)
}

/// The tick callback that advances `bar`.
pub fn ticker(bar: &ProgressBar) -> impl Fn(Duration) + '_ {
    move |elapsed| bar.set_position((elapsed.as_secs_f64() * 10.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::us;

    #[test]
    fn microseconds_stay_microseconds() {
        assert_eq!(us(12.34), "12.3");
        assert_eq!(us(99.94), "99.9");
        assert_eq!(us(100.4), "100");
        assert_eq!(us(140_200.0), "140200", "not 140.2ms under a us header");
        assert_eq!(us(2_200_000.0), "2200000");
    }
}
