//! The log's bytes: a file header, and framed records (a table created or dropped, a transaction
//! committed).
//!
//! A frame is `length (u32) | crc32 of the payload (u32) | payload`, little-endian, so a reader
//! tells a torn tail (a frame that runs past the end of the file) from damage (a complete frame
//! whose checksum is wrong). A commit record holds the after-images of what the transaction
//! changed: per record, its table, its primary key and its row bytes, a deletion, or for an
//! update the byte runs that differ from the row it replaced (a patch, applied at replay to the
//! row the records before it left); and the commit timestamp that orders it. A transaction
//! prepared for two-phase commit logs the same writes without a timestamp, under its global
//! identifier; its commit logs them again with the timestamp (so a commit record alone replays
//! it), and its rollback logs only the identifier. Decoding never panics on any input: bad bytes
//! are an error.
//!
//! Must never depend on anything but the types it encodes: it is the on-disk format.

use crate::storage::schema::{ColumnType, TableSchema};

/// The first bytes of every log file: the format's name and version.
pub(crate) const MAGIC: &[u8; 8] = b"OVRTKLOG";
/// The log format's version, after the magic bytes. Version 4 added the dropped-table record,
/// version 5 the record that ends a segment naming the next, version 6 the records of prepared
/// transactions.
pub(crate) const VERSION: u32 = 6;
/// The oldest version this build reads: version 3 is version 4 without dropped tables, which
/// is version 5 without segment ends, which is version 6 without prepared transactions.
const OLDEST_READ: u32 = 3;
/// Bytes of a segment's header: magic, version, and the segment's number (which its file name
/// repeats, so a renamed or misplaced segment is noticed).
pub(crate) const HEADER_LEN: usize = MAGIC.len() + 4 + 8;
/// Bytes of a frame's length and checksum.
pub(crate) const FRAME_HEADER: usize = 8;
/// The largest payload a frame may declare (a transaction's after-images); anything longer is
/// damage, not a record.
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

const CREATE_TABLE: u8 = 1;
const COMMIT: u8 = 2;
const DROP_TABLE: u8 = 3;
const CONTINUED: u8 = 4;
const PREPARED: u8 = 5;
const COMMIT_PREPARED: u8 = 6;
const ROLLBACK_PREPARED: u8 = 7;

/// A write's image kinds.
const DELETED: u8 = 0;
const ROW: u8 = 1;
const PATCH: u8 = 2;
/// Rows are compared for a patch in chunks of this many bytes; unchanged gaps up to one chunk
/// stay inside a run (a run's header costs as much).
const CHUNK: usize = 8;

/// One logged change of a record: its table's id, its primary key, and what it ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LoggedWrite<'a> {
    pub(crate) table: u32,
    pub(crate) key: &'a [u8],
    pub(crate) image: Image<'a>,
}

/// What a logged write leaves in its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Image<'a> {
    /// The row is deleted.
    Deleted,
    /// The whole row.
    Row(&'a [u8]),
    /// The record's previous row with some bytes replaced: an update logs only what it changed
    /// (a TPC-C stock update changes 16 of its 300 bytes).
    Patch(Patch<'a>),
}

/// Byte runs to write over a row of `len` bytes: `(offset u32, length u32, bytes)` each, in
/// ascending order, checked to fit when decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Patch<'a> {
    len: usize,
    runs: &'a [u8],
}

impl Patch<'_> {
    /// Makes `row` what the patch says it becomes, or says why the patch does not fit it
    /// (leaving it unchanged).
    pub(crate) fn apply_in_place(&self, row: &mut [u8]) -> Result<(), String> {
        if row.len() != self.len {
            return Err(format!(
                "a change logged for a row of {} bytes, found one of {}",
                self.len,
                row.len()
            ));
        }
        let mut r = Cursor { bytes: self.runs };
        while !r.bytes.is_empty() {
            let (at, n) = (r.u32(), r.u32());
            let bytes = n.and_then(|n| r.take(n as usize));
            let (Some(at), Some(bytes)) = (at, bytes) else {
                unreachable!("runs are checked when decoded");
            };
            row[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        }
        Ok(())
    }
}

