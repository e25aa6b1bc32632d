//! The flags and value parsers more than one command takes (a policy, a delivery mechanism, an
//! isolation level, where a database is kept). A command's own flags live beside it. Ranges are
//! enforced by the parsers, so a bad value is refused with a clear message before any work
//! starts; nothing here runs anything.

use clap::{Args, ValueEnum};

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

/// Concurrency control of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CcArg {
    /// Strict two-phase locking.
    #[value(name = "2pl")]
    TwoPl,
    /// Multi-version snapshots, writes installed at commit.
    Mvcc,
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
pub const MAX_WORKERS: i64 = 256;

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

pub fn non_negative(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be a number, 0 or more"))
    }
}

pub fn share(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} must be between 0 and 1"))
    }
}

pub fn lock_policy_name(s: &str) -> Result<String, String> {
    if overtake_engine::LockPolicy::NAMES.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a lock policy (one of {})",
            overtake_engine::LockPolicy::NAMES.join(", ")
        ))
    }
}

pub fn load_share(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v > 0.0 && v <= 2.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be more than 0 and at most 2"))
    }
}

pub fn positive_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= 86_400.0 {
        Ok(v)
    } else {
        Err(format!("{s} must be more than 0 and at most 86400 seconds"))
    }
}
