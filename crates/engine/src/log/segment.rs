//! Log segment files of a fixed size, filled with zeros before the writer gets to them, so that
//! a flush only writes data into space the file already has.
//!
//! Appending to a file changes its size, so every `fdatasync` after an append also commits the
//! file system's journal, whose thread waits for a CPU like any other: with busy cores (pinned
//! workers, a spinning dispatcher) that made one flush in ten take 2 ms and one in a hundred
//! 4 ms here, against 150 and 500 µs for the same writes into zeros written and synced before.
//! And zeros written into the file being flushed are flushed with it (`fdatasync` writes every
//! dirty page of the file): so the zeros are written into a spare file beside the log, by a
//! helper thread, before it is needed; the writer renames it into the next segment when the
//! current one is full (PostgreSQL prepares its WAL segments the same way). Recovery reads a
//! zero frame header as the end of a segment (no record has an empty payload).
//!
//! Must never hand out a spare that is not all zeros and durable, and never make a flush wait
//! for the helper.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;

use overtake_runtime::os::thread::OffPinnedCores;

use super::failpoint;
use super::files;
use super::record;
use super::writer::{LogFile, SEGMENT_BYTES, Segments, Syncer};

/// Zeros written per call while preparing a spare.
const ZEROS: usize = 1 << 20;
/// The pause after each of them (a spare is ready about a fifth of a second after it is asked).
const PAUSE: std::time::Duration = std::time::Duration::from_millis(2);

const SPARE: &str = "log.spare";
const SPARE_TEMPORARY: &str = "log.spare.tmp";

/// A segment being appended to: records are written in place, at the end of what is written.
pub(crate) struct SegmentFile {
    /// Shared with the helper that syncs it while the writer appends (see `writer::overlap`).
    file: Arc<File>,
    at: u64,
    /// The furthest byte written (a failed batch is zeroed up to it).
    written: u64,
}

impl SegmentFile {
    /// Appends to `file` from byte `at` on.
    pub(crate) fn new(file: File, at: u64) -> SegmentFile {
        SegmentFile {
            file: Arc::new(file),
            at,
            written: at,
        }
    }

    /// Goes on appending to `file` after its whole records, which end at `at`; the `torn` bytes
    /// after them (a record a crash tore) are zeroed first.
    pub(crate) fn resume(file: File, at: u64, torn: u64) -> io::Result<SegmentFile> {
        let mut segment = SegmentFile {
            file: Arc::new(file),
            at,
            written: at + torn,
        };
        segment.truncate(at)?;
        segment.sync()?;
        Ok(segment)
    }
}

impl LogFile for SegmentFile {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let written =
            failpoint::hit("segment.write").and_then(|()| self.file.write_all_at(bytes, self.at));
        if let Err(e) = written {
            // Part of them may be in the file (a full disk takes what fits): as far as the file
            // reaches, they are taken as written, so that cutting back zeroes them and a retry
            // never leaves whole records of a failed batch behind.
            let end = self.at + bytes.len() as u64;
            let size = self.file.metadata().map_or(end, |m| m.len());
            self.written = self.written.max(end.min(size));
            return Err(e);
        }
        self.at += bytes.len() as u64;
        self.written = self.written.max(self.at);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Syncer::sync(&*self.file)
    }

    fn syncer(&self) -> Option<Arc<dyn Syncer>> {
        Some(Arc::clone(&self.file) as Arc<dyn Syncer>)
    }

    /// Cuts back to `len` by zeroing what was written after it (the space stays, so the next
    /// write still lands in place).
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        if self.written > len {
            let zeros = vec![0u8; (self.written - len) as usize];
            failpoint::hit("segment.zero")?;
            self.file.write_all_at(&zeros, len)?;
        }
        self.at = len;
        self.written = len;
        Ok(())
    }
}

impl Syncer for File {
    fn sync(&self) -> io::Result<()> {
        failpoint::hit("segment.sync")?;
        self.sync_data()?;
        // A file whose name is gone (its directory removed) takes writes and syncs as ever,
        // and keeps nothing: what was synced into it is not durable.
        if self.metadata()?.nlink() == 0 {
            return Err(io::Error::other(
                "the log segment's file was removed (was the data directory deleted?)",
            ));
        }
        Ok(())
    }
}

struct Spare {
    ready: bool,
    stop: bool,
    /// Segments made so far (a failed spare is tried again after the next).
    taken: u64,
}

struct Preparer {
    dir: PathBuf,
    state: Mutex<Spare>,
    wanted: Condvar,
}

