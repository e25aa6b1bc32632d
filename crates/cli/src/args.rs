//! Command-line flags. Ranges are enforced here so that bad values are refused with a clear message
//! before any work starts.

use crate::figures::FigureArgs;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Overtake: a main-memory transaction engine in which urgent transactions overtake long ones.
#[derive(Debug, Parser)]
#[command(name = "overtake", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one benchmark configuration.
    #[command(subcommand)]
    Bench(Bench),
    /// Run several configurations one after another and compare them side by side.
    #[command(subcommand)]
    Compare(Compare),
    /// Recover a kept database and check it.
    #[command(subcommand)]
    Check(Check),
    /// Kill a logging TPC-C run with SIGKILL at random times, recover, and check that nothing
    /// acknowledged was lost and the database is consistent.
    CrashTest(CrashTestArgs),
    /// Serve SQL over PostgreSQL's wire protocol (psql, pgbench, drivers), each session's
    /// statements at its priority (`SET priority = 'high'`).
    Serve(ServeArgs),
    /// Draw figures from the CSV file of a script that ran clients against the server.
    #[command(subcommand)]
    Plot(Plot),
}

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

/// `serve`: a server. Its database is kept, as a PostgreSQL server's is: in `--data-dir`,
/// by default `overtake-data` in the working directory, unless `--in-memory`.
#[derive(Debug, Args)]
#[command(mut_arg("data_dir", |a| a.help(format!(
    "Keep the database in this directory (created if needed): recovered from its checkpoint \
     and log when it holds one, and every commit logged [default: {DEFAULT_DATA_DIR}]"
))))]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    pub listen: std::net::SocketAddr,
    /// `user:password` lines: clients authenticate with SCRAM-SHA-256. Without it, none.
    #[arg(long)]
    pub password_file: Option<std::path::PathBuf>,
    /// With `--password-file`: a user who is a superuser (may be given more than once). Only
    /// superusers may raise priority above `normal` (or grant that: `GRANT overtake_priority TO
    /// alice`) and change other roles' defaults.
    #[arg(long = "superuser", value_name = "USER", default_value = "postgres")]
    pub superusers: Vec<String>,
    /// TLS certificate chain (PEM): with `--tls-key`, clients may connect with TLS
    /// (`sslmode=require`).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// TLS private key (PEM), with `--tls-cert`.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Listen on an address other hosts can reach without `--password-file` (anyone could
    /// connect as anyone): refused unless given.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// Scheduler workers (each pinned to a core).
    #[arg(long, default_value_t = default_workers())]
    pub workers: u16,
    /// How urgent statements get a worker that runs a less urgent one (and, under `quantum`,
    /// how statements of one level share a worker: a long query does not hold up the short
    /// statements of its own level until it ends).
    #[arg(long, value_enum, default_value_t = PolicyArg::Quantum)]
    pub policy: PolicyArg,
    /// Concurrency control: MVCC (READ COMMITTED writers take row locks), or two-phase locking
    /// for every transaction.
    #[arg(long, value_enum, default_value_t = CcArg::Mvcc)]
    pub concurrency: CcArg,
    /// The lock policy (row locks under MVCC, every lock under 2pl).
    #[arg(long, default_value = "pow", value_parser = lock_policy_name)]
    pub lock_policy: String,
    /// Network threads serving the protocol with `--session-threads` (otherwise each session is
    /// served by the worker that runs it, and one thread only accepts connections).
    #[arg(long, default_value_t = 2)]
    pub network_threads: u16,
    /// Most client connections at once (PostgreSQL's max_connections): one more is refused at
    /// startup with 53300, "sorry, too many clients already".
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_connections: u32,
    /// How many of --max-connections only superusers may take (PostgreSQL's
    /// superuser_reserved_connections): others are refused with 53300 past the rest.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub superuser_reserved_connections: u32,
    /// How long an idle worker spins for new work before it sleeps (µs), polling its sessions'
    /// sockets as it spins, and only while every other worker sleeps: spinning while others
    /// work would take a core from the clients that share them (0: never spin).
    #[arg(long, default_value_t = 40)]
    pub idle_spin_us: u64,
    /// Pin each worker to a core of its own.
    #[arg(long)]
    pub pin: bool,
    /// With the quantum policy: how long a statement runs before a waiting statement of its
    /// level may take its worker (µs).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quantum_us: u64,
    /// Run each session's statements on its own OS thread, as PostgreSQL's backends run, and let
    /// the operating system schedule them: `eevdf` (a cgroup per task_tier/task_weight group,
    /// weighted; needs a writable CPU cgroup), `idle` (background sessions SCHED_IDLE), `fifo` or
    /// `rr` (time-sensitive sessions SCHED_FIFO / SCHED_RR 99; needs privilege). To compare with
    /// Overtake's own scheduling (the default: statements are tasks on the workers).
    #[arg(long, value_enum)]
    pub session_threads: Option<OsSchedulerArg>,
    /// With `--session-threads`: while a session waits for a lock, name the session holding it
    /// in overtake-ufs's hint map (pinned at PATH, by default where overtake-ufs pins it), so
    /// that the OS scheduler runs the holder as time-sensitive until the wait ends.
    #[arg(long, value_name = "PATH", num_args = 0..=1,
          default_missing_value = overtake_runtime::os::bpf_map::DEFAULT_HINTS_PIN)]
    pub ufs_hints: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub kept: KeptArgs,
    /// Keep nothing: the database lives in memory and is gone when the server stops.
    #[arg(long, conflicts_with_all = ["data_dir", "durability", "checkpoint_mib", "group_commit_us"])]
    pub in_memory: bool,
}

