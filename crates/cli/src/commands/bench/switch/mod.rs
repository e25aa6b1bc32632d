//! `overtake bench switch`: what the preemption mechanisms cost on this machine.
//!
//! - voluntary switch: resume a context that immediately suspends (two switches);
//! - flag to switch: a thread on another core raises the request flag; a worker context that polls
//!   at every "record access" reaches the preemption hook;
//! - signal to switch: the same, but the worker context only computes (never polls), so the request
//!   must arrive as SIGURG and an injected call.
//!
//! Latencies are measured from the requesting thread's clock reading to the hook's, on the same
//! monotonic clock. The scheduler's own costs (park to run, an empty call) are in
//! `bench_tasks`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use overtake_runtime::Context;
use overtake_runtime::preempt::{self, PreemptTarget};
use overtake_sched::LatencyHistogram;
use serde::Serialize;

use crate::report::progress::progress;
use crate::report::{Latency, print_json, print_table};
use clap::Args;

mod tasks;

#[derive(Debug, Args)]
pub struct SwitchArgs {
    /// Samples per measurement.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(100..=10_000_000))]
    pub samples: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_nanos() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

static TARGET: OnceLock<Arc<PreemptTarget>> = OnceLock::new();
static HOOK_AT: AtomicU64 = AtomicU64::new(0);
static HOOK_COUNT: AtomicU64 = AtomicU64::new(0);

/// The preemption hook: note when it ran, take up the request.
fn note_switch() {
    HOOK_AT.store(now_nanos(), Ordering::Release);
    HOOK_COUNT.fetch_add(1, Ordering::Release);
    if let Some(t) = TARGET.get() {
        t.acknowledge();
    }
}

fn voluntary(samples: u32) -> Result<LatencyHistogram, String> {
    let mut ctx = Context::new(64 * 1024, false, |s| {
        loop {
            s.suspend();
        }
    })
    .map_err(|e| e.to_string())?;
    let _ = ctx.resume();
    let mut h = LatencyHistogram::new();
    // Batches of 100 round trips, so that the clock's cost does not dominate.
    for _ in 0..samples / 100 {
        let start = Instant::now();
        for _ in 0..100 {
            let _ = ctx.resume();
        }
        h.record_nanos(start.elapsed().as_nanos() as u64 / 100);
    }
    Ok(h)
}

/// Runs a worker on core 0 whose preemptible context polls (or only computes) until stopped,
/// while this thread, on core 1, requests preemptions and measures how long they take to arrive.
fn request_latency(
    samples: u32,
    polls: bool,
    signal: bool,
) -> Result<(LatencyHistogram, u64), String> {
    let target = Arc::clone(TARGET.get_or_init(PreemptTarget::new));
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let worker = {
        let (target, stop, ready) = (Arc::clone(&target), Arc::clone(&stop), Arc::clone(&ready));
        std::thread::spawn(move || -> Result<(), String> {
            overtake_runtime::os::thread::pin_current_thread(0);
            let registration = preempt::register_worker(target, u32::from(polls), note_switch)
                .map_err(|e| e.to_string())?;
            let stop_inner = Arc::clone(&stop);
            let mut ctx = Context::new(1 << 20, true, move |_| {
                ready.store(true, Ordering::Release);
                let mut x = 1u64;
                while !stop_inner.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                        if polls {
                            preempt::record_access();
                        }
                    }
                }
            })
            .map_err(|e| e.to_string())?;
            let _ = ctx.resume();
            drop(registration);
            Ok(())
        })
    };
    overtake_runtime::os::thread::pin_current_thread(1);
    while !ready.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
    let mut h = LatencyHistogram::new();
    let mut lost = 0;
    let mut gap = 7u64;
    for _ in 0..samples {
        // A varying pause between requests, so that they land at different points of the loop.
        gap = gap * 1103515245 % 2147483647;
        let pause = Instant::now() + Duration::from_micros(20 + gap % 80);
        while Instant::now() < pause {
            std::hint::spin_loop();
        }
        let before = HOOK_COUNT.load(Ordering::Acquire);
        let sent = now_nanos();
        let _ = target.request();
        if signal {
            target.interrupt().map_err(|e| e.to_string())?;
        }
        let deadline = Instant::now() + Duration::from_millis(100);
        while HOOK_COUNT.load(Ordering::Acquire) == before && Instant::now() < deadline {
            std::hint::spin_loop();
        }
        if HOOK_COUNT.load(Ordering::Acquire) == before {
            lost += 1;
            target.acknowledge();
            continue;
        }
        h.record_nanos(HOOK_AT.load(Ordering::Acquire).saturating_sub(sent));
    }
    stop.store(true, Ordering::Relaxed);
    worker
        .join()
        .map_err(|_| "the worker thread panicked".to_owned())??;
    Ok((h, lost))
}

