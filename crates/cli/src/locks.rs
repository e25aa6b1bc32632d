//! `overtake bench locks` and `overtake compare locks`: TPC-C under two-phase locking, POW's
//! experiment. Closed-loop clients (exponential think time, each transaction urgent with
//! probability `--hp-share`) submit the full mix through the scheduler; the database uses one
//! lock-scheduling policy per run. `compare` sweeps policies and think times on one loaded
//! database (switching its concurrency control between runs), and adds McWherter's question:
//! the same load with CPU priority only, lock priority only, both, neither, and under MVCC.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use overtake_engine::{Concurrency, LockPolicy, LockWait, Priority};
use overtake_sched::{ClassStats, RunStats, SchedConfig};
use overtake_workload::drivers::clients::{ClientsConfig, run_clients};
use overtake_workload::rng::NuRandConstants;
use overtake_workload::tpcc::consistency;
use serde_json::json;

use crate::args::{BenchLocksArgs, CcArg, CompareLocksArgs, LocksArgs, PolicyArg};
use crate::figures::{self, Group, Labeled, print_files, with_files};
use crate::output::{LoadedDb, class_json, load_database, print_table, run_progress, ticker, us};
use crate::plot::{self, Curve};

/// One configuration to run.
#[derive(Clone, Debug)]
struct RunSpec {
    /// What the row is called.
    label: String,
    concurrency: Concurrency,
    cpu: PolicyArg,
    think_us: u64,
}

/// What one run measured.
struct RunResult {
    spec: RunSpec,
    elapsed: f64,
    high: ClassStats,
    low: ClassStats,
    /// Every class, for figures and the CSV file.
    stats: RunStats,
    overloaded: u64,
    consistent: Option<bool>,
    /// The lock waits seen at half time (`--show-waits`), and when.
    waits: Option<(Duration, Vec<LockWait>)>,
}

impl RunResult {
    /// Clients with a transaction in flight, on average (Little's law over both classes).
    fn active_clients(&self) -> f64 {
        [&self.high, &self.low]
            .iter()
            .map(|c| c.committed as f64 / self.elapsed * c.latency.summary().mean / 1e6)
            .sum()
    }

    fn json(&self) -> serde_json::Value {
        json!({
            "config": self.spec.label,
            "cc": cc_name(self.spec.concurrency),
            "lock_policy": lock_policy_name(self.spec.concurrency),
            "cpu": self.spec.cpu.policy().name(),
            "think_us": self.spec.think_us,
            "duration_s": self.elapsed,
            "active_clients": self.active_clients(),
            "overloaded": self.overloaded,
            "consistent": self.consistent,
            "classes": {
                "high": class_json(&self.high, self.elapsed),
                "low": class_json(&self.low, self.elapsed),
            },
        })
    }
}

fn cc_name(c: Concurrency) -> &'static str {
    c.name()
}

fn lock_policy_name(c: Concurrency) -> Option<&'static str> {
    c.lock_policy().map(LockPolicy::name)
}

fn parse_policy(name: &str, args: &LocksArgs) -> Result<LockPolicy, String> {
    LockPolicy::parse(name, Duration::from_micros(args.reprieve_us))
        .ok_or_else(|| format!("{name:?} is not a lock policy"))
}

/// Loads the database and draws the run's NURand constants.
fn load(args: &LocksArgs) -> Result<(LoadedDb, NuRandConstants), String> {
    let loaded = load_database(args.warehouses, args.seed, false, args.json)?;
    let constants = loaded.run_constants(args.seed);
    Ok((loaded, constants))
}

