//! A bimodal workload in the style of Aspen's RocksDB experiment: Poisson arrivals of requests
//! whose priorities nobody gives, 99.5% short (a few point reads and one update, microseconds)
//! and 0.5% long (a range scan of about a millisecond), all at one level. Run-to-completion makes
//! every short request that lands behind a long one wait for all of it; the quantum policy bounds
//! that wait without priorities.
//!
//! The long scan's length is calibrated on the machine at hand ([`Bimodal::calibrate`]) so that
//! the workload has the same shape everywhere; the arrival rate is a share of the capacity the
//! driver derives from each kind's service time, measured alone on the same scheduler first.

use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_engine::{
    ColumnType, Database, Isolation, KeyRange, Options, Priority, RetryPolicy, ScanOptions, Table,
    TableSchema,
};
use overtake_sched::{Executor, Outcome};

use crate::drivers::open_loop::Arrivals;

use crate::exec::outcome;
use crate::rng::TpccRng;

/// The level every request runs at.
pub const LEVEL: Priority = Priority::MEDIUM;

/// Names of the two kinds, as [`Executor::kind`] numbers them.
pub const KINDS: [&str; 2] = ["short", "long"];

/// Rows in the table.
pub const ROWS: i64 = 200_000;

/// Share of long requests among arrivals.
pub const LONG_SHARE: f64 = 0.005;

/// Point reads of a short request (it also updates one row).
const SHORT_READS: usize = 4;

/// One request.
#[derive(Clone, Debug)]
pub enum Request {
    /// Reads `reads` and adds one to the value of `update`.
    Short {
        /// Keys read.
        reads: [i64; SHORT_READS],
        /// Key updated.
        update: i64,
    },
    /// Scans `len` rows from `start`, summing their values.
    Long {
        /// First key.
        start: i64,
        /// Rows scanned.
        len: usize,
    },
}

/// The database of the workload and the executor of its requests.
pub struct Bimodal {
    db: Arc<Database>,
    table: Arc<Table>,
    /// Rows a long request scans.
    long_len: usize,
}

const ID: usize = 0;
const VALUE: usize = 1;

impl Bimodal {
    /// Creates and fills the table (`ROWS` rows).
    pub fn load() -> Result<Self, overtake_engine::Error> {
        let db = Arc::new(Database::in_memory(Options::default()));
        let table = db.create_table(
            TableSchema::builder("kv")
                .column("id", ColumnType::Int64)
                .column("value", ColumnType::Int64)
                .column("payload", ColumnType::VarChar(40))
                .primary_key(&["id"])
                .build()?,
        )?;
        let payload = "x".repeat(40);
        for chunk in (0..ROWS).collect::<Vec<_>>().chunks(5_000) {
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot)?;
            for &id in chunk {
                let row = table
                    .row_builder()
                    .int(ID, id)
                    .int(VALUE, id % 1_000)
                    .str(2, &payload)
                    .finish()?;
                txn.insert(&table, row)?;
            }
            txn.commit()?;
        }
        Ok(Bimodal {
            db,
            table,
            long_len: 20_000,
        })
    }

    /// Brings the table to the state a long run reaches: every row updated once, in random
    /// order, so that current versions are scattered over memory as the short requests' updates
    /// leave them (scans of a freshly loaded table run several times faster than in steady
    /// state, which would make a calibration or capacity measured before it optimistic).
    pub fn age(&self, seed: u64) -> Result<(), overtake_engine::Error> {
        let mut ids: Vec<i64> = (0..ROWS).collect();
        let mut rng = TpccRng::new(seed);
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i + 1));
        }
        for chunk in ids.chunks(1_000) {
            let mut txn = self.db.begin(Priority::LOW, Isolation::Snapshot)?;
            for &id in chunk {
                txn.update(&self.table, &self.table.key().int(id).finish()?, |r| {
                    let v = r.as_ref().int(VALUE);
                    r.int(VALUE, v + 1);
                })?;
            }
            txn.commit()?;
        }
        Ok(())
    }

    /// Sets the scan length so that a long request takes about `target` here (at least 1,000
    /// rows, at most the table). Returns the length.
    pub fn calibrate(&mut self, target: Duration) -> usize {
        let probe = 10_000usize;
        let samples = 9;
        // Ranges spread over the table (not overlapping: a range read just before is cached);
        // the median run, not the fastest.
        let mut times: Vec<Duration> = (0..samples)
            .map(|i| {
                let start = Instant::now();
                let _ = self.execute_request(&Request::Long {
                    start: i * (ROWS / samples),
                    len: probe,
                });
                start.elapsed()
            })
            .collect();
        times.sort_unstable();
        let per_row = times[times.len() / 2].as_secs_f64() / probe as f64;
        self.long_len =
            ((target.as_secs_f64() / per_row.max(1e-12)) as usize).clamp(1_000, ROWS as usize);
        self.long_len
    }

    /// Mean service time of a short and of a long request, measured by running `n` of each here
    /// (outside the scheduler).
    pub fn service_times(&self, n: usize, rng: &mut TpccRng) -> (Duration, Duration) {
        let mut time = |long: bool| {
            let requests: Vec<Request> = (0..n).map(|_| self.request(rng, long)).collect();
            let start = Instant::now();
            for r in &requests {
                let _ = self.execute_request(r);
            }
            start.elapsed() / n.max(1) as u32
        };
        (time(false), time(true))
    }

    /// Rows a long request scans.
    pub fn long_len(&self) -> usize {
        self.long_len
    }

    /// A random request, long with probability [`LONG_SHARE`].
    pub fn next_request(&self, rng: &mut TpccRng) -> Request {
        let long = (rng.uniform(0, 999_999) as f64) < LONG_SHARE * 1_000_000.0;
        self.request(rng, long)
    }

    /// A random request of the given kind.
    pub fn request(&self, rng: &mut TpccRng, long: bool) -> Request {
        if long {
            Request::Long {
                start: rng.uniform(0, ROWS - self.long_len as i64),
                len: self.long_len,
            }
        } else {
            Request::Short {
                reads: std::array::from_fn(|_| rng.uniform(0, ROWS - 1)),
                update: rng.uniform(0, ROWS - 1),
            }
        }
    }

    fn execute_request(&self, request: &Request) -> Outcome {
        let key = |id: i64| self.table.key().int(id).finish();
        match request {
            Request::Short { reads, update } => {
                outcome(
                    self.db
                        .run(LEVEL, Isolation::Snapshot, &RetryPolicy::default(), |txn| {
                            let mut sum = 0;
                            for &id in reads {
                                sum += txn
                                    .get(&self.table, &key(id)?, |r| r.int(VALUE))?
                                    .unwrap_or(0);
                            }
                            txn.update(&self.table, &key(*update)?, |r| {
                                let v = r.as_ref().int(VALUE);
                                r.int(VALUE, v + 1);
                            })?;
                            Ok(sum)
                        }),
                )
            }
            Request::Long { start, len } => outcome(self.db.run(
                LEVEL,
                Isolation::Snapshot,
                &RetryPolicy::default(),
                |txn| {
                    let mut sum = 0i64;
                    let range = KeyRange::new(Bound::Included(key(*start)?), Bound::Unbounded);
                    let options = ScanOptions::forward().limit(*len);
                    txn.scan(&self.table, &range, options, |r| {
                        sum = sum.wrapping_add(r.int(VALUE));
                        ControlFlow::Continue(())
                    })?;
                    Ok(sum)
                },
            )),
        }
    }
}

