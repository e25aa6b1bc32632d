//! UFS's experiment: CPU-bursty time-sensitive sessions against CPU-bound background sessions.
//!
//! Each session is a closed-loop client thread. A bursty session waits (an exponential think
//! time, standing for the I/O and client round trips between a pgbench-style client's requests),
//! then asks for one request of `burst` short TPC-C transactions and waits for it; a bound session
//! asks for CH Query 2 (an analytic scan) again and again, without pause. Where the work runs is
//! the experiment's variable: as tasks of Overtake's scheduler in the sessions' groups (tiers and
//! weights decided on pinned workers), or on the session's own OS thread (as PostgreSQL backends
//! run), where the operating system decides, with the thread in a cgroup of its group's weight or
//! in a scheduling class (the OS baselines of UFS's paper).
//!
//! Latency is what the session sees: from asking to the answer (think time excluded). Must never
//! measure anything on a session thread that the other mode would not also see.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use overtake_engine::{Database, Isolation, Priority};
use overtake_runtime::os::thread::thread_usage;
use overtake_sched::{
    Call, CallExecutor, Executor, Group, LatencyHistogram, OsPlacementError, OsScheduling,
    SchedConfig, SchedError, Scheduler, Shutdown,
};

use super::clients::exponential;
use crate::ch::ChTables;
use crate::exec::{EngineExecutor, Job, Work};
use crate::rng::{NuRandConstants, TpccRng};
use crate::tpcc::TpccTables;
use crate::tpcc::request::TpccRequest;

/// Who decides what runs.
#[derive(Clone, Debug)]
pub enum Placement {
    /// Overtake's scheduler: the sessions' work runs as tasks in their groups.
    Overtake(SchedConfig),
    /// The operating system: each session runs its work on its own thread.
    Os(OsScheduling),
}

/// What a session asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// After a think time, a request of `burst` short TPC-C transactions.
    Bursty,
    /// CH Query 2, back to back.
    Bound,
}

/// Sessions of one kind in one group.
#[derive(Clone, Copy, Debug)]
pub struct Class {
    pub kind: Kind,
    pub group: Group,
    pub sessions: usize,
}

/// What one run does.
#[derive(Clone, Debug)]
pub struct TiersConfig {
    /// The sessions, by class (each class's report comes back in this order).
    pub classes: Vec<Class>,
    /// TPC-C transactions per bursty request.
    pub burst: usize,
    /// Mean think time before each bursty request.
    pub think: Duration,
    /// Where the work runs.
    pub placement: Placement,
    /// Warehouses (bursty session `i` uses warehouse `i % warehouses + 1`).
    pub warehouses: i64,
    /// NURand constants of the run.
    pub constants: NuRandConstants,
    /// Seed of the sessions' generators.
    pub seed: u64,
}

/// What one class of sessions did.
#[derive(Debug)]
pub struct SideReport {
    /// Requests answered.
    pub requests: u64,
    /// Units of work done: TPC-C transactions (bursty) or queries (bound).
    pub units: u64,
    /// Request latency as the sessions saw it.
    pub latency: LatencyHistogram,
    /// CPU time its work used, in nanoseconds: the session threads' own (on OS threads), its
    /// group's running time on the workers (under Overtake's scheduler; `None` if another class
    /// shares its group, so its part cannot be told apart).
    pub cpu_nanos: Option<u128>,
}

impl SideReport {
    fn new() -> Self {
        SideReport {
            requests: 0,
            units: 0,
            latency: LatencyHistogram::new(),
            cpu_nanos: Some(0),
        }
    }
}

