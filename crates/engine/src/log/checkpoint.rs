//! A checkpoint's file: every table and every row one MVCC snapshot sees, from which the log is
//! replayed starting at one segment.
//!
//! `checkpoint.N` holds a header (magic, version, `N`), a frame with the snapshot's timestamp, a
//! frame per table (the log's own table record), frames of rows, and an end frame counting them.
//! It is written as `checkpoint.N.tmp`, synced, and renamed, so a crash leaves either a whole
//! checkpoint or a temporary file that is never read. Frames are the log's (length, checksum),
//! and a checkpoint is checked whole before anything of it is loaded: a damaged one is refused,
//! never loaded in part.
//!
//! Must never hold anything a transaction waits for: it is written from a snapshot, outside any
//! region except the ones that copy rows.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::failpoint;
use super::files;
use super::record::{self, Cursor, Frame, HEADER_LEN, Record};
use super::recovery::RecoveryError;
use crate::storage::schema::TableSchema;

const MAGIC: &[u8; 8] = b"OVRTKCKP";

// Frame kinds (a table's frame is the log's, whose kind is 1).
const SNAPSHOT: u8 = 10;
const ROWS: u8 = 11;
const END: u8 = 12;

/// Rows are written in frames of about this many bytes.
const ROWS_FRAME: usize = 256 << 10;

/// Writes checkpoint `N`: [`create`](Self::create), [`table`](Self::table) for each table with
/// [`row`](Self::row) for each of its rows, then [`finish`](Self::finish).
pub(crate) struct CheckpointWriter {
    file: io::BufWriter<std::fs::File>,
    dir: PathBuf,
    number: u64,
    /// The rows frame being filled: its table, and its payload so far.
    rows: Option<(u32, Vec<u8>)>,
    row_count: u64,
    table_count: u32,
    bytes: u64,
}

/// What a written checkpoint holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Written {
    pub(crate) tables: u32,
    pub(crate) rows: u64,
    pub(crate) bytes: u64,
}

impl CheckpointWriter {
    /// Starts checkpoint `number` of the snapshot at `snapshot` in `dir`.
    pub(crate) fn create(dir: &Path, number: u64, snapshot: u64) -> io::Result<Self> {
        failpoint::hit("checkpoint.create")?;
        let file = std::fs::File::create(files::temporary_checkpoint_path(dir, number))?;
        let mut w = CheckpointWriter {
            file: io::BufWriter::with_capacity(1 << 20, file),
            dir: dir.to_owned(),
            number,
            rows: None,
            row_count: 0,
            table_count: 0,
            bytes: 0,
        };
        w.put(&record::file_header(MAGIC, number))?;
        let mut frame = Vec::new();
        record::frame(&mut frame, |p| {
            p.push(SNAPSHOT);
            p.extend_from_slice(&snapshot.to_le_bytes());
        });
        w.put(&frame)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        failpoint::hit("checkpoint.write")?;
        self.bytes += bytes.len() as u64;
        self.file.write_all(bytes)
    }

    /// Starts table `id`: its rows follow.
    pub(crate) fn table(&mut self, id: u32, schema: &TableSchema) -> io::Result<()> {
        self.flush_rows()?;
        let mut frame = Vec::new();
        record::encode_create_table(&mut frame, id, schema);
        self.table_count += 1;
        self.rows = Some((id, Vec::with_capacity(ROWS_FRAME + 1024)));
        self.put(&frame)
    }

    /// Records that the table just started was dropped (it has no rows).
    pub(crate) fn dropped(&mut self, id: u32) -> io::Result<()> {
        self.rows = None;
        let mut frame = Vec::new();
        record::encode_drop_table(&mut frame, id);
        self.put(&frame)
    }

    /// Adds a row of the current table. Only copies (it is called inside a region).
    pub(crate) fn row(&mut self, row: &[u8]) {
        let (_, payload) = self.rows.as_mut().expect("a row belongs to a table");
        record::put_bytes(payload, row);
        self.row_count += 1;
    }

    /// Writes the rows gathered so far if they fill a frame (outside a region).
    pub(crate) fn write_if_full(&mut self) -> io::Result<()> {
        match &self.rows {
            Some((_, payload)) if payload.len() >= ROWS_FRAME => self.flush_rows(),
            _ => Ok(()),
        }
    }

    fn flush_rows(&mut self) -> io::Result<()> {
        let Some((table, payload)) = self.rows.as_mut() else {
            return Ok(());
        };
        if payload.is_empty() {
            return Ok(());
        }
        let table = *table;
        let mut frame = Vec::with_capacity(payload.len() + 16);
        record::frame(&mut frame, |p| {
            p.push(ROWS);
            p.extend_from_slice(&table.to_le_bytes());
            p.extend_from_slice(payload);
        });
        payload.clear();
        self.put(&frame)
    }

    /// Ends the checkpoint and makes it durable under its final name; returns what it holds.
    pub(crate) fn finish(mut self) -> io::Result<Written> {
        self.flush_rows()?;
        let mut frame = Vec::new();
        let (tables, rows) = (self.table_count, self.row_count);
        record::frame(&mut frame, |p| {
            p.push(END);
            p.extend_from_slice(&tables.to_le_bytes());
            p.extend_from_slice(&rows.to_le_bytes());
        });
        self.put(&frame)?;
        let file = self
            .file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        failpoint::hit("checkpoint.sync")?;
        file.sync_all()?;
        failpoint::hit("checkpoint.rename")?;
        std::fs::rename(
            files::temporary_checkpoint_path(&self.dir, self.number),
            files::checkpoint_path(&self.dir, self.number),
        )?;
        files::sync_dir(&self.dir)?;
        Ok(Written {
            tables,
            rows,
            bytes: self.bytes,
        })
    }
}

