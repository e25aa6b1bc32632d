//! Two application threads share one scheduler with one worker: the first submits a long
//! background computation, the second, a moment later, an urgent call. The worker preempts the
//! computation wherever it is (a signal: the computation touches no records), runs the urgent
//! call, and resumes the computation where it was.
//!
//! Run: `cargo run --release -p overtake-sched --example urgent_first`

use std::sync::Arc;
use std::time::Instant;

use overtake_sched::Priority;
use overtake_sched::{CallExecutor, SchedConfig, Scheduler, Shutdown};

// Signal preemption needs every allocation inside a non-preemptible region.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = SchedConfig::default().workers(1);
    let scheduler = Arc::new(Scheduler::start(&config, Arc::new(CallExecutor))?);
    let t0 = Instant::now();

    let background = {
        let scheduler = Arc::clone(&scheduler);
        std::thread::spawn(move || {
            let ticket = scheduler
                .call(Priority::LOW, || {
                    // About 100 ms of arithmetic on this machine class; no record is touched.
                    (0..300_000_000u64).fold(0u64, |acc, i| acc.wrapping_mul(31).wrapping_add(i))
                })
                .map_err(|e| e.to_string())?;
            let sum = ticket.wait().map_err(|e| e.to_string())?;
            Ok::<_, String>((sum, t0.elapsed()))
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(10));
    let urgent = {
        let scheduler = Arc::clone(&scheduler);
        std::thread::spawn(move || {
            let submitted = t0.elapsed();
            let ticket = scheduler
                .call(Priority::HIGH, || "order accepted")
                .map_err(|e| e.to_string())?;
            let answer = ticket.wait().map_err(|e| e.to_string())?;
            Ok::<_, String>((answer, submitted, t0.elapsed()))
        })
    };

    let (answer, submitted, urgent_done) = urgent.join().map_err(|_| "urgent thread")??;
    let (sum, background_done) = background.join().map_err(|_| "background thread")??;
    println!(
        "urgent call: submitted at {submitted:?}, answered \"{answer}\" at {urgent_done:?} \
         ({:?} later)",
        urgent_done - submitted
    );
    println!("background computation: finished at {background_done:?} (result {sum})");
    println!(
        "the urgent call finished first: {}",
        urgent_done < background_done
    );
    let scheduler = Arc::into_inner(scheduler).ok_or("a handle is still shared")?;
    let report = scheduler.shutdown(Shutdown::Drain)?;
    println!(
        "preemptions of background work: {}; signals sent: {}",
        report.stats.class(Priority::LOW).preemptions,
        report.preempt.signals_sent
    );
    Ok(())
}