impl Executor for Bimodal {
    type Job = Request;

    fn kinds(&self) -> &[&'static str] {
        &KINDS
    }

    fn kind(&self, job: &Request) -> usize {
        match job {
            Request::Short { .. } => 0,
            Request::Long { .. } => 1,
        }
    }

    fn priority(&self, _: &Request) -> Priority {
        LEVEL
    }

    fn execute(&self, job: &mut Request, _worker: usize) -> Outcome {
        self.execute_request(job)
    }
}

/// Poisson arrivals at `rate` per second, [`LONG_SHARE`] of them long.
pub struct PoissonArrivals {
    workload: Arc<Bimodal>,
    rng: TpccRng,
    mean_gap: f64,
    next: Option<Instant>,
}

impl PoissonArrivals {
    /// Arrivals at `rate` requests per second, drawn from `seed`.
    pub fn new(workload: Arc<Bimodal>, rate: f64, seed: u64) -> Self {
        PoissonArrivals {
            workload,
            rng: TpccRng::new(seed),
            mean_gap: 1.0 / rate.max(1e-9),
            next: None,
        }
    }

    /// An exponentially distributed gap.
    fn gap(&mut self) -> Duration {
        const SCALE: i64 = 1 << 30;
        let u = self.rng.uniform(1, SCALE) as f64 / SCALE as f64; // (0, 1]
        Duration::from_secs_f64(-u.ln() * self.mean_gap)
    }
}

impl Arrivals<Request> for PoissonArrivals {
    fn high(&mut self, now: Instant, out: &mut Vec<(Request, Instant)>) -> Option<Instant> {
        let mut next = *self.next.get_or_insert(now);
        while next <= now {
            out.push((self.workload.next_request(&mut self.rng), next));
            next += self.gap();
        }
        self.next = Some(next);
        Some(next)
    }

    fn low(&mut self) -> Option<Request> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_run_and_arrivals_have_the_configured_mix_and_rate() {
        let mut w = Bimodal::load().expect("load");
        w.long_len = 2_000;
        let mut rng = TpccRng::new(7);
        for long in [false, true] {
            let r = w.request(&mut rng, long);
            assert_eq!(
                w.execute_request(&r).status,
                overtake_sched::Status::Committed
            );
        }
        let w = Arc::new(w);
        let mut arrivals = PoissonArrivals::new(Arc::clone(&w), 200_000.0, 1);
        let t0 = Instant::now();
        let mut out = Vec::new();
        // One simulated second of arrivals: about 200,000 (a Poisson count's deviation is about
        // 450), 0.5% long (about 1,000, deviation about 32).
        arrivals.high(t0, &mut out);
        arrivals.high(t0 + Duration::from_secs(1), &mut out);
        let n = out.len() as f64;
        assert!((n - 200_000.0).abs() < 4_000.0, "{n} arrivals");
        let long = out
            .iter()
            .filter(|(r, _)| matches!(r, Request::Long { .. }))
            .count() as f64;
        assert!((long / n - LONG_SHARE).abs() < 0.001, "{long} long of {n}");
        assert!(
            out.windows(2).all(|p| p[0].1 <= p[1].1),
            "arrival times ascend"
        );
    }
}
