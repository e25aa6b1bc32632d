//! What `bench tpcc` reports: [`TpccReport`], printed as one JSON object under `--json` and as
//! text and a table otherwise, both from the same value. It only reads a finished run.

use std::collections::BTreeMap;

use overtake_engine::{CheckpointStats, LogStats};
use serde::Serialize;

use crate::harness::kept::RecoveredReport;
use crate::report::{ClassReport, print_table};

/// One `bench tpcc` run.
#[derive(Debug, Serialize)]
pub struct TpccReport {
    pub benchmark: &'static str,
    pub warehouses: i64,
    pub workers: u16,
    pub isolation: &'static str,
    pub duration_s: f64,
    pub load: LoadReport,
    pub total: Total,
    pub by_type: BTreeMap<&'static str, ClassReport>,
    pub interrupts: Interrupts,
    pub versions: Versions,
    pub rss_mib_after_run: Option<f64>,
    pub first_error: Option<String>,
    pub consistency: String,
    pub durability: LogReport,
    pub recovered: Option<RecoveredReport>,
    /// Commits that waited for the log (the text says how many).
    #[serde(skip)]
    pub durable_waits: u64,
}

/// The load before the run, and the heap faulted in after it.
#[derive(Debug, Serialize)]
pub struct LoadReport {
    pub seconds: f64,
    pub rows: u64,
    pub rss_mib: Option<f64>,
    pub rss_mib_per_warehouse: Option<f64>,
    pub prefault_mib: u64,
    pub prefault_seconds: f64,
}

/// Every transaction type together.
#[derive(Debug, Serialize)]
pub struct Total {
    #[serde(flatten)]
    pub class: ClassReport,
    pub per_sec_per_worker: f64,
}

/// The interrupts of `--interrupt-interval-us` (all zero without it).
#[derive(Debug, Serialize)]
pub struct Interrupts {
    pub interval_us: Option<u64>,
    pub mechanism: &'static str,
    pub signal_delay_us: u64,
    pub requests: u64,
    pub signals_sent: u64,
    pub injected: u64,
    pub deferred: u64,
    pub served: u64,
}

/// Record versions created and reclaimed.
#[derive(Debug, Serialize)]
pub struct Versions {
    pub created: u64,
    pub reclaimed: u64,
    pub linked_at_end: u64,
    pub unreclaimed_at_end: u64,
    pub unreclaimed_deletes_at_end: u64,
    pub unreclaimed_after_collect: u64,
}

/// The log during the run (`null` figures for a database in memory).
#[derive(Debug, Serialize)]
pub struct LogReport {
    pub mode: &'static str,
    pub flushes: Option<u64>,
    pub bytes: Option<u64>,
    pub flushes_per_sec: Option<f64>,
    pub transactions_per_flush: Option<f64>,
    pub flush_mean_us: Option<f64>,
    pub flush_p99_us_under: Option<u64>,
    pub checkpoints: Option<Checkpoints>,
}

impl LogReport {
    pub fn new(
        mode: &'static str,
        log: Option<LogStats>,
        committed: u64,
        elapsed: f64,
        checkpoints: Option<Checkpoints>,
    ) -> Self {
        LogReport {
            mode,
            flushes: log.map(|l| l.flushes),
            bytes: log.map(|l| l.bytes),
            flushes_per_sec: log.map(|l| l.flushes as f64 / elapsed),
            transactions_per_flush: log.map(|l| committed as f64 / l.flushes.max(1) as f64),
            flush_mean_us: log.map(|l| l.mean_flush().as_secs_f64() * 1e6),
            flush_p99_us_under: log
                .map(|l| LogStats::histogram_quantile(&l.flush_histogram, 0.99).as_micros() as u64),
            checkpoints,
        }
    }
}

/// Checkpoints taken during the run (the one after a load is not counted).
#[derive(Debug, Serialize)]
pub struct Checkpoints {
    pub taken: u64,
    pub failed: u64,
    pub last_seconds: Option<f64>,
    pub last_mib: Option<f64>,
    pub last_rows: Option<u64>,
    pub last_error: Option<String>,
}

impl Checkpoints {
    /// What changed between two readings (`None` for a database in memory).
    pub fn during(before: Option<CheckpointStats>, after: Option<CheckpointStats>) -> Option<Self> {
        let (before, after) = (before?, after?);
        let last = after.last.as_ref();
        Some(Checkpoints {
            taken: after.taken - before.taken,
            failed: after.failed - before.failed,
            last_seconds: last.map(|c| c.elapsed.as_secs_f64()),
            last_mib: last.map(|c| c.bytes as f64 / f64::from(1 << 20)),
            last_rows: last.map(|c| c.rows),
            last_error: after.last_error,
        })
    }
}

