//! `overtake compare hints`: UFS's lock-holder experiment on OS threads (see
//! `overtake_workload::hints`): the waiter's latency with the holder alone, with a time-sensitive
//! burner on the same core, and with the burner and the lock manager's hints to `overtake-ufs`.
//! Under `overtake-ufs` the session threads are in cgroups named by tier; under the kernel's own
//! scheduler in cgroups weighted alike (EEVDF), and the hinted run is skipped (no map).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use overtake_runtime::os::bpf_map::HintMap;
use overtake_runtime::os::sched_ext::SchedExt;
use overtake_sched::OsScheduling;
use overtake_workload::compute::ComputeTask;
use overtake_workload::hints::{HintRound, HintSetup, run_round};
use serde::Serialize;

use crate::commands::flags::session_cgroups;
use crate::report::{print_json, print_table, us};

#[derive(Debug, Args)]
pub struct CompareHintsArgs {
    /// Rounds of each run (each on a fresh table).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// How long the holder computes while it holds the lock, in milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub hold_ms: u64,
    /// How long the burner computes, in milliseconds (keep it well under sched_ext's 30 s
    /// watchdog: a starved holder is a stalled task to it).
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub burn_ms: u64,
    /// Where overtake-ufs pinned its hint map.
    #[arg(long, default_value = overtake_runtime::os::bpf_map::DEFAULT_HINTS_PIN)]
    pub hints_pin: std::path::PathBuf,
    /// The usable core the three sessions share.
    #[arg(long, default_value_t = 0)]
    pub core: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn compare(args: &CompareHintsArgs) -> Result<(), String> {
    let scx = SchedExt::read();
    let tree = session_cgroups()?;
    let os = if scx.is_ufs() {
        OsScheduling::Ufs(tree.clone())
    } else if scx.is_kernel_own() {
        OsScheduling::Weights(tree.clone())
    } else {
        return Err(format!(
            "another sched_ext scheduler runs the threads ({scx})"
        ));
    };
    let hold = ComputeTask::calibrate(Duration::from_millis(args.hold_ms));
    let burn = Duration::from_millis(args.burn_ms);
    let mut skipped = Vec::new();
    let map = if scx.is_ufs() {
        match HintMap::open_pinned(&args.hints_pin) {
            Ok(map) => Some(Arc::new(map)),
            Err(e) => {
                skipped.push(format!("with hints: {e}"));
                None
            }
        }
    } else {
        skipped.push(format!("with hints: overtake-ufs is not loaded ({scx})"));
        None
    };
    let mut runs: Vec<(&str, Vec<HintRound>)> = Vec::new();
    let plans = [
        ("alone", Duration::ZERO, None),
        ("without", burn, None),
        ("with", burn, map),
    ];
    for (name, burn, hints) in plans {
        if name == "with" && hints.is_none() {
            continue;
        }
        let setup = HintSetup {
            hold: hold.clone(),
            burn,
            os: os.clone(),
            hints,
            core: args.core,
        };
        let rounds = (0..args.rounds)
            .map(|_| run_round(&setup).map_err(|e| format!("{name}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(bad) = rounds.iter().find(|r| !r.committed || r.row != 11) {
            return Err(format!(
                "{name}: a round lost or repeated a commit: {bad:?}"
            ));
        }
        runs.push((name, rounds));
    }
    tree.remove_empty();
    // Medians per run: (name, waiter us, holder us, rounds hinted).
    let medians: Vec<(&str, f64, f64, usize)> = runs
        .iter()
        .map(|(name, rounds)| {
            let of = |f: fn(&HintRound) -> Duration| {
                median(rounds.iter().map(|r| micros(f(r))).collect())
            };
            (
                *name,
                of(|r| r.waiter_latency),
                of(|r| r.holder_total),
                rounds.iter().filter(|r| r.hinted).count(),
            )
        })
        .collect();
    let latency = |name: &str| medians.iter().find(|m| m.0 == name).map(|m| m.1);
    let (alone, without, with) = (latency("alone"), latency("without"), latency("with"));
    if args.json {
        let out = HintsReport {
            scheduler: os.name(),
            sched_ext: scx.to_string(),
            hold_ms: args.hold_ms,
            burn_ms: args.burn_ms,
            alone_us: alone,
            without_us: without,
            with_us: with,
            with_over_without: with.zip(without).map(|(w, wo)| w / wo),
            rounds: runs
                .iter()
                .map(|(name, rounds)| {
                    let list = rounds
                        .iter()
                        .map(|r| Round {
                            waiter_us: micros(r.waiter_latency),
                            holder_us: micros(r.holder_total),
                            hinted: r.hinted,
                        })
                        .collect();
                    (*name, list)
                })
                .collect(),
            skipped,
        };
        return print_json(&out, &[]);
    }
    println!(
        "lock holder on OS threads under {} ({scx}): one core; a background session holds a row \
         and computes {} ms, a time-sensitive one waits for it, a second time-sensitive one burns \
         {} ms; waiter's latency from the holder's start, median of {} rounds",
        os.name(),
        args.hold_ms,
        args.burn_ms,
        args.rounds
    );
    let rows: Vec<Vec<String>> = medians
        .iter()
        .map(|&(name, waiter, holder, hinted)| {
            vec![
                name.to_owned(),
                us(waiter),
                us(holder),
                format!("{hinted}/{}", args.rounds),
            ]
        })
        .collect();
    print_table(&["run", "waiter us", "holder us", "hinted"], &rows);
    if let (Some(w), Some(wo)) = (with, without) {
        println!("with hints / without: {:.2}", w / wo);
    }
    for s in &skipped {
        println!("warning: skipped {s}");
    }
    Ok(())
}

/// What `compare hints --json` prints: the waiter's median latency per run (`null` for a run
/// skipped), and every round.
#[derive(Debug, Serialize)]
struct HintsReport {
    scheduler: &'static str,
    sched_ext: String,
    hold_ms: u64,
    burn_ms: u64,
    alone_us: Option<f64>,
    without_us: Option<f64>,
    with_us: Option<f64>,
    with_over_without: Option<f64>,
    rounds: BTreeMap<&'static str, Vec<Round>>,
    skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Round {
    waiter_us: f64,
    holder_us: f64,
    hinted: bool,
}
