//! I/O a worker polls itself: a source of readiness (sockets, in the server) that the worker
//! looks at between tasks and sleeps in when it has nothing to run, so that whoever waits for
//! that I/O is woken on the worker that serves it, with no other thread in between.
//!
//! The worker knows nothing of what is polled: a [`Reactor`] delivers readiness by waking
//! whatever waits for it (in the server, a session's waker, which submits the session's next
//! step to this same worker). A reactor must never block in [`Reactor::poll`] longer than it is
//! told, and must never run a job itself: it only makes work visible.
//!
//! While a task keeps its worker busy, the scheduler's timer polls that worker's reactor in its
//! stead (every [`ARRIVAL_CHECK`] while something more urgent than the task may arrive, else at
//! the quantum's steps), and asks the worker to preempt the task if what arrived is more urgent
//! (or, under the quantum policy, to share the worker with it at the quantum's end): an urgent
//! request on a busy worker waits for the timer, not for the task to end.

use std::sync::Arc;
use std::time::Duration;

use overtake_priority::Priority;

/// A worker's source of I/O readiness (see the [module documentation](self)).
pub trait Reactor: Send + Sync {
    /// Delivers the readiness that has arrived (waking whoever waits for it); if none has,
    /// waits for some up to `timeout` (`Duration::ZERO`: do not wait). Called by the worker
    /// between tasks and by the timer while the worker is busy: a call while another is under
    /// way may return at once (that one delivers). An error is the reactor's own to report: the
    /// worker goes on.
    fn poll(&self, timeout: Duration);

    /// A handle any thread calls to make a [`poll`](Self::poll) that waits return at once (the
    /// worker was given work).
    fn unblocker(&self) -> Arc<dyn Fn() + Send + Sync>;

    /// The most urgent level of work that can arrive through this reactor (in the server: that
    /// of the most urgent session the worker serves). While the worker's task is less urgent,
    /// the timer looks at the reactor every [`ARRIVAL_CHECK`]; otherwise nothing that arrives
    /// could preempt it, and the timer looks only at its quantum steps (a look more often costs
    /// a timer wake-up per check while statements flow). By default: any level may arrive.
    fn most_urgent(&self) -> Priority {
        Priority::CRITICAL
    }
}

/// Per worker, its reactor if it has one (see `StartOptions::reactors`).
pub type Reactors = Vec<Option<Arc<dyn Reactor>>>;

/// How long a task may keep its worker before the timer polls the worker's reactor for it.
pub const ARRIVAL_CHECK: Duration = Duration::from_micros(50);

/// How often a busy worker looks at its reactor between tasks: readiness that arrives while
/// tasks keep it busy waits at most this long (plus the task that runs), and a worker whose
/// tasks are short does not pay a system call between each two.
pub(crate) const POLL_BETWEEN_TASKS: Duration = Duration::from_micros(20);
