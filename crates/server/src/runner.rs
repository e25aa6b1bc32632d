//! Where a session's statements run: as tasks of the scheduler on its pinned workers (the
//! default), or on the session's own OS thread (`--session-threads`), as PostgreSQL's backends
//! run, so that the operating system decides who runs, with the session's tier and weight mapped
//! to a cgroup or a scheduling class (`overtake_sched::OsScheduling`). The second mode exists to
//! compare Overtake's scheduling with the OS's on the same engine and SQL.
//!
//! A session thread runs one closure at a time, in the order they were sent, and is moved into
//! its group's place whenever the group changes (`SET task_tier`). It must never run a closure
//! for another session; it ends when its session does.

use std::sync::mpsc;

use overtake_sched::{
    Call, CallExecutor, Group, OsScheduling, Outcome, Priority, Promise, Scheduler, Ticket,
};

/// How long a statement waits for room in the scheduler before it is refused as overloaded.
const ADMISSION_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How often a statement waiting for room in the scheduler tries again.
const ADMISSION_RETRY: std::time::Duration = std::time::Duration::from_millis(1);

type Work = Box<dyn FnOnce() + Send>;

/// A session's own OS thread.
pub struct SessionThread {
    work: mpsc::Sender<(Group, Work)>,
}

impl SessionThread {
    /// Starts the thread of session `id`, placed by `os` for each group its work asks for.
    pub fn spawn(id: u64, os: OsScheduling) -> std::io::Result<SessionThread> {
        let (work, inbox) = mpsc::channel::<(Group, Work)>();
        std::thread::Builder::new()
            .name(format!("session-{id}"))
            .spawn(move || {
                let mut placed: Option<Group> = None;
                for (group, f) in inbox {
                    if placed != Some(group) {
                        // A refusal leaves the thread where it was: the statement still runs
                        // (its group's place is a scheduling preference, not a guarantee).
                        if os.enter(group).is_ok() {
                            placed = Some(group);
                        }
                    }
                    f();
                }
            })?;
        Ok(SessionThread { work })
    }
}

/// Where a statement is sent.
#[derive(Clone, Copy)]
pub enum Runner<'a> {
    /// Any worker, placed by the scheduler.
    Scheduler(&'a Scheduler<CallExecutor>),
    /// The session's own worker (it serves the session: no other thread is on the statement's
    /// path); any worker while that one's inbox is full.
    Worker(&'a Scheduler<CallExecutor>, usize),
    Thread(&'a SessionThread),
}

/// Why work was not accepted.
#[derive(Debug)]
pub struct Refused;

impl Runner<'_> {
    /// Runs `f` at `priority` in `group`; its result comes through the ticket. While the
    /// scheduler's inbox is full this waits (asynchronously: the thread serving the session
    /// goes on serving others) up to [`ADMISSION_WAIT`], then refuses.
    pub async fn submit<R: Send + 'static>(
        self,
        (priority, group): (Priority, Group),
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<Ticket<R>, Refused> {
        let (scheduler, worker) = match self {
            Runner::Thread(thread) => {
                let (promise, ticket) = Promise::new();
                let work: Work = Box::new(move || promise.fulfil(f()));
                thread.work.send((group, work)).map_err(|_| Refused)?;
                return Ok(ticket);
            }
            Runner::Worker(scheduler, worker) => (scheduler, Some(worker)),
            Runner::Scheduler(scheduler) => (scheduler, None),
        };
        place(scheduler, worker, group, Call::new(priority, f)).await
    }

    /// As [`submit`](Self::submit), for work that also says how its transaction ended and what
    /// it waited for (the scheduler books that per class; a session's own thread books nothing).
    pub async fn submit_reporting<R: Send + 'static>(
        self,
        (priority, group): (Priority, Group),
        f: impl FnOnce() -> (R, Outcome) + Send + 'static,
    ) -> Result<Ticket<R>, Refused> {
        let (scheduler, worker) = match self {
            Runner::Thread(_) => return self.submit((priority, group), move || f().0).await,
            Runner::Worker(scheduler, worker) => (scheduler, Some(worker)),
            Runner::Scheduler(scheduler) => (scheduler, None),
        };
        place(scheduler, worker, group, Call::reporting(priority, f)).await
    }
}

/// Gives `call` to `worker` of `scheduler` (any worker while its inbox is full, or if `None`),
/// in `group`.
async fn place<R: Send + 'static>(
    scheduler: &Scheduler<CallExecutor>,
    worker: Option<usize>,
    group: Group,
    (call, ticket): (Call, Ticket<R>),
) -> Result<Ticket<R>, Refused> {
    let call = call.in_group(group);
    let Some(worker) = worker else {
        return admit(scheduler, (call, ticket)).await;
    };
    match scheduler.submit_to(worker, call, std::time::Instant::now()) {
        Ok(()) => Ok(ticket),
        Err(full) => admit(scheduler, (full.into_inner(), ticket)).await,
    }
}

/// Runs `f` at `priority` in `group` on any worker if the scheduler has room now, else
/// refuses at once: for background work better skipped than waited for. Its result comes
/// through the ticket (which may be dropped: the work runs all the same).
pub fn offer<R: Send + 'static>(
    scheduler: &Scheduler<CallExecutor>,
    (priority, group): (Priority, Group),
    f: impl FnOnce() -> R + Send + 'static,
) -> Result<Ticket<R>, Refused> {
    let (call, ticket) = Call::new(priority, f);
    scheduler
        .submit_call((call.in_group(group), ticket), None)
        .map_err(|_| Refused)
}

/// Submits `job` to any worker, waiting (asynchronously) for room up to [`ADMISSION_WAIT`].
async fn admit<R: Send + 'static>(
    scheduler: &Scheduler<CallExecutor>,
    mut job: (Call, Ticket<R>),
) -> Result<Ticket<R>, Refused> {
    let give_up = std::time::Instant::now() + ADMISSION_WAIT;
    loop {
        match scheduler.submit_call(job, None) {
            Ok(ticket) => return Ok(ticket),
            Err(_) if std::time::Instant::now() >= give_up => return Err(Refused),
            Err(full) => {
                job = full.into_inner();
                tokio::time::sleep(ADMISSION_RETRY).await;
            }
        }
    }
}