/// Where `serve` keeps its database unless told otherwise.
pub const DEFAULT_DATA_DIR: &str = "overtake-data";

fn default_workers() -> u16 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(u16::MAX as usize) as u16)
}

#[derive(Debug, Subcommand)]
pub enum Check {
    /// Recover a TPC-C database kept with `bench tpcc --data-dir` and check the TPC-C consistency
    /// conditions.
    Tpcc(CheckTpccArgs),
}

#[derive(Debug, Subcommand)]
pub enum Bench {
    /// TPC-C: load, run the standard mix closed-loop, report throughput and latency per type.
    Tpcc(TpccArgs),
    /// CH-benCHmark Query 2 alone: load, run it repeatedly, report its runtime.
    Q2(Q2Args),
    /// The mixed workload (long low-priority transactions, batches of urgent ones) under one
    /// scheduling policy.
    Mixed(BenchMixedArgs),
    /// Microbenchmarks of the preemption mechanisms: switch cost, flag-to-switch and
    /// signal-to-switch latency.
    Switch(SwitchArgs),
    /// Aspen's bimodal workload (99.5% short requests, 0.5% long scans, Poisson arrivals, no
    /// priorities) under one policy.
    Bimodal(BenchBimodalArgs),
    /// How often this machine takes a core away from a running thread (the floor under every
    /// tail latency the other benches report).
    Stalls(StallsArgs),
    /// TPC-C under two-phase locking with one lock-scheduling policy: closed-loop clients with
    /// think time, a share of them urgent (POW's experiment).
    Locks(BenchLocksArgs),
    /// TPC-C transactions one after another on this thread, straight on the engine (no
    /// scheduler, no clients): the engine's own cost per transaction type, for profiling.
    Engine(EngineArgs),
    /// The SQL layer's own cost per statement: a prepared primary-key SELECT (pgbench's
    /// select-only statement) run through the planner's executor with its parameter decoded and
    /// its row encoded as text, against the same read straight on the engine, on this thread.
    Sql(SqlArgs),
}

/// `bench sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// Statements per measurement.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub count: u64,
    /// Alternating measurements of each.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Compare {
    /// The mixed workload under several policies, with ratios to `wait`.
    Mixed(CompareMixedArgs),
    /// Starvation control under overload (PreemptDB's Figure 12 scaled to these workers): urgent
    /// work arriving faster than a worker can serve it, one run per starvation threshold plus
    /// `wait` and the low-priority work alone.
    #[command(mut_arg("hp_queue", |a| a.default_value("100")))]
    Starvation(CompareStarvationArgs),
    /// The paused lock holder under every lock policy: on one worker, a low-priority
    /// transaction locks a row and computes; an urgent one asks for the row, preempts it and
    /// waits for the lock, or takes it (POW, PAbort).
    Holder(CompareHolderArgs),
    /// The bimodal workload under several policies (and quantum ablations), with ratios to
    /// `wait`.
    Bimodal(CompareBimodalArgs),
    /// TPC-C under two-phase locking: every lock policy at every think time, with urgent
    /// speedups and background penalties against `standard`, plus CPU priority only, lock
    /// priority only, both, and the MVCC mode (McWherter's question).
    Locks(CompareLocksArgs),
    /// UFS's experiment: CPU-bursty time-sensitive sessions against CPU-bound background
    /// sessions (SOLO, MIN:MAX, 50:50), under Overtake's tiers on pinned workers and on OS threads
    /// under the OS's schedulers (cgroup weights, SCHED_IDLE, FIFO, RR); then shares within a
    /// tier by weight.
    Tiers(CompareTiersArgs),
    /// UFS's lock-holder hint experiment on OS threads, all on one core: a background session
    /// holds a row lock and computes, a time-sensitive one waits for it, a second time-sensitive
    /// one burns CPU. The waiter's latency alone, with the burner, and with the lock manager's
    /// hints to overtake-ufs (which must be loaded for that run).
    Hints(CompareHintsArgs),
}

/// How the operating system schedules session threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OsSchedulerArg {
    Eevdf,
    Idle,
    Fifo,
    Rr,
    /// `overtake-ufs`, the sched_ext scheduler (it must be loaded).
    Ufs,
}

/// This process's group cgroups (`overtake-<pid>` under its own CPU cgroup).
pub fn session_cgroups() -> Result<overtake_runtime::os::cgroup::CgroupTree, String> {
    overtake_runtime::os::cgroup::CgroupTree::discover(
        std::path::Path::new("/sys/fs/cgroup"),
        &format!("overtake-{}", std::process::id()),
    )
    .map_err(|e| format!("cgroup weights cannot be used here: {e}"))
}

