//! CPU cgroups for threads: a group directory per (tier name, weight) under a root, with its CPU
//! weight written (cgroup v2 `cpu.weight`, or v1 `cpu.shares` scaled from it), and threads moved
//! into it, so that the operating system shares the CPU among threads by weight (what sessions
//! on OS threads use; UFS's scheduler also reads a group's tier from its name).
//!
//! Works on the real hierarchy when this process may write to it, and on any directory laid out
//! like one (tests use a fake tree). Must never touch a cgroup outside its root, and never leave
//! a thread half-moved: a failed write is an error naming the file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Which cgroup interface a tree has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The unified hierarchy: `cpu.weight` (1-10000), threads in `cgroup.threads` of threaded
    /// groups.
    V2,
    /// The v1 `cpu` controller: `cpu.shares` (2-262144, 1024 the default), threads in `tasks`.
    V1,
}

/// Why a cgroup could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    /// Neither a v2 hierarchy with the cpu controller nor a v1 cpu controller was found.
    #[error("no CPU cgroup controller found (looked for {v2} and {v1})")]
    NotFound { v2: PathBuf, v1: PathBuf },
    /// A file or directory could not be written.
    #[error("{file}: {reason}")]
    Io { file: PathBuf, reason: String },
    /// A weight outside 1 to 10000.
    #[error("cgroup weight {0} is outside 1 to 10000")]
    Weight(u32),
}

fn io_at(file: &Path) -> impl Fn(io::Error) -> CgroupError + '_ {
    move |e| CgroupError::Io {
        file: file.to_owned(),
        reason: e.to_string(),
    }
}

/// The directory under which a process keeps its CPU groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupTree {
    root: PathBuf,
    version: CgroupVersion,
}

impl CgroupTree {
    /// The tree rooted at `root` (a cgroup directory, or a fake one laid out like it).
    pub fn at(root: impl Into<PathBuf>, version: CgroupVersion) -> CgroupTree {
        CgroupTree {
            root: root.into(),
            version,
        }
    }

    /// This machine's CPU cgroups under `mount` (normally `/sys/fs/cgroup`): v2 if `mount` has
    /// the cpu controller, else v1's `cpu` directory if there is one. Groups go in a directory
    /// `name` under this process's own cgroup of that hierarchy, made if need be.
    pub fn discover(mount: &Path, name: &str) -> Result<CgroupTree, CgroupError> {
        let own = |hierarchy: &str| -> Option<String> {
            let text = fs::read_to_string("/proc/self/cgroup").ok()?;
            text.lines().find_map(|line| {
                let mut parts = line.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                (controllers.split(',').any(|c| c == hierarchy)).then(|| path.to_owned())
            })
        };
        let v2 = mount.to_owned();
        let v1 = mount.join("cpu");
        let controllers = fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
        let (base, version) = if controllers.split_whitespace().any(|c| c == "cpu") {
            let path = own("").unwrap_or_else(|| "/".into());
            (v2.join(path.trim_start_matches('/')), CgroupVersion::V2)
        } else if v1.join("cpu.shares").exists() {
            let path = own("cpu").unwrap_or_else(|| "/".into());
            (v1.join(path.trim_start_matches('/')), CgroupVersion::V1)
        } else {
            return Err(CgroupError::NotFound { v2, v1 });
        };
        if version == CgroupVersion::V2 {
            // The root below needs the cpu controller from this process's own cgroup. A
            // threaded controller may be enabled there even though the cgroup holds processes:
            // it becomes the root of a threaded subtree (the groups below).
            let own = base.join("cgroup.subtree_control");
            let enabled = fs::read_to_string(&own).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "cpu") {
                write(&own, "+cpu")?;
            }
        }
        let tree = CgroupTree::at(base.join(name), version);
        tree.prepare()?;
        Ok(tree)
    }

    /// Its root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its interface.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Makes the root, and under v2 lets its children use the cpu controller in threaded mode
    /// (threads of one process in different groups). The root is threaded itself: a thread may
    /// only move within its process's threaded subtree, which starts at the process's cgroup.
    fn prepare(&self) -> Result<(), CgroupError> {
        fs::create_dir_all(&self.root).map_err(io_at(&self.root))?;
        if self.version == CgroupVersion::V2 {
            write(&self.root.join("cgroup.type"), "threaded")?;
            write(&self.root.join("cgroup.subtree_control"), "+cpu")?;
        }
        Ok(())
    }

    /// The group named `name` (such as `ts-100`, one directory name) at `weight`
    /// (1-10000): the directory `name` under the root, made if need be, its weight written.
    pub fn group(&self, name: &str, weight: u32) -> Result<PathBuf, CgroupError> {
        if !(1..=10_000).contains(&weight) {
            return Err(CgroupError::Weight(weight));
        }
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(CgroupError::Io {
                file: self.root.join(name),
                reason: "a group's name must be one directory name".into(),
            });
        }
        let dir = self.root.join(name);
        fs::create_dir_all(&dir).map_err(io_at(&dir))?;
        match self.version {
            CgroupVersion::V2 => {
                write(&dir.join("cgroup.type"), "threaded")?;
                write(&dir.join("cpu.weight"), &weight.to_string())?;
            }
            CgroupVersion::V1 => {
                write(&dir.join("cpu.shares"), &shares(weight).to_string())?;
            }
        }
        Ok(dir)
    }

    /// Removes the groups no thread is in any more, then the root if it is empty (best effort: a
    /// group still in use stays, and a cgroup file system removes a group's files with it).
    pub fn remove_empty(&self) {
        if let Ok(entries) = fs::read_dir(&self.root) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = fs::remove_dir(entry.path());
                }
            }
        }
        let _ = fs::remove_dir(&self.root);
    }

    /// Moves thread `tid` into group directory `group` (made by [`group`](Self::group)).
    pub fn place_thread(&self, group: &Path, tid: i32) -> Result<(), CgroupError> {
        if !group.starts_with(&self.root) {
            return Err(CgroupError::Io {
                file: group.to_owned(),
                reason: format!("not a group under {}", self.root.display()),
            });
        }
        let file = match self.version {
            CgroupVersion::V2 => "cgroup.threads",
            CgroupVersion::V1 => "tasks",
        };
        write(&group.join(file), &tid.to_string())
    }
}

