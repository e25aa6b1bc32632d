//! Reports a worker whose OS thread stays blocked in the kernel while it runs a task.
//!
//! A task is code that may be paused at any instruction. If application code in a call blocks its
//! thread (`std::sync::Mutex`, a channel, `sleep`), the worker runs nothing else meanwhile; if what
//! it waits for is held by a task this very worker paused (a `std::sync::Mutex` locked by a paused
//! low-priority call, then locked by the urgent call that paused it), it waits for ever. That
//! cannot be undone from outside, but it must not be silent: this thread looks at every worker a
//! few times a second, and a worker that has switched no task for longer than the bound while its
//! thread sleeps in the kernel (`/proc/self/task/<tid>/stat` state `S` or `D`, twice in a row) is
//! reported once per episode: on stderr, and in the scheduler's report, naming the blocked task's
//! level, the paused tasks and the likely cause.
//!
//! Reads only what workers publish (atomics) and procfs; never touches a worker's state. Must
//! never report a worker that is idle, or one that computes (state `R`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use overtake_priority::Priority;
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::worker::{IDLE, WorkerShared};

/// One report of a worker blocked in the kernel while running a task.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockedWorker {
    /// The worker.
    pub worker: usize,
    /// How long it had switched no task when reported.
    pub blocked_for: Duration,
    /// The level of the task it runs.
    pub running: Priority,
    /// Tasks paused by preemption on it, per level (least urgent first).
    pub paused: [usize; Priority::LEVELS],
}

impl BlockedWorker {
    fn paused_total(&self) -> usize {
        self.paused.iter().sum()
    }
}

impl fmt::Display for BlockedWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "worker {} has been blocked in the kernel for {:.1} s running a {} task",
            self.worker,
            self.blocked_for.as_secs_f64(),
            self.running.as_str()
        )?;
        let paused: Vec<String> = Priority::ALL
            .iter()
            .filter(|p| self.paused[p.level()] > 0)
            .map(|p| format!("{} {}", self.paused[p.level()], p.as_str()))
            .collect();
        if paused.is_empty() {
            write!(
                f,
                "; no task is paused on it. Likely cause: application code in a call blocked \
                 its thread (a lock, a channel, sleep), and the worker runs nothing else meanwhile"
            )
        } else {
            write!(
                f,
                " while {} task(s) paused by preemption wait on it ({}). Likely cause: the \
                 running call waits for a lock (e.g. std::sync::Mutex) held by one of those paused \
                 tasks, which can only resume on this thread: the worker will not recover. Use \
                 overtake_runtime::CriticalMutex for locks shared by calls, or run the call \
                 non-preemptible",
                self.paused_total(),
                paused.join(", ")
            )
        }
    }
}

/// The reports so far, shared with the scheduler handle.
pub(crate) type Reports = Arc<RegionMutex<Vec<BlockedWorker>>>;

pub(crate) struct Watchdog {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    pub(crate) reports: Reports,
}

impl Watchdog {
    /// Watches `workers`, reporting those blocked longer than `bound`.
    pub(crate) fn spawn(
        workers: Vec<Arc<WorkerShared>>,
        bound: Duration,
    ) -> std::io::Result<Watchdog> {
        let stop = Arc::new(AtomicBool::new(false));
        let reports: Reports = Arc::default();
        let (stop_in, reports_in) = (Arc::clone(&stop), Arc::clone(&reports));
        let thread = std::thread::Builder::new()
            .name("worker-watchdog".into())
            .spawn(move || watch(&workers, bound, &stop_in, &reports_in))?;
        Ok(Watchdog {
            stop,
            thread,
            reports,
        })
    }

    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

/// What the watchdog remembers of one worker between looks.
#[derive(Clone, Copy)]
struct Seen {
    switches: u64,
    since: Instant,
    blocked_looks: u32,
    reported: bool,
}

fn watch(workers: &[Arc<WorkerShared>], bound: Duration, stop: &AtomicBool, reports: &Reports) {
    let period = (bound / 4).clamp(Duration::from_millis(5), Duration::from_millis(100));
    let mut seen: Vec<Seen> = vec![
        Seen {
            switches: 0,
            since: Instant::now(),
            blocked_looks: 0,
            reported: false,
        };
        workers.len()
    ];
    while !stop.load(Ordering::Acquire) {
        std::thread::park_timeout(period);
        let now = Instant::now();
        for (index, (worker, seen)) in workers.iter().zip(seen.iter_mut()).enumerate() {
            let switches = worker.switches.load(Ordering::Acquire);
            let running = worker.running_level.load(Ordering::Acquire);
            if switches != seen.switches || running == IDLE {
                *seen = Seen {
                    switches,
                    since: now,
                    blocked_looks: 0,
                    reported: false,
                };
                continue;
            }
            let tid = worker.tid.load(Ordering::Acquire);
            let blocked = tid != 0 && thread_blocked(tid);
            seen.blocked_looks = if blocked { seen.blocked_looks + 1 } else { 0 };
            let blocked_for = now.saturating_duration_since(seen.since);
            if seen.reported || seen.blocked_looks < 2 || blocked_for < bound {
                continue;
            }
            seen.reported = true;
            let report = BlockedWorker {
                worker: index,
                blocked_for,
                running: Priority::from_level(usize::from(running)).unwrap_or(Priority::LOW),
                paused: std::array::from_fn(|l| worker.paused[l].load(Ordering::Acquire)),
            };
            eprintln!("overtake: {report}");
            let region = NoPreemptGuard::new();
            reports.lock(&region).push(report);
        }
    }
}

/// True if thread `tid` of this process sleeps in the kernel now (state `S` or `D`).
fn thread_blocked(tid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may contain spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "S" || state == "D")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_levels_and_the_likely_cause() {
        let mut paused = [0; Priority::LEVELS];
        paused[Priority::LOW.level()] = 1;
        let r = BlockedWorker {
            worker: 0,
            blocked_for: Duration::from_millis(1_500),
            running: Priority::HIGH,
            paused,
        };
        let text = r.to_string();
        assert!(text.contains("worker 0"), "{text}");
        assert!(text.contains("1.5 s running a high task"), "{text}");
        assert!(
            text.contains("1 task(s) paused by preemption wait on it (1 low)"),
            "{text}"
        );
        assert!(text.contains("CriticalMutex"), "{text}");
        let alone = BlockedWorker {
            paused: [0; Priority::LEVELS],
            ..r
        };
        assert!(alone.to_string().contains("no task is paused"));
    }

    #[test]
    fn this_thread_reads_as_running_and_a_sleeping_one_as_blocked() {
        assert!(!thread_blocked(overtake_runtime::os::thread::thread_id()));
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tx.send(overtake_runtime::os::thread::thread_id())
                .expect("test alive");
            let _ = done_rx.recv();
        });
        let tid = rx.recv().expect("tid");
        // It blocks in recv as soon as it has sent: bounded only against a hang.
        let give_up = Instant::now() + Duration::from_secs(60);
        while !thread_blocked(tid) {
            assert!(
                Instant::now() < give_up,
                "the thread never showed as blocked"
            );
            std::thread::yield_now();
        }
        drop(done_tx);
        sleeper.join().expect("sleeper");
        assert!(!thread_blocked(0), "no such thread");
    }
}
