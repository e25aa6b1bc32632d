//! A commit's acknowledgement: what a committed transaction must wait for before anyone is told
//! it committed (or, for a read-only one, before what it read may be shown).
//!
//! The transaction ends at its in-memory commit; the acknowledgement keeps only the log's
//! progress and the point it waits for, so a task can end and free its context while its
//! acknowledgement waits (ERMIA's pipelined commit): a scheduler polls it as a [`Future`], or a
//! caller [`wait`](Acknowledgement::wait)s, parking. Must never report a commit durable before
//! its record is on stable storage under `sync`.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::error::CommitError;
use crate::log::writer::{Progress, Target};

/// What a committed transaction waits for before it may be acknowledged: nothing (in memory, or
/// under `async` while the log keeps up), or its record being durable (under `sync`), or, for a
/// read-only transaction under `sync`, every commit it read being durable.
///
/// Resolves to `Err(CommitError::NotDurable)` if the log stops first: the commit is then in doubt
/// (see [`CommitError::NotDurable`]). Polled as a future, an urgent transaction's asks for its
/// flush at the first poll.
#[must_use = "a commit is acknowledged only once this resolves"]
pub struct Acknowledgement {
    waiting: Option<Waiting>,
}

struct Waiting {
    progress: Progress,
    target: Target,
    urgent: bool,
    /// When an urgent one asked for its flush (for the log's statistics).
    asked: Option<u64>,
    /// The waker the writer wakes.
    registered: Option<Waker>,
}

impl Acknowledgement {
    /// Nothing to wait for.
    pub(crate) fn immediate() -> Self {
        Acknowledgement { waiting: None }
    }

    /// Waits for `target` of the log `progress` describes.
    pub(crate) fn after(progress: Progress, target: Target, urgent: bool) -> Self {
        Acknowledgement {
            waiting: Some(Waiting {
                progress,
                target,
                urgent,
                asked: None,
                registered: None,
            }),
        }
    }

    /// Whether it resolves without waiting: nothing to wait for, or it is durable already.
    pub fn is_ready(&self) -> bool {
        self.waiting
            .as_ref()
            .is_none_or(|w| w.progress.reached(w.target))
    }

    /// Waits (a task parks; a thread sleeps) until it resolves; returns how, and how long it
    /// waited. Never inside a non-preemptible region.
    pub fn wait(self) -> (Result<(), CommitError>, Duration) {
        let Some(w) = self.waiting else {
            return (Ok(()), Duration::ZERO);
        };
        if w.progress.reached(w.target) {
            return (Ok(()), Duration::ZERO);
        }
        let started = std::time::Instant::now();
        let durable = w.progress.wait(w.target, w.urgent);
        (durable.map_err(CommitError::NotDurable), started.elapsed())
    }
}

impl Future for Acknowledgement {
    type Output = Result<(), CommitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(w) = &mut self.get_mut().waiting else {
            return Poll::Ready(Ok(()));
        };
        if let Some(ready) = w.decided() {
            return Poll::Ready(ready);
        }
        if w.urgent && w.asked.is_none() {
            w.asked = Some(w.progress.ask_urgent());
        }
        if w.registered
            .as_ref()
            .is_none_or(|r| !r.will_wake(cx.waker()))
        {
            w.progress.register(w.target, cx.waker().clone());
            w.registered = Some(cx.waker().clone());
            // The writer may have passed the target, or stopped, before it was registered.
            if let Some(ready) = w.decided() {
                return Poll::Ready(ready);
            }
        }
        Poll::Pending
    }
}

impl Waiting {
    fn decided(&self) -> Option<Result<(), CommitError>> {
        if self.progress.reached(self.target) {
            if let (Some(asked), Target::Lsn(lsn)) = (self.asked, self.target) {
                self.progress.note_urgent(lsn, asked);
            }
            return Some(Ok(()));
        }
        let why = self.progress.stopped()?;
        Some(Err(CommitError::NotDurable(why.to_owned())))
    }
}

impl std::fmt::Debug for Acknowledgement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Acknowledgement");
        if let Some(w) = &self.waiting {
            d.field("target", &w.target).field("urgent", &w.urgent);
        }
        d.finish()
    }
}
