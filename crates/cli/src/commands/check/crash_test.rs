//! `overtake crash-test`: runs `bench tpcc` with a `sync` log and an acknowledged-order ledger in a
//! child process, kills it with SIGKILL after a random time (during the load, a checkpoint-free
//! steady state, wherever it is), recovers the directory, and checks that the database is
//! consistent and holds every order the ledger says was acknowledged. Then again, continuing the
//! same directory.
//!
//! A kill during the first load leaves a load cut short, which is no loss (nothing was
//! acknowledged): the directory is emptied and loaded again. It must never call a run good
//! without having checked it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::harness::kept::{RecoveredReport, verify};
use crate::report::print_json;
use clap::Args;

/// `crash-test`: kill a logging TPC-C run again and again, and check what each recovery kept.
#[derive(Debug, Args)]
pub struct CrashTestArgs {
    /// How many times to kill the run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub kills: u32,
    /// The database's directory (default: a fresh one under the system's temporary directory,
    /// removed at the end). An existing one is continued.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// Shortest time a run lives before the kill, in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub min_ms: u64,
    /// Longest time a run lives before the kill, in milliseconds.
    #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub max_ms: u64,
    /// Seed of the kill times.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Start again from an empty directory (and ledger) after every this many kills (0:
    /// never), so that a long loop keeps a database of bounded size: TPC-C's order tables only
    /// grow, and every recovery and checkpoint reads them all.
    #[arg(long, value_name = "KILLS", default_value_t = 0)]
    pub fresh_every: u32,
    /// The runs checkpoint each time this many MiB were logged, so that kills land during
    /// checkpoints too (`bench tpcc --checkpoint-mib`).
    #[arg(long, value_name = "MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub checkpoint_mib: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// A small generator for the kill times (seeded: a failure can be replayed).
struct Rng(u64);

impl Rng {
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (self.0 >> 33) % (hi - lo + 1)
    }
}

/// The directory of a run and whether it is ours to remove.
struct Workdir {
    path: PathBuf,
    owned: bool,
    keep: std::cell::Cell<bool>,
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.owned && !self.keep.get() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `Ok(false)`: a recovery lost acknowledged orders or was inconsistent (reported in the output).
pub fn run(args: &CrashTestArgs) -> Result<bool, String> {
    if args.min_ms > args.max_ms {
        return Err("--min-ms must not exceed --max-ms".into());
    }
    let dir = match &args.data_dir {
        Some(d) => Workdir {
            path: d.clone(),
            owned: false,
            keep: std::cell::Cell::new(true),
        },
        None => Workdir {
            path: std::env::temp_dir().join(format!("overtake-crash-test-{}", std::process::id())),
            owned: true,
            keep: std::cell::Cell::new(false),
        },
    };
    let ledger = dir.path.join("acknowledged.txt");
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut rng = Rng(args.seed ^ 0x9E37_79B9_7F4A_7C15);
    let mut runs: Vec<Kill> = Vec::new();
    let mut ok = true;
    for kill in 1..=args.kills {
        if crate::harness::interrupt::requested() {
            break;
        }
        let after = Duration::from_millis(rng.between(args.min_ms, args.max_ms));
        // Long enough never to end before its kill (recovery at the start counts too).
        let duration = args.max_ms / 1000 + 60;
        let mut child = spawn(&exe, &dir.path, &ledger, duration, args.checkpoint_mib)?;
        let started = Instant::now();
        // Sleep until the kill, unless the child ends on its own first.
        while started.elapsed() < after {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                let mut why = String::new();
                if let Some(mut err) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut err, &mut why);
                }
                return Err(format!(
                    "the run ended by itself before its kill ({status}): {}",
                    why.trim()
                ));
            }
            std::thread::sleep(
                Duration::from_millis(5).min(after.saturating_sub(started.elapsed())),
            );
        }
        child
            .kill()
            .map_err(|e| format!("cannot kill the run: {e}"))?;
        let _ = child.wait();
        let verdict = verify(&dir.path, Some(&ledger))?;
        let load_cut = verdict.consistency.is_none();
        if load_cut && verdict.ok() {
            // Nothing acknowledged yet: load again from scratch.
            empty(&dir.path)?;
        }
        let good = verdict.ok();
        ok &= good;
        let line = Kill {
            kill,
            killed_after_ms: after.as_millis() as u64,
            during_load: load_cut,
            recovered: verdict.recovered.as_ref().map(RecoveredReport::from),
            acknowledged: verdict.acknowledged,
            missing: verdict.missing.len(),
            consistency: verdict.consistency.clone(),
        };
        if !args.json {
            println!(
                "kill {kill} after {} ms: {}",
                after.as_millis(),
                describe(&verdict, load_cut)
            );
        }
        runs.push(line);
        if !good {
            break;
        }
        if args.fresh_every > 0 && kill % args.fresh_every == 0 {
            empty(&dir.path)?;
        }
    }
    crate::harness::interrupt::check_any(runs.len())?;
    let problem = (!ok).then(|| {
        format!(
            "a recovery lost acknowledged orders or was inconsistent (directory {} kept)",
            dir.path.display()
        )
    });
    if !ok {
        // Kept for a look at what went wrong.
        dir_keep(&dir);
    }
    if args.json {
        let out = CrashReport {
            kills: runs.len(),
            ok,
            runs,
            error: problem.clone(),
        };
        print_json(&out, &[])?;
    } else {
        println!(
            "{} kill(s): {}",
            runs.len(),
            if ok {
                "nothing acknowledged was lost, and every recovery was consistent"
            } else {
                "FAILED"
            }
        );
    }
    if let (Some(problem), false) = (&problem, args.json) {
        eprintln!("error: {problem}");
    }
    Ok(ok)
}

