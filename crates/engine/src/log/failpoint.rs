//! Failpoints: named places in the log's and checkpoints' file operations where a test makes the
//! process crash, or the operation fail, to check that recovery keeps every acknowledged commit
//! whatever step a crash or an I/O error interrupts.
//!
//! Always compiled: a point costs one load of a process-wide cell before a file operation (a
//! system call at least), and a test feature would make every crate above the engine build twice,
//! once for the binary and once for the tests. A point is armed in a process only by the
//! environment variable `OVERTAKE_FAILPOINT=name:crash:N` (the process aborts the `N`th time it
//! reaches `name`, before the operation) or `name:error:N` (the operation fails with an I/O error
//! from the `N`th time on). Must never be armed in anything but a test's child process.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The armed point: its name, whether it crashes, and the hit it acts at.
struct Armed {
    name: String,
    crash: bool,
    at: u64,
    hits: AtomicU64,
}

/// The point `OVERTAKE_FAILPOINT` arms, read once per process. A value that is not
/// `name:crash:N` or `name:error:N` arms nothing and says so once on stderr (a test that
/// misspells it then fails on what it checks, not on a panic in the log writer).
fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let spec = std::env::var("OVERTAKE_FAILPOINT").ok()?;
            let parsed = parse(&spec);
            if parsed.is_none() {
                eprintln!("OVERTAKE_FAILPOINT={spec}: not name:crash:N or name:error:N; ignored");
            }
            parsed
        })
        .as_ref()
}

fn parse(spec: &str) -> Option<Armed> {
    let mut parts = spec.split(':');
    let (name, action, at) = (parts.next()?, parts.next()?, parts.next()?);
    let crash = match action {
        "crash" => true,
        "error" => false,
        _ => return None,
    };
    Some(Armed {
        name: name.to_owned(),
        crash,
        at: at.parse().ok()?,
        hits: AtomicU64::new(0),
    })
}

/// Reached before the operation the name says: `Err` if the test wants it to fail.
pub(crate) fn hit(name: &'static str) -> io::Result<()> {
    // The cell's first reader initializes it while others wait: inside a region, so that reader
    // is never a task paused half-way with an urgent one of its worker waiting behind it.
    let armed = {
        let _region = overtake_runtime::NoPreemptGuard::new();
        armed()
    };
    let Some(armed) = armed.filter(|a| a.name == name) else {
        return Ok(());
    };
    let hit = armed.hits.fetch_add(1, Ordering::SeqCst) + 1;
    if hit < armed.at {
        return Ok(());
    }
    if armed.crash {
        if hit == armed.at {
            eprintln!("failpoint {name}: crashing at hit {hit}");
            std::process::abort();
        }
        return Ok(());
    }
    Err(io::Error::other(format!("injected failure at {name}")))
}
