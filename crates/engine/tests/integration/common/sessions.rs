//! Interleaving transactions that block: each transaction runs on its own thread (a session), and
//! the test sends it one step at a time. A step either finishes, or blocks on a lock, which the
//! test learns from the database's lock-wait table (a state, not a timeout): the test then goes on
//! with other sessions, and collects the blocked step's outcome later.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use overtake_engine::{Database, Error, Isolation, Priority, Transaction};

/// What a step gives back: the values it read (or nothing), or the error that ended it.
pub type Outcome = Result<Vec<i64>, Error>;

type Step = Box<dyn for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send>;

/// How long a step may stay neither finished nor waiting for a lock before the test is declared
/// hung. Generous: on a loaded machine a step is slow, never this slow.
const HANG: Duration = Duration::from_secs(60);

/// One transaction on its own thread.
pub struct Session<'scope> {
    steps: Sender<Step>,
    outcomes: Receiver<Outcome>,
    /// The transaction's id, as lock waits name it.
    pub id: u64,
    blocked: bool,
    thread: ScopedJoinHandle<'scope, ()>,
}

/// Did a step finish or block?
#[derive(Debug, PartialEq)]
pub enum Progress {
    Done(Outcome),
    Blocked,
}

impl<'scope> Session<'scope> {
    /// Begins a serializable transaction at `priority` on a new thread of `scope`.
    pub fn begin<'env>(
        scope: &'scope Scope<'scope, 'env>,
        db: &'env Database,
        priority: Priority,
    ) -> Self {
        Self::begin_at(scope, db, priority, Isolation::Serializable)
    }

    /// Begins a transaction at `priority` and `isolation` on a new thread of `scope`.
    pub fn begin_at<'env>(
        scope: &'scope Scope<'scope, 'env>,
        db: &'env Database,
        priority: Priority,
        isolation: Isolation,
    ) -> Self {
        Self::begin_with(scope, db, priority, isolation, false)
    }

    /// As [`begin_at`](Self::begin_at), with `Database::begin_reader`.
    pub fn begin_reader_at<'env>(
        scope: &'scope Scope<'scope, 'env>,
        db: &'env Database,
        priority: Priority,
        isolation: Isolation,
    ) -> Self {
        Self::begin_with(scope, db, priority, isolation, true)
    }

    fn begin_with<'env>(
        scope: &'scope Scope<'scope, 'env>,
        db: &'env Database,
        priority: Priority,
        isolation: Isolation,
        reader: bool,
    ) -> Self {
        let (steps, step_rx) = channel::<Step>();
        let (outcome_tx, outcomes) = channel::<Outcome>();
        let (id_tx, id_rx) = channel();
        let thread = scope.spawn(move || {
            let begun = if reader {
                db.begin_reader(priority, isolation)
            } else {
                db.begin(priority, isolation)
            };
            let mut txn = begun.expect("begin");
            id_tx.send(txn.id()).expect("test alive");
            for step in step_rx {
                let outcome = step(&mut txn);
                if outcome_tx.send(outcome).is_err() {
                    break;
                }
            }
        });
        let id = id_rx.recv().expect("session started");
        Session {
            steps,
            outcomes,
            id,
            blocked: false,
            thread,
        }
    }

    /// Runs `step`; returns its outcome, or `Blocked` once the transaction waits for a lock.
    pub fn run(
        &mut self,
        db: &Database,
        step: impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + 'static,
    ) -> Progress {
        assert!(!self.blocked, "a blocked session takes no steps");
        self.steps.send(Box::new(step)).expect("session alive");
        let started = Instant::now();
        loop {
            match self.outcomes.recv_timeout(Duration::from_millis(1)) {
                Ok(outcome) => return Progress::Done(outcome),
                Err(RecvTimeoutError::Disconnected) => panic!("the session's thread died"),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if db.lock_waits().iter().any(|w| w.waiter == self.id) {
                self.blocked = true;
                return Progress::Blocked;
            }
            assert!(
                started.elapsed() < HANG,
                "a step neither finished nor waited"
            );
        }
    }

    /// The outcome of the step that blocked, once it has finished.
    pub fn unblocked(&mut self) -> Outcome {
        assert!(self.blocked, "no step is blocked");
        self.blocked = false;
        self.outcomes
            .recv_timeout(HANG)
            .expect("the blocked step never finished")
    }

    /// Commits.
    pub fn commit(&mut self, db: &Database) -> Progress {
        self.run(db, |txn| Ok(txn.commit().map(|()| Vec::new())?))
    }

    /// Ends the session's thread (rolling back if still active).
    pub fn close(self) {
        drop(self.steps);
        self.thread.join().expect("session thread");
    }
}
