//! The server's sessions by process id, as PostgreSQL's backends: what `pg_backend_pid()`,
//! `pg_cancel_backend()` and `pg_terminate_backend()` act on, with PostgreSQL's permission
//! rules (a superuser may signal any session; another role only sessions of its own role, and
//! never a superuser's).
//!
//! Must never: block a worker. The map's mutex is held for a lookup or an insert only, inside
//! a non-preemptible region (a statement on a worker takes it: no paused task can hold it);
//! the cancel itself is handed to the server's network runtime.
//!
//! A session's view of the others also reads the scheduler's statistics per priority level
//! (`overtake_stat_classes`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::task::AtomicWaker;

use overtake_runtime::NoPreemptGuard;
use overtake_sched::{CallExecutor, ClassStats, Priority, Scheduler};
use overtake_sql::exec::access::Actor;
use overtake_sql::expr::{Backends, ClassTimes};
use overtake_sql::{SqlError, sqlstate};
use pgwire::api::ConnectionHandle;

/// Why a connection is being ended, and what tells its loop (see `socket`). A flag and the
/// loop's waker rather than a `Notify`: the loop looks at it before every message it reads,
/// and this costs two atomic operations where a `Notify` takes its waiters' lock.
#[derive(Debug, Default)]
pub struct Ending {
    asked: AtomicBool,
    waker: AtomicWaker,
    /// The FATAL error the client is sent before the close (the first reason given wins).
    pub reason: OnceLock<(&'static str, &'static str)>,
}

impl Ending {
    /// Ends the connection with FATAL `code` `message` (at once if it is waiting for the
    /// client; after its statement otherwise).
    pub fn end(&self, code: &'static str, message: &'static str) {
        let _ = self.reason.set((code, message));
        self.asked.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    /// Ready once the connection has been asked to end.
    pub fn asked(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            if !self.asked.load(Ordering::SeqCst) {
                // Registered before the second look: an `end` after it wakes this waker.
                self.waker.register(cx.waker());
                if !self.asked.load(Ordering::SeqCst) {
                    return std::task::Poll::Pending;
                }
            }
            std::task::Poll::Ready(())
        })
    }
}

/// One session, as others may signal it.
struct Backend {
    user: String,
    superuser: bool,
    /// Fires the cancel of the statement in flight, as a CancelRequest does.
    cancel: Arc<ConnectionHandle>,
    /// The server's network runtime, which runs the cancel.
    runtime: tokio::runtime::Handle,
    ending: Arc<Ending>,
}

/// Every session, by process id.
#[derive(Default)]
pub struct Registry {
    backends: Mutex<HashMap<i32, Backend>>,
}

impl Registry {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<i32, Backend>) -> T) -> T {
        let _region = NoPreemptGuard::new();
        f(&mut self.backends.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Registers the session of process id `pid` (from its session code, inside the runtime).
    pub fn register(
        &self,
        pid: i32,
        actor: &Actor,
        cancel: Arc<ConnectionHandle>,
        ending: Arc<Ending>,
    ) {
        let backend = Backend {
            user: actor.name.clone(),
            superuser: actor.superuser,
            cancel,
            runtime: tokio::runtime::Handle::current(),
            ending,
        };
        self.with(|b| b.insert(pid, backend));
    }

    /// The session of `pid` is gone.
    pub fn unregister(&self, pid: i32) {
        self.with(|b| b.remove(&pid));
    }
}

/// One session's view of the others: what its statements' `pg_*_backend` calls use.
pub struct SessionBackends {
    pub registry: Arc<Registry>,
    pub pid: i32,
    pub actor: Actor,
    /// Whose statistics `overtake_stat_classes` shows.
    pub scheduler: Arc<Scheduler<CallExecutor>>,
}

impl Backends for SessionBackends {
    fn own_pid(&self) -> i32 {
        self.pid
    }

    fn classes(&self) -> Vec<ClassTimes> {
        let stats = self.scheduler.stats();
        Priority::ALL
            .into_iter()
            .map(|p| class_times(p, &stats.levels[p.level()]))
            .collect()
    }

    fn signal(&self, pid: i32, terminate: bool) -> Result<bool, SqlError> {
        let target = self.registry.with(|b| {
            b.get(&pid).map(|t| {
                (
                    t.user.clone(),
                    t.superuser,
                    Arc::clone(&t.cancel),
                    t.runtime.clone(),
                    Arc::clone(&t.ending),
                )
            })
        });
        // PostgreSQL warns that the pid is not a server process, and answers false.
        let Some((user, superuser, cancel, runtime, ending)) = target else {
            return Ok(false);
        };
        let what = if terminate {
            "terminate superuser process"
        } else {
            "cancel superuser query"
        };
        if superuser && !self.actor.superuser {
            return Err(SqlError::new(
                sqlstate::INSUFFICIENT_PRIVILEGE,
                format!("must be a superuser to {what}"),
            ));
        }
        if !self.actor.superuser && user != self.actor.name {
            return Err(SqlError::new(
                sqlstate::INSUFFICIENT_PRIVILEGE,
                if terminate {
                    "must be a member of the role whose process is being terminated or member of pg_signal_backend"
                } else {
                    "must be a member of the role whose query is being canceled or member of pg_signal_backend"
                },
            ));
        }
        // In a region: the OnceLock and the runtime's queue are locks of a kind, and the caller
        // is a statement's task that could otherwise be paused holding one.
        let _region = NoPreemptGuard::new();
        if terminate {
            ending.end(
                sqlstate::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
            );
        }
        runtime.spawn(async move {
            cancel.cancel().await;
        });
        Ok(true)
    }
}

/// What `overtake_stat_classes` shows of level `priority`'s statistics `c`: totals, so that two
/// readings subtract (the histograms' means times their counts for what only they keep).
fn class_times(priority: Priority, c: &ClassStats) -> ClassTimes {
    let us = |nanos: u128| nanos as f64 / 1e3;
    let total_us = |h: &overtake_sched::LatencyHistogram| h.summary().mean * h.count() as f64;
    let lock_wait_us = us(c.lock_queue_nanos);
    let log_wait_us = total_us(&c.durable_wait);
    let client_wait_us = us(c.client_wait_nanos);
    let mut t = ClassTimes::new(crate::settings::priority_name(priority));
    t.committed = i64::try_from(c.committed).unwrap_or(i64::MAX);
    t.rolled_back = i64::try_from(c.rolled_back + c.failed).unwrap_or(i64::MAX);
    t.preemptions = i64::try_from(c.preemptions).unwrap_or(i64::MAX);
    t.queued_us = total_us(&c.sched_delay);
    t.running_us = us(c.running_nanos);
    t.preempted_us = total_us(&c.preempted);
    t.client_wait_us = client_wait_us;
    t.lock_wait_us = lock_wait_us;
    t.log_wait_us = log_wait_us;
    t.other_wait_us = (us(c.waited_nanos) - client_wait_us - lock_wait_us - log_wait_us).max(0.0);
    t
}