/// A decoded record (borrowing the bytes it was read from).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Record<'a> {
    /// Table `id` was created (tables get ids in creation order).
    CreateTable { id: u32, schema: TableSchema },
    /// Table `id` was dropped: no write logged for it matters any more.
    DropTable { id: u32 },
    /// A transaction committed at `ts` with these writes.
    Commit {
        ts: u64,
        writes: Vec<LoggedWrite<'a>>,
    },
    /// The segment ends here, and the log goes on in segment `next`, which existed (durable)
    /// before this was written: if it is missing, it was lost.
    Continued { next: u64 },
    /// A transaction was prepared for two-phase commit under global identifier `gid`, with
    /// these writes (`body`: their encoding, as a commit record holds it) and the caller's
    /// `note` about it. It is in doubt until a later record commits or rolls it back.
    Prepared {
        gid: &'a str,
        note: &'a [u8],
        body: &'a [u8],
        writes: Vec<LoggedWrite<'a>>,
    },
    /// Prepared transaction `gid` committed at `ts` with these writes (its prepared ones).
    CommitPrepared {
        gid: &'a str,
        ts: u64,
        writes: Vec<LoggedWrite<'a>>,
    },
    /// Prepared transaction `gid` rolled back.
    RollbackPrepared { gid: &'a str },
}

impl<'a> Record<'a> {
    /// The timestamp and writes of a record that commits (a commit, or the commit of a prepared
    /// transaction).
    pub(crate) fn committed(&self) -> Option<(u64, &[LoggedWrite<'a>])> {
        match self {
            Record::Commit { ts, writes } | Record::CommitPrepared { ts, writes, .. } => {
                Some((*ts, writes))
            }
            _ => None,
        }
    }
}

/// The header of segment `segment`.
pub(crate) fn header(segment: u64) -> [u8; HEADER_LEN] {
    file_header(MAGIC, segment)
}

/// A file header: `magic`, the format version, and `number` (the segment's or checkpoint's).
pub(crate) fn file_header(magic: &[u8; 8], number: u64) -> [u8; HEADER_LEN] {
    let mut out = [0; HEADER_LEN];
    out[..8].copy_from_slice(magic);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..].copy_from_slice(&number.to_le_bytes());
    out
}

/// Checks a file header written by [`file_header`]: `Err` says what is wrong.
pub(crate) fn check_header(
    bytes: &[u8],
    magic: &[u8; 8],
    what: &str,
    number: u64,
) -> Result<(), String> {
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != magic {
        return Err(format!("not an Overtake {what} (no {what} header)"));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if !(OLDEST_READ..=VERSION).contains(&version) {
        return Err(format!(
            "{what} format version {version}; this build reads versions {OLDEST_READ} to {VERSION}"
        ));
    }
    let found = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    if found != number {
        return Err(format!(
            "the header says {what} {found}, the file name {number}"
        ));
    }
    Ok(())
}

/// Appends a framed record whose payload `payload` writes, to `out`.
pub(crate) fn frame(out: &mut Vec<u8>, payload: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; FRAME_HEADER]);
    payload(out);
    close_frame(&mut out[at..]);
}

