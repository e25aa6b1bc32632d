//! Which OS-level scheduler runs this machine's threads: the kernel's own (EEVDF), or a sched_ext
//! scheduler loaded into it (such as `overtake-ufs`), as `/sys/kernel/sched_ext` says. Session
//! threads measured "under EEVDF" must not be under a loaded BPF scheduler, and runs "under UFS"
//! must be under `overtake-ufs`: this is how they check.
//!
//! Only reads sysfs (or a directory laid out like it, in tests). Must never load or unload
//! anything.

use std::fs;
use std::path::Path;

/// The name `overtake-ufs` registers its operations under.
pub const UFS_OPS: &str = "overtake_ufs";

/// Where the kernel describes sched_ext.
pub const SYSFS: &str = "/sys/kernel/sched_ext";

/// The state of sched_ext on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedExt {
    /// The kernel was built without sched_ext (`CONFIG_SCHED_CLASS_EXT`).
    Absent,
    /// sched_ext is there and no BPF scheduler is loaded: the kernel's own schedulers run.
    Disabled,
    /// A BPF scheduler is loaded and runs the machine's threads.
    Enabled {
        /// Its name (`overtake_ufs` for ours).
        ops: String,
    },
    /// Between states (enabling, disabling) or a state this code does not know.
    Other(String),
}

impl SchedExt {
    /// The state described under `root` (normally [`SYSFS`]).
    pub fn read_at(root: &Path) -> SchedExt {
        let Ok(state) = fs::read_to_string(root.join("state")) else {
            return SchedExt::Absent;
        };
        match state.trim() {
            "disabled" => SchedExt::Disabled,
            "enabled" => SchedExt::Enabled {
                ops: fs::read_to_string(root.join("root/ops"))
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default(),
            },
            other => SchedExt::Other(other.to_owned()),
        }
    }

    /// This machine's state.
    pub fn read() -> SchedExt {
        SchedExt::read_at(Path::new(SYSFS))
    }

    /// True if `overtake-ufs` is the loaded scheduler.
    pub fn is_ufs(&self) -> bool {
        matches!(self, SchedExt::Enabled { ops } if ops == UFS_OPS)
    }

    /// True if the kernel's own schedulers run every thread (no BPF scheduler loaded).
    pub fn is_kernel_own(&self) -> bool {
        matches!(self, SchedExt::Absent | SchedExt::Disabled)
    }
}

impl std::fmt::Display for SchedExt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchedExt::Absent => f.write_str("no sched_ext in this kernel"),
            SchedExt::Disabled => f.write_str("sched_ext disabled"),
            SchedExt::Enabled { ops } => write!(f, "sched_ext enabled ({ops})"),
            SchedExt::Other(state) => write!(f, "sched_ext {state}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_read_from_a_sysfs_like_tree() {
        let dir = std::env::temp_dir().join(format!("overtake-scx-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(SchedExt::read_at(&dir), SchedExt::Absent);
        fs::create_dir_all(dir.join("root")).expect("scratch");
        fs::write(dir.join("state"), "disabled\n").expect("state");
        let disabled = SchedExt::read_at(&dir);
        assert!(disabled.is_kernel_own() && !disabled.is_ufs());
        fs::write(dir.join("state"), "enabled\n").expect("state");
        fs::write(dir.join("root/ops"), "overtake_ufs\n").expect("ops");
        let ufs = SchedExt::read_at(&dir);
        assert!(ufs.is_ufs() && !ufs.is_kernel_own());
        assert_eq!(ufs.to_string(), "sched_ext enabled (overtake_ufs)");
        fs::write(dir.join("root/ops"), "simple\n").expect("ops");
        assert!(!SchedExt::read_at(&dir).is_ufs());
        fs::write(dir.join("state"), "enabling\n").expect("state");
        assert_eq!(SchedExt::read_at(&dir), SchedExt::Other("enabling".into()));
        fs::remove_dir_all(&dir).expect("clean up");
    }
}
