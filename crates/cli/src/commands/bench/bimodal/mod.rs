//! `bench bimodal`: Aspen's bimodal workload (requests without priorities, 99.5% short, 0.5%
//! long, Poisson arrivals at a share of the capacity) under run-to-completion or under the
//! quantum policy and its ablations. `compare bimodal` runs it under several policies (and, with
//! `--sweep`, at a range of loads) through what this module exports.
//!
//! The capacity comes from each kind's service time measured alone on the same scheduler (the
//! median of a few closed-loop rounds of that kind only), so that it includes the scheduler's
//! cost per request but not the policies' interplay, and moves less with this machine's noise
//! than a probe of the mix did.
//!
//! A run must never count a request it did not serve: what the machine could not keep up with
//! is reported as a shortfall, not as latency.

use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use overtake_sched::{IdleWork, Policy, SchedConfig};
use overtake_workload::bimodal::{Bimodal, LONG_SHARE, PoissonArrivals, Request};
use overtake_workload::drivers::open_loop::{self, NoArrivals, RunConfig, RunReport};
use overtake_workload::rng::TpccRng;

use crate::commands::flags::{MAX_WORKERS, MechanismArg, load_share, positive_seconds};
use crate::report::figures::FigureArgs;
use crate::report::progress::{progress, run_progress, ticker};

pub mod report;

pub use report::{BimodalRun, Setup, describe, print_preemptions, report, write_figures};

/// Policies for work without priorities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BimodalPolicyArg {
    /// Run to completion, first come first served.
    Wait,
    /// Aspen: preempt after a quantum if other work waits; new work before preempted work
    /// (--no-two-queues and --no-skip change that for `bench`).
    Quantum,
    /// Quantum with one queue: a preempted request goes behind the work queued before it.
    QuantumOneQueue,
    /// Quantum preempting at every quantum's end, whether or not other work waits.
    QuantumNoSkip,
}

impl BimodalPolicyArg {
    /// The policy, two-queues and skip settings.
    pub fn settings(self) -> (overtake_sched::Policy, bool, bool) {
        use overtake_sched::Policy;
        match self {
            BimodalPolicyArg::Wait => (Policy::Wait, true, true),
            BimodalPolicyArg::Quantum => (Policy::Quantum, true, true),
            BimodalPolicyArg::QuantumOneQueue => (Policy::Quantum, false, true),
            BimodalPolicyArg::QuantumNoSkip => (Policy::Quantum, true, false),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BimodalPolicyArg::Wait => "wait",
            BimodalPolicyArg::Quantum => "quantum",
            BimodalPolicyArg::QuantumOneQueue => "quantum-one-queue",
            BimodalPolicyArg::QuantumNoSkip => "quantum-no-skip",
        }
    }
}