/// One part of a checkpoint, in file order.
pub(crate) enum Item<'a> {
    Table {
        id: u32,
        schema: TableSchema,
    },
    /// The table before was dropped (it keeps its id; it has no rows).
    Dropped {
        id: u32,
    },
    /// Rows of table `table`, each a stored row's bytes.
    Rows {
        table: u32,
        rows: Vec<&'a [u8]>,
    },
}

/// A checkpoint read back and checked whole.
pub(crate) struct Checkpoint {
    path: PathBuf,
    bytes: Vec<u8>,
    /// The snapshot it holds: every commit at or before it, none after.
    pub(crate) snapshot: u64,
    pub(crate) rows: u64,
}

impl Checkpoint {
    /// Reads checkpoint `number` of `dir` and checks every frame of it.
    pub(crate) fn read(dir: &Path, number: u64) -> Result<Checkpoint, RecoveryError> {
        let path = files::checkpoint_path(dir, number);
        let bytes = std::fs::read(&path).map_err(|e| RecoveryError::Io {
            file: path.clone(),
            reason: e.to_string(),
        })?;
        record::check_header(&bytes, MAGIC, "checkpoint", number).map_err(|reason| {
            RecoveryError::Format {
                file: path.clone(),
                reason,
            }
        })?;
        let mut checkpoint = Checkpoint {
            path,
            bytes,
            snapshot: 0,
            rows: 0,
        };
        let (mut snapshot, mut tables, mut rows, mut ended) = (None, 0u32, 0u64, false);
        let order = checkpoint.frames(|at, item| {
            match item {
                Parsed::Snapshot(ts) if at == HEADER_LEN => snapshot = Some(ts),
                Parsed::Item(Item::Table { .. }) if snapshot.is_some() => tables += 1,
                Parsed::Item(Item::Dropped { .. }) if tables > 0 => {}
                Parsed::Item(Item::Rows { rows: r, .. }) if tables > 0 => rows += r.len() as u64,
                Parsed::End { tables: t, rows: r } if t == tables && r == rows && !ended => {
                    ended = true;
                }
                _ => return Err(format!("the frame at byte {at} is out of place")),
            }
            Ok(())
        })?;
        if let Err(reason) = order {
            return Err(checkpoint.damaged(&reason));
        }
        match (snapshot, ended) {
            (Some(ts), true) => {
                checkpoint.snapshot = ts;
                checkpoint.rows = rows;
                Ok(checkpoint)
            }
            _ => Err(checkpoint.damaged("it ends before its end frame")),
        }
    }

    /// Its file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn damaged(&self, reason: &str) -> RecoveryError {
        RecoveryError::Format {
            file: self.path.clone(),
            reason: format!("damaged checkpoint: {reason}"),
        }
    }

    /// Calls `each` with every table and run of rows, in file order (the file was checked whole
    /// when it was read).
    pub(crate) fn load<'s>(
        &'s self,
        mut each: impl FnMut(Item<'s>) -> Result<(), String>,
    ) -> Result<(), RecoveryError> {
        self.frames(|_, parsed| match parsed {
            Parsed::Item(item) => each(item),
            Parsed::Snapshot(_) | Parsed::End { .. } => Ok(()),
        })?
        .map_err(|reason| RecoveryError::Replay {
            file: self.path.clone(),
            reason,
        })
    }

    /// Parses every frame after the header, calling `each` with its offset until it fails (the
    /// inner error); a frame that is not whole, good and of a known kind is damage (the outer).
    fn frames<'s>(
        &'s self,
        mut each: impl FnMut(usize, Parsed<'s>) -> Result<(), String>,
    ) -> Result<Result<(), String>, RecoveryError> {
        let bytes = &self.bytes;
        let mut at = HEADER_LEN;
        while at < bytes.len() {
            let Frame::Good(payload, used) = record::read_frame(&bytes[at..]) else {
                return Err(self.damaged(&format!("the frame at byte {at} is torn or bad")));
            };
            let parsed = parse(payload)
                .ok_or_else(|| self.damaged(&format!("the frame at byte {at} is unreadable")))?;
            if let Err(reason) = each(at, parsed) {
                return Ok(Err(reason));
            }
            at += used;
        }
        Ok(Ok(()))
    }
}

enum Parsed<'a> {
    Snapshot(u64),
    Item(Item<'a>),
    End { tables: u32, rows: u64 },
}

fn parse(payload: &[u8]) -> Option<Parsed<'_>> {
    let mut r = Cursor { bytes: payload };
    let parsed = match *payload.first()? {
        SNAPSHOT => {
            r.u8()?;
            Parsed::Snapshot(r.u64()?)
        }
        ROWS => {
            r.u8()?;
            let table = r.u32()?;
            let mut rows = Vec::new();
            while !r.bytes.is_empty() {
                rows.push(r.bytes()?);
            }
            Parsed::Item(Item::Rows { table, rows })
        }
        END => {
            r.u8()?;
            Parsed::End {
                tables: r.u32()?,
                rows: r.u64()?,
            }
        }
        // The log's table record checks its own end.
        _ => match record::decode(payload)? {
            Record::CreateTable { id, schema } => {
                return Some(Parsed::Item(Item::Table { id, schema }));
            }
            Record::DropTable { id } => return Some(Parsed::Item(Item::Dropped { id })),
            _ => return None,
        },
    };
    r.bytes.is_empty().then_some(parsed)
}
