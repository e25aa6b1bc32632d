//! `overtake bench stalls`: how often this machine takes a core away from a running thread.
//!
//! One thread per usable core, pinned, reads the monotonic clock in a tight loop for `--duration`
//! seconds and sorts the gaps between consecutive readings by size. On a quiet machine a gap is
//! tens of nanoseconds, or a few microseconds for a timer interrupt; a gap of milliseconds is time
//! the kernel or the hypervisor gave to someone else. No latency percentile of any bench can be
//! lower than what such stalls add to the requests they hit, so this is the floor to read the
//! others against. It measures only the machine: nothing of the engine or the scheduler runs.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::commands::flags::positive_seconds;
use crate::report::{print_json, print_table};
use clap::Args;

#[derive(Debug, Args)]
pub struct StallsArgs {
    /// Seconds to watch every core.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    pub duration: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Gap sizes counted, in nanoseconds, with their column names.
const THRESHOLDS: [(u64, &str); 4] = [
    (10_000, "over 10 us"),
    (100_000, "over 100 us"),
    (1_000_000, "over 1 ms"),
    (10_000_000, "over 10 ms"),
];

/// What one core's clock loop saw. A gap is counted under every threshold it exceeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Gaps {
    over: [u64; THRESHOLDS.len()],
    /// Sum of the gaps over the smallest threshold.
    lost_nanos: u64,
    max_nanos: u64,
}

impl Gaps {
    fn add(&mut self, gap_nanos: u64) {
        self.max_nanos = self.max_nanos.max(gap_nanos);
        if gap_nanos <= THRESHOLDS[0].0 {
            return;
        }
        self.lost_nanos += gap_nanos;
        for (count, &(threshold, _)) in self.over.iter_mut().zip(&THRESHOLDS) {
            *count += u64::from(gap_nanos > threshold);
        }
    }
}

/// Spins on `core` (if it can be pinned there) for `duration`, reading the clock.
fn watch(core: usize, duration: Duration) -> Gaps {
    overtake_runtime::os::thread::pin_current_thread(core);
    let start = Instant::now();
    let mut gaps = Gaps::default();
    let mut last = start;
    loop {
        let now = Instant::now();
        gaps.add(now.duration_since(last).as_nanos() as u64);
        last = now;
        if now.duration_since(start) >= duration {
            return gaps;
        }
    }
}

pub fn run(args: &StallsArgs) -> Result<(), String> {
    let cores = overtake_runtime::os::thread::available_cores().max(1);
    let duration = Duration::from_secs_f64(args.duration);
    if !args.json {
        eprintln!(
            "reading the clock on {cores} core(s) for {} s...",
            args.duration
        );
    }
    let per_core: Vec<Gaps> = std::thread::scope(|scope| {
        let watchers: Vec<_> = (0..cores)
            .map(|core| scope.spawn(move || watch(core, duration)))
            .collect();
        watchers
            .into_iter()
            .map(|w| w.join().map_err(|_| "a clock loop panicked".to_owned()))
            .collect::<Result<_, _>>()
    })?;
    let cores: Vec<CoreGaps> = per_core
        .iter()
        .enumerate()
        .map(|(core, g)| CoreGaps {
            core,
            over_10us: g.over[0],
            over_100us: g.over[1],
            over_1ms: g.over[2],
            over_10ms: g.over[3],
            lost_ms: g.lost_nanos as f64 / 1e6,
            max_us: g.max_nanos as f64 / 1e3,
        })
        .collect();
    let out = StallsReport {
        duration_s: args.duration,
        cores,
    };
    if args.json {
        return print_json(&out, &[]);
    }
    let mut header = vec!["core"];
    header.extend(THRESHOLDS.iter().map(|&(_, name)| name));
    header.extend(["time lost ms", "max gap us"]);
    let rows: Vec<Vec<String>> = out
        .cores
        .iter()
        .map(|g| {
            let mut row = vec![g.core.to_string()];
            row.extend([g.over_10us, g.over_100us, g.over_1ms, g.over_10ms].map(|n| n.to_string()));
            row.push(format!("{:.1}", g.lost_ms));
            row.push(format!("{:.0}", g.max_us));
            row
        })
        .collect();
    println!(
        "gaps between consecutive clock readings of a thread spinning on each core, {} s:",
        args.duration
    );
    print_table(&header, &rows);
    println!(
        "A gap is time the core ran something else. Requests that arrive during one wait for \
         it, whatever the policy: read p99 and p99.9 latencies against the gaps over 100 us \
         and 1 ms here, measured with every core busy as in the benches."
    );
    Ok(())
}

/// What `bench stalls --json` prints: per core, how many gaps exceeded each threshold, the time
/// they took, and the longest.
#[derive(Debug, Serialize)]
struct StallsReport {
    duration_s: f64,
    cores: Vec<CoreGaps>,
}

#[derive(Debug, Serialize)]
struct CoreGaps {
    core: usize,
    over_10us: u64,
    over_100us: u64,
    over_1ms: u64,
    over_10ms: u64,
    lost_ms: f64,
    max_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_counted_under_every_threshold_they_exceed() {
        let mut g = Gaps::default();
        for gap in [50, 10_000, 10_001, 150_000, 2_000_000, 20_000_000] {
            g.add(gap);
        }
        assert_eq!(g.over, [4, 3, 2, 1], "10 us exactly is not over 10 us");
        assert_eq!(g.lost_nanos, 10_001 + 150_000 + 2_000_000 + 20_000_000);
        assert_eq!(g.max_nanos, 20_000_000);
    }
}