/// Options shared by `bench bimodal` and `compare bimodal`.
#[derive(Clone, Debug, Args)]
pub struct BimodalArgs {
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Seconds to run each configuration.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Offered load as a share of the capacity (1.0 = saturation): requests per second are this
    /// over the mean service time, from each kind's service time measured alone on the
    /// scheduler before the runs.
    #[arg(long, default_value_t = 0.7, value_parser = load_share)]
    pub load: f64,
    /// Quantum in microseconds.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quantum_us: u64,
    /// Quanta a preempted request runs per slice when it resumes (Aspen's longer quantum for the
    /// preempted queue; 1: every slice is one quantum).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub resumed_quanta: u32,
    /// Quantum with two queues: a preempted request that has waited this many milliseconds runs
    /// before new requests (bounds its wait, and how many requests are paused, under overload).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub paused_age_ms: u64,
    /// Target service time of a long request (a scan calibrated to it), in microseconds.
    #[arg(long, default_value_t = 750, value_parser = clap::value_parser!(u64).range(10..=1_000_000))]
    pub long_us: u64,
    /// Inbox size per worker (arrivals beyond it wait at the dispatcher, counted in latency).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub queue: u32,
    /// How preemption requests reach a worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds a request may stay untaken before SIGURG is sent (signal mechanism).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seed of the request generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Debug, Args)]
pub struct BenchBimodalArgs {
    /// Scheduling policy.
    #[arg(long, value_enum, default_value_t = BimodalPolicyArg::Quantum)]
    pub policy: BimodalPolicyArg,
    /// Quantum: one queue (a preempted request goes behind the work queued before it) instead
    /// of new work before preempted work.
    #[arg(long)]
    pub no_two_queues: bool,
    /// Quantum: preempt at every quantum's end, even when nothing else waits.
    #[arg(long)]
    pub no_skip: bool,
    #[command(flatten)]
    pub bimodal: BimodalArgs,
}

/// The workload, loaded and measured once for every run.
pub struct Prepared {
    pub workload: Arc<Bimodal>,
    /// Service times of each kind run directly on the engine (no scheduler).
    pub short: Duration,
    pub long: Duration,
    /// Service times of each kind alone on the scheduler (its cost per request included).
    pub short_scheduled: Duration,
    pub long_scheduled: Duration,
    /// Requests per second the workers can serve: workers over the mean scheduled service time.
    pub capacity: f64,
}

impl Prepared {
    /// Offered requests per second at `load`.
    pub fn rate(&self, load: f64) -> f64 {
        self.capacity * load
    }
}

/// Rounds of each kind's service-time probe, and how long each runs.
const PROBE_ROUNDS: usize = 5;
const PROBE: Duration = Duration::from_millis(300);

/// The median time per request of `long` (or short) requests alone, closed-loop on the scheduler.
fn scheduled_service_time(
    workload: &Arc<Bimodal>,
    long: bool,
    args: &BimodalArgs,
) -> Result<Duration, String> {
    let mut rounds = Vec::with_capacity(PROBE_ROUNDS);
    for round in 0..PROBE_ROUNDS {
        let feeds = (0..args.workers)
            .map(|w| {
                let workload = Arc::clone(workload);
                let mut rng = TpccRng::new(args.seed.wrapping_add(u64::from(w) + round as u64));
                Some(Box::new(move || Some(workload.request(&mut rng, long))) as IdleWork<Request>)
            })
            .collect();
        let probe = RunConfig {
            duration: PROBE,
            ..run_config(BimodalPolicyArg::Wait, args)
        };
        let measured = open_loop::run(
            &probe,
            Arc::clone(workload),
            &mut NoArrivals,
            feeds,
            &|_| {},
        )
        .map_err(|e| e.to_string())?;
        let served: u64 = measured.stats.kinds.iter().map(|k| k.committed).sum();
        if served == 0 {
            return Err("the service-time probe committed no request".into());
        }
        let busy = measured.elapsed.as_secs_f64() * f64::from(args.workers);
        rounds.push(busy / served as f64);
    }
    rounds.sort_by(f64::total_cmp);
    Ok(Duration::from_secs_f64(rounds[rounds.len() / 2]))
}

pub fn prepare(args: &BimodalArgs) -> Result<Prepared, String> {
    let bar = progress(1, "loading", args.json);
    let mut workload = Bimodal::load().map_err(|e| format!("loading the bimodal table: {e}"))?;
    workload
        .age(args.seed)
        .map_err(|e| format!("updating the bimodal table: {e}"))?;
    workload.calibrate(Duration::from_micros(args.long_us));
    let mut rng = TpccRng::new(args.seed ^ 0x5eed);
    // Warm the table up, then measure each kind alone.
    workload.service_times(2_000, &mut rng);
    let (short, long) = workload.service_times(5_000, &mut rng);
    bar.finish_and_clear();
    let workload = Arc::new(workload);
    let bar = progress(1, "measuring", args.json);
    let short_scheduled = scheduled_service_time(&workload, false, args)?;
    let long_scheduled = scheduled_service_time(&workload, true, args)?;
    bar.finish_and_clear();
    let mean = (1.0 - LONG_SHARE) * short_scheduled.as_secs_f64()
        + LONG_SHARE * long_scheduled.as_secs_f64();
    Ok(Prepared {
        workload,
        short,
        long,
        short_scheduled,
        long_scheduled,
        capacity: f64::from(args.workers) / mean,
    })
}

pub fn run_config(policy: BimodalPolicyArg, args: &BimodalArgs) -> RunConfig {
    let (policy, two_queues, skip_needless) = policy.settings();
    let mut sched = SchedConfig::default()
        .policy(policy)
        .workers(usize::from(args.workers))
        .quantum(Duration::from_micros(args.quantum_us))
        .delivery(args.preempt_mechanism.delivery())
        .signal_delay(Duration::from_micros(args.signal_delay_us))
        .record_jobs(args.figures.records_jobs());
    sched.resumed_quanta = args.resumed_quanta;
    sched.paused_age_limit = Duration::from_millis(args.paused_age_ms);
    sched.two_queues = two_queues;
    sched.skip_needless = skip_needless;
    RunConfig {
        sched,
        duration: Duration::from_secs_f64(args.duration),
        batch: args.queue as usize,
        ..RunConfig::default()
    }
}

/// One run of `config` on the prepared workload, at `load`.
pub fn run_one(
    name: &str,
    config: &RunConfig,
    prepared: &Prepared,
    args: &BimodalArgs,
    load: f64,
) -> Result<Run, String> {
    config.service().validate().map_err(|e| e.to_string())?;
    let rate = prepared.rate(load);
    let mut arrivals = PoissonArrivals::new(Arc::clone(&prepared.workload), rate, args.seed);
    let bar = run_progress(args.duration, name, args.json);
    let report = open_loop::run(
        config,
        Arc::clone(&prepared.workload),
        &mut arrivals,
        Vec::new(),
        &ticker(&bar),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(Run {
        name: name.to_owned(),
        load,
        rate,
        report,
    })
}

/// One policy's run at one load.
pub struct Run {
    pub name: String,
    pub load: f64,
    /// Offered requests per second.
    pub rate: f64,
    pub report: RunReport,
}

impl Run {
    pub fn served(&self) -> u64 {
        self.report.stats.kinds.iter().map(|k| k.committed).sum()
    }

    /// Share of the offered requests served within the run.
    pub fn served_share(&self) -> f64 {
        self.served() as f64 / self.report.elapsed.as_secs_f64() / self.rate
    }

    /// Worker time not spent idle, in seconds.
    pub fn busy(&self) -> f64 {
        let r = &self.report;
        r.elapsed.as_secs_f64() * r.config.sched.workers as f64 - r.stats.idle_nanos as f64 / 1e9
    }

    pub fn short_p99(&self) -> f64 {
        self.report.stats.kinds[0].latency.summary().p99
    }

    /// Within the SLO at its load: kept up, and the short requests' p99 under `slo_us`.
    pub fn meets(&self, slo_us: f64) -> bool {
        self.served_share() >= KEPT_UP && self.short_p99() <= slo_us
    }
}

/// Share of the offered requests a run must serve within its duration to count as keeping up.
pub const KEPT_UP: f64 = 0.98;

/// Why this run's latencies are mostly queueing, if they are: the dispatcher's warnings, and a
/// run that served under 98% of the offered requests.
pub fn warnings(r: &Run) -> Vec<String> {
    let mut out = r.report.dispatch.warnings_about("requests");
    out.extend(shortfall(
        r.served(),
        r.report.elapsed.as_secs_f64(),
        r.rate,
    ));
    out.extend(r.report.blocked.iter().map(ToString::to_string));
    out
}

/// The warning for a run that served `served` requests in `elapsed_s` seconds of `offered` per
/// second, if that is under [`KEPT_UP`] of them.
fn shortfall(served: u64, elapsed_s: f64, offered: f64) -> Option<String> {
    let served_per_sec = served as f64 / elapsed_s;
    (served_per_sec < KEPT_UP * offered).then(|| {
        format!(
            "the worker could not keep up: it served {served_per_sec:.0} requests/s of the \
             {offered:.0}/s offered ({:.1}%), so the latencies shown are mostly queueing",
            served_per_sec * 100.0 / offered
        )
    })
}

pub fn bench(args: &BenchBimodalArgs) -> Result<(), String> {
    args.bimodal.figures.prepare()?;
    let prepared = prepare(&args.bimodal)?;
    let mut config = run_config(args.policy, &args.bimodal);
    if config.sched.policy == Policy::Quantum {
        config.sched.two_queues &= !args.no_two_queues;
        config.sched.skip_needless &= !args.no_skip;
    }
    let name = match (
        config.sched.policy,
        config.sched.two_queues,
        config.sched.skip_needless,
    ) {
        (Policy::Quantum, false, false) => "quantum-one-queue-no-skip",
        (Policy::Quantum, false, true) => "quantum-one-queue",
        (Policy::Quantum, true, false) => "quantum-no-skip",
        _ => args.policy.name(),
    };
    let runs = [run_one(
        name,
        &config,
        &prepared,
        &args.bimodal,
        args.bimodal.load,
    )?];
    let files = write_figures(&runs, &[], &args.bimodal)?;
    report(&runs, &prepared, &args.bimodal, &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_serving_under_98_percent_of_the_offered_load_is_flagged() {
        assert_eq!(shortfall(990_000, 10.0, 100_000.0), None);
        let warning = shortfall(945_000, 10.0, 100_000.0).expect("94.5% served");
        assert!(warning.contains("94500 requests/s of the 100000/s offered (94.5%)"));
    }
}