/// Runs `spec` on the loaded database.
fn run_one(
    loaded: &mut LoadedDb,
    constants: NuRandConstants,
    args: &LocksArgs,
    spec: &RunSpec,
    show_waits: bool,
) -> Result<RunResult, String> {
    Arc::get_mut(&mut loaded.db)
        .ok_or("the database is still in use by a previous run")?
        .set_concurrency(spec.concurrency);
    let clients = args.clients as usize;
    let config = ClientsConfig {
        think: Duration::from_micros(spec.think_us),
        hp_share: args.hp_share,
        warehouses: args.warehouses,
        sched: SchedConfig::default()
            .policy(spec.cpu.policy())
            .workers(usize::from(args.workers))
            .inboxes(clients, clients)
            .delivery(args.preempt_mechanism.delivery())
            .signal_delay(Duration::from_micros(args.signal_delay_us))
            .record_jobs(args.figures.records_jobs()),
        seed: args.seed,
        ..ClientsConfig::new(clients, SchedConfig::default(), constants)
    };
    let bar = run_progress(args.duration, &spec.label, args.json);
    let advance = ticker(&bar);
    // The lock waits at half time, if asked for (taken from the tick callback, on this thread).
    let waits = std::cell::RefCell::new(None);
    let half = Duration::from_secs_f64(args.duration / 2.0);
    let db = Arc::clone(&loaded.db);
    let tick = |elapsed: Duration| {
        advance(elapsed);
        if show_waits && elapsed >= half && waits.borrow().is_none() {
            *waits.borrow_mut() = Some((elapsed, db.lock_waits()));
        }
    };
    let report = run_clients(
        Arc::clone(&loaded.db),
        &loaded.tpcc,
        &config,
        Duration::from_secs_f64(args.duration),
        &tick,
    )
    .map_err(|e| e.to_string())?;
    drop(db);
    bar.finish_and_clear();
    let consistent = if args.check {
        // One snapshot reads every table; under locks it would take a million shared locks.
        let db = Arc::get_mut(&mut loaded.db).ok_or("the run still holds the database")?;
        db.set_concurrency(Concurrency::Mvcc);
        let check = consistency::check(&loaded.db, &loaded.tpcc, false)
            .map_err(|e| format!("consistency check: {e}"))?;
        if !check.is_ok() {
            eprintln!("{}: consistency: {}", spec.label, check.summary());
        }
        Some(check.is_ok())
    } else {
        None
    };
    let stats = report.scheduler.stats;
    Ok(RunResult {
        spec: spec.clone(),
        elapsed: report.elapsed.as_secs_f64(),
        high: stats.class(Priority::HIGH).clone(),
        low: stats.class(Priority::LOW).clone(),
        stats,
        overloaded: report.overloaded,
        consistent,
        waits: waits.into_inner(),
    })
}

/// The per-class rows of one run.
fn class_rows(r: &RunResult) -> Vec<Vec<String>> {
    [("high", &r.high), ("low", &r.low)]
        .iter()
        .map(|(name, c)| {
            let l = c.latency.summary();
            let b = c.breakdown();
            let (queue, excess) = c.lock_wait_means_us();
            vec![
                (*name).to_owned(),
                format!("{:.0}", c.committed as f64 / r.elapsed),
                us(l.mean),
                us(l.p50),
                us(l.p99),
                format!("{:.2}", c.lock_waits_per_attempt()),
                us(queue),
                us(excess),
                c.lock_aborts.to_string(),
                c.deadlocks.to_string(),
                format!("{:.1}", c.wasted_nanos as f64 / 1e6),
                us(b.queued),
                us(b.running),
                us(b.preempted),
                us(b.waiting),
            ]
        })
        .collect()
}

const CLASS_HEADER: [&str; 15] = [
    "class",
    "per s",
    "mean us",
    "p50 us",
    "p99 us",
    "waits/txn",
    "queue us",
    "excess us",
    "aborts",
    "deadlocks",
    "wasted ms",
    "queued",
    "running",
    "paused",
    "lock wait",
];

const CLASS_NOTE: &str = "latency: submission to end; waits/txn: lock requests that waited per \
                          attempt; queue/excess: mean QueueTime and WaitExcess per wait; aborts: \
                          preemptive (and wait-depth) aborts; wasted: time in aborted attempts; \
                          queued/running/paused/lock wait: mean microseconds per transaction";

