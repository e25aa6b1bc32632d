//! A second flush in flight: a helper thread syncs the log file for the writer, so that while one
//! sync is in the disk the writer can write the bytes an urgent commit asked for and sync them at
//! once, instead of queueing them behind it. The disk here completes two overlapping
//! `fdatasync` calls on one file in about the time of one (two threads appending and syncing
//! at once made twice the syncs per second of one, at the same latency), so an urgent commit
//! that arrives during a flush waits about one flush, not the rest of one and then its own.
//!
//! Must never report a sync it did not complete, never hold a sync for longer than the disk
//! does, and never run on a worker.

use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use overtake_runtime::os::thread as os_thread;

use super::Syncer;

/// The helper thread and the one sync it may be running.
pub(super) struct SyncThread {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

struct Inner {
    state: Mutex<State>,
    /// Signals the helper (a job, or stop) and the writer (a result).
    changed: Condvar,
    /// Woken when a sync is done, so that it can wait for that or for a flush asked for at once.
    writer: Thread,
}

#[derive(Default)]
struct State {
    job: Option<Arc<dyn Syncer>>,
    /// The last job's outcome and how long its sync took, until taken.
    done: Option<(io::Result<()>, Duration)>,
    stop: bool,
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SyncThread {
    /// Starts the helper; the calling thread (the writer) is the one it wakes.
    pub(super) fn start() -> io::Result<SyncThread> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            writer: std::thread::current(),
        });
        let for_thread = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("log-sync".into())
            .spawn(move || {
                // Committers wait for its syncs as they do for the writer's.
                os_thread::serve_promptly();
                run(&for_thread);
            })?;
        Ok(SyncThread {
            inner,
            thread: Some(thread),
        })
    }

    /// Starts `syncer`'s sync on the helper. One at a time: the last one's outcome was taken.
    pub(super) fn begin(&self, syncer: Arc<dyn Syncer>) {
        let mut state = self.inner.state();
        assert!(
            state.job.is_none() && state.done.is_none(),
            "one sync in the helper at a time"
        );
        state.job = Some(syncer);
        drop(state);
        self.inner.changed.notify_all();
    }

    /// The outcome of the sync begun, once it is done (taken: asked again, `None`).
    pub(super) fn finished(&self) -> Option<(io::Result<()>, Duration)> {
        self.inner.state().done.take()
    }

    /// Waits for the sync begun to finish and returns its outcome.
    pub(super) fn wait(&self) -> (io::Result<()>, Duration) {
        let mut state = self.inner.state();
        loop {
            if let Some(done) = state.done.take() {
                return done;
            }
            state = self
                .inner
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

fn run(inner: &Inner) {
    // Real-time, it would take a worker's core whenever it wakes: it keeps to the others.
    let mut off_workers = os_thread::OffPinnedCores::new();
    let mut state = inner.state();
    loop {
        if state.stop {
            return;
        }
        let Some(job) = state.job.take() else {
            state = inner
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            continue;
        };
        drop(state);
        off_workers.refresh();
        let started = Instant::now();
        let outcome = job.sync();
        let took = started.elapsed();
        state = inner.state();
        state.done = Some((outcome, took));
        inner.changed.notify_all();
        inner.writer.unpark();
    }
}

impl Drop for SyncThread {
    fn drop(&mut self) {
        self.inner.state().stop = true;
        self.inner.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