/// What a run did.
#[derive(Debug)]
pub struct TiersReport {
    /// From the sessions' start to the last one's end.
    pub elapsed: Duration,
    /// Per class, in the configuration's order.
    pub classes: Vec<SideReport>,
}

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TiersError {
    #[error("the bound sessions run CH Query 2: the database needs the CH tables")]
    NoChTables,
    #[error("cannot start a session thread: {0}")]
    Spawn(std::io::Error),
    #[error(transparent)]
    Os(#[from] OsPlacementError),
    #[error("a session failed: {0}")]
    Session(String),
    #[error(transparent)]
    Sched(#[from] SchedError),
}

/// Runs the sessions for `duration`.
pub fn run_tiers(
    db: Arc<Database>,
    tables: &TpccTables,
    ch: Option<&ChTables>,
    config: &TiersConfig,
    duration: Duration,
) -> Result<TiersReport, TiersError> {
    let bound = config
        .classes
        .iter()
        .any(|c| c.kind == Kind::Bound && c.sessions > 0);
    if bound && ch.is_none() {
        return Err(TiersError::NoChTables);
    }
    let executor = Arc::new(EngineExecutor::new(
        db,
        tables.clone(),
        ch.cloned(),
        Isolation::Serializable,
    ));
    let scheduler = match &config.placement {
        Placement::Overtake(sched) => {
            Some(Arc::new(Scheduler::start(sched, Arc::new(CallExecutor))?))
        }
        Placement::Os(_) => None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let reports = Arc::new(Mutex::new(
        config
            .classes
            .iter()
            .map(|_| SideReport::new())
            .collect::<Vec<_>>(),
    ));
    let failed = Arc::new(Mutex::new(None::<TiersError>));
    let sessions = (config.classes.iter().enumerate())
        .flat_map(|(c, class)| (0..class.sessions).map(move |i| (c, i)));
    let mut threads = Vec::new();
    let begin = Instant::now();
    for (class, i) in sessions {
        let session = Session {
            class,
            index: i,
            config: config.clone(),
            executor: Arc::clone(&executor),
            scheduler: scheduler.clone(),
            stop: Arc::clone(&stop),
            reports: Arc::clone(&reports),
            failed: Arc::clone(&failed),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("session-{class}-{i}"))
            .spawn(move || session.run());
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                failed
                    .lock()
                    .expect("failed")
                    .get_or_insert(TiersError::Spawn(e));
                break;
            }
        }
    }
    let end = begin + duration;
    while Instant::now() < end && failed.lock().expect("failed").is_none() {
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let elapsed = begin.elapsed();
    if let Some(e) = failed.lock().expect("failed").take() {
        return Err(e);
    }
    let mut classes = Arc::into_inner(reports)
        .expect("sessions joined")
        .into_inner()
        .expect("reports");
    if let Some(scheduler) = scheduler {
        let report = Arc::into_inner(scheduler)
            .expect("sessions joined")
            .shutdown(Shutdown::Drain)?;
        for (c, class) in config.classes.iter().enumerate() {
            let shared = config
                .classes
                .iter()
                .filter(|o| o.group == class.group)
                .count()
                > 1;
            classes[c].cpu_nanos = (!shared).then(|| {
                report
                    .stats
                    .group(class.group)
                    .map_or(0, |s| s.running_nanos)
            });
        }
    }
    Ok(TiersReport { elapsed, classes })
}

/// One session thread.
struct Session {
    /// Index of its class in the configuration.
    class: usize,
    index: usize,
    config: TiersConfig,
    executor: Arc<EngineExecutor>,
    scheduler: Option<Arc<Scheduler<CallExecutor>>>,
    stop: Arc<AtomicBool>,
    reports: Arc<Mutex<Vec<SideReport>>>,
    failed: Arc<Mutex<Option<TiersError>>>,
}

impl Session {
    fn group(&self) -> Group {
        self.config.classes[self.class].group
    }

    fn kind(&self) -> Kind {
        self.config.classes[self.class].kind
    }

    fn run(self) {
        if let Err(e) = self.enter_os_class() {
            self.stop.store(true, Ordering::Relaxed);
            self.failed.lock().expect("failed").get_or_insert(e);
            return;
        }
        let seed = self.config.seed.wrapping_add(self.index as u64 * 104_729);
        let mut rng = TpccRng::new(seed ^ (self.class as u64) << 20);
        let mut mine = SideReport::new();
        let usage = thread_usage();
        let home = self.index as i64 % self.config.warehouses.max(1) + 1;
        while !self.stop.load(Ordering::Relaxed) {
            let jobs: Vec<Job> = match self.kind() {
                Kind::Bursty => {
                    std::thread::sleep(exponential(&mut rng, self.config.think));
                    (0..self.config.burst.max(1))
                        .map(|_| Job {
                            priority: self.group().tier.default_priority(),
                            work: Work::Tpcc(TpccRequest::generate(
                                &mut rng,
                                &self.config.constants,
                                home,
                                self.config.warehouses,
                            )),
                        })
                        .collect()
                }
                Kind::Bound => vec![Job {
                    priority: self.group().tier.default_priority(),
                    work: Work::Query2,
                }],
            };
            let asked = Instant::now();
            let units = jobs.len() as u64;
            if let Err(e) = self.serve(jobs) {
                self.stop.store(true, Ordering::Relaxed);
                self.failed.lock().expect("failed").get_or_insert(e);
                return;
            }
            mine.latency.record(asked.elapsed());
            mine.requests += 1;
            mine.units += units;
        }
        let cpu = u128::from(thread_usage().since(&usage).cpu_ns);
        let mut reports = self.reports.lock().expect("reports");
        let side = &mut reports[self.class];
        side.requests += mine.requests;
        side.units += mine.units;
        side.cpu_nanos = side.cpu_nanos.map(|n| n + cpu);
        side.latency.merge(&mine.latency);
    }

    /// Runs one request's jobs: on the scheduler, or here.
    fn serve(&self, mut jobs: Vec<Job>) -> Result<(), TiersError> {
        let exec = Arc::clone(&self.executor);
        let Some(scheduler) = &self.scheduler else {
            return jobs
                .iter_mut()
                .map(|job| exec.execute(job, 0))
                .try_for_each(|o| check(&o));
        };
        let (call, ticket) = Call::with_outcome(Priority::LOW, move || {
            let mut last = overtake_sched::Outcome::committed();
            for job in &mut jobs {
                last = exec.execute(job, 0);
                if last.error.is_some() {
                    break;
                }
            }
            last
        });
        let mut call = call.in_group(self.group());
        while let Err(refused) = scheduler.submit(call) {
            call = refused.into_inner();
            std::thread::yield_now();
        }
        let outcome = ticket
            .wait()
            .map_err(|e| TiersError::Session(e.to_string()))?;
        check(&outcome)
    }

    /// Puts this thread where the OS baseline says (nothing under Overtake's scheduler).
    fn enter_os_class(&self) -> Result<(), TiersError> {
        match &self.config.placement {
            Placement::Os(os) => Ok(os.enter(self.group())?),
            Placement::Overtake(_) => Ok(()),
        }
    }
}

fn check(outcome: &overtake_sched::Outcome) -> Result<(), TiersError> {
    match &outcome.error {
        Some(e) => Err(TiersError::Session(e.to_string())),
        None => Ok(()),
    }
}
