//! UFS's lock-holder hint experiment on OS threads (the scheduler of the machine decides, not
//! Overtake's): on one CPU, a background session thread takes a row's exclusive lock under
//! two-phase locking and computes; a time-sensitive session thread asks for the row and waits;
//! a second time-sensitive thread (the burner) computes on the same CPU for a while. Under a
//! scheduler that runs time-sensitive work first, the holder gets no CPU while the burner runs,
//! and the waiter waits for the burner too (an inversion through a third task); with the lock
//! manager's hints (`Options::lock_observer`, with [`UfsHints`]) `overtake-ufs` runs the holder as time-sensitive while
//! the waiter waits, and the waiter waits for about the holder's computation shared with the
//! burner.
//!
//! Each round runs on a fresh single-row table; the holder adds 1, the waiter 10, so the row
//! ends at 11 if both committed exactly once. Threads are placed with `OsScheduling` (cgroups
//! named by tier, or scheduling classes) and pinned to one core.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{
    Concurrency, Database, Isolation, LockPolicy, Options, Priority, RetryPolicy,
};
use overtake_runtime::os::bpf_map::HintMap;
use overtake_runtime::os::thread::{confine_current_thread, thread_id};
use overtake_sched::{Group, OsScheduling, Tier, Weight};

use crate::compute::ComputeTask;
use crate::holder::{add, table, value};

/// `overtake-ufs`'s hint map as the lock manager's observer: a waiting thread is mapped to the
/// thread holding its lock while it waits. A map that is full or gone loses the hint (the boost),
/// never the lock request.
#[derive(Debug)]
pub struct UfsHints(pub Arc<HintMap>);

impl overtake_engine::LockObserver for UfsHints {
    fn waiting(&self, waiter: u32, holder: u32) {
        let _ = self.0.set(waiter, holder);
    }

    fn done(&self, waiter: u32) {
        let _ = self.0.clear(waiter);
    }
}

/// One round's settings.
#[derive(Clone, Debug)]
pub struct HintSetup {
    /// The holder's computation while it holds the lock.
    pub hold: ComputeTask,
    /// How long the burner computes (zero: no burner, the baseline).
    pub burn: Duration,
    /// How the three threads are scheduled by the operating system.
    pub os: OsScheduling,
    /// The hint map the lock manager writes to (`None`: no hints).
    pub hints: Option<Arc<HintMap>>,
    /// The usable core all three threads run on.
    pub core: usize,
}

/// What one round measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HintRound {
    /// From the moment the holder started computing (the waiter already waiting) to the
    /// waiter's commit.
    pub waiter_latency: Duration,
    /// How long the holder's computation took (from its start while the waiter waits to its
    /// end; the commit after it is not counted, as the holder may wait for the CPU again once
    /// nobody waits for it).
    pub holder_total: Duration,
    /// With hints: the map named the holder's thread for the waiter's while it waited.
    pub hinted: bool,
    /// The row's value at the end (11 when both committed exactly once).
    pub row: i64,
    /// Both committed.
    pub committed: bool,
    /// The waiter's kernel thread id.
    pub waiter_thread: i32,
}

