//! A worker's reactor: the epoll instance (through `mio`) its sessions' sockets are registered
//! in, polled by the worker between tasks and slept in when it is idle (`overtake_sched::Reactor`).
//! Readiness wakes the session that waits for it; its waker submits the session's next step to
//! this same worker.
//!
//! Why epoll and not io_uring: a session's socket operations are short non-blocking calls made
//! by the step that needs them, so readiness is all the worker needs to learn; epoll gives it
//! with one `epoll_wait` per poll, through a crate the protocol stack already depends on, and
//! works under every kernel and seccomp profile these machines run. io_uring would save the
//! read and write system calls only by batching them across sessions, which a worker serving a
//! few sessions at a time cannot do much of (not measured here: see the README's limitations).
//!
//! Must never: wake anything while holding the registrations' lock (a waker submits work and
//! may take other locks), or block longer than the worker asks.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::task::AtomicWaker;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use overtake_priority::Priority;
use overtake_runtime::{NoPreemptGuard, RegionMutex};

/// The token of the reactor's own waker (its unblocker).
const UNBLOCK: Token = Token(usize::MAX);

/// Readiness events taken per `epoll_wait`.
const EVENTS: usize = 256;

/// Who waits for a socket: the session's step, for reading and for writing.
#[derive(Default)]
pub(crate) struct Readiness {
    pub(crate) read: AtomicWaker,
    pub(crate) write: AtomicWaker,
}

/// What other threads share with a worker's reactor: where sockets are registered, and how many
/// sessions the worker serves (for placement).
pub(crate) struct ReactorShared {
    registry: Registry,
    registrations: RegionMutex<Registrations>,
    /// Sessions served by this worker now.
    pub(crate) sessions: AtomicUsize,
    /// Of them, how many are at each priority level now (kept by their `StepClass`): what can
    /// arrive here, and so whether an arrival could preempt the worker's task.
    pub(crate) levels: [AtomicUsize; Priority::LEVELS],
}

#[derive(Default)]
struct Registrations {
    next: usize,
    by_token: HashMap<usize, Arc<Readiness>>,
}

impl ReactorShared {
    /// Registers `source` for reading and writing (edge-triggered); returns its token and
    /// whom to wake.
    pub(crate) fn register(
        &self,
        source: &mut impl mio::event::Source,
    ) -> io::Result<(usize, Arc<Readiness>)> {
        let readiness = Arc::new(Readiness::default());
        let token = {
            let region = NoPreemptGuard::new();
            let mut r = self.registrations.lock(&region);
            let token = r.next;
            // Tokens are not reused while the reactor lives (UNBLOCK is never reached).
            r.next += 1;
            r.by_token.insert(token, Arc::clone(&readiness));
            token
        };
        if let Err(e) = self.registry.register(
            source,
            Token(token),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.forget(token);
            return Err(e);
        }
        Ok((token, readiness))
    }

    /// Takes `source` (registered as `token`) out of the reactor.
    pub(crate) fn deregister(&self, source: &mut impl mio::event::Source, token: usize) {
        let _ = self.registry.deregister(source);
        self.forget(token);
    }

    fn forget(&self, token: usize) {
        let region = NoPreemptGuard::new();
        self.registrations.lock(&region).by_token.remove(&token);
    }
}

/// A worker's reactor (given to the scheduler, polled by the worker and, while it is busy, by
/// the scheduler's timer).
pub struct WorkerReactor {
    /// The epoll instance, its event buffer, and whom a poll wakes (gathered under the lock of
    /// the registrations and woken after it). Whoever polls holds it; another poller meanwhile
    /// returns at once (the one polling delivers).
    polling: Mutex<Polling>,
    unblock: Arc<Waker>,
    shared: Arc<ReactorShared>,
}

struct Polling {
    poll: Poll,
    events: Events,
    woken: Vec<(Arc<Readiness>, bool, bool)>,
}

