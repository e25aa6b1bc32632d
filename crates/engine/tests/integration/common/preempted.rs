//! Running a transaction in a preemptible context while an urgent one preempts it at a chosen
//! point, the way a worker does, but deterministically (see `overtake_runtime::preempt::inject`).

use std::sync::mpsc;
use std::time::Duration;

use overtake_runtime::preempt::inject::{self, Point, run_preempted};

/// How long a sweep may take before it is declared hung. Generous: it only fails when a context
/// waits for a paused one, which never resolves.
const HANG: Duration = Duration::from_secs(120);

/// Runs `low` in a preemptible context, preempted at the `nth` occurrence of `point` (counted from
/// its start), where `urgent` runs in a second, non-preemptible context (once). Returns whether
/// the preemption happened, i.e. whether `low` met `nth` such points.
pub fn preempt_once_at(
    point: Point,
    nth: u32,
    low: impl FnOnce() + 'static,
    urgent: impl FnOnce() + 'static,
) -> bool {
    let mut urgent = Some(urgent);
    let served = run_preempted(
        move || {
            inject::inject(point, nth, 0);
            low();
            inject::stop();
        },
        move || {
            if let Some(work) = urgent.take() {
                work();
            }
        },
    )
    .expect("a worker with two contexts");
    served > 0
}

/// Calls `case(n)` for n = 1, 2, ... until it reports that the n-th point was never reached, each
/// on a fresh thread, failing if one hangs. `case` sets up its own database and runs
/// [`preempt_once_at`]. Returns how many positions were swept.
pub fn sweep(case: impl Fn(u32) -> bool + Send + Sync + Clone + 'static) -> u32 {
    let mut n = 1;
    loop {
        let (tx, rx) = mpsc::channel();
        let c = case.clone();
        std::thread::spawn(move || {
            let reached = c(n);
            let _ = tx.send(reached);
        });
        match rx.recv_timeout(HANG) {
            Ok(true) => n += 1,
            Ok(false) => return n - 1,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "preempted at point {n}: the urgent transaction waited for the paused one and \
                 never finished"
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("preempted at point {n}: the case panicked (see above)")
            }
        }
    }
}
