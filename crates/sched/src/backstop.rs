//! The signal backstop: a preemption request that a worker has not taken up within the signal
//! delay gets SIGURG, once, and lifts the worker's thread from the background weight if it is
//! there (see `WorkerShared::lift`).
//!
//! The request flag is the fast path (the engine polls it at every record access); code that
//! touches no records (a computation) only notices a signal. The preemption timer (`timer`) keeps
//! one and steps it: requests it raised itself are timed from
//! when they were raised, requests it only observes from when it first saw them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_runtime::preempt::PreemptTarget;

use crate::worker::WorkerShared;

/// When the outstanding request of one worker was raised (or first seen), and whether it has been
/// escalated to a signal.
#[derive(Clone, Copy, Default)]
struct Request {
    since: Option<Instant>,
    signaled: bool,
}

pub(crate) struct Backstop {
    requests: Vec<Request>,
    delay: Duration,
    /// Whether requests older than the delay are signalled (else only tracked).
    pub(crate) signals: bool,
}

impl Backstop {
    /// A backstop for `workers` workers that signals after `delay` (`signals == false`: it only
    /// tracks, e.g. for the cooperative policy or polling delivery).
    pub(crate) fn new(workers: usize, delay: Duration, signals: bool) -> Self {
        Backstop {
            requests: vec![Request::default(); workers],
            delay,
            signals,
        }
    }

    /// Raises a request on worker `w`. A new request (the worker took up the previous one,
    /// perhaps unnoticed) restarts the clock; re-raising one still untaken keeps it.
    pub(crate) fn raise(&mut self, w: usize, target: &PreemptTarget, now: Instant) {
        let r = &mut self.requests[w];
        if target.request() || r.since.is_none() {
            *r = Request {
                since: Some(now),
                signaled: false,
            };
        }
    }

    /// Forgets requests that were taken up, starts timing requests raised by others, and sends
    /// SIGURG for those older than the delay.
    pub(crate) fn step(&mut self, workers: &[Arc<WorkerShared>], now: Instant) {
        for (r, worker) in self.requests.iter_mut().zip(workers) {
            if !worker.target.is_requested() {
                *r = Request::default();
                continue;
            }
            let since = *r.since.get_or_insert(now);
            let late = now.saturating_duration_since(since) >= self.delay;
            if late {
                // Whatever the delivery, a worker at the background weight may not be running.
                worker.lift();
            }
            if self.signals && !r.signaled && late {
                // A failed send (the worker exited) changes nothing: the run is ending.
                let _ = worker.target.interrupt();
                r.signaled = true;
            }
        }
    }

    /// How long a request may stay untaken before it is signalled.
    pub(crate) fn delay(&self) -> Duration {
        self.delay
    }

    /// True while some request is not taken up.
    pub(crate) fn outstanding(&self) -> bool {
        self.requests.iter().any(|r| r.since.is_some())
    }
}
