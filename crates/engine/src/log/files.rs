//! A database directory's files: log segments `log.00000001`, `log.00000002`, ... (the log split
//! where checkpoints began), checkpoints `checkpoint.N` (a snapshot from which segment `N` on is
//! replayed), `checkpoint.N.tmp` (one being written; never read), and `LOCK` (locked by the
//! process that has the database open).
//!
//! Creating a file makes its name durable too (the directory is synced), so a segment or
//! checkpoint that a later one depends on cannot vanish in a crash. Must never delete a file that
//! recovery could still need: only segments and checkpoints older than a complete checkpoint.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::record;

/// The file a process holds a lock on while it has the database open.
pub(crate) const LOCK: &str = "LOCK";

const SEGMENT: &str = "log.";
const CHECKPOINT: &str = "checkpoint.";
const TEMPORARY: &str = ".tmp";

/// The path of segment `n`.
pub(crate) fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{SEGMENT}{n:08}"))
}

/// The path of the checkpoint from which segment `n` on is replayed.
pub(crate) fn checkpoint_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{CHECKPOINT}{n:08}"))
}

/// Where checkpoint `n` is written before it is complete.
pub(crate) fn temporary_checkpoint_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{CHECKPOINT}{n:08}{TEMPORARY}"))
}

/// What a database directory holds, each list in ascending order.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) segments: Vec<u64>,
    pub(crate) checkpoints: Vec<u64>,
    /// Checkpoints a crash interrupted.
    pub(crate) temporary: Vec<PathBuf>,
}

/// Lists `dir`'s segments and checkpoints (other files are not the log's business).
pub(crate) fn list(dir: &Path) -> io::Result<Listing> {
    let mut listing = Listing::default();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let number = |rest: &str| {
            (rest.len() >= 8 && rest.bytes().all(|b| b.is_ascii_digit()))
                .then(|| rest.parse::<u64>().ok())
                .flatten()
        };
        if let Some(n) = name.strip_prefix(SEGMENT).and_then(number) {
            listing.segments.push(n);
        } else if let Some(rest) = name.strip_prefix(CHECKPOINT) {
            if let Some(n) = number(rest) {
                listing.checkpoints.push(n);
            } else if rest.strip_suffix(TEMPORARY).and_then(number).is_some() {
                listing.temporary.push(entry.path());
            }
        }
    }
    listing.segments.sort_unstable();
    listing.checkpoints.sort_unstable();
    Ok(listing)
}

/// Makes the names of `dir`'s entries durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    super::failpoint::hit("dir.sync")?;
    std::fs::File::open(dir)?.sync_all()
}

/// Creates segment `n` holding only its header, durable with its name; leaves nothing behind
/// when that fails (a segment without its header would be refused at the next open).
pub(crate) fn create_segment(dir: &Path, n: u64) -> io::Result<std::fs::File> {
    let path = segment_path(dir, n);
    super::failpoint::hit("segment.create")?;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    let made = file
        .write_all(&record::header(n))
        .and_then(|()| file.sync_all())
        .and_then(|()| sync_dir(dir));
    if let Err(e) = made {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    Ok(file)
}

/// Removes the segments and checkpoints that checkpoint `n` (complete and durable) makes
/// unnecessary: every segment before `n` and every older checkpoint.
pub(crate) fn remove_before(dir: &Path, n: u64) -> io::Result<()> {
    let listing = list(dir)?;
    for s in listing.segments.into_iter().filter(|&s| s < n) {
        super::failpoint::hit("log.remove")?;
        std::fs::remove_file(segment_path(dir, s))?;
    }
    for c in listing.checkpoints.into_iter().filter(|&c| c < n) {
        std::fs::remove_file(checkpoint_path(dir, c))?;
    }
    sync_dir(dir)
}

/// A fresh, empty directory for a unit test: `name`, this process and this thread make it its own.
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "overtake-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_finds_segments_and_checkpoints_in_order_and_ignores_other_files() {
        let dir = scratch_dir("files");
        for n in [3, 1, 2] {
            create_segment(&dir, n).expect("segment");
        }
        for name in [
            "checkpoint.00000002",
            "checkpoint.00000003.tmp",
            "LOCK",
            "log.x",
        ] {
            std::fs::write(dir.join(name), b"").expect("file");
        }
        let listing = list(&dir).expect("list");
        assert_eq!(listing.segments, [1, 2, 3]);
        assert_eq!(listing.checkpoints, [2]);
        assert_eq!(
            listing.temporary,
            [temporary_checkpoint_path(&dir, 3)],
            "{listing:?}"
        );
        remove_before(&dir, 2).expect("remove");
        let listing = list(&dir).expect("list");
        assert_eq!(listing.segments, [2, 3]);
        assert_eq!(listing.checkpoints, [2]);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
