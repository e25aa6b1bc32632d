//! The ledger of a crash test: every New-Order whose commit was acknowledged, appended as one
//! line `w d o_id` as soon as its commit returns, and read back after a crash to check that
//! recovery kept each of them.
//!
//! Each line goes to the kernel with one `write` (no fsync: the crash it guards against kills the
//! process, not the machine), so a kill leaves at most a torn last line, which reading skips. It
//! must never be written before the commit it records has returned.

use std::io::{self, Write};
use std::path::Path;

use overtake_runtime::{NoPreemptGuard, RegionMutex};

impl std::fmt::Debug for AckLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AckLog")
    }
}

/// An order of the ledger: warehouse, district, order id.
pub type OrderId = (i64, i64, i64);

/// A ledger being appended to.
pub struct AckLog {
    file: RegionMutex<std::fs::File>,
}

impl AckLog {
    /// Opens `path` for appending (created if missing).
    pub fn open(path: &Path) -> io::Result<AckLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(AckLog {
            file: RegionMutex::new(file),
        })
    }

    /// Records an acknowledged order. A failed write is reported on stderr once per failure and
    /// otherwise ignored: the ledger then under-claims, which a check cannot mistake for loss.
    pub fn record(&self, (w, d, o): OrderId) {
        let line = format!("{w} {d} {o}\n");
        let region = NoPreemptGuard::new();
        if let Err(e) = self.file.lock(&region).write_all(line.as_bytes()) {
            eprintln!("overtake: the acknowledged-order log could not be written: {e}");
        }
    }

    /// The orders a ledger holds (a torn last line, cut by a kill, is skipped).
    pub fn read(path: &Path) -> io::Result<Vec<OrderId>> {
        let text = std::fs::read_to_string(path)?;
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .map(|line| {
                let parts: Vec<i64> = line
                    .split(' ')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|e| io::Error::other(format!("{line:?}: {e}")))?;
                match parts[..] {
                    [w, d, o] => Ok((w, d, o)),
                    _ => Err(io::Error::other(format!("{line:?}: not `w d o_id`"))),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_reads_back_its_whole_lines() {
        let path = std::env::temp_dir().join(format!("overtake-ack-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = AckLog::open(&path).expect("open");
        log.record((1, 2, 3001));
        log.record((1, 3, 3002));
        drop(log);
        // A kill mid-line leaves a torn tail.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("reopen");
        f.write_all(b"1 4 30").expect("write");
        assert_eq!(
            AckLog::read(&path).expect("read"),
            [(1, 2, 3001), (1, 3, 3002)]
        );
        std::fs::write(&path, "1 x 3\n").expect("write");
        assert!(
            AckLog::read(&path).is_err(),
            "garbage is an error, not a loss"
        );
        std::fs::remove_file(&path).expect("clean up");
    }
}