/// Writes the length and checksum of the frame that fills `frame`.
fn close_frame(frame: &mut [u8]) {
    let len = (frame.len() - FRAME_HEADER) as u32;
    let crc = crc32fast::hash(&frame[FRAME_HEADER..]);
    frame[..4].copy_from_slice(&len.to_le_bytes());
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Appends the record of created table `id`.
pub(crate) fn encode_create_table(out: &mut Vec<u8>, id: u32, schema: &TableSchema) {
    frame(out, |p| {
        p.push(CREATE_TABLE);
        p.extend_from_slice(&id.to_le_bytes());
        put_bytes(p, schema.name().as_bytes());
        p.extend_from_slice(&(schema.columns().len() as u32).to_le_bytes());
        for c in schema.columns() {
            put_bytes(p, c.name.as_bytes());
            p.push(u8::from(c.nullable));
            let (tag, a, b) = match c.ty {
                ColumnType::Int32 => (0, 0, 0),
                ColumnType::Int64 => (1, 0, 0),
                ColumnType::Decimal { precision, scale } => {
                    (2, u16::from(precision), u16::from(scale))
                }
                ColumnType::Char(n) => (3, n, 0),
                ColumnType::VarChar(n) => (4, n, 0),
                ColumnType::Timestamp => (5, 0, 0),
                ColumnType::Numeric(n) => (6, n, 0),
            };
            p.push(tag);
            p.extend_from_slice(&a.to_le_bytes());
            p.extend_from_slice(&b.to_le_bytes());
        }
        let names = |cols: &[usize]| -> Vec<String> {
            cols.iter()
                .map(|&c| schema.columns()[c].name.clone())
                .collect()
        };
        let pk = names(schema.primary_key());
        p.extend_from_slice(&(pk.len() as u32).to_le_bytes());
        for n in &pk {
            put_bytes(p, n.as_bytes());
        }
        p.extend_from_slice(&(schema.indexes().len() as u32).to_le_bytes());
        for index in schema.indexes() {
            put_bytes(p, index.name.as_bytes());
            let cols = names(&index.columns);
            p.extend_from_slice(&(cols.len() as u32).to_le_bytes());
            for n in &cols {
                put_bytes(p, n.as_bytes());
            }
        }
    });
}

/// Appends the record that ends a segment: the log goes on in segment `next`.
pub(crate) fn encode_continued(out: &mut Vec<u8>, next: u64) {
    frame(out, |p| {
        p.push(CONTINUED);
        p.extend_from_slice(&next.to_le_bytes());
    });
}

/// Appends the record of dropped table `id`.
pub(crate) fn encode_drop_table(out: &mut Vec<u8>, id: u32) {
    frame(out, |p| {
        p.push(DROP_TABLE);
        p.extend_from_slice(&id.to_le_bytes());
    });
}

/// Builds a commit record in a transaction's own buffer: [`begin`](Self::begin), a
/// [`write`](Self::write) per changed record, then [`seal`] with the commit timestamp once it is
/// drawn (the after-images are taken before the commit installs them).
pub(crate) struct CommitEncoder<'b> {
    out: &'b mut Vec<u8>,
}

/// Where a commit record's write count is, after the frame header, the kind and the timestamp.
const COUNT_AT: usize = FRAME_HEADER + 1 + 8;

impl<'b> CommitEncoder<'b> {
    /// Starts a commit record in `out` (cleared first).
    pub(crate) fn begin(out: &'b mut Vec<u8>) -> Self {
        out.clear();
        out.extend_from_slice(&[0; FRAME_HEADER]);
        out.push(COMMIT);
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        CommitEncoder { out }
    }

    /// Adds one record's after-image: its whole row (`None`: deleted).
    pub(crate) fn write(&mut self, table: u32, key: &[u8], row: Option<&[u8]>) {
        self.start_write(table, key);
        match row {
            Some(row) => self.put_row(row),
            None => self.out.push(DELETED),
        }
    }

    /// Adds the after-image of a record whose row was `base` and is now `row`: the bytes that
    /// changed, or the whole row where that is shorter (recovery applies it to the row the
    /// records before it left).
    pub(crate) fn write_over(&mut self, table: u32, key: &[u8], base: &[u8], row: &[u8]) {
        self.start_write(table, key);
        if base.len() != row.len() || !self.put_patch(base, row) {
            self.put_row(row);
        }
    }

    fn start_write(&mut self, table: u32, key: &[u8]) {
        self.out.extend_from_slice(&table.to_le_bytes());
        put_bytes(self.out, key);
        let count = u32::from_le_bytes(self.out[COUNT_AT..COUNT_AT + 4].try_into().expect("4"));
        self.out[COUNT_AT..COUNT_AT + 4].copy_from_slice(&(count + 1).to_le_bytes());
    }

    fn put_row(&mut self, row: &[u8]) {
        self.out.push(ROW);
        put_bytes(self.out, row);
    }

