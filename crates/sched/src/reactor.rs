//! I/O a worker polls itself: a source of readiness (sockets, in the server) that the worker
//! looks at between tasks and sleeps in when it has nothing to run, so that whoever waits for
//! that I/O is woken on the worker that serves it, with no other thread in between.
//!
//! The worker knows nothing of what is polled: a [`Reactor`] delivers readiness by waking
//! whatever waits for it (in the server, a session's waker, which submits the session's next
//! step to this same worker). A reactor must never block in [`Reactor::poll`] longer than it is
//! told, and must never run a job itself: it only makes work visible.

use std::sync::Arc;
use std::time::Duration;

/// A worker's source of I/O readiness (see the [module documentation](self)).
pub trait Reactor: Send {
    /// Delivers the readiness that has arrived (waking whoever waits for it); if none has,
    /// waits for some up to `timeout` (`Duration::ZERO`: do not wait). Called only on the
    /// worker's thread, between tasks. An error is reported by the reactor's owner, not here:
    /// the worker goes on (it falls back to sleeping without the reactor for that round).
    fn poll(&mut self, timeout: Duration);

    /// A handle any thread calls to make a [`poll`](Self::poll) that waits return at once (the
    /// worker was given work).
    fn unblocker(&self) -> Arc<dyn Fn() + Send + Sync>;
}

/// Per worker, its reactor if it has one (see `StartOptions::reactors`).
pub type Reactors = Vec<Option<Box<dyn Reactor>>>;

/// How often a busy worker looks at its reactor between tasks: readiness that arrives while
/// tasks keep it busy waits at most this long (plus the task that runs), and a worker whose
/// tasks are short does not pay a system call between each two.
pub(crate) const POLL_BETWEEN_TASKS: Duration = Duration::from_micros(20);