pub fn bench(args: &BenchLocksArgs) -> Result<(), String> {
    let common = &args.locks;
    let concurrency = match args.cc {
        CcArg::Mvcc => Concurrency::Mvcc,
        CcArg::TwoPl => Concurrency::TwoPhaseLocking(parse_policy(&args.lock_policy, common)?),
    };
    let spec = RunSpec {
        label: match args.cc {
            CcArg::Mvcc => "mvcc".to_owned(),
            CcArg::TwoPl => args.lock_policy.clone(),
        },
        concurrency,
        cpu: common.cpu,
        think_us: args.think_us,
    };
    common.figures.prepare()?;
    let (mut loaded, constants) = load(common)?;
    let r = run_one(&mut loaded, constants, common, &spec, args.show_waits)?;
    let files = write_figures(common, std::slice::from_ref(&r), &[])?;
    if common.json {
        let mut v = with_files(r.json(), &files);
        if let Some((at, waits)) = &r.waits {
            v["lock_waits"] = json!({
                "at_s": at.as_secs_f64(),
                "waits": waits.iter().map(|w| json!({
                    "waiter": w.waiter, "level": w.level, "lock": w.lock,
                    "holders": w.holders, "waited_us": w.waited.as_secs_f64() * 1e6,
                })).collect::<Vec<_>>(),
            });
        }
        println!("{v}");
        return Ok(());
    }
    println!(
        "TPC-C under {} ({}), CPU policy {}, {} clients (think {} us mean, {:.0}% urgent), {} \
         worker(s), {} warehouse(s), {:.1} s; {:.1} clients active on average",
        cc_name(spec.concurrency),
        lock_policy_name(spec.concurrency).unwrap_or("no locks"),
        spec.cpu.policy().name(),
        common.clients,
        spec.think_us,
        common.hp_share * 100.0,
        common.workers,
        common.warehouses,
        r.elapsed,
        r.active_clients()
    );
    print_table(&CLASS_HEADER, &class_rows(&r));
    println!("{CLASS_NOTE}");
    print_consistency(&r);
    if let Some((at, waits)) = &r.waits {
        print_waits(*at, waits);
    }
    print_files(&files);
    Ok(())
}

/// `--plot` and `--csv`. One think time: a latency CDF per class with a line per run. A sweep
/// (`think_us`, one entry per think time with its runs): per run label, the urgent and the
/// background mean response time over the think times.
fn write_figures(
    args: &LocksArgs,
    runs: &[RunResult],
    sweep: &[(u64, Vec<RunResult>)],
) -> Result<Vec<PathBuf>, String> {
    let all: Vec<&RunResult> = runs.iter().chain(sweep.iter().flat_map(|s| &s.1)).collect();
    let labeled: Vec<Labeled> = all
        .iter()
        .map(|r| Labeled {
            label: if sweep.len() > 1 {
                format!("{} think {}us", r.spec.label, r.spec.think_us)
            } else {
                r.spec.label.clone()
            },
            stats: &r.stats,
            kinds: &["call"],
            elapsed: Duration::from_secs_f64(r.elapsed),
        })
        .collect();
    let group = (sweep.len() <= 1).then_some(Group::Classes);
    figures::write(&args.figures, "TPC-C with locks", group, &labeled, |dir| {
        if sweep.len() <= 1 {
            return Ok(Vec::new());
        }
        let labels: Vec<String> = sweep.iter().map(|(t, _)| format!("{t}us")).collect();
        let names: Vec<String> = sweep[0].1.iter().map(|r| r.spec.label.clone()).collect();
        let curves = |class: fn(&RunResult) -> &ClassStats| -> Vec<Curve> {
            names
                .iter()
                .map(|name| Curve {
                    name: name.clone(),
                    values: sweep
                        .iter()
                        .map(|(_, runs)| {
                            let r = runs.iter().find(|r| &r.spec.label == name)?;
                            let c = class(r);
                            (c.latency.count() > 0).then(|| c.latency.summary().mean)
                        })
                        .collect(),
                })
                .collect()
        };
        let mut files = Vec::new();
        files.extend(plot::sweep(
            dir,
            "sweep-urgent-mean.svg",
            "urgent transactions: mean response time by think time",
            ("mean think time", "mean response time (us, log scale)"),
            &labels,
            &curves(|r| &r.high),
            true,
        )?);
        files.extend(plot::sweep(
            dir,
            "sweep-background-mean.svg",
            "background transactions: mean response time by think time",
            ("mean think time", "mean response time (us, log scale)"),
            &labels,
            &curves(|r| &r.low),
            true,
        )?);
        Ok(files)
    })
}