    /// Appends the runs where `row` differs from `base` (of the same length); false, with
    /// nothing appended, if they would take as much room as the row.
    fn put_patch(&mut self, base: &[u8], row: &[u8]) -> bool {
        let (start, limit) = (self.out.len(), self.out.len() + 5 + row.len());
        self.out.push(PATCH);
        self.out
            .extend_from_slice(&(row.len() as u32).to_le_bytes());
        // The runs' length, once they are written.
        let runs_at = self.out.len();
        self.out.extend_from_slice(&0u32.to_le_bytes());
        // The open run: where it starts and ends. A run is written once the next begins.
        let mut run: Option<(usize, usize)> = None;
        let flush = |out: &mut Vec<u8>, (from, to): (usize, usize)| {
            out.extend_from_slice(&(from as u32).to_le_bytes());
            put_bytes(out, &row[from..to]);
        };
        // Whole chunks compare as integers (a slice comparison per chunk is a call each), the
        // short last one as bytes.
        let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().expect("a whole chunk"));
        let whole = base
            .chunks_exact(CHUNK)
            .zip(row.chunks_exact(CHUNK))
            .map(|(old, new)| word(old) != word(new));
        let tail = row.len() % CHUNK;
        let last = std::iter::once(base[row.len() - tail..] != row[row.len() - tail..]);
        for (i, changed) in whole.chain(last).enumerate() {
            if !changed {
                continue;
            }
            let (from, to) = (i * CHUNK, (i * CHUNK + CHUNK).min(row.len()));
            match &mut run {
                Some((_, end)) if from - *end <= CHUNK => *end = to,
                _ => {
                    if let Some(done) = run.replace((from, to)) {
                        flush(self.out, done);
                        if self.out.len() >= limit {
                            break;
                        }
                    }
                }
            }
        }
        if let Some(done) = run.filter(|_| self.out.len() < limit) {
            flush(self.out, done);
        }
        if self.out.len() >= limit {
            self.out.truncate(start);
            return false;
        }
        let runs = (self.out.len() - runs_at - 4) as u32;
        self.out[runs_at..runs_at + 4].copy_from_slice(&runs.to_le_bytes());
        true
    }
}

/// The writes of the commit record `begin` started in `record` (their count, then each), to log
/// again as a prepared transaction's.
pub(crate) fn commit_body(record: &[u8]) -> &[u8] {
    &record[COUNT_AT..]
}

/// Appends the record of a transaction prepared as `gid` with `note`, whose writes are `body`
/// (see [`commit_body`]).
pub(crate) fn encode_prepared(out: &mut Vec<u8>, gid: &str, note: &[u8], body: &[u8]) {
    frame(out, |p| {
        p.push(PREPARED);
        put_bytes(p, gid.as_bytes());
        put_bytes(p, note);
        p.extend_from_slice(body);
    });
}

/// Appends the record of prepared transaction `gid` committing at `ts` with writes `body`.
pub(crate) fn encode_commit_prepared(out: &mut Vec<u8>, gid: &str, ts: u64, body: &[u8]) {
    frame(out, |p| {
        p.push(COMMIT_PREPARED);
        put_bytes(p, gid.as_bytes());
        p.extend_from_slice(&ts.to_le_bytes());
        p.extend_from_slice(body);
    });
}

/// Appends the record of prepared transaction `gid` rolling back.
pub(crate) fn encode_rollback_prepared(out: &mut Vec<u8>, gid: &str) {
    frame(out, |p| {
        p.push(ROLLBACK_PREPARED);
        put_bytes(p, gid.as_bytes());
    });
}

/// Completes the commit record `begin` started in `out`: its timestamp, length and checksum.
pub(crate) fn seal(out: &mut [u8], ts: u64) {
    out[FRAME_HEADER + 1..COUNT_AT].copy_from_slice(&ts.to_le_bytes());
    close_frame(out);
}

/// What reading one frame at an offset found.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame<'a> {
    /// A complete frame with a good checksum: its payload, and the bytes it took.
    Good(&'a [u8], usize),
    /// The bytes end before the frame does: a write the crash cut short.
    Torn,
    /// A complete frame whose checksum or length is wrong.
    Bad,
}

/// The payload of the whole frame at the start of `bytes` (whose checksum was checked before),
/// and the bytes after it; `None` if none starts there.
pub(crate) fn split_frame(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let rest = bytes.get(FRAME_HEADER..)?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// Reads the frame at the start of `bytes`.
pub(crate) fn read_frame(bytes: &[u8]) -> Frame<'_> {
    if bytes.len() < FRAME_HEADER {
        return Frame::Torn;
    }
    let len = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if len > MAX_PAYLOAD {
        return Frame::Bad;
    }
    let Some(payload) = bytes.get(FRAME_HEADER..FRAME_HEADER + len) else {
        return Frame::Torn;
    };
    if crc32fast::hash(payload) != crc {
        return Frame::Bad;
    }
    Frame::Good(payload, FRAME_HEADER + len)
}

/// A cursor over a payload that fails instead of panicking.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.bytes.get(..n)?, self.bytes.get(n..)?);
        self.bytes = rest;
        Some(head)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub(crate) fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