impl OsSchedulerArg {
    /// The scheduling, with cgroups for `eevdf` and `ufs` made under this process's own CPU
    /// cgroup. The kernel's own schedulers are refused while a sched_ext scheduler is loaded (it
    /// would be measured instead), and `ufs` unless `overtake-ufs` is the one loaded.
    pub fn scheduling(self) -> Result<overtake_sched::OsScheduling, String> {
        use overtake_runtime::os::sched_ext::SchedExt;
        use overtake_sched::OsScheduling;
        let scx = SchedExt::read();
        match self {
            OsSchedulerArg::Ufs if scx.is_ufs() => Ok(OsScheduling::Ufs(session_cgroups()?)),
            OsSchedulerArg::Ufs => Err(format!(
                "overtake-ufs is not loaded ({scx}); see the README on loading it"
            )),
            _ if !scx.is_kernel_own() => Err(format!(
                "the kernel's own scheduler does not run threads now ({scx})"
            )),
            OsSchedulerArg::Eevdf => Ok(OsScheduling::Weights(session_cgroups()?)),
            OsSchedulerArg::Idle => Ok(OsScheduling::Idle),
            OsSchedulerArg::Fifo => Ok(OsScheduling::Fifo),
            OsSchedulerArg::Rr => Ok(OsScheduling::RoundRobin),
        }
    }
}

/// Who schedules the sessions in `compare tiers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TiersSchedulerArg {
    /// Overtake's tiers and weights, the sessions' work as tasks on pinned workers.
    Overtake,
    /// Session threads in cgroups weighted by their groups (EEVDF).
    Eevdf,
    /// Background session threads SCHED_IDLE.
    Idle,
    /// Time-sensitive session threads SCHED_FIFO 99.
    Fifo,
    /// Time-sensitive session threads SCHED_RR 99.
    Rr,
    /// Session threads in cgroups named by tier, under `overtake-ufs` (sched_ext).
    Ufs,
}

impl TiersSchedulerArg {
    pub fn name(self) -> &'static str {
        match self {
            TiersSchedulerArg::Overtake => "overtake",
            TiersSchedulerArg::Eevdf => "eevdf",
            TiersSchedulerArg::Idle => "idle",
            TiersSchedulerArg::Fifo => "fifo",
            TiersSchedulerArg::Rr => "rr",
            TiersSchedulerArg::Ufs => "ufs",
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareHintsArgs {
    /// Rounds of each run (each on a fresh table).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// How long the holder computes while it holds the lock, in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub hold_ms: u64,
    /// How long the burner computes, in milliseconds (keep it well under sched_ext's 30 s
    /// watchdog: a starved holder is a stalled task to it).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub burn_ms: u64,
    /// Where overtake-ufs pinned its hint map.
    #[arg(long, default_value = overtake_runtime::os::bpf_map::DEFAULT_HINTS_PIN)]
    pub hints_pin: std::path::PathBuf,
    /// The usable core the three sessions share.
    #[arg(long, default_value_t = 0)]
    pub core: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareTiersArgs {
    /// Schedulers to compare.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "overtake,eevdf,idle,fifo,rr"
    )]
    pub schedulers: Vec<TiersSchedulerArg>,
    /// Worker threads (Overtake) and warehouses.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Sessions of each kind in the mixes (default: one per worker; the shares-by-weight runs
    /// use two per group and worker).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub sessions: Option<u16>,
    /// TPC-C transactions per bursty request.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub burst: u32,
    /// Mean think time before a bursty request, in microseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub think_us: u64,
    /// Seconds per run.
    #[arg(long, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Overtake's quantum within a tier, in microseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quantum_us: u64,
    /// Skip the shares-by-weight runs.
    #[arg(long)]
    pub no_weights: bool,
    /// Seed of the load and the sessions.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Options shared by `bench locks` and `compare locks`.
#[derive(Clone, Debug, Args)]
pub struct LocksArgs {
    /// Number of warehouses (POW used 10).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Worker threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Closed-loop client threads.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clients: u32,
    /// Share of transactions submitted as urgent (a Bernoulli draw per transaction).
    #[arg(long, default_value_t = 0.1, value_parser = share)]
    pub hp_share: f64,
    /// Seconds to run each configuration.
    #[arg(long, default_value_t = 5.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Reprieve of the `cr` policy, in microseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub reprieve_us: u64,
    /// CPU scheduling of the lock-policy runs (the McWherter runs choose their own).
    #[arg(long, value_enum, default_value_t = PolicyArg::Preempt)]
    pub cpu: PolicyArg,
    /// How preemption requests reach a worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds a request may stay untaken before SIGURG is sent (signal mechanism).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Check the TPC-C consistency conditions after every run.
    #[arg(long)]
    pub check: bool,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data and client generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Debug, Args)]
pub struct BenchLocksArgs {
    #[command(flatten)]
    pub locks: LocksArgs,
    /// Lock-scheduling policy: standard, nprio, nprio-inherit, pabort, pow, cr, wdl1, cats.
    #[arg(long, default_value = "pow", value_parser = lock_policy_name)]
    pub lock_policy: String,
    /// Concurrency control: 2pl (with --lock-policy) or mvcc.
    #[arg(long, value_enum, default_value_t = CcArg::TwoPl)]
    pub cc: CcArg,
    /// Mean think time of a client between transactions, in microseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub think_us: u64,
    /// Also print the lock waits in progress half-way through the run (who waits for whom, how
    /// long, like PostgreSQL's pg_locks).
    #[arg(long)]
    pub show_waits: bool,
}

#[derive(Debug, Args)]
pub struct CompareLocksArgs {
    #[command(flatten)]
    pub locks: LocksArgs,
    /// Lock policies to compare (standard is always run: it is the baseline).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "standard,nprio,nprio-inherit,pabort,pow,cr,wdl1,cats",
        value_parser = lock_policy_name
    )]
    pub policies: Vec<String>,
    /// Mean think times to sweep, in microseconds, from light load to saturation.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,3000,1000,300,0",
        value_parser = clap::value_parser!(u64).range(0..=10_000_000)
    )]
    pub think_us: Vec<u64>,
    /// Skip the runs that separate CPU priority from lock priority (and the MVCC reference).
    #[arg(long)]
    pub no_mechanisms: bool,
}

