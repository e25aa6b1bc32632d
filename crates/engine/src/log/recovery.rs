//! Reading a log segment back: the header is checked, every frame read in order, a torn tail of
//! the last segment cut, and damage refused. What it returns is the list of records to replay, in
//! log order.
//!
//! Log order is a replay order that yields the committed state: a transaction appends its record
//! inside its commit region before its versions become visible, so any transaction that read or
//! overwrote them appended after it; transactions whose records are in another order touched
//! disjoint records (first committer wins), so their order does not change the result. And a
//! durable prefix of the log therefore never holds a transaction without those it depends on.
//!
//! Must never drop a record silently: only a tail that cannot be a whole record is cut, and it
//! says how many bytes.

use std::path::{Path, PathBuf};

use super::record::{self, Frame, HEADER_LEN, MAGIC, Record};

/// Why a log could not be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecoveryError {
    /// The file could not be read, written or created.
    #[error("{file}: {reason}")]
    Io {
        /// The file.
        file: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// The file is not an Overtake log, or one of a version this build does not read.
    #[error("{file}: {reason}")]
    Format {
        /// The file.
        file: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// Another process has the database open (for writing, or this one asks to write).
    #[error("{dir}: the database is open in another process")]
    InUse {
        /// The database's directory.
        dir: PathBuf,
    },
    /// The log's records could not be applied (a record that does not fit the tables before it).
    #[error("{file}: cannot replay: {reason}")]
    Replay {
        /// The file.
        file: PathBuf,
        /// What went wrong, and at which record.
        reason: String,
    },
    /// A damaged record with intact records after it: replaying around it would drop committed
    /// data, so the database is not opened.
    #[error(
        "{file}: the record at byte {offset} is damaged and records follow it; refusing to open rather than lose committed data"
    )]
    Damaged {
        /// The file.
        file: PathBuf,
        /// Where the damaged record starts.
        offset: u64,
    },
}

/// What reading a segment found: its bytes, checked.
pub(crate) struct ReadLog {
    bytes: Vec<u8>,
    /// Bytes of the file that hold whole records (where appending continues).
    pub(crate) valid_len: u64,
    /// Bytes cut from the end: a record the crash tore.
    pub(crate) torn_bytes: u64,
}

impl ReadLog {
    /// Its records, in log order (decoded where they lie: nothing is copied, and the checksums
    /// checked when the segment was read are not computed again).
    pub(crate) fn records(&self) -> impl Iterator<Item = Record<'_>> {
        let mut rest = &self.bytes[HEADER_LEN..self.valid_len as usize];
        std::iter::from_fn(move || {
            let (payload, after) = record::split_frame(rest)?;
            rest = after;
            Some(record::decode(payload).expect("every record was decoded when read"))
        })
    }
}