/// Decodes a frame's payload; `None` if it is not a record this version writes.
pub(crate) fn decode(payload: &[u8]) -> Option<Record<'_>> {
    let mut r = Cursor { bytes: payload };
    let record = match r.u8()? {
        CREATE_TABLE => {
            let id = r.u32()?;
            let mut builder = TableSchema::builder(r.string()?);
            let columns = r.u32()?;
            for _ in 0..columns {
                let name = r.string()?;
                let nullable = r.u8()? != 0;
                let (tag, a, b) = (r.u8()?, r.u16()?, r.u16()?);
                let ty = match tag {
                    0 => ColumnType::Int32,
                    1 => ColumnType::Int64,
                    2 => ColumnType::Decimal {
                        precision: u8::try_from(a).ok()?,
                        scale: u8::try_from(b).ok()?,
                    },
                    3 => ColumnType::Char(a),
                    4 => ColumnType::VarChar(a),
                    5 => ColumnType::Timestamp,
                    6 => ColumnType::Numeric(a),
                    _ => return None,
                };
                builder = if nullable {
                    builder.nullable_column(name, ty)
                } else {
                    builder.column(name, ty)
                };
            }
            let pk: Vec<String> = (0..r.u32()?).map(|_| r.string()).collect::<Option<_>>()?;
            let pk: Vec<&str> = pk.iter().map(String::as_str).collect();
            if !pk.is_empty() {
                builder = builder.primary_key(&pk);
            }
            for _ in 0..r.u32()? {
                let name = r.string()?;
                let cols: Vec<String> = (0..r.u32()?).map(|_| r.string()).collect::<Option<_>>()?;
                let cols: Vec<&str> = cols.iter().map(String::as_str).collect();
                builder = builder.index(name, &cols);
            }
            Record::CreateTable {
                id,
                schema: builder.build().ok()?,
            }
        }
        COMMIT => {
            let ts = r.u64()?;
            Record::Commit {
                ts,
                writes: decode_writes(&mut r)?,
            }
        }
        PREPARED => {
            let gid = std::str::from_utf8(r.bytes()?).ok()?;
            let note = r.bytes()?;
            let body = r.bytes;
            Record::Prepared {
                gid,
                note,
                body,
                writes: decode_writes(&mut r)?,
            }
        }
        COMMIT_PREPARED => {
            let gid = std::str::from_utf8(r.bytes()?).ok()?;
            let ts = r.u64()?;
            Record::CommitPrepared {
                gid,
                ts,
                writes: decode_writes(&mut r)?,
            }
        }
        ROLLBACK_PREPARED => Record::RollbackPrepared {
            gid: std::str::from_utf8(r.bytes()?).ok()?,
        },
        DROP_TABLE => Record::DropTable { id: r.u32()? },
        CONTINUED => Record::Continued { next: r.u64()? },
        _ => return None,
    };
    r.bytes.is_empty().then_some(record)
}

/// Reads a commit's writes: their count, then each.
pub(crate) fn decode_writes<'a>(r: &mut Cursor<'a>) -> Option<Vec<LoggedWrite<'a>>> {
    let count = r.u32()?;
    // Each write takes at least 9 bytes: a count beyond that is damage.
    if count as usize > r.bytes.len() / 9 {
        return None;
    }
    let mut writes = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let table = r.u32()?;
        let key = r.bytes()?;
        let image = match r.u8()? {
            DELETED => Image::Deleted,
            ROW => Image::Row(r.bytes()?),
            PATCH => Image::Patch(patch(r)?),
            _ => return None,
        };
        writes.push(LoggedWrite { table, key, image });
    }
    Some(writes)
}

/// Reads a patch: its row's length, and runs checked to ascend, to be nonempty and to fit it.
fn patch<'a>(r: &mut Cursor<'a>) -> Option<Patch<'a>> {
    let len = r.u32()? as usize;
    let runs = r.bytes()?;
    let (mut check, mut end) = (Cursor { bytes: runs }, 0);
    while !check.bytes.is_empty() {
        let at = check.u32()? as usize;
        let bytes = check.bytes()?;
        if at < end || bytes.is_empty() || at + bytes.len() > len {
            return None;
        }
        end = at + bytes.len();
    }
    Some(Patch { len, runs })
}

#[cfg(test)]
mod tests;