impl Preparer {
    fn state(&self) -> std::sync::MutexGuard<'_, Spare> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Segments as files in a directory, each taken from a spare prepared in the background.
pub(crate) struct SegmentFiles {
    preparer: Arc<Preparer>,
    helper: Option<JoinHandle<()>>,
}

impl SegmentFiles {
    /// Starts preparing spares in `dir` (a spare left by an earlier run is made again).
    pub(crate) fn new(dir: &Path) -> io::Result<SegmentFiles> {
        let preparer = Arc::new(Preparer {
            dir: dir.to_owned(),
            state: Mutex::new(Spare {
                ready: false,
                stop: false,
                taken: 0,
            }),
            wanted: Condvar::new(),
        });
        let for_helper = Arc::clone(&preparer);
        let helper = std::thread::Builder::new()
            .name("log-spare".into())
            .spawn(move || {
                // Background work: the disk and a core only when the workers leave them.
                overtake_runtime::os::thread::run_in_background();
                prepare_spares(&for_helper, &mut OffPinnedCores::new());
            })?;
        Ok(SegmentFiles {
            preparer,
            helper: Some(helper),
        })
    }
}

/// The helper: keeps one spare ready.
fn prepare_spares(preparer: &Preparer, off_workers: &mut OffPinnedCores) {
    let zeros = vec![0u8; ZEROS];
    let mut state = preparer.state();
    // One left by an earlier run was renamed into place only once it was whole and synced.
    state.ready =
        std::fs::metadata(preparer.dir.join(SPARE)).is_ok_and(|spare| spare.len() == SEGMENT_BYTES);
    loop {
        while !state.stop && state.ready {
            state = preparer
                .wanted
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.stop {
            return;
        }
        drop(state);
        let made = make_spare(&preparer.dir, &zeros, off_workers);
        state = preparer.state();
        match made {
            Ok(()) => state.ready = true,
            // No room, or no directory: segments are then made as files usually grow; look
            // again when the next one is taken.
            Err(_) => {
                let taken = state.taken;
                while !state.stop && state.taken == taken {
                    state = preparer
                        .wanted
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// Writes a spare: `SEGMENT_BYTES` of zeros, durable, under its final name.
fn make_spare(dir: &Path, zeros: &[u8], off_workers: &mut OffPinnedCores) -> io::Result<()> {
    let temporary = dir.join(SPARE_TEMPORARY);
    let file = File::create(&temporary)?;
    let mut at = 0;
    while at < SEGMENT_BYTES {
        // Even at nice 10 it would take a slice of a worker's core now and then.
        off_workers.refresh();
        failpoint::hit("spare.write")?;
        file.write_all_at(zeros, at)?;
        // A megabyte at a time, with pauses between: the log's flushes share the disk, and one
        // queued behind 64 MiB of zeros would wait tens of milliseconds.
        file.sync_data()?;
        std::thread::sleep(PAUSE);
        at += zeros.len() as u64;
    }
    file.sync_all()?;
    failpoint::hit("spare.rename")?;
    std::fs::rename(&temporary, dir.join(SPARE))
}

impl Segments for SegmentFiles {
    fn create(&mut self, n: u64) -> io::Result<Box<dyn LogFile>> {
        // The helper is told to make the next spare once this one is renamed away.
        let ready = std::mem::replace(&mut self.preparer.state().ready, false);
        let made = self.make(n, ready);
        self.preparer.state().taken += 1;
        self.preparer.wanted.notify_all();
        made
    }
}

impl SegmentFiles {
    /// Makes segment `n`, from the spare if it is `ready`.
    fn make(&self, n: u64, ready: bool) -> io::Result<Box<dyn LogFile>> {
        let dir = &self.preparer.dir;
        let header = record::header(n);
        if ready {
            let path = files::segment_path(dir, n);
            failpoint::hit("segment.create")?;
            std::fs::rename(dir.join(SPARE), &path)?;
            let made = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .and_then(|file| {
                    file.write_all_at(&header, 0)?;
                    file.sync_data()?;
                    files::sync_dir(dir)?;
                    Ok(file)
                });
            return match made {
                Ok(file) => Ok(Box::new(SegmentFile::new(file, header.len() as u64))),
                Err(e) => {
                    let _ = std::fs::remove_file(&path);
                    Err(e)
                }
            };
        }
        let file = files::create_segment(dir, n)?;
        Ok(Box::new(SegmentFile::new(file, header.len() as u64)))
    }
}

impl Drop for SegmentFiles {
    fn drop(&mut self) {
        self.preparer.state().stop = true;
        self.preparer.wanted.notify_all();
        if let Some(helper) = self.helper.take() {
            let _ = helper.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_from_a_spare_holds_its_header_and_records_in_place_and_zeros_after_them() {
        let dir = files::scratch_dir("segment");
        let mut segments = SegmentFiles::new(&dir).expect("segments");
        // Wait for the spare, so that the segment is made from it.
        while !segments.preparer.state().ready {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut segment = segments.create(7).expect("segment");
        segment.append(b"first").expect("append");
        segment.sync().expect("sync");
        // A failed batch is cut back: its bytes become zeros again.
        segment.append(&[9; 1000]).expect("append");
        segment
            .truncate(record::HEADER_LEN as u64 + 5)
            .expect("cut");
        segment.append(b"second").expect("append");
        segment.sync().expect("sync");
        drop(segment);
        drop(segments);
        let bytes = std::fs::read(files::segment_path(&dir, 7)).expect("read");
        assert_eq!(bytes.len() as u64, SEGMENT_BYTES, "the spare's size");
        let expected = [&record::header(7)[..], b"firstsecond"].concat();
        assert_eq!(&bytes[..expected.len()], &expected[..]);
        assert!(bytes[expected.len()..].iter().all(|&b| b == 0));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