/// Concurrency control of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CcArg {
    /// Strict two-phase locking.
    #[value(name = "2pl")]
    TwoPl,
    /// Multi-version snapshots, writes installed at commit.
    Mvcc,
}

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

#[derive(Debug, Args)]
pub struct CompareBimodalArgs {
    /// Policies to run, in order (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "wait,quantum"
    )]
    pub policies: Vec<BimodalPolicyArg>,
    /// Run every policy at every load of --loads instead of at --load, and report Aspen's metric:
    /// the highest load (and short-request throughput) at which the short requests' p99 stays
    /// under --slo-us.
    #[arg(long)]
    pub sweep: bool,
    /// Loads of the sweep.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.3,0.4,0.5,0.6,0.7,0.8,0.9",
        value_parser = load_share
    )]
    pub loads: Vec<f64>,
    /// The short requests' p99 limit of the sweep, in microseconds (default: ten times the short
    /// service time, and at least twice the quantum: a short request that arrives while a long
    /// one runs waits up to a quantum under any quantum policy).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub slo_us: Option<u64>,
    #[command(flatten)]
    pub bimodal: BimodalArgs,
}

/// Scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// Run to completion; urgent work first at transaction boundaries.
    Wait,
    /// Also yield to waiting urgent work every --yield-interval record accesses.
    Cooperative,
    /// Preempt the running transaction as soon as urgent work arrives.
    Preempt,
    /// Preempt for more urgent work at once, and share a worker among the work of one level in
    /// quanta (Aspen's policy within a level).
    Quantum,
}

impl PolicyArg {
    pub fn policy(self) -> overtake_sched::Policy {
        match self {
            PolicyArg::Wait => overtake_sched::Policy::Wait,
            PolicyArg::Cooperative => overtake_sched::Policy::Cooperative,
            PolicyArg::Preempt => overtake_sched::Policy::Preempt,
            PolicyArg::Quantum => overtake_sched::Policy::Quantum,
        }
    }
}

/// How preemption requests reach a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MechanismArg {
    /// A flag polled at every record access, and SIGURG with call injection as the backstop.
    Signal,
    /// The flag only.
    Poll,
    /// Hardware user interrupts (refused where the CPU or kernel lacks them).
    Uintr,
}

impl MechanismArg {
    pub fn delivery(self) -> overtake_sched::Delivery {
        match self {
            MechanismArg::Signal => overtake_sched::Delivery::Signal,
            MechanismArg::Poll => overtake_sched::Delivery::Poll,
            MechanismArg::Uintr => overtake_sched::Delivery::Uintr,
        }
    }
}

/// The long low-priority transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LowArg {
    /// CH-benCHmark Query 2.
    Q2,
    /// A numeric loop touching no record (like a UDF), --compute-ms long: fused multiply-adds
    /// over a 32 KiB array with the widest vector instructions the CPU has (AVX-512, AVX2+FMA,
    /// or scalar).
    Compute,
    /// A writer: one TPC-C Payment booked in every district of a warehouse (so it writes
    /// the warehouse and district rows every urgent New-Order and Payment writes), in one
    /// transaction, then --compute-ms of computation.
    BatchUpdate,
}

impl LowArg {
    pub fn name(self) -> &'static str {
        match self {
            LowArg::Q2 => "q2",
            LowArg::Compute => "compute",
            LowArg::BatchUpdate => "batch-update",
        }
    }
}

/// The urgent transactions of the mixed workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HighArg {
    /// TPC-C New-Order and Payment, half each.
    Tpcc,
    /// A numeric loop touching no record, --hp-compute-us long (sets the urgent load exactly).
    Compute,
}

impl HighArg {
    pub fn name(self) -> &'static str {
        match self {
            HighArg::Tpcc => "tpcc",
            HighArg::Compute => "compute",
        }
    }
}

