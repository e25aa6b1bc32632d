//! Failpoints: named places in the log's and checkpoints' file operations where a test makes the
//! process crash, or the operation fail, to check that recovery keeps every acknowledged commit
//! whatever step a crash or an I/O error interrupts.
//!
//! Compiled in only with the `failpoints` feature, which the engine's own tests turn on; without
//! it every point is an empty inline function. A point is armed in a process by the environment
//! variable `OVERTAKE_FAILPOINT=name:crash:N` (the process aborts the `N`th time it reaches
//! `name`, before the operation) or `name:error:N` (the operation fails with an I/O error from
//! the `N`th time on). Must never be armed in anything but a test's child process.

use std::io;

/// Reached before the operation the name says: `Err` if the test wants it to fail.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn hit(_name: &'static str) -> io::Result<()> {
    Ok(())
}

/// Reached before the operation the name says: `Err` if the test wants it to fail.
#[cfg(feature = "failpoints")]
pub(crate) fn hit(name: &'static str) -> io::Result<()> {
    armed::hit(name)
}

#[cfg(feature = "failpoints")]
mod armed {
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

    fn armed() -> Option<&'static Armed> {
        static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
        ARMED
            .get_or_init(|| {
                let spec = std::env::var("OVERTAKE_FAILPOINT").ok()?;
                let mut parts = spec.split(':');
                let (name, action, at) = (parts.next()?, parts.next()?, parts.next()?);
                Some(Armed {
                    name: name.to_owned(),
                    crash: match action {
                        "crash" => true,
                        "error" => false,
                        _ => panic!("OVERTAKE_FAILPOINT={spec}: the action is crash or error"),
                    },
                    at: at.parse().expect("OVERTAKE_FAILPOINT: a hit number"),
                    hits: AtomicU64::new(0),
                })
            })
            .as_ref()
    }

    pub(super) fn hit(name: &'static str) -> io::Result<()> {
        let Some(armed) = armed().filter(|a| a.name == name) else {
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
}
