//! Waiting helpers shared by the scheduler's integration tests: every wait is for a flag another
//! party sets, bounded only against a hang (a broken scheduler fails instead of stalling the
//! suite), never by time.

// Each test file uses the helpers it needs.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use overtake_runtime::preempt;
use overtake_sched::{Delivery, Policy, SchedConfig};

/// The tests' service: `policy` on one unpinned worker with small stacks, preemption requests
/// taken up at record accesses (no signals: the tests decide where a task can be paused).
pub fn config(policy: Policy) -> SchedConfig {
    SchedConfig::default()
        .policy(policy)
        .delivery(Delivery::Poll)
        .stack_size(256 * 1024)
        .pin(false)
}

/// How long a wait may take before the test fails as hung.
const HANG: Duration = Duration::from_secs(60);

/// Inside a call: spins, touching "records" (where the engine would poll for a preemption
/// request), until `flag` is set.
pub fn work_until(flag: &AtomicBool) {
    let give_up = Instant::now() + HANG;
    while !flag.load(Ordering::Acquire) {
        preempt::record_access();
        assert!(Instant::now() < give_up, "the awaited event never happened");
        std::hint::spin_loop();
    }
}

/// On a test thread: yields until `flag` is set.
pub fn until(flag: &AtomicBool) {
    let give_up = Instant::now() + HANG;
    while !flag.load(Ordering::Acquire) {
        assert!(Instant::now() < give_up, "the awaited event never happened");
        std::thread::yield_now();
    }
}