/// The middle class of the mixed workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MediumArg {
    /// The TPC-C standard mix (all five transactions), arriving open-loop.
    Tpcc,
}

/// Options shared by `bench mixed` and `compare mixed`.
#[derive(Clone, Debug, Args)]
pub struct MixedArgs {
    /// Worker threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Warehouses (default: one per worker).
    #[arg(long, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: Option<i64>,
    /// Seconds to run each configuration.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Microseconds between batches of urgent transactions.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub arrival_interval_us: u64,
    /// High-priority queue size per worker (a batch is workers x this).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub hp_queue: u32,
    /// Low-priority queue size per worker (kept full).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub lp_queue: u32,
    /// Cooperative: record accesses between checks for urgent work.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub yield_interval: u32,
    /// Preempt: starvation threshold (0 never preempts; 1 or more never limits).
    #[arg(long, default_value_t = 100.0, value_parser = non_negative)]
    pub starvation_threshold: f64,
    /// The long low-priority transaction.
    #[arg(long, value_enum, default_value_t = LowArg::Q2)]
    pub lp: LowArg,
    /// The urgent transactions.
    #[arg(long, value_enum, default_value_t = HighArg::Tpcc)]
    pub hp: HighArg,
    /// Length of an urgent compute transaction, in microseconds (with --hp compute).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub hp_compute_us: u64,
    /// A middle class at medium priority, between the urgent and the low-priority work.
    #[arg(long, value_enum)]
    pub mp: Option<MediumArg>,
    /// Microseconds between medium-priority arrivals (with --mp).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub mp_interval_us: u64,
    /// After this many failed attempts a low-priority transaction runs promoted (not preemptible,
    /// reserving the rows it writes), so that urgent writers cannot starve a low-priority writer
    /// (--lp batch-update); 0 never promotes.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub promote_after: u32,
    /// Length of a compute transaction, in milliseconds (with --lp compute and batch-update).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub compute_ms: u64,
    /// How preemption requests reach a worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds a request may stay untaken before SIGURG is sent (signal mechanism).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Isolation level.
    #[arg(long, value_enum, default_value_t = IsolationArg::Serializable)]
    pub isolation: IsolationArg,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// MiB of heap to fault in after the load and before each run, so that the database's
    /// growth reuses memory the kernel has already backed instead of faulting pages in inside
    /// transactions (and inside the non-preemptible allocator calls that urgent work waits
    /// for). By default, the run's expected growth; 0 turns it off.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub prefault_mib: Option<u64>,
    /// Attribute the slowest 1% of urgent transactions (queueing, preemption delivery, running
    /// on and off the CPU, page faults, the longest non-preemptible region) and print the
    /// lengths of the workers' non-preemptible regions with the longest sites. A diagnostic
    /// mode: it costs two system calls per urgent transaction.
    #[arg(long)]
    pub tail_report: bool,
    /// Let the kernel back the heap with transparent huge pages. Off by default: on a VM whose
    /// host backs memory lazily, the first touch of each fresh 2 MiB page stalls the transaction
    /// that touches it for milliseconds.
    #[arg(long)]
    pub huge_pages: bool,
    /// Seed of the data and transaction generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Log the commits: each run loads its database into a fresh directory (under --log-dir)
    /// opened with this durability, and removes it afterwards. Without it the runs are in
    /// memory.
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// With --durability: where the runs' directories go (default: the system's temporary
    /// directory). Put it on the disk whose flushes you want to measure.
    #[arg(long, value_name = "DIR", requires = "durability")]
    pub log_dir: Option<std::path::PathBuf>,
    /// With --durability: group commit, the longest a commit nobody urgent flushes waits for
    /// its flush, in microseconds.
    #[arg(long, value_name = "US", requires = "durability",
          default_value_t = overtake_engine::DEFAULT_GROUP_COMMIT.as_micros() as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub group_commit_us: u64,
    #[command(flatten)]
    pub figures: FigureArgs,
}

#[derive(Debug, Args)]
pub struct BenchMixedArgs {
    /// Scheduling policy.
    #[arg(long, value_enum, default_value_t = PolicyArg::Preempt)]
    pub policy: PolicyArg,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

#[derive(Debug, Args)]
pub struct CompareMixedArgs {
    /// Policies to run, in order (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "wait,cooperative,preempt"
    )]
    pub policies: Vec<PolicyArg>,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

#[derive(Debug, Args)]
pub struct CompareStarvationArgs {
    /// Starvation thresholds, one `preempt` run each (0 never lets urgent work take the worker
    /// from waiting low-priority work; 1 and above never limit).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,0.25,0.5,0.75,1,100",
        value_parser = non_negative
    )]
    pub thresholds: Vec<f64>,
    /// Skip the `wait` run.
    #[arg(long)]
    pub no_wait: bool,
    /// Skip the run of the low-priority work alone (its solo rate, which the other runs are
    /// compared with).
    #[arg(long)]
    pub no_solo: bool,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