impl TpccReport {
    /// The report as text and a table.
    pub fn print(&self) {
        let log = &self.durability;
        println!(
            "TPC-C: {} warehouse(s), {} worker(s), {}, {:.1} s; durability {}",
            self.warehouses, self.workers, self.isolation, self.duration_s, log.mode
        );
        if let Some(r) = &self.recovered {
            println!("{r}");
        }
        if let (Some(flushes), Some(bytes)) = (log.flushes, log.bytes) {
            println!(
                "log: {flushes} flushes ({:.0} per s, {:.1} transactions each, {:.0} us on \
                 average, 99% under {} us), {:.1} MiB written",
                log.flushes_per_sec.unwrap_or_default(),
                log.transactions_per_flush.unwrap_or_default(),
                log.flush_mean_us.unwrap_or_default(),
                log.flush_p99_us_under.unwrap_or_default(),
                bytes as f64 / f64::from(1 << 20)
            );
            if let Some(c) = &log.checkpoints {
                let last = match (c.last_rows, c.last_mib, c.last_seconds) {
                    (Some(rows), Some(mib), Some(seconds)) => {
                        format!(" (the last: {rows} rows, {mib:.1} MiB in {seconds:.2} s)")
                    }
                    _ => String::new(),
                };
                println!("checkpoints: {} during the run{last}", c.taken);
                if c.failed > 0 {
                    println!(
                        "warning: {} checkpoint(s) failed: {}",
                        c.failed,
                        c.last_error.as_deref().unwrap_or("(a later one succeeded)")
                    );
                }
            }
            if let Some(d) = &self.total.class.durable_wait_us {
                println!(
                    "commit to durable: p50 {:.0} us, p99 {:.0} us, max {:.0} us ({} commits \
                     waited)",
                    d.p50, d.p99, d.max, self.durable_waits
                );
            }
        }
        let load = &self.load;
        println!(
            "load: {} rows in {:.2} s; resident memory {}; then {} MiB of heap faulted in ({:.2} s)",
            load.rows,
            load.seconds,
            load.rss_mib.map_or("unknown".into(), |r| format!(
                "{r:.0} MiB ({:.0} MiB per warehouse)",
                r / self.warehouses as f64
            )),
            load.prefault_mib,
            load.prefault_seconds
        );
        println!();
        let types = overtake_workload::tpcc::TxnType::ALL
            .iter()
            .map(|k| (k.name(), &self.by_type[k.name()]));
        let rows: Vec<Vec<String>> = types
            .chain([("total", &self.total.class)])
            .map(|(name, c)| {
                let mut row = vec![
                    name.to_owned(),
                    format!("{:.0}", c.per_sec),
                    c.committed.to_string(),
                    c.conflicts.to_string(),
                    c.validation_failures.to_string(),
                    c.rolled_back.to_string(),
                ];
                row.extend(c.latency_us.cells());
                row
            })
            .collect();
        print_table(
            &[
                "txn",
                "per s",
                "committed",
                "conflicts",
                "validation",
                "rollbacks",
                "p50 us",
                "p90 us",
                "p99 us",
                "p99.9 us",
                "max us",
            ],
            &rows,
        );
        println!();
        println!(
            "throughput per worker: {:.0} committed/s",
            self.total.per_sec_per_worker
        );
        let i = &self.interrupts;
        if let Some(us) = i.interval_us {
            println!(
                "interrupts: every {us} us by {} (signal after {} us): {} requests, {} signals, \
                 {} injected, {} served",
                i.mechanism, i.signal_delay_us, i.requests, i.signals_sent, i.injected, i.served
            );
        }
        let v = &self.versions;
        println!(
            "versions: {} created, {} reclaimed during the run; at the end {} linked, {} \
             unreclaimed ({} after a final collection)",
            v.created,
            v.reclaimed,
            v.linked_at_end,
            v.unreclaimed_at_end,
            v.unreclaimed_after_collect,
        );
        if let Some(rss) = self.rss_mib_after_run {
            println!("resident memory after the run: {rss:.0} MiB");
        }
        if let Some(e) = &self.first_error {
            println!("errors: {} (first: {e})", self.total.class.failed);
        }
        println!("consistency: {}", self.consistency);
    }
}
