//! Closed-loop TPC-C clients, as POW's evaluation drives its database: `clients` application
//! threads, each thinking for an exponentially distributed time (mean `think`), then submitting
//! one transaction of the standard mix through the scheduler's public API and waiting for it. A
//! share `hp_share` of the transactions (a Bernoulli draw per transaction) is urgent
//! ([`Priority::HIGH`]), the rest background ([`Priority::LOW`]).
//!
//! With `session_threads`, each client runs its transactions itself, on its own thread, as
//! PostgreSQL's backends do, placed by the operating system's scheduler for the transaction's
//! group (`overtake_sched::OsScheduling`): the baseline Overtake's scheduling is compared with.
//! Their statistics are then the clients' own, recorded as the workers would.
//!
//! Closed loop means the offered load adapts to the service: a client with a transaction in
//! flight submits nothing. That is the setting lock scheduling is studied in (the next issue's
//! waits); here it also shows what queueing at the scheduler costs each class.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use overtake_engine::{Database, Isolation, Priority};
use overtake_sched::{
    Call, CallExecutor, Delivery, Executor, Group, JobTiming, OsPlacementError, OsScheduling,
    Policy, RunStats, SchedConfig, SchedError, Scheduler, SchedulerReport, Shutdown,
};

use crate::exec::{EngineExecutor, Job, Work};
use crate::rng::{NuRandConstants, TpccRng};
use crate::tpcc::TpccTables;
use crate::tpcc::request::TpccRequest;

/// How the clients run.
#[derive(Clone, Debug)]
pub struct ClientsConfig {
    /// Client threads.
    pub clients: usize,
    /// Mean think time between a client's transactions (0: none).
    pub think: Duration,
    /// Share of transactions that are urgent, 0 to 1.
    pub hp_share: f64,
    /// Warehouses in the database (client `i` uses warehouse `i % warehouses + 1`).
    pub warehouses: i64,
    /// Worker threads and the rest of the scheduler's settings.
    pub sched: SchedConfig,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// NURand constants of the run.
    pub constants: NuRandConstants,
    /// Seed of the clients' generators.
    pub seed: u64,
    /// Run each client's transactions on its own thread, scheduled by the OS so (`None`: submit
    /// them to the scheduler).
    pub session_threads: Option<OsScheduling>,
}

impl ClientsConfig {
    /// Defaults for `clients` clients on `sched`'s workers.
    pub fn new(clients: usize, sched: SchedConfig, constants: NuRandConstants) -> Self {
        ClientsConfig {
            clients,
            think: Duration::ZERO,
            hp_share: 0.5,
            warehouses: 1,
            sched: sched.policy(Policy::Preempt).delivery(Delivery::Signal),
            isolation: Isolation::Serializable,
            constants,
            seed: 1,
            session_threads: None,
        }
    }
}

/// What a run did.
#[derive(Debug)]
pub struct ClientsReport {
    /// The workers' statistics (per level: latency from submission to end, breakdown).
    pub scheduler: SchedulerReport,
    /// From the clients' start to the last one's end.
    pub elapsed: Duration,
    /// Submissions refused because every inbox was full (the client retried).
    pub overloaded: u64,
}

/// An exponentially distributed duration with the given mean.
pub(crate) fn exponential(rng: &mut TpccRng, mean: Duration) -> Duration {
    if mean.is_zero() {
        return Duration::ZERO;
    }
    const SCALE: i64 = 1 << 30;
    let u = rng.uniform(1, SCALE) as f64 / SCALE as f64;
    mean.mul_f64(-u.ln())
}