impl WorkerReactor {
    /// A reactor, and what the server keeps of it.
    pub(crate) fn new() -> io::Result<(WorkerReactor, Arc<ReactorShared>)> {
        let poll = Poll::new()?;
        let unblock = Arc::new(Waker::new(poll.registry(), UNBLOCK)?);
        let shared = Arc::new(ReactorShared {
            registry: poll.registry().try_clone()?,
            registrations: RegionMutex::new(Registrations::default()),
            sessions: AtomicUsize::new(0),
            levels: Default::default(),
        });
        let reactor = WorkerReactor {
            polling: Mutex::new(Polling {
                poll,
                events: Events::with_capacity(EVENTS),
                woken: Vec::with_capacity(EVENTS),
            }),
            unblock,
            shared: Arc::clone(&shared),
        };
        Ok((reactor, shared))
    }
}

impl overtake_sched::Reactor for WorkerReactor {
    fn poll(&self, timeout: Duration) {
        // Never waits for the other poller: the worker between tasks and the timer are the
        // two, and neither holds it long (the worker sleeps in it only while it is idle, and
        // then the timer does not poll).
        let Ok(mut polling) = self.polling.try_lock() else {
            return;
        };
        let Polling {
            poll,
            events,
            woken,
        } = &mut *polling;
        // EINTR (a preemption signal for another thread's task landing here) or anything else:
        // the worker looks again at its next poll.
        if poll.poll(events, Some(timeout)).is_err() {
            return;
        }
        {
            let region = NoPreemptGuard::new();
            let registrations = self.shared.registrations.lock(&region);
            for event in events.iter() {
                if event.token() == UNBLOCK {
                    continue;
                }
                if let Some(r) = registrations.by_token.get(&event.token().0) {
                    // Errors and hang-ups wake both sides: the next operation reports them.
                    let failed = event.is_error();
                    let read = failed || event.is_readable() || event.is_read_closed();
                    let write = failed || event.is_writable() || event.is_write_closed();
                    woken.push((Arc::clone(r), read, write));
                }
            }
        }
        for (readiness, read, write) in woken.drain(..) {
            if read {
                readiness.read.wake();
            }
            if write {
                readiness.write.wake();
            }
        }
    }

    fn unblocker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let unblock = Arc::clone(&self.unblock);
        Arc::new(move || {
            let _ = unblock.wake();
        })
    }

    fn most_urgent(&self) -> Priority {
        // No session at all: nothing can arrive that outranks anything.
        Priority::ALL
            .into_iter()
            .rev()
            .find(|p| self.shared.levels[p.level()].load(Ordering::Relaxed) > 0)
            .unwrap_or(Priority::LOW)
    }
}

/// The workers' reactors, as the server places sessions on them.
pub struct WorkerIo {
    pub(crate) reactors: Arc<[Arc<ReactorShared>]>,
    /// Sessions whose protocol loop has not ended yet (see `task`).
    pub(crate) live: Arc<AtomicUsize>,
}

impl WorkerIo {
    /// One reactor per worker, for `workers` workers: the reactors go to the scheduler
    /// (`overtake_sched::StartOptions::reactors`), this to the server.
    pub fn new(workers: usize) -> io::Result<(WorkerIo, overtake_sched::reactor::Reactors)> {
        let mut shared = Vec::with_capacity(workers);
        let mut given = Vec::with_capacity(workers);
        for _ in 0..workers.max(1) {
            let (reactor, s) = WorkerReactor::new()?;
            shared.push(s);
            given.push(Some(Arc::new(reactor) as Arc<dyn overtake_sched::Reactor>));
        }
        let io = WorkerIo {
            reactors: shared.into(),
            live: Arc::default(),
        };
        Ok((io, given))
    }

    /// Sessions served on the workers now (their protocol loops not dropped yet).
    pub(crate) fn sessions(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// How many sessions each worker serves now.
    pub(crate) fn sessions_per_worker(&self) -> Vec<usize> {
        let load = |r: &Arc<ReactorShared>| r.sessions.load(Ordering::Relaxed);
        self.reactors.iter().map(load).collect()
    }

    /// The worker a new session goes to: the one serving the fewest sessions (the first of
    /// them, counting from `start`, so that ties spread).
    pub(crate) fn place(&self, start: usize) -> usize {
        let n = self.reactors.len();
        (0..n)
            .map(|i| (start + i) % n)
            .min_by_key(|&w| self.reactors[w].sessions.load(Ordering::Relaxed))
            .unwrap_or(0)
    }
}
