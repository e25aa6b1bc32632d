//! Jobs that ended in memory and wait for their acknowledgement (pipelined commit; see
//! [`Acknowledgement`]): their tasks have ended and freed their contexts, and the worker keeps
//! each job with its times, polls its acknowledgement when told one may have resolved, and
//! books the job when it has.
//!
//! An acknowledgement's wake (from the log writer, inside its region) sets a flag and wakes a
//! sleeping worker. For a job above the lowest level it also raises the preemption request:
//! the running task's hook books the job on that task's stack and lets it go on (booking is
//! never worth a switch), so an urgent job's answer never waits for background work to end. The worker takes no new job while `awaiting_limit` jobs await
//! their acknowledgements: a slow disk holds new work back (the inbox fills
//! and says "overloaded") rather than growing this queue without bound.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use overtake_priority::Priority;
use overtake_runtime::NoPreemptGuard;

use super::WorkerCore;
use super::shared::{Sleeper, WakeInbox};
use crate::job::{Acknowledgement, Executor, JobError, Outcome, Scheduled, Status};
use crate::task::TaskTimes;

/// Tells a worker that acknowledgements may have resolved.
pub(crate) struct AckSignal {
    ready: AtomicBool,
    sleeper: Arc<Sleeper>,
}

/// The same, for acknowledgements of urgent jobs: raises the preemption request too.
struct UrgentAckSignal {
    signal: Arc<AckSignal>,
    wakes: Arc<WakeInbox>,
}

impl AckSignal {
    pub(crate) fn new(sleeper: Arc<Sleeper>) -> Arc<AckSignal> {
        Arc::new(AckSignal {
            ready: AtomicBool::new(false),
            sleeper,
        })
    }

    /// Whether a wake came since the worker last looked.
    pub(crate) fn pending(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

impl Wake for AckSignal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ready.store(true, Ordering::SeqCst);
        self.sleeper.notify();
    }
}

impl Wake for UrgentAckSignal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.signal.ready.store(true, Ordering::SeqCst);
        self.wakes.nudge();
    }
}

/// A job whose task ended at its in-memory commit.
struct Awaiting<J> {
    job: J,
    arrival: Instant,
    enqueued: Instant,
    times: TaskTimes,
    /// When its task ended.
    ended: Instant,
    outcome: Outcome,
    acknowledgement: Acknowledgement,
}

/// A worker's jobs awaiting their acknowledgements.
pub(super) struct Acks<J> {
    awaiting: VecDeque<Awaiting<J>>,
    /// The other buffer, swapped in at each look (no allocation per look).
    spare: VecDeque<Awaiting<J>>,
    waker: Waker,
    /// For jobs above the lowest level.
    urgent_waker: Waker,
}

impl<J> Acks<J> {
    pub(super) fn new(signal: Arc<AckSignal>, wakes: Arc<WakeInbox>) -> Self {
        Acks {
            awaiting: VecDeque::new(),
            spare: VecDeque::new(),
            waker: Waker::from(Arc::clone(&signal)),
            urgent_waker: Waker::from(Arc::new(UrgentAckSignal { signal, wakes })),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.awaiting.len()
    }
}

impl<E: Executor> WorkerCore<E> {
    /// Books a job that ended (its task's times taken at `end`), or, if its outcome holds an
    /// acknowledgement that has not resolved, keeps it until it has. Inside a region.
    pub(super) fn ended(
        &self,
        scheduled: Scheduled<E::Job>,
        times: TaskTimes,
        end: Instant,
        mut outcome: Outcome,
    ) {
        let Scheduled {
            job,
            arrival,
            enqueued,
        } = scheduled;
        let mut awaiting = Awaiting {
            acknowledgement: match outcome.acknowledgement.take() {
                Some(acknowledgement) => acknowledgement,
                None => return self.book(&job, (arrival, enqueued, end), times, &outcome),
            },
            job,
            arrival,
            enqueued,
            times,
            ended: end,
            outcome,
        };
        let waker = self.waker_for(&awaiting.job);
        match awaiting
            .acknowledgement
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
        {
            // Resolved at once: it waited for nothing, and ended with its task.
            Poll::Ready(result) => {
                let Awaiting {
                    job,
                    arrival,
                    enqueued,
                    times,
                    mut outcome,
                    ..
                } = awaiting;
                fail_unless_durable(&mut outcome, result);
                self.book(&job, (arrival, enqueued, end), times, &outcome);
            }
            Poll::Pending => self.acks.borrow_mut().awaiting.push_back(awaiting),
        }
    }

    /// Books the awaiting jobs whose acknowledgements resolved, if a wake says some may have.
    pub(super) fn collect_acks(&self) {
        if !self.shared.acks.ready.swap(false, Ordering::AcqRel) {
            return;
        }
        let _region = NoPreemptGuard::new();
        let (mut looking, mut still) = {
            let mut acks = self.acks.borrow_mut();
            let acks = &mut *acks;
            (
                std::mem::take(&mut acks.awaiting),
                std::mem::take(&mut acks.spare),
            )
        };
        for mut awaiting in looking.drain(..) {
            let waker = self.waker_for(&awaiting.job);
            match awaiting
                .acknowledgement
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
            {
                Poll::Ready(result) => self.acknowledged(awaiting, result),
                Poll::Pending => still.push_back(awaiting),
            }
        }
        let mut acks = self.acks.borrow_mut();
        acks.awaiting = still;
        acks.spare = looking;
    }

    /// The waker an acknowledgement of `job` is polled with: one that raises the preemption
    /// request for a job above the lowest level (see the module's comment).
    fn waker_for(&self, job: &E::Job) -> Waker {
        let acks = self.acks.borrow();
        if self.exec.priority(job) > Priority::LOW {
            acks.urgent_waker.clone()
        } else {
            acks.waker.clone()
        }
    }

    /// Whether no more jobs may start until acknowledgements resolve (see the module's comment).
    pub(super) fn acks_full(&self) -> bool {
        self.acks.borrow().len() >= self.config.awaiting_limit
    }

    /// Whether jobs still await their acknowledgements.
    pub(super) fn acks_awaited(&self) -> bool {
        self.acks.borrow().len() > 0
    }

    /// Books a job whose acknowledgement resolved now: its latency ends here, the time since its
    /// task ended counts as waiting (and as its commit's wait for the log), and a failed
    /// acknowledgement fails it.
    fn acknowledged(&self, awaiting: Awaiting<E::Job>, result: Result<(), JobError>) {
        let end = Instant::now();
        let waited = end.saturating_duration_since(awaiting.ended);
        let mut times = awaiting.times;
        times.waited += waited;
        let mut outcome = awaiting.outcome;
        outcome.durable_wait += waited;
        fail_unless_durable(&mut outcome, result);
        let when = (awaiting.arrival, awaiting.enqueued, end);
        self.book(&awaiting.job, when, times, &outcome);
    }

    /// Books a job that is done: its trace, if it is traced, and its statistics.
    fn book(
        &self,
        job: &E::Job,
        (arrival, enqueued, end): (Instant, Instant, Instant),
        times: TaskTimes,
        outcome: &Outcome,
    ) {
        if self.config.trace && self.exec.priority(job) > Priority::LOW {
            self.trace(job, (arrival, enqueued, end), &times);
        }
        self.record(job, arrival, enqueued, times, end, outcome);
    }
}

/// A job whose acknowledgement failed failed (its commit is in doubt: see the error).
fn fail_unless_durable(outcome: &mut Outcome, result: Result<(), JobError>) {
    if let Err(e) = result {
        outcome.status = Status::Failed;
        outcome.error = Some(e);
    }
}