/// Why [`run_clients`] could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientsError {
    /// `hp_share` is outside 0..=1.
    #[error("the urgent share must be between 0 and 1")]
    UrgentShare,
    /// `clients` is 0.
    #[error("at least one client is needed")]
    NoClients,
    /// A client thread could not be started.
    #[error("cannot start a client thread: {0}")]
    SpawnClient(std::io::Error),
    /// The scheduler could not run.
    #[error(transparent)]
    Sched(#[from] SchedError),
    /// A session thread could not be placed as its transaction's group says.
    #[error(transparent)]
    Os(#[from] OsPlacementError),
}

/// Runs the clients for `duration`; `tick` is called about ten times a second.
pub fn run_clients(
    db: Arc<Database>,
    tables: &TpccTables,
    config: &ClientsConfig,
    duration: Duration,
    tick: &dyn Fn(Duration),
) -> Result<ClientsReport, ClientsError> {
    if !(0.0..=1.0).contains(&config.hp_share) {
        return Err(ClientsError::UrgentShare);
    }
    if config.clients == 0 {
        return Err(ClientsError::NoClients);
    }
    let executor = Arc::new(EngineExecutor::new(
        db,
        tables.clone(),
        None,
        config.isolation,
    ));
    let scheduler = Arc::new(Scheduler::start(&config.sched, Arc::new(CallExecutor))?);
    // A run of no length is stopped before the clients start, so that each runs exactly its one
    // transaction however the threads are scheduled (otherwise a client could run several
    // before this thread got to set the flag).
    let stop = Arc::new(AtomicBool::new(duration.is_zero()));
    let overloaded = Arc::new(AtomicU64::new(0));
    // Session threads' statistics, and the first placement the OS refused.
    let own = Arc::new(Mutex::new((
        RunStats::with_kinds(executor.kinds().len()),
        None::<OsPlacementError>,
    )));
    let start = Instant::now();
    let spawned: Vec<_> = (0..config.clients)
        .map(|client| {
            let (scheduler, executor, stop, overloaded, own) = (
                Arc::clone(&scheduler),
                Arc::clone(&executor),
                Arc::clone(&stop),
                Arc::clone(&overloaded),
                Arc::clone(&own),
            );
            let config = config.clone();
            std::thread::Builder::new()
                .name(format!("client-{client}"))
                .spawn(move || {
                    let mut rng = TpccRng::new(config.seed.wrapping_add(client as u64 * 104_729));
                    let home = client as i64 % config.warehouses + 1;
                    let mut stats = RunStats::with_kinds(executor.kinds().len());
                    let mut placed: Option<Group> = None;
                    // Every client runs at least one transaction, however short the run.
                    loop {
                        std::thread::sleep(exponential(&mut rng, config.think));
                        let urgent =
                            (rng.uniform(0, 999_999) as f64) < config.hp_share * 1_000_000.0;
                        let mut job = Job {
                            priority: if urgent {
                                Priority::HIGH
                            } else {
                                Priority::LOW
                            },
                            work: Work::Tpcc(TpccRequest::generate(
                                &mut rng,
                                &config.constants,
                                home,
                                config.warehouses,
                            )),
                        };
                        if let Some(os) = &config.session_threads {
                            let group = Group::of(job.priority);
                            if placed != Some(group) {
                                if let Err(e) = os.enter(group) {
                                    own.lock().expect("own").1.get_or_insert(e);
                                    stop.store(true, Ordering::Relaxed);
                                    break;
                                }
                                placed = Some(group);
                            }
                            let start = std::time::Instant::now();
                            let outcome = executor.execute(&mut job, 0);
                            let timing = JobTiming::ran(start, std::time::Instant::now());
                            let kind = executor.kind(&job);
                            stats.record((job.priority, kind, group), &timing, &outcome);
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            continue;
                        }
                        let exec = Arc::clone(&executor);
                        let (mut call, ticket) =
                            Call::with_outcome(job.priority, move || exec.execute(&mut job, 0));
                        // A full inbox: try again shortly (a closed-loop client has nothing
                        // else to do).
                        while let Err(refused) = scheduler.submit(call) {
                            overloaded.fetch_add(1, Ordering::Relaxed);
                            call = refused.into_inner();
                            std::thread::yield_now();
                        }
                        // The outcome is in the scheduler's statistics.
                        let _ = ticket.wait();
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                    }
                    own.lock().expect("own").0.merge(&stats);
                })
        })
        .collect();
    let mut threads = Vec::with_capacity(spawned.len());
    let mut failed = None;
    for t in spawned {
        match t {
            Ok(t) => threads.push(t),
            Err(source) => failed = Some(source),
        }
    }
    if let Some(source) = failed {
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            let _ = t.join();
        }
        return Err(ClientsError::SpawnClient(source));
    }
    let end = start + duration;
    while Instant::now() < end {
        tick(start.elapsed());
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(100)));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let elapsed = start.elapsed();
    let scheduler =
        Arc::into_inner(scheduler).expect("every client thread has been joined, with its handle");
    let mut report = scheduler.shutdown(Shutdown::Drain)?;
    let (stats, refused) = Arc::into_inner(own)
        .expect("every client thread has been joined")
        .into_inner()
        .expect("own");
    if let Some(e) = refused {
        return Err(e.into());
    }
    report.stats.merge(&stats);
    Ok(ClientsReport {
        scheduler: report,
        elapsed,
        overloaded: overloaded.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_are_exponential_with_the_given_mean() {
        let mut rng = TpccRng::new(3);
        let mean = Duration::from_micros(100);
        let n = 20_000;
        let total: Duration = (0..n).map(|_| exponential(&mut rng, mean)).sum();
        let observed = total.as_secs_f64() / f64::from(n) * 1e6;
        // The mean of 20,000 draws is within 3% of 100 us (its deviation is 0.7 us).
        assert!((observed - 100.0).abs() < 3.0, "{observed} us");
        assert_eq!(exponential(&mut rng, Duration::ZERO), Duration::ZERO);
    }
}
