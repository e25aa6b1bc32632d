//! How commands report: the shapes every command's report shares (a class's figures, latency
//! percentiles), tables for a terminal, one JSON object for `--json`, and [`figures`] and
//! [`plot`] for `--plot`/`--csv`. A command's report is a type of its own deriving `Serialize`;
//! its tables read the same value, so what `--json` prints and what a table shows cannot drift.
//!
//! Reporting only reads what a run measured: it must never change a run or invent a figure (a
//! class with no values reports zeros or `null`, never an estimate).

pub mod figures;
pub mod plot;
pub mod progress;
pub mod tail;

use std::path::PathBuf;
use std::time::Duration;

use overtake_sched::{Breakdown, ClassStats, LatencySummary};
use serde::Serialize;

/// Formats microseconds for a column headed "us": one decimal below 100, whole microseconds from
/// 100 up. Never another unit, so a column can be read (and compared) down its length.
pub fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Latency percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl From<LatencySummary> for Latency {
    fn from(s: LatencySummary) -> Self {
        Latency {
            p50: s.p50,
            p90: s.p90,
            p99: s.p99,
            p999: s.p999,
            max: s.max,
            mean: s.mean,
        }
    }
}

impl Latency {
    /// The latency columns of a table row.
    pub fn cells(&self) -> [String; 5] {
        [
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.p999),
            us(self.max),
        ]
    }
}

/// Scheduling delay (start - arrival), in microseconds.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Delay {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// One class's (or kind's) figures, the same shape in every command: throughput, outcomes,
/// latency percentiles, scheduling delay, preemptions and where the time went.
#[derive(Clone, Debug, Serialize)]
pub struct ClassReport {
    pub per_sec: f64,
    pub committed: u64,
    pub rolled_back: u64,
    pub failed: u64,
    pub conflicts: u64,
    pub validation_failures: u64,
    pub attempts: u64,
    pub promoted: u64,
    /// Worker time that failed attempts threw away.
    pub wasted_ms: f64,
    pub latency_us: Latency,
    pub sched_delay_us: Delay,
    pub preemptions: u64,
    pub preempted_us: Latency,
    pub running_us: Latency,
    pub breakdown_us: Breakdown,
    pub locks: LockReport,
    /// Only where a `sync` log made commits wait.
    pub durable_wait_us: Option<Latency>,
    pub first_error: Option<String>,
}

impl ClassReport {
    /// The figures of `c` over a run of `elapsed` seconds.
    pub fn new(c: &ClassStats, elapsed: f64) -> Self {
        let delay = c.sched_delay.summary();
        ClassReport {
            per_sec: c.committed as f64 / elapsed,
            committed: c.committed,
            rolled_back: c.rolled_back,
            failed: c.failed,
            conflicts: c.conflicts,
            validation_failures: c.validation_failures,
            attempts: c.attempts(),
            promoted: c.promoted,
            wasted_ms: c.wasted_nanos as f64 / 1e6,
            latency_us: c.latency.summary().into(),
            sched_delay_us: Delay {
                p50: delay.p50,
                p99: delay.p99,
                max: delay.max,
            },
            preemptions: c.preemptions,
            preempted_us: c.preempted.summary().into(),
            running_us: c.running.summary().into(),
            breakdown_us: c.breakdown(),
            locks: LockReport::new(c),
            durable_wait_us: (c.durable_wait.count() > 0).then(|| c.durable_wait.summary().into()),
            first_error: c.first_error.as_ref().map(ToString::to_string),
        }
    }
}

/// A class's lock waits and lock aborts (all zero outside two-phase locking and row locks).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LockReport {
    pub waits: u64,
    pub waits_per_txn: f64,
    pub queue_time_us_mean: f64,
    pub wait_excess_us_mean: f64,
    pub wait_remainder_us_mean: f64,
    pub preemptive_aborts: u64,
    pub deadlocks: u64,
}

impl LockReport {
    fn new(c: &ClassStats) -> Self {
        let (queue, excess) = c.lock_wait_means_us();
        LockReport {
            waits: c.lock_waits,
            waits_per_txn: c.lock_waits_per_attempt(),
            queue_time_us_mean: queue,
            wait_excess_us_mean: excess,
            wait_remainder_us_mean: queue - excess,
            preemptive_aborts: c.lock_aborts,
            deadlocks: c.deadlocks,
        }
    }
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

/// Prints `report` as one JSON object on stdout, with a `files` key listing `files` when any
/// were written (`--plot`, `--csv`).
pub fn print_json<T: Serialize>(report: &T, files: &[PathBuf]) -> Result<(), String> {
    #[derive(Serialize)]
    struct WithFiles<'a, T> {
        #[serde(flatten)]
        report: &'a T,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
    }
    let files = files.iter().map(|f| f.display().to_string()).collect();
    let text = serde_json::to_string(&WithFiles { report, files })
        .map_err(|e| format!("cannot write the report as JSON: {e}"))?;
    println!("{text}");
    Ok(())
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