/// The lock-wait snapshot, longest wait first (like a query of PostgreSQL's `pg_locks`).
fn print_waits(at: Duration, waits: &[LockWait]) {
    println!(
        "\nlock waits at {:.1} s: {} transaction(s) waiting",
        at.as_secs_f64(),
        waits.len()
    );
    let rows: Vec<Vec<String>> = waits
        .iter()
        .map(|w| {
            let holders: Vec<String> = w
                .holders
                .iter()
                .map(|&(t, exclusive)| format!("{t:#x} {}", if exclusive { "X" } else { "S" }))
                .collect();
            vec![
                format!("{:#x}", w.waiter),
                Priority::from_level(usize::from(w.level))
                    .map_or("?", Priority::as_str)
                    .to_owned(),
                w.lock.clone(),
                us(w.waited.as_secs_f64() * 1e6),
                holders.join(", "),
            ]
        })
        .collect();
    print_table(&["waiter", "level", "lock", "waited us", "held by"], &rows);
}

fn print_consistency(r: &RunResult) {
    match r.consistent {
        Some(true) => println!("{}: TPC-C consistency ok", r.spec.label),
        Some(false) => println!("{}: TPC-C consistency FAILED", r.spec.label),
        None => {}
    }
}

/// The runs of one think time: the lock policies (standard first), then the mechanisms.
fn specs(args: &CompareLocksArgs, think_us: u64) -> Result<Vec<RunSpec>, String> {
    let common = &args.locks;
    let mut names: Vec<&str> = vec!["standard"];
    names.extend(
        args.policies
            .iter()
            .map(String::as_str)
            .filter(|&n| n != "standard"),
    );
    let mut out = Vec::new();
    for name in names {
        out.push(RunSpec {
            label: name.to_owned(),
            concurrency: Concurrency::TwoPhaseLocking(parse_policy(name, common)?),
            cpu: common.cpu,
            think_us,
        });
    }
    if !args.no_mechanisms {
        let two_pl = |p| Concurrency::TwoPhaseLocking(p);
        for (label, concurrency, cpu) in [
            ("neither", two_pl(LockPolicy::Standard), PolicyArg::Wait),
            ("cpu only", two_pl(LockPolicy::Standard), PolicyArg::Preempt),
            (
                "lock only",
                two_pl(LockPolicy::NPrioInherit),
                PolicyArg::Wait,
            ),
            (
                "cpu+lock",
                two_pl(LockPolicy::NPrioInherit),
                PolicyArg::Preempt,
            ),
            ("mvcc", Concurrency::Mvcc, PolicyArg::Preempt),
        ] {
            out.push(RunSpec {
                label: label.to_owned(),
                concurrency,
                cpu,
                think_us,
            });
        }
    }
    Ok(out)
}