/// v1's `cpu.shares` for a v2-style weight: 100 (the default weight) is 1024 (the default
/// shares), in proportion, within v1's 2-262144.
pub fn shares(weight: u32) -> u32 {
    (weight * 1024 / 100).clamp(2, 262_144)
}

fn write(file: &Path, value: &str) -> Result<(), CgroupError> {
    fs::write(file, value).map_err(io_at(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("overtake-cgroup-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn weights_map_to_v1_shares_in_proportion() {
        assert_eq!(shares(100), 1024);
        assert_eq!(shares(1), 10);
        assert_eq!(shares(10_000), 102_400);
        assert_eq!(shares(200), 2048);
    }

    #[test]
    fn groups_in_a_fake_v2_tree_are_threaded_with_their_weight_and_take_threads() {
        let dir = scratch("v2");
        let tree = CgroupTree::at(&dir, CgroupVersion::V2);
        tree.prepare().expect("prepare");
        assert_eq!(
            fs::read_to_string(dir.join("cgroup.subtree_control")).expect("read"),
            "+cpu"
        );
        let g = tree.group("bg-1", 1).expect("group");
        assert_eq!(g, dir.join("bg-1"));
        assert_eq!(
            fs::read_to_string(g.join("cgroup.type")).expect("type"),
            "threaded"
        );
        assert_eq!(
            fs::read_to_string(g.join("cpu.weight")).expect("weight"),
            "1"
        );
        tree.place_thread(&g, 4242).expect("place");
        assert_eq!(
            fs::read_to_string(g.join("cgroup.threads")).expect("threads"),
            "4242"
        );
        assert!(matches!(tree.group("bg-0", 0), Err(CgroupError::Weight(0))));
        assert!(tree.place_thread(Path::new("/elsewhere"), 1).is_err());
        for bad in ["", "a/b", "..", ".hidden"] {
            assert!(tree.group(bad, 100).is_err(), "{bad:?}");
        }
        tree.remove_empty(); // a plain directory with files stays: nothing is forced
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn groups_in_a_fake_v1_tree_get_shares_and_tasks() {
        let dir = scratch("v1");
        let tree = CgroupTree::at(&dir, CgroupVersion::V1);
        tree.prepare().expect("prepare");
        let g = tree.group("ts-10000", 10_000).expect("group");
        assert_eq!(
            fs::read_to_string(g.join("cpu.shares")).expect("shares"),
            "102400"
        );
        tree.place_thread(&g, 7).expect("place");
        assert_eq!(fs::read_to_string(g.join("tasks")).expect("tasks"), "7");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn on_this_machine_a_thread_moves_into_a_weighted_group_when_the_tree_is_writable() {
        let Ok(tree) = CgroupTree::discover(Path::new("/sys/fs/cgroup"), "overtake-test") else {
            return; // no writable CPU cgroup here: nothing to check
        };
        let Ok(group) = tree.group("ts-250", 250) else {
            return;
        };
        std::thread::spawn(move || {
            let me = crate::os::thread::thread_id();
            tree.place_thread(&group, me).expect("place");
            let mine = fs::read_to_string("/proc/thread-self/cgroup").expect("read");
            assert!(mine.contains("ts-250"), "the thread's cgroups: {mine}");
            // Back to where the test's thread is, so the group can be removed.
            let parent = tree.root().parent().expect("parent").to_owned();
            let back = match tree.version() {
                CgroupVersion::V2 => parent.join("cgroup.threads"),
                CgroupVersion::V1 => parent.join("tasks"),
            };
            fs::write(back, me.to_string()).expect("back");
            let _ = fs::remove_dir(&group);
            let _ = fs::remove_dir(tree.root());
        })
        .join()
        .expect("thread");
    }
}