/// Reads segment `number`, the file at `path` (which exists). Only the `last` segment may end in
/// a torn record: every earlier one was whole and durable before the next was created.
pub(crate) fn read(path: &Path, number: u64, last: bool) -> Result<ReadLog, RecoveryError> {
    let io = |e: std::io::Error| RecoveryError::Io {
        file: path.to_owned(),
        reason: e.to_string(),
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let format = |reason: String| RecoveryError::Format {
        file: path.to_owned(),
        reason,
    };
    record::check_header(&bytes, MAGIC, "log", number).map_err(format)?;
    let mut at = HEADER_LEN;
    // Past the last nonzero byte there is only the zero-filled space ahead of the writer.
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    while at < end {
        match record::read_frame(&bytes[at..]) {
            // A frame the bytes end before, one whose checksum fails, or an empty one (zeros
            // with nonzero bytes after them): a record a crash tore is one only the last
            // segment may end with, and only with no whole record after it (a damaged length
            // makes a record in the middle look like one running past the end).
            Frame::Good([], _) | Frame::Torn | Frame::Bad => {
                if !last || any_record_after(&bytes, at, end) {
                    return Err(RecoveryError::Damaged {
                        file: path.to_owned(),
                        offset: at as u64,
                    });
                }
                break;
            }
            Frame::Good(payload, used) => {
                if record::decode(payload).is_none() {
                    // A good checksum over bytes that are not a record of this version.
                    return Err(format(format!(
                        "the record at byte {at} is of an unknown kind"
                    )));
                }
                at += used;
            }
        }
    }
    Ok(ReadLog {
        valid_len: at as u64,
        torn_bytes: end.saturating_sub(at) as u64,
        bytes,
    })
}

/// True if a whole, good record starts anywhere after the bad one at `bad` and before `end`, the
/// last nonzero byte written: then the bad one is damage, not a tail the crash tore (frames do
/// not say where the next one starts once a length is wrong, so every later offset is tried).
fn any_record_after(bytes: &[u8], bad: usize, end: usize) -> bool {
    (bad + 1..end).any(|at| {
        matches!(record::read_frame(&bytes[at..]), Frame::Good(payload, _)
            if record::decode(payload).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::record::{CommitEncoder, header, seal};

    fn commit(ts: u64, row: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        CommitEncoder::begin(&mut out).write(0, &[0x81, ts as u8], Some(row));
        seal(&mut out, ts);
        out
    }

    fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
        let mut bytes = header(1).to_vec();
        for r in records {
            bytes.extend_from_slice(r);
        }
        bytes
    }

    fn read_bytes(bytes: &[u8]) -> Result<ReadLog, RecoveryError> {
        read_segment(bytes, true)
    }

    fn read_segment(bytes: &[u8], last: bool) -> Result<ReadLog, RecoveryError> {
        let dir = crate::log::files::scratch_dir("recovery");
        let path = dir.join("log");
        std::fs::write(&path, bytes).expect("write");
        let read = read(&path, 1, last);
        std::fs::remove_dir_all(&dir).expect("clean up");
        read
    }

    #[test]
    fn a_tail_cut_at_any_byte_keeps_every_whole_record_before_it() {
        let records: Vec<Vec<u8>> = (1..=4).map(|ts| commit(ts, &[ts as u8; 30])).collect();
        let bytes = log_of(&records);
        let ends: Vec<usize> = records
            .iter()
            .scan(HEADER_LEN, |end, r| {
                *end += r.len();
                Some(*end)
            })
            .collect();
        let first_cut = ends[1];
        for cut in first_cut..=bytes.len() {
            let read = read_bytes(&bytes[..cut]).expect("a torn tail is not an error");
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(read.records().count(), whole, "cut at {cut}");
            assert_eq!(read.valid_len as usize, ends[whole - 1], "cut at {cut}");
            // Trailing zeros are the space ahead of the writer, not a torn record.
            let written = bytes[..cut]
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |i| i + 1);
            assert_eq!(
                read.torn_bytes as usize,
                written.saturating_sub(ends[whole - 1]),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn damage_before_good_records_is_refused_and_a_bad_last_record_is_cut() {
        let records: Vec<Vec<u8>> = (1..=3).map(|ts| commit(ts, &[7; 30])).collect();
        let mut bytes = log_of(&records);
        let second = HEADER_LEN + records[0].len();
        let mut damaged = bytes.clone();
        damaged[second + 12] ^= 0x40;
        assert_eq!(
            read_bytes(&damaged).err().map(
                |e| matches!(e, RecoveryError::Damaged { offset, .. } if offset == second as u64)
            ),
            Some(true)
        );
        let last = bytes.len() - records[2].len();
        bytes[last + 12] ^= 0x40;
        let read = read_bytes(&bytes).expect("a bad last record is a torn tail");
        assert_eq!(read.records().count(), 2);
        assert_eq!(read.torn_bytes as usize, records[2].len());
    }

    #[test]
    fn other_files_and_versions_are_refused_by_name() {
        let err = read_bytes(b"PGDMP and more bytes").err().expect("refused");
        assert!(err.to_string().contains("not an Overtake log"), "{err}");
        let mut v9 = header(1).to_vec();
        v9[8] = 9;
        let err = read_bytes(&v9).err().expect("refused");
        assert!(err.to_string().contains("version 9"), "{err}");
        let err = read_bytes(&header(2)).err().expect("refused");
        assert!(
            err.to_string().contains("says log 2, the file name 1"),
            "{err}"
        );
    }

    #[test]
    fn zeros_after_the_last_record_end_the_log_and_a_torn_record_before_them_is_cut() {
        let records: Vec<Vec<u8>> = (1..=3).map(|ts| commit(ts, &[7; 30])).collect();
        let mut bytes = log_of(&records);
        let whole = bytes.len();
        bytes.extend_from_slice(&[0; 4096]);
        let read = read_bytes(&bytes).expect("read");
        assert_eq!((read.records().count(), read.torn_bytes), (3, 0));
        assert_eq!(read.valid_len as usize, whole);
        // The last record half written into the zeros: cut, and only its written bytes counted.
        let last = records[2].len();
        bytes[whole - last / 2..whole].fill(0);
        let read = read_bytes(&bytes).expect("read");
        assert_eq!(read.records().count(), 2);
        assert_eq!(read.torn_bytes as usize, last - last / 2);
        // Zeros between records are damage.
        let mut holed = log_of(&records);
        let second = HEADER_LEN + records[0].len();
        holed[second..second + 8].fill(0);
        assert!(matches!(
            read_bytes(&holed),
            Err(RecoveryError::Damaged { offset, .. }) if offset == second as u64
        ));
    }

    #[test]
    fn a_damaged_length_with_whole_records_after_it_is_refused_not_taken_for_a_torn_tail() {
        let records: Vec<Vec<u8>> = (1..=4).map(|ts| commit(ts, &[9; 40])).collect();
        let mut bytes = log_of(&records);
        // As the writer leaves a segment: space ahead of it zero-filled.
        bytes.extend_from_slice(&[0; 256]);
        let mut start = HEADER_LEN;
        for (i, r) in records.iter().enumerate() {
            for bit in 0..32 {
                let mut damaged = bytes.clone();
                damaged[start + bit / 8] ^= 1 << (bit % 8);
                let read = read_bytes(&damaged);
                if i + 1 < records.len() {
                    assert!(
                        matches!(read, Err(RecoveryError::Damaged { offset, .. }) if offset == start as u64),
                        "record {i}, length bit {bit}: {:?}",
                        read.map(|r| r.records().count())
                    );
                } else {
                    // The last record: indistinguishable from one a crash tore.
                    let read = read.expect("a damaged last record is a torn tail");
                    assert_eq!(read.records().count(), 3, "length bit {bit}");
                }
            }
            start += r.len();
        }
    }

    #[test]
    fn only_the_last_segment_may_end_torn() {
        let records: Vec<Vec<u8>> = (1..=2).map(|ts| commit(ts, &[7; 30])).collect();
        let bytes = log_of(&records);
        let cut = &bytes[..bytes.len() - 3];
        assert_eq!(read_segment(cut, true).map(|r| r.records().count()), Ok(1));
        let at = (HEADER_LEN + records[0].len()) as u64;
        assert!(matches!(
            read_segment(cut, false),
            Err(RecoveryError::Damaged { offset, .. }) if offset == at
        ));
    }
}