/// What `crash-test --json` prints: every kill, and whether all recoveries were good.
#[derive(Debug, Serialize)]
struct CrashReport {
    kills: usize,
    ok: bool,
    runs: Vec<Kill>,
    error: Option<String>,
}

/// One kill and what its recovery found.
#[derive(Debug, Serialize)]
struct Kill {
    kill: u32,
    killed_after_ms: u64,
    /// The kill cut the first load short (nothing was acknowledged).
    during_load: bool,
    recovered: Option<RecoveredReport>,
    acknowledged: usize,
    missing: usize,
    /// `null` when the load was cut short.
    consistency: Option<String>,
}

/// Keeps a run's directory after a failure, whoever made it.
fn dir_keep(dir: &Workdir) {
    dir.keep.set(true);
}

fn spawn(
    exe: &Path,
    dir: &Path,
    ledger: &Path,
    seconds: u64,
    checkpoint_mib: u64,
) -> Result<std::process::Child, String> {
    Command::new(exe)
        .args(["bench", "tpcc", "--durability", "sync", "--duration"])
        .arg(seconds.to_string())
        .arg("--checkpoint-mib")
        .arg(checkpoint_mib.to_string())
        .arg("--data-dir")
        .arg(dir)
        .arg("--ack-log")
        .arg(ledger)
        .args(["--prefault-mib", "0", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start a run: {e}"))
}

/// Removes a directory's contents (a load cut short, and its empty ledger).
fn empty(dir: &Path) -> Result<(), String> {
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn describe(v: &crate::harness::kept::Verdict, load_cut: bool) -> String {
    let recovery = v.recovered.as_ref().map_or(String::new(), |r| {
        let checkpoint = match &r.checkpoint {
            Some(_) => format!("a checkpoint of {} rows and ", r.checkpoint_rows),
            None => String::new(),
        };
        format!(
            "recovered {checkpoint}{} transaction(s) ({:.1} MiB of log) in {:.2} s{}; ",
            r.transactions,
            r.log_bytes as f64 / f64::from(1 << 20),
            r.elapsed.as_secs_f64(),
            if r.torn_bytes > 0 {
                format!(", cut a torn tail of {} byte(s)", r.torn_bytes)
            } else {
                String::new()
            }
        )
    });
    if load_cut {
        return format!("{recovery}the load was cut short (loading again)");
    }
    format!(
        "{recovery}{} acknowledged order(s), {} missing; consistency {}",
        v.acknowledged,
        v.missing.len(),
        v.consistency.as_deref().unwrap_or("?")
    )
}