/// What `bench switch --json` prints.
#[derive(Debug, Serialize)]
struct SwitchReport {
    voluntary_round_trip_ns: RoundTrip,
    flag_to_switch_us: Latency,
    /// Requests the worker never saw (the measurement ended first).
    flag_lost: u64,
    signal_to_switch_us: Latency,
    signal_lost: u64,
    park_to_run_same_worker_us: Latency,
    park_to_run_other_thread_us: Latency,
    empty_call_ns: f64,
    xsave_bytes: usize,
    xsave_mask: String,
    xcr0: String,
    cpu: String,
}

#[derive(Debug, Serialize)]
struct RoundTrip {
    p50: f64,
    p99: f64,
}

pub fn run(args: &SwitchArgs) -> Result<(), String> {
    let bar = progress(4, "measuring", args.json);
    let switch = voluntary(args.samples)?;
    bar.inc(1);
    let (flag, flag_lost) = request_latency(args.samples, true, false)?;
    bar.inc(1);
    let (signal, signal_lost) = request_latency(args.samples, false, true)?;
    bar.inc(1);
    let tasks = tasks::measure(args.samples)?;
    bar.finish_and_clear();
    let state = overtake_runtime::cpu::extended_state();
    if args.json {
        let out = SwitchReport {
            voluntary_round_trip_ns: RoundTrip {
                p50: switch.summary().p50 * 1000.0,
                p99: switch.summary().p99 * 1000.0,
            },
            flag_to_switch_us: flag.summary().into(),
            flag_lost,
            signal_to_switch_us: signal.summary().into(),
            signal_lost,
            park_to_run_same_worker_us: tasks.same_worker.summary().into(),
            park_to_run_other_thread_us: tasks.other_thread.summary().into(),
            empty_call_ns: tasks.empty_call_ns,
            xsave_bytes: state.size,
            xsave_mask: format!("{:#x}", state.mask),
            xcr0: format!("{:#x}", state.xcr0),
            cpu: overtake_runtime::cpu::vendor(),
        };
        return print_json(&out, &[]);
    }
    println!(
        "{} CPU; extended state saved per preemption: {} bytes (mask {:#x} of XCR0 {:#x})",
        overtake_runtime::cpu::vendor(),
        state.size,
        state.mask,
        state.xcr0
    );
    let ns = |us: f64| format!("{:.0}", us * 1000.0);
    let s = switch.summary();
    let row = |name: &str, h: &LatencyHistogram, lost: u64| {
        let x = h.summary();
        vec![
            name.to_owned(),
            x.count.to_string(),
            format!("{:.2}", x.p50),
            format!("{:.2}", x.p90),
            format!("{:.2}", x.p99),
            format!("{:.2}", x.p999),
            format!("{:.2}", x.max),
            lost.to_string(),
        ]
    };
    println!(
        "voluntary switch (resume + suspend, two switches): p50 {} ns, p99 {} ns",
        ns(s.p50),
        ns(s.p99)
    );
    println!();
    print_table(
        &[
            "request to switch",
            "samples",
            "p50 us",
            "p90 us",
            "p99 us",
            "p99.9 us",
            "max us",
            "lost",
        ],
        &[
            row("flag, polled at record access", &flag, flag_lost),
            row("SIGURG, injected call", &signal, signal_lost),
            row(
                "wake of a parked task, waker on its worker",
                &tasks.same_worker,
                0,
            ),
            row(
                "wake of a parked task, waker on another thread",
                &tasks.other_thread,
                0,
            ),
        ],
    );
    println!();
    println!(
        "an empty call through the scheduler (submit, pooled context, run, result), 1,000 in \
         flight: {:.0} ns per call",
        tasks.empty_call_ns
    );
    Ok(())
}