/// Why a round could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HintError {
    /// The engine refused something the round needs.
    #[error("{0}")]
    Engine(#[from] overtake_engine::Error),
    /// A thread could not be placed where its group says.
    #[error("{0}")]
    Placement(String),
    /// A thread did not finish (it panicked).
    #[error("the {0} thread failed")]
    Thread(&'static str),
}

fn group(tier: Tier, number: u16) -> Group {
    Group::new(tier, Weight::new(100).expect("a valid weight")).numbered(number)
}

/// Puts the calling thread in `group` on `core`.
fn place(os: &OsScheduling, group: Group, core: usize) -> Result<(), String> {
    os.enter(group).map_err(|e| e.to_string())?;
    if !confine_current_thread(core) {
        return Err(format!("cannot pin a thread to usable core {core}"));
    }
    Ok(())
}

/// Waits until `flag` is set (spinning politely: the threads that set it share a core).
fn until(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

fn joined<T>(name: &'static str, h: std::thread::JoinHandle<T>) -> Result<T, HintError> {
    h.join().map_err(|_| HintError::Thread(name))
}

/// Runs one round.
pub fn run_round(setup: &HintSetup) -> Result<HintRound, HintError> {
    let mut options =
        Options::default().concurrency(Concurrency::TwoPhaseLocking(LockPolicy::Standard));
    if let Some(map) = &setup.hints {
        options = options.lock_observer(Arc::new(UfsHints(Arc::clone(map))));
    }
    let db = Arc::new(Database::in_memory(options));
    let t = table(&db)?;
    let holding = Arc::new(AtomicBool::new(false));
    let go = Arc::new(AtomicBool::new(false));
    let asking = Arc::new(AtomicBool::new(false));
    let holder_tid = Arc::new(AtomicI32::new(0));
    let waiter_tid = Arc::new(AtomicI32::new(0));

    let holder = {
        let (db, t, os, hold) = (
            Arc::clone(&db),
            Arc::clone(&t),
            setup.os.clone(),
            setup.hold.clone(),
        );
        let (holding, go, tid, core) = (
            Arc::clone(&holding),
            Arc::clone(&go),
            Arc::clone(&holder_tid),
            setup.core,
        );
        std::thread::spawn(move || -> Result<(bool, Duration), String> {
            place(&os, group(Tier::Background, 1), core)?;
            tid.store(thread_id(), Ordering::Release);
            let mut took = Duration::ZERO;
            let attempts = db.run(
                Priority::LOW,
                Isolation::Serializable,
                &RetryPolicy::forever(),
                |txn| {
                    add(txn, &t, 1)?;
                    holding.store(true, Ordering::Release);
                    until(&go);
                    let started = Instant::now();
                    std::hint::black_box(hold.run());
                    took = started.elapsed();
                    Ok(())
                },
            );
            Ok((attempts.result.is_ok(), took))
        })
    };
    until(&holding);
    let waiter = {
        let (db, t, os) = (Arc::clone(&db), Arc::clone(&t), setup.os.clone());
        let (asking, tid, core) = (Arc::clone(&asking), Arc::clone(&waiter_tid), setup.core);
        std::thread::spawn(move || -> Result<(bool, Instant), String> {
            place(&os, group(Tier::TimeSensitive, 1), core)?;
            tid.store(thread_id(), Ordering::Release);
            asking.store(true, Ordering::Release);
            let attempts = db.run(
                Priority::HIGH,
                Isolation::Serializable,
                &RetryPolicy::forever(),
                |txn| add(txn, &t, 10),
            );
            Ok((attempts.result.is_ok(), Instant::now()))
        })
    };
    until(&asking);
    // The waiter is waiting once the lock manager named the holder for it; without hints there
    // is nothing to watch, and a moment's grace has to do.
    let hinted = match &setup.hints {
        Some(map) => {
            let (w, h) = (
                waiter_tid.load(Ordering::Acquire) as u32,
                holder_tid.load(Ordering::Acquire) as u32,
            );
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if map.holder_of(w).ok().flatten() == Some(h) {
                    break true;
                }
                if Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        None => {
            std::thread::sleep(Duration::from_millis(20));
            false
        }
    };
    let burner = (!setup.burn.is_zero()).then(|| {
        let (os, burn, core) = (setup.os.clone(), setup.burn, setup.core);
        let running = Arc::new(AtomicBool::new(false));
        let started = Arc::clone(&running);
        let handle = std::thread::spawn(move || -> Result<(), String> {
            place(&os, group(Tier::TimeSensitive, 2), core)?;
            started.store(true, Ordering::Release);
            let start = Instant::now();
            while start.elapsed() < burn {
                std::hint::black_box(crate::compute::compute_kernel(64));
            }
            Ok(())
        });
        (handle, running)
    });
    if let Some((_, running)) = &burner {
        until(running);
    }
    let resumed = Instant::now();
    go.store(true, Ordering::Release);
    let (waiter_ok, waiter_done) = joined("waiter", waiter)?.map_err(HintError::Placement)?;
    let (holder_ok, holder_total) = joined("holder", holder)?.map_err(HintError::Placement)?;
    if let Some((handle, _)) = burner {
        joined("burner", handle)?.map_err(HintError::Placement)?;
    }
    Ok(HintRound {
        waiter_latency: waiter_done.saturating_duration_since(resumed),
        holder_total,
        hinted,
        row: value(&db, &t)?,
        committed: waiter_ok && holder_ok,
        waiter_thread: waiter_tid.load(Ordering::Acquire),
    })
}

#[cfg(test)]
mod tests {
    use overtake_runtime::os::cgroup::{CgroupTree, CgroupVersion};

    use super::*;

    /// With a private hint map: while the waiter waits, the map names the holder's thread, and
    /// the hint is gone once the wait ended; both commit exactly once. (Scheduling here is the
    /// machine's own: what the hint buys is measured by `overtake compare hints` under
    /// `overtake-ufs`.)
    #[test]
    fn the_lock_manager_names_the_holder_while_the_waiter_waits_and_clears_it_after() {
        let map = match HintMap::create_private(64) {
            Ok(map) => Arc::new(map),
            Err(e) => {
                eprintln!("skipped: this process may not make BPF maps ({e})");
                return;
            }
        };
        let round = run_round(&HintSetup {
            hold: ComputeTask::calibrate(Duration::from_millis(2)),
            burn: Duration::from_millis(2),
            os: unchanged("with"),
            hints: Some(Arc::clone(&map)),
            core: 0,
        })
        .expect("a round");
        assert!(round.hinted, "{round:?}");
        assert!(round.committed, "{round:?}");
        assert_eq!(round.row, 11);
        assert_eq!(
            map.holder_of(round.waiter_thread as u32).expect("lookup"),
            None,
            "the hint is cleared when the wait ends"
        );
        let _ = std::fs::remove_dir_all(scratch("with"));
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("overtake-hints-{name}-{}", std::process::id()))
    }

    /// Scheduling that changes nothing: "cgroups" in a scratch directory.
    fn unchanged(name: &str) -> OsScheduling {
        OsScheduling::Weights(CgroupTree::at(scratch(name), CgroupVersion::V1))
    }

    #[test]
    fn without_hints_both_still_commit_exactly_once() {
        let round = run_round(&HintSetup {
            hold: ComputeTask::calibrate(Duration::from_millis(2)),
            burn: Duration::ZERO,
            os: unchanged("without"),
            hints: None,
            core: 0,
        })
        .expect("a round");
        assert!(round.committed && !round.hinted, "{round:?}");
        assert_eq!(round.row, 11);
        let _ = std::fs::remove_dir_all(scratch("without"));
    }
}