#[derive(Debug, Args)]
pub struct CompareHolderArgs {
    /// Lock policies to compare.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "standard,nprio-inherit,pabort,pow,cr",
        value_parser = lock_policy_name
    )]
    pub policies: Vec<String>,
    /// Rounds per policy (each on a fresh table).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub rounds: u32,
    /// How long the holder computes while it holds the lock, in milliseconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub hold_ms: u64,
    /// When the urgent transaction arrives, in milliseconds after the holder took the lock.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub ask_after_ms: u64,
    /// Reprieve of the `cr` policy, in microseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub reprieve_us: u64,
    /// A time-sensitive computation of this many milliseconds arrives on the holder's worker
    /// once it has the lock (0: none): UFS's lock-holder experiment, where only a lift into the
    /// waiter's level (`nprio-inherit`) lets the background holder finish before it.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub competitor_ms: u64,
    /// How preemption requests reach the worker.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SwitchArgs {
    /// Samples per measurement.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(100..=10_000_000))]
    pub samples: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StallsArgs {
    /// Seconds to watch every core.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Which transactions to run: the standard mix, or only one type.
    #[arg(long = "type", value_enum, default_value_t = TxnTypeArg::Mix)]
    pub txn_type: TxnTypeArg,
    /// Transactions to run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub count: u64,
    /// Number of warehouses (each transaction's home warehouse takes turns).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    #[command(flatten)]
    pub run: TpccRunOptions,
}

/// Options every TPC-C run takes, whoever drives it.
#[derive(Clone, Debug, Args)]
pub struct TpccRunOptions {
    /// Isolation level.
    #[arg(long, value_enum, default_value_t = IsolationArg::Serializable)]
    pub isolation: IsolationArg,
    /// Check the TPC-C consistency conditions after the run.
    #[arg(long)]
    pub check: bool,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data and transaction generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// A TPC-C transaction type, or the standard mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TxnTypeArg {
    Mix,
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl TxnTypeArg {
    /// The one type asked for (`None`: the mix).
    pub fn only(self) -> Option<overtake_workload::tpcc::TxnType> {
        use overtake_workload::tpcc::TxnType;
        match self {
            TxnTypeArg::Mix => None,
            TxnTypeArg::NewOrder => Some(TxnType::NewOrder),
            TxnTypeArg::Payment => Some(TxnType::Payment),
            TxnTypeArg::OrderStatus => Some(TxnType::OrderStatus),
            TxnTypeArg::Delivery => Some(TxnType::Delivery),
            TxnTypeArg::StockLevel => Some(TxnType::StockLevel),
        }
    }
}

/// Isolation level of the benchmark's transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IsolationArg {
    /// Snapshot isolation.
    Snapshot,
    /// Serializable (snapshot isolation plus commit-time validation).
    Serializable,
}

impl IsolationArg {
    pub fn engine(self) -> overtake_engine::Isolation {
        match self {
            IsolationArg::Snapshot => overtake_engine::Isolation::Snapshot,
            IsolationArg::Serializable => overtake_engine::Isolation::Serializable,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IsolationArg::Snapshot => "snapshot",
            IsolationArg::Serializable => "serializable",
        }
    }
}

/// The most worker threads any command takes (the same bound everywhere).
const MAX_WORKERS: i64 = 256;

/// Refuses a list flag that names one value twice: each value is one run, and a repeat would only
/// run it again under the same name.
pub fn each_once<T: PartialEq>(
    flag: &str,
    items: &[T],
    name: impl Fn(&T) -> String,
) -> Result<(), String> {
    for (i, item) in items.iter().enumerate() {
        if items[..i].contains(item) {
            return Err(format!(
                "{flag} names {} twice: each is run once",
                name(item)
            ));
        }
    }
    Ok(())
}

#[derive(Clone, Debug, Args)]
pub struct TpccArgs {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Worker threads running the mix (worker i's home warehouse is i mod warehouses + 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS))]
    pub workers: u16,
    /// Seconds to run the mix.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    #[command(flatten)]
    pub run: TpccRunOptions,
    /// Interrupt every worker this often, in microseconds, without giving it work (the cost of
    /// the preemption mechanism alone).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub interrupt_interval_us: Option<u64>,
    /// How interrupts are delivered.
    #[arg(long, value_enum, default_value_t = MechanismArg::Signal)]
    pub preempt_mechanism: MechanismArg,
    /// Microseconds an interrupt request may stay untaken before SIGURG is sent (0: always send).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub signal_delay_us: u64,
    /// Instead of one terminal per worker with no think time: this many closed-loop client
    /// threads submitting through the scheduler's API, each thinking between transactions.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: Option<u32>,
    /// With --clients: mean think time in microseconds (exponentially distributed).
    #[arg(long, requires = "clients", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub think_us: u64,
    /// With --clients: share of transactions submitted as urgent (the rest are background).
    #[arg(long, requires = "clients", default_value_t = 0.5, value_parser = share)]
    pub hp_share: f64,
    /// With --clients: the scheduling policy.
    #[arg(long, requires = "clients", value_enum, default_value_t = PolicyArg::Preempt)]
    pub policy: PolicyArg,
    /// With --clients: each client runs its transactions on its own thread, scheduled by the OS
    /// (`eevdf`: a cgroup per class's group; `idle`: background SCHED_IDLE; `fifo`/`rr`: urgent
    /// SCHED_FIFO/SCHED_RR 99), instead of submitting them to the workers.
    #[arg(long, requires = "clients", value_enum)]
    pub session_threads: Option<OsSchedulerArg>,
    /// MiB of heap to fault in after the load and before the run, so that the database's growth
    /// reuses memory the kernel has already backed instead of faulting pages in inside
    /// transactions. By default, the run's expected growth; 0 turns it off. Not with --clients.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_048_576), conflicts_with = "clients")]
    pub prefault_mib: Option<u64>,
    #[command(flatten)]
    pub kept: KeptArgs,
    /// With --data-dir: append `w d o_id` to this file for every New-Order whose commit was
    /// acknowledged (a crash test's ledger; `check tpcc --ack-log` verifies it). Each line is a
    /// write on the worker, so it costs throughput. Not with --clients.
    #[arg(
        long,
        value_name = "FILE",
        requires = "data_dir",
        conflicts_with = "clients"
    )]
    pub ack_log: Option<std::path::PathBuf>,
}

