//! The scheduler's own costs, for `bench switch`: how long a parked task takes to run again
//! after its wake (on its own worker, and from another thread), and what one task costs from
//! submission to completion when it does nothing.
//!
//! Park to run, same worker: a high-priority task parks; a low-priority task on the same worker
//! notes the time and wakes it, then keeps touching records, so the wake preempts it at its next
//! poll; the high task notes when it runs again. From another thread: this thread wakes the
//! parked task while the worker runs the low task. Both through the public scheduler API.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use overtake_engine::Priority;
use overtake_runtime::park::{self, Unparker};
use overtake_runtime::preempt;
use overtake_runtime::{NoPreemptGuard, RegionMutex};
use overtake_sched::{
    CallExecutor, Delivery, LatencyHistogram, Policy, SchedConfig, Scheduler, Shutdown,
};

/// What the measurements found.
pub struct TaskCosts {
    /// From the wake to the woken task running, waker on the same worker.
    pub same_worker: LatencyHistogram,
    /// From the wake to the woken task running, waker on another thread.
    pub other_thread: LatencyHistogram,
    /// Submit-to-completion cost of an empty call, nanoseconds per call (many in flight).
    pub empty_call_ns: f64,
}

fn config() -> SchedConfig {
    SchedConfig::default()
        .policy(Policy::Preempt)
        .delivery(Delivery::Poll)
        .workers(1)
        .inboxes(1_024, 1_024)
}

/// Shared between the parked task, its waker and this thread.
#[derive(Default)]
struct Rendezvous {
    /// Times the parked task has parked (it publishes the count before parking).
    parks: AtomicU64,
    /// Times it has run again after a wake.
    wakes: AtomicU64,
    /// When the latest wake was sent (nanoseconds since `epoch`).
    sent: AtomicU64,
    /// Wake-to-run latencies recorded by the woken task, nanoseconds.
    latencies: RegionMutex<Vec<u64>>,
}

/// Measures park-to-run latency `samples` times; `same_worker` chooses the waker.
fn park_to_run(samples: u32, same_worker: bool) -> Result<LatencyHistogram, String> {
    let scheduler =
        Arc::new(Scheduler::start(&config(), Arc::new(CallExecutor)).map_err(|e| e.to_string())?);
    let epoch = Instant::now();
    let nanos = move || epoch.elapsed().as_nanos() as u64;
    let meet = Arc::new(Rendezvous::default());
    // Region-bound locks: the tasks below take them too, and a task must not be paused holding one.
    let unparker: Arc<RegionMutex<Option<Unparker>>> = Arc::default();
    // The parked (urgent) task.
    let (m, u) = (Arc::clone(&meet), Arc::clone(&unparker));
    let parked = scheduler
        .call(Priority::HIGH, move || {
            let unparker = park::current_unparker();
            let region = NoPreemptGuard::new();
            *u.lock(&region) = Some(unparker);
            drop(region);
            let mut latencies = Vec::with_capacity(samples as usize);
            for i in 0..u64::from(samples) {
                m.parks.store(i + 1, Ordering::Release);
                // `park` may return early (a stale token): only a sent wake counts.
                loop {
                    park::park();
                    let sent = m.sent.swap(0, Ordering::AcqRel);
                    if sent != 0 {
                        latencies.push(nanos().saturating_sub(sent));
                        m.wakes.store(i + 1, Ordering::Release);
                        break;
                    }
                }
            }
            let region = NoPreemptGuard::new();
            *m.latencies.lock(&region) = latencies;
        })
        .map_err(|e| e.to_string())?;
    // Wait until it has published its handle.
    let waker = loop {
        let region = NoPreemptGuard::new();
        let published = unparker.lock(&region).clone();
        drop(region);
        if let Some(u) = published {
            break u;
        }
        std::thread::yield_now();
    };
    // The background task: touches records all along; on the same worker it is also the waker.
    let (m, w) = (Arc::clone(&meet), waker.clone());
    let background = scheduler
        .call(Priority::LOW, move || {
            let mut done = 0;
            while m.wakes.load(Ordering::Acquire) < u64::from(samples) {
                preempt::record_access();
                if same_worker {
                    let parks = m.parks.load(Ordering::Acquire);
                    if parks > done && m.wakes.load(Ordering::Acquire) + 1 == parks {
                        done = parks;
                        m.sent.store(nanos(), Ordering::Release);
                        w.unpark();
                    }
                }
            }
        })
        .map_err(|e| e.to_string())?;
    if !same_worker {
        for i in 1..=u64::from(samples) {
            while meet.parks.load(Ordering::Acquire) < i {
                std::hint::spin_loop();
            }
            // Let it reach its park (a wake before the park is kept and returns at once, which
            // would measure nothing).
            let pause = Instant::now() + std::time::Duration::from_micros(50);
            while Instant::now() < pause {
                std::hint::spin_loop();
            }
            meet.sent.store(nanos(), Ordering::Release);
            waker.unpark();
            while meet.wakes.load(Ordering::Acquire) < i {
                std::hint::spin_loop();
            }
        }
    }
    parked.wait().map_err(|e| e.to_string())?;
    background.wait().map_err(|e| e.to_string())?;
    Arc::into_inner(scheduler)
        .ok_or("the scheduler is still shared")?
        .shutdown(Shutdown::Drain)
        .map_err(|e| e.to_string())?;
    let mut h = LatencyHistogram::new();
    let region = NoPreemptGuard::new();
    for &ns in meet.latencies.lock(&region).iter() {
        h.record_nanos(ns);
    }
    Ok(h)
}

/// Nanoseconds per empty call, submitted in batches of 1,000 and waited for.
fn empty_call_cost(samples: u32) -> Result<f64, String> {
    let scheduler =
        Scheduler::start(&config(), Arc::new(CallExecutor)).map_err(|e| e.to_string())?;
    let batches = (samples / 1_000).max(1);
    let start = Instant::now();
    for _ in 0..batches {
        let tickets: Vec<_> = (0..1_000)
            .map(|_| {
                loop {
                    match scheduler.call(Priority::HIGH, || ()) {
                        Ok(t) => break t,
                        Err(_) => std::thread::yield_now(),
                    }
                }
            })
            .collect();
        for t in tickets {
            t.wait().map_err(|e| e.to_string())?;
        }
    }
    let per_call = start.elapsed().as_nanos() as f64 / f64::from(batches * 1_000);
    scheduler
        .shutdown(Shutdown::Drain)
        .map_err(|e| e.to_string())?;
    Ok(per_call)
}

/// Runs all three measurements.
pub fn measure(samples: u32) -> Result<TaskCosts, String> {
    let park_samples = samples.min(20_000);
    Ok(TaskCosts {
        same_worker: park_to_run(park_samples, true)?,
        other_thread: park_to_run(park_samples.min(5_000), false)?,
        empty_call_ns: empty_call_cost(samples)?,
    })
}