pub fn compare(args: &CompareLocksArgs) -> Result<(), String> {
    let common = &args.locks;
    crate::args::each_once("--policies", &args.policies, String::clone)?;
    crate::args::each_once("--think-us", &args.think_us, u64::to_string)?;
    common.figures.prepare()?;
    let (mut loaded, constants) = load(common)?;
    let mut sweep = Vec::new();
    // Ctrl-C ends the sweep at a think time's end: every think time shown has all its runs.
    for &think_us in &args.think_us {
        if crate::interrupt::requested() {
            break;
        }
        let mut results = Vec::new();
        for spec in specs(args, think_us)? {
            results.push(run_one(&mut loaded, constants, common, &spec, false)?);
        }
        if !common.json {
            print_think_time(args, think_us, &results);
        }
        sweep.push((think_us, results));
    }
    crate::interrupt::check_any(sweep.len())?;
    let files = write_figures(common, &[], &sweep)?;
    if common.json {
        let out: Vec<_> = sweep
            .iter()
            .map(|(think_us, results)| {
                let base = &results[0];
                json!({
                    "think_us": think_us,
                    "runs": results.iter().map(|r| {
                        let mut v = r.json();
                        v["urgent_speedup"] = json!(speedup(base, r));
                        v["background_penalty"] = json!(penalty(base, r));
                        v
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            with_files(
                json!({
                    "clients": common.clients,
                    "hp_share": common.hp_share,
                    "workers": common.workers,
                    "warehouses": common.warehouses,
                    "cpu": common.cpu.policy().name(),
                    "sweep": out,
                    "interrupted": sweep.len() < args.think_us.len(),
                }),
                &files
            )
        );
    } else {
        crate::interrupt::print_if_cut(sweep.len(), args.think_us.len());
        print_files(&files);
    }
    Ok(())
}

/// Urgent mean response time under `standard` over under `r` (above 1: `r` serves them faster).
fn speedup(base: &RunResult, r: &RunResult) -> f64 {
    base.high.latency.summary().mean / r.high.latency.summary().mean
}

/// Background mean response time under `r` over under `standard` (above 1: `r` slows them).
fn penalty(base: &RunResult, r: &RunResult) -> f64 {
    r.low.latency.summary().mean / base.low.latency.summary().mean
}

fn print_think_time(args: &CompareLocksArgs, think_us: u64, results: &[RunResult]) {
    let common = &args.locks;
    println!(
        "\nthink {think_us} us: {} clients, {:.0}% urgent, {} worker(s), {} warehouse(s), {:.1} s \
         per run; lock policies under CPU policy {}",
        common.clients,
        common.hp_share * 100.0,
        common.workers,
        common.warehouses,
        common.duration,
        common.cpu.policy().name()
    );
    let base = &results[0];
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let (h, l) = (r.high.latency.summary(), r.low.latency.summary());
            let mut both = r.high.clone();
            both.merge(&r.low);
            vec![
                r.spec.label.clone(),
                format!("{:.1}", r.active_clients()),
                us(h.mean),
                us(h.p99),
                format!("{:.2}", speedup(base, r)),
                us(l.mean),
                us(l.p99),
                format!("{:.2}", penalty(base, r)),
                format!("{:.0}", both.committed as f64 / r.elapsed),
                both.lock_aborts.to_string(),
                both.deadlocks.to_string(),
                format!("{:.2}", both.lock_waits_per_attempt()),
                us(r.high.breakdown().waiting),
                match r.consistent {
                    Some(true) => "ok".to_owned(),
                    Some(false) => "FAILED".to_owned(),
                    None => "-".to_owned(),
                },
            ]
        })
        .collect();
    print_table(
        &[
            "config",
            "active",
            "HP mean us",
            "HP p99 us",
            "HP speedup",
            "LP mean us",
            "LP p99 us",
            "LP penalty",
            "per s",
            "aborts",
            "deadlocks",
            "waits/txn",
            "HP lock wait",
            "consistent",
        ],
        &rows,
    );
    let b = &base.high;
    let lock_share = b.breakdown().waiting / b.latency.summary().mean.max(f64::MIN_POSITIVE);
    if lock_share < 0.1 {
        println!(
            "note: under standard, urgent transactions spent {:.0}% of their response time \
             waiting for locks: this load is not lock-bound, so lock policies have little to \
             change (fewer --warehouses make the warehouse rows hot locks)",
            lock_share * 100.0
        );
    }
    println!(
        "speedup: standard's urgent mean response over this row's; penalty: this row's background \
         mean over standard's; active: clients with a transaction in flight (Little's law); \
         aborts: preemptive and wait-depth aborts; HP lock wait: mean us an urgent transaction \
         spent parked. Rows after the policies: neither = standard locks + wait, cpu only = \
         standard + preempt, lock only = nprio-inherit + wait, cpu+lock = nprio-inherit + \
         preempt, mvcc = no locks + preempt."
    );
}
