//! The closed-loop TPC-C driver behind `overtake bench tpcc`: every worker runs the standard mix
//! back to back against its home warehouse (worker `i` uses warehouse `i % warehouses + 1`), with
//! no think time. The transactions run on scheduler workers, in their preemptible contexts, so that
//! the same run can be repeated with the open-loop dispatcher interrupting every worker at a fixed interval
//! without giving it work: the cost of the preemption mechanism alone (PreemptDB's Figure 8).

use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{Database, Isolation, Priority};
use overtake_sched::{Delivery, IdleWork, Policy, SchedConfig};

use crate::drivers::open_loop::{self, NoArrivals, RunConfig, RunReport};

use crate::ack::AckLog;
use crate::exec::{EngineExecutor, Job, Work};
use crate::rng::{NuRandConstants, TpccRng};
use crate::tpcc::TpccTables;
use crate::tpcc::request::TpccRequest;

/// How to run the mix.
#[derive(Clone, Debug)]
pub struct ClosedLoopConfig {
    /// Warehouses in the database.
    pub warehouses: i64,
    /// Worker threads.
    pub workers: usize,
    /// How long to run.
    pub duration: Duration,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// NURand constants of the run (derived from the load's, clause 2.1.6.1).
    pub constants: NuRandConstants,
    /// Seed of the workers' generators.
    pub seed: u64,
    /// Interrupt every worker this often, without work (None: never).
    pub interrupt_interval: Option<Duration>,
    /// How the interrupts are delivered.
    pub delivery: Delivery,
    /// Signal delivery: how long a request may stay untaken before SIGURG is sent.
    pub signal_delay: Duration,
    /// Pin workers to cores.
    pub pin: bool,
    /// Where acknowledged New-Orders are recorded (a crash test's ledger), if anywhere.
    pub ack: Option<Arc<AckLog>>,
}

/// Runs the mix. `tick` is called about ten times a second with the elapsed time.
pub fn run_closed_loop(
    db: Arc<Database>,
    tables: &TpccTables,
    config: &ClosedLoopConfig,
    tick: &dyn Fn(Duration),
) -> Result<RunReport, overtake_sched::SchedError> {
    let executor = Arc::new(
        EngineExecutor::new(db, tables.clone(), None, config.isolation)
            .recording_orders(config.ack.clone()),
    );
    let feeds = (0..config.workers)
        .map(|worker| {
            let mut rng = TpccRng::new(config.seed.wrapping_add(worker as u64 * 7919));
            let (constants, warehouses) = (config.constants, config.warehouses);
            let home = (worker as i64 % warehouses) + 1;
            Some(Box::new(move || {
                Some(Job {
                    priority: Priority::LOW,
                    work: Work::Tpcc(TpccRequest::generate(
                        &mut rng, &constants, home, warehouses,
                    )),
                })
            }) as IdleWork<Job>)
        })
        .collect();
    let sched = SchedConfig::default()
        .policy(Policy::Preempt)
        .workers(config.workers)
        .delivery(config.delivery)
        .signal_delay(config.signal_delay)
        .pin(config.pin);
    let run = RunConfig {
        sched,
        duration: config.duration,
        interrupt_interval: config.interrupt_interval,
        ..RunConfig::default()
    };
    open_loop::run(&run, executor, &mut NoArrivals, feeds, tick)
}