/// Where a database is kept, and how its commits reach the disk.
#[derive(Clone, Debug, Args)]
pub struct KeptArgs {
    /// Keep the database in this directory (created if needed): recovered from its checkpoint
    /// and log when it holds one, and every commit logged. Without it, in memory only.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// With a kept database: how commits reach the disk (sync, the default: acknowledged once
    /// durable; async: before; off: nothing new is kept).
    #[arg(long, value_enum)]
    pub durability: Option<DurabilityArg>,
    /// With a kept database: write a checkpoint in the background each time this many MiB were
    /// logged since the last one (0: only the one after a load; default 1024). A checkpoint lets
    /// the log before it be removed and bounds what recovery replays.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub checkpoint_mib: Option<u64>,
    /// With a kept database: group commit, the longest a commit nobody urgent flushes waits for
    /// its flush, in microseconds (default 500).
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub group_commit_us: Option<u64>,
}

impl KeptArgs {
    /// How commits reach the disk.
    pub fn durability(&self) -> DurabilityArg {
        self.durability.unwrap_or(DurabilityArg::Sync)
    }

    /// `options` with this durability, checkpoint interval and group commit.
    pub fn options(&self, options: overtake_engine::Options) -> overtake_engine::Options {
        let mib = self.checkpoint_mib.unwrap_or(1024);
        let every = (mib > 0).then_some(mib << 20);
        let group_commit = self.group_commit_us.map_or(
            overtake_engine::DEFAULT_GROUP_COMMIT,
            std::time::Duration::from_micros,
        );
        options
            .durability(self.durability().engine())
            .checkpoint_after(every)
            .group_commit(group_commit)
    }

    /// An error if a setting of a kept database is given for one in memory.
    pub fn check_in_memory(&self) -> Result<(), String> {
        let given = [
            ("--durability", self.durability.is_some()),
            ("--checkpoint-mib", self.checkpoint_mib.is_some()),
            ("--group-commit-us", self.group_commit_us.is_some()),
        ];
        match given.iter().find(|(_, given)| *given) {
            Some((flag, _)) => Err(format!(
                "{flag} is for a kept database: give --data-dir too"
            )),
            None => Ok(()),
        }
    }
}

/// How commits reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    Off,
    Async,
    Sync,
}

impl DurabilityArg {
    pub fn engine(self) -> overtake_engine::Durability {
        match self {
            DurabilityArg::Off => overtake_engine::Durability::Off,
            DurabilityArg::Async => overtake_engine::Durability::Async,
            DurabilityArg::Sync => overtake_engine::Durability::Sync,
        }
    }
}

/// `check tpcc`: a kept database, recovered and checked.
#[derive(Debug, Args)]
pub struct CheckTpccArgs {
    /// The database's directory (as given to `bench tpcc --data-dir`).
    #[arg(long, value_name = "DIR")]
    pub data_dir: std::path::PathBuf,
    /// Also check that every order this ledger holds (`bench tpcc --ack-log`) was recovered.
    #[arg(long, value_name = "FILE")]
    pub ack_log: Option<std::path::PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `crash-test`: kill a logging TPC-C run again and again, and check what each recovery kept.
#[derive(Debug, Args)]
pub struct CrashTestArgs {
    /// How many times to kill the run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub kills: u32,
    /// The database's directory (default: a fresh one under the system's temporary directory,
    /// removed at the end). An existing one is continued.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// Shortest time a run lives before the kill, in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub min_ms: u64,
    /// Longest time a run lives before the kill, in milliseconds.
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub max_ms: u64,
    /// Seed of the kill times.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Start again from an empty directory (and ledger) after every this many kills (0:
    /// never), so that a long loop keeps a database of bounded size: TPC-C's order tables only
    /// grow, and every recovery and checkpoint reads them all.
    #[arg(long, value_name = "KILLS", default_value_t = 0)]
    pub fresh_every: u32,
    /// The runs checkpoint each time this many MiB were logged, so that kills land during
    /// checkpoints too (`bench tpcc --checkpoint-mib`).
    #[arg(long, value_name = "MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub checkpoint_mib: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct Q2Args {
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(i64).range(1..=1000))]
    pub warehouses: i64,
    /// Number of times to run the query.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub runs: u32,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Seed of the data generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn non_negative(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be a number, 0 or more"))
    }
}

