//! Sessions on OS threads: how a group (tier, weight) maps to the operating system's scheduler
//! when work runs on a session's own thread, as PostgreSQL's backends do, instead of as a task on
//! Overtake's workers. The baselines UFS is compared with: EEVDF with cgroup weights, SCHED_IDLE
//! for the background tier, SCHED_FIFO or SCHED_RR for the time-sensitive tier; and the same
//! cgroups under `overtake-ufs`, the sched_ext scheduler in `ufs/`.
//!
//! Only moves the calling thread (into a cgroup, or a scheduling class). Must never touch a
//! worker: workers have their own weights (`SchedConfig::os_background`).
//!
//! Which class a tier gets is policy, so it is here and not in `runtime::os` (which only makes
//! the calls); and here rather than beside a runner, because both runners of work on OS threads
//! use it, the server's session threads and the workload's clients, and `sched` is the lowest
//! crate both depend on.

use overtake_priority::{Group, Tier};
use overtake_runtime::os::cgroup::{CgroupError, CgroupTree};
use overtake_runtime::os::thread::{OsPolicy, set_os_policy, thread_id};

/// How session threads are scheduled by the operating system.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum OsScheduling {
    /// EEVDF with the groups' weights: each thread in its group's cgroup.
    Weights(CgroupTree),
    /// `overtake-ufs`, the sched_ext scheduler: each thread in its group's cgroup, whose name
    /// gives the tier (`ts-*` time-sensitive) and whose weight the share within the tier. The
    /// scheduler must be loaded (see `overtake_runtime::os::sched_ext`).
    Ufs(CgroupTree),
    /// Background threads SCHED_IDLE, time-sensitive ones ordinary.
    Idle,
    /// Time-sensitive threads SCHED_FIFO at 99, background ones ordinary.
    Fifo,
    /// Time-sensitive threads SCHED_RR at 99, background ones ordinary.
    RoundRobin,
}

/// Why a thread could not be put where its group says.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OsPlacementError {
    #[error("cannot put a session thread in its cgroup: {0}")]
    Cgroup(#[from] CgroupError),
    #[error("the operating system refused the scheduling class {class}: {source}")]
    Class {
        class: &'static str,
        source: std::io::Error,
    },
}

impl OsScheduling {
    /// A short name: `eevdf`, `ufs`, `idle`, `fifo`, `rr`.
    pub fn name(&self) -> &'static str {
        match self {
            OsScheduling::Weights(_) => "eevdf",
            OsScheduling::Ufs(_) => "ufs",
            OsScheduling::Idle => "idle",
            OsScheduling::Fifo => "fifo",
            OsScheduling::RoundRobin => "rr",
        }
    }

    /// The scheduling class a thread of `group` runs in (`Normal` under `Weights` and `Ufs`,
    /// where the cgroup carries the weight).
    pub fn class_of(&self, group: Group) -> OsPolicy {
        let time_sensitive = group.tier == Tier::TimeSensitive;
        match self {
            OsScheduling::Idle if !time_sensitive => OsPolicy::Idle,
            OsScheduling::Fifo if time_sensitive => OsPolicy::Fifo(99),
            OsScheduling::RoundRobin if time_sensitive => OsPolicy::RoundRobin(99),
            _ => OsPolicy::Normal,
        }
    }

    /// Puts the calling thread where `group` says: its cgroup, or its scheduling class.
    pub fn enter(&self, group: Group) -> Result<(), OsPlacementError> {
        if let OsScheduling::Weights(tree) | OsScheduling::Ufs(tree) = self {
            let dir = tree.group(&group.dir_name(), group.weight.get())?;
            tree.place_thread(&dir, thread_id())?;
            return Ok(());
        }
        let class = self.class_of(group);
        set_os_policy(class).map_err(|source| OsPlacementError::Class {
            class: match class {
                OsPolicy::Idle => "SCHED_IDLE",
                OsPolicy::Fifo(_) => "SCHED_FIFO",
                OsPolicy::RoundRobin(_) => "SCHED_RR",
                _ => "SCHED_OTHER",
            },
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use overtake_priority::Weight;
    use overtake_runtime::os::cgroup::CgroupVersion;

    use super::*;

    #[test]
    fn each_baseline_maps_the_tiers_to_its_class_and_weights_to_cgroups() {
        let ts = Group::new(Tier::TimeSensitive, Weight::MAX);
        let bg = Group::new(Tier::Background, Weight::MIN);
        let classes = |os: OsScheduling| (os.class_of(ts), os.class_of(bg));
        assert_eq!(
            classes(OsScheduling::Idle),
            (OsPolicy::Normal, OsPolicy::Idle)
        );
        assert_eq!(
            classes(OsScheduling::Fifo),
            (OsPolicy::Fifo(99), OsPolicy::Normal)
        );
        assert_eq!(
            classes(OsScheduling::RoundRobin),
            (OsPolicy::RoundRobin(99), OsPolicy::Normal)
        );
        // Weights: a fake v1 tree in a temporary directory takes the group and the thread.
        let dir = std::env::temp_dir().join(format!("overtake-os-threads-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        let os = OsScheduling::Weights(CgroupTree::at(&dir, CgroupVersion::V1));
        assert_eq!(os.class_of(bg), OsPolicy::Normal);
        os.enter(bg.numbered(3)).expect("a fake tree takes it");
        let group = dir.join("bg-1-3");
        assert_eq!(
            std::fs::read_to_string(group.join("cpu.shares")).expect("shares"),
            "10"
        );
        assert_eq!(
            std::fs::read_to_string(group.join("tasks")).expect("tasks"),
            thread_id().to_string()
        );
        let _ = std::fs::remove_dir_all(&dir);
        // A class the OS refuses is a clear error (FIFO needs privilege; where it is granted,
        // the thread is put back).
        std::thread::spawn(move || match OsScheduling::Fifo.enter(ts) {
            Ok(()) => set_os_policy(OsPolicy::Normal).expect("back to normal"),
            Err(e) => assert!(e.to_string().contains("SCHED_FIFO"), "{e}"),
        })
        .join()
        .expect("thread");
    }
}
