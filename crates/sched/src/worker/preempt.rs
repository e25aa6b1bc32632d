//! Preemption on a worker: the hook the runtime calls on the running task's stack when a request
//! reaches it, and the decision it makes there (pause the task for more urgent work, for its
//! quantum's end, or let it run on under starvation control).
//!
//! Everything here runs inside the hook's non-preemptible region, on the task's own stack; it
//! must never block, and it pauses a task only by suspending it back to the loop.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use overtake_priority::Priority;
use overtake_runtime::NoPreemptGuard;
use overtake_runtime::context::{Suspension, suspend_current};

use super::WorkerCore;
use crate::job::Executor;
use crate::policy::Policy;
use crate::starvation;
use crate::task::TaskState;

/// What the preemption hook needs from a worker, whatever its job type.
pub(super) trait ServePreemption {
    fn serve_preemption(&self);
}

thread_local! {
    /// The worker running on this thread (set for the worker's lifetime).
    pub(super) static WORKER: RefCell<Option<Rc<dyn ServePreemption>>> = const { RefCell::new(None) };
}

/// The runtime's preemption hook: runs on the running task's stack, inside a region.
pub(super) fn on_preempt() {
    let worker = WORKER.with(|w| w.borrow().clone());
    if let Some(worker) = worker {
        worker.serve_preemption();
    }
}

impl<E: Executor> WorkerCore<E> {
    /// Under starvation control, tells the monitor what the task about to run at `running` means
    /// for the conflict between the protected work and the more urgent work (see `starvation`).
    pub(super) fn note_conflict(&self, running: Priority, now: Instant) {
        if !self.controls_starvation() {
            return;
        }
        let _region = NoPreemptGuard::new();
        let span = self.waiting_span(&self.tasks.borrow());
        let now = self.clock.nanos(now);
        let monitor = &self.shared.starvation;
        match span {
            Some((lowest, _)) if lowest < running => monitor.urgent_runs(now),
            Some((_, highest)) if highest > running => monitor.protected_runs(now),
            _ => monitor.close(),
        }
    }

    /// Pauses the running task (this code runs on its stack, inside a region) if the policy says
    /// so now. Returns false if it kept running, true once it has been paused and resumed.
    pub(super) fn preempt_running(&self) -> bool {
        self.shared.target.acknowledge();
        self.collect_wakes();
        // Urgent jobs whose acknowledgements resolved are booked here, on this task's stack:
        // their answers must not wait for it, and booking them is not worth pausing it.
        self.collect_acks();
        let Some(id) = self.running.get() else {
            return false;
        };
        let now = Instant::now();
        let ahead = {
            let tasks = self.tasks.borrow();
            let task = tasks.get(id);
            debug_assert_eq!(task.state, TaskState::Running);
            // Under Quantum, more urgent work preempts at once (levels are strict); the quantum
            // only divides a worker among work of one level.
            if self.config.policy == Policy::Quantum && !self.more_urgent_than(task.effective()) {
                if now.saturating_duration_since(self.slice_started.get())
                    < self.slice_quantum.get()
                    && !self.pending.waiting_behind(task.effective(), task.group)
                {
                    return false; // its quantum is not used up
                }
                if self.config.skip_needless && !self.work_waiting_at_or_above(task.effective()) {
                    return false; // nothing else to run: preempting would only cost a switch
                }
                let level = task.effective();
                Some(self.inbox.len(level) + self.shared.staged(level))
            } else {
                if !self.more_urgent_than(task.effective()) {
                    return false; // nothing more urgent after all (or an interrupt without work)
                }
                if self.controls_starvation() {
                    let threshold = self.config.starvation_threshold;
                    let protected = self
                        .waiting_span(&tasks)
                        .is_none_or(|(lowest, _)| lowest >= task.effective());
                    let owed = if protected {
                        // The class has had its share of urgent work: it keeps the worker.
                        let level = self.shared.starvation.level(self.clock.nanos(now));
                        starvation::protected_owed(threshold, level)
                    } else {
                        // A task above the protected level, paused before: its own share.
                        tasks.starvation(id, now) >= threshold
                    };
                    if owed {
                        return false;
                    }
                }
                // Under Quantum it continues before new work of its level: it was paused for
                // more urgent work, not for its turn.
                (self.config.policy != Policy::Quantum).then_some(0)
            }
        };
        match ahead {
            // Under Quantum, paused for more urgent work with its slice not up.
            None => self.tasks.borrow_mut().preempt_for_urgent(id, now),
            Some(ahead) => self.tasks.borrow_mut().preempt(id, now, ahead),
        }
        self.paused_for_urgent.set(Some(now));
        let suspended = suspend_current(Suspension::Preempted);
        debug_assert!(suspended, "the hook runs on a task's stack");
        true
    }
}

impl<E: Executor> ServePreemption for WorkerCore<E> {
    fn serve_preemption(&self) {
        // A request raised while the task was being switched back in found it inside the
        // switch's region: its signal was deferred, and the deferral is discarded when this hook
        // returns. The request flag is still up, so look again before the task continues: a task
        // that never polls (a computation) would otherwise keep running past it.
        while self.preempt_running() && self.shared.target.is_requested() {}
    }
}