fn share(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} must be between 0 and 1"))
    }
}

fn lock_policy_name(s: &str) -> Result<String, String> {
    if overtake_engine::LockPolicy::NAMES.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a lock policy (one of {})",
            overtake_engine::LockPolicy::NAMES.join(", ")
        ))
    }
}

fn load_share(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v > 0.0 && v <= 2.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be more than 0 and at most 2"))
    }
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be more than 0 and at most 86400 seconds"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("overtake").chain(args.iter().copied()))
    }

    /// Asserts that every command line in `bad` is refused.
    fn assert_refused(bad: &[&[&str]]) {
        for args in bad {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn bimodal_flags_are_checked_and_ablations_named() {
        assert_refused(&[
            &["bench", "bimodal", "--load", "0"][..],
            &["bench", "bimodal", "--load", "2.5"],
            &["bench", "bimodal", "--load", "lots"],
            &["bench", "bimodal", "--quantum-us", "0"],
            &["bench", "bimodal", "--policy", "preempt"],
            &["compare", "bimodal", "--policies", "wait,fifo"],
            &["bench", "tpcc", "--clients", "0"],
            &["bench", "tpcc", "--clients", "4", "--hp-share", "1.5"],
            &["bench", "tpcc", "--clients", "4", "--hp-share", "NaN"],
        ]);
        let Ok(Cli {
            command: Command::Compare(Compare::Bimodal(c)),
        }) = parse(&[
            "compare",
            "bimodal",
            "--policies",
            "wait,quantum,quantum-one-queue,quantum-no-skip",
        ])
        else {
            panic!("a valid compare bimodal");
        };
        let settings: Vec<_> = c.policies.iter().map(|p| p.settings()).collect();
        use overtake_sched::Policy;
        assert_eq!(
            settings,
            vec![
                (Policy::Wait, true, true),
                (Policy::Quantum, true, true),
                (Policy::Quantum, false, true),
                (Policy::Quantum, true, false),
            ]
        );
        assert!((c.bimodal.load - 0.7).abs() < 1e-12, "default load");
    }

    #[test]
    fn lock_flags_name_real_policies() {
        assert_refused(&[
            &["bench", "locks", "--lock-policy", "wound-wait"][..],
            &["bench", "locks", "--cc", "occ"],
            &["bench", "locks", "--clients", "0"],
            &["compare", "locks", "--policies", "pow,fifo"],
            &["compare", "locks", "--think-us", "100,-1"],
            &["compare", "locks", "--hp-share", "2"],
        ]);
        let Ok(Cli {
            command: Command::Compare(Compare::Locks(c)),
        }) = parse(&[
            "compare",
            "locks",
            "--policies",
            "pow,pabort",
            "--think-us",
            "0,500",
        ])
        else {
            panic!("a valid compare locks");
        };
        assert_eq!(c.policies, ["pow", "pabort"]);
        assert_eq!(c.think_us, [0, 500]);
        assert_eq!(c.locks.warehouses, 10, "POW's default");
        let Ok(Cli {
            command: Command::Bench(Bench::Locks(b)),
        }) = parse(&["bench", "locks", "--cc", "2pl", "--lock-policy", "cr"])
        else {
            panic!("a valid bench locks");
        };
        assert_eq!((b.cc, b.lock_policy.as_str()), (CcArg::TwoPl, "cr"));
    }

    #[test]
    fn prefault_is_a_size_for_closed_loop_runs() {
        assert_refused(&[
            &["bench", "tpcc", "--prefault-mib", "-1"][..],
            &["bench", "tpcc", "--prefault-mib", "lots"],
            &["bench", "tpcc", "--prefault-mib", "2000000"],
            &["bench", "tpcc", "--clients", "2", "--prefault-mib", "10"],
        ]);
        let Ok(Cli {
            command: Command::Bench(Bench::Tpcc(t)),
        }) = parse(&["bench", "tpcc", "--prefault-mib", "0"])
        else {
            panic!("a valid bench tpcc");
        };
        assert_eq!(t.prefault_mib, Some(0));
    }

    #[test]
    fn engine_flags_name_a_type_and_a_count() {
        assert_refused(&[
            &["bench", "engine", "--type", "new_order_fast"][..],
            &["bench", "engine", "--count", "0"],
            &["bench", "engine", "--warehouses", "0"],
        ]);
        let Ok(Cli {
            command: Command::Bench(Bench::Engine(e)),
        }) = parse(&["bench", "engine", "--type", "stock-level", "--count", "7"])
        else {
            panic!("a valid bench engine");
        };
        use overtake_workload::tpcc::TxnType;
        assert_eq!((e.txn_type.only(), e.count), (Some(TxnType::StockLevel), 7));
        assert_eq!(TxnTypeArg::Mix.only(), None);
    }
}
