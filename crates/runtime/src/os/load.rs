//! How busy the machine is at this moment, as the kernel counts it: the threads runnable now,
//! across the machine (the fourth field of `/proc/loadavg`, "runnable/total"). A worker about to
//! spin while idle asks it, so that it spins only on a core nothing else wants.
//!
//! Must never: block or allocate (a read of an open procfs file into a fixed buffer), or be read
//! more often than its cost (a few microseconds) is worth: callers keep the answer a while.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Reads how many threads are runnable now.
#[derive(Debug)]
pub struct RunnableThreads {
    file: Option<File>,
}

impl RunnableThreads {
    /// Opens `/proc/loadavg` (without it, [`now`](Self::now) knows nothing).
    pub fn new() -> Self {
        RunnableThreads {
            file: File::open("/proc/loadavg").ok(),
        }
    }

    /// Threads runnable on the machine now, the caller included; `None` if unknown.
    pub fn now(&self) -> Option<usize> {
        let mut buf = [0u8; 128];
        // Read from the start each time: procfs renders the file afresh at offset 0.
        let n = self.file.as_ref()?.read_at(&mut buf, 0).ok()?;
        runnable(&buf[..n])
    }
}

impl Default for RunnableThreads {
    fn default() -> Self {
        Self::new()
    }
}

/// The runnable count of a `/proc/loadavg` line ("0.52 0.58 0.59 3/345 12345").
fn runnable(line: &[u8]) -> Option<usize> {
    let line = std::str::from_utf8(line).ok()?;
    let field = line.split_ascii_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{RunnableThreads, runnable};

    #[test]
    fn the_runnable_count_is_read_from_the_fourth_field() {
        assert_eq!(runnable(b"0.52 0.58 0.59 3/345 12345\n"), Some(3));
        assert_eq!(runnable(b"0.00 0.00 0.00 12/1024 1\n"), Some(12));
        assert_eq!(runnable(b"0.52 0.58 0.59\n"), None);
        assert_eq!(runnable(b"0.52 0.58 0.59 x/345 1\n"), None);
        assert_eq!(runnable(b""), None);
    }

    #[test]
    fn on_linux_this_thread_counts_among_the_runnable_ones() {
        let load = RunnableThreads::new();
        // Twice: the second read starts from the file's beginning again.
        for _ in 0..2 {
            assert!(load.now().is_some_and(|n| n >= 1));
        }
    }
}
