//! COPY's binary format: a signature, flags and an extension area, then per row a count of
//! fields and each field's length (-1: NULL) and bytes in PostgreSQL's binary format; a count
//! of -1 ends the data.

use super::{Field, Read, Record};
use crate::error::{SqlError, sqlstate};
use crate::values::binary::{encode, put_field};
use crate::values::datum::Datum;
use crate::values::types::SqlType;
use bytes::BufMut;

const SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

#[derive(Default)]
pub(super) struct Reader {
    /// The header was read.
    started: bool,
}

fn format_error(message: &str) -> SqlError {
    SqlError::new(sqlstate::BAD_COPY_FILE_FORMAT, message)
}

impl Reader {
    /// The header, a row, or the trailer at the front of `data`.
    pub(super) fn record<'a>(&mut self, data: &'a [u8]) -> Read<'a> {
        let int = |at: usize, n: usize| -> Option<i64> {
            let b = data.get(at..at + n)?;
            Some(match n {
                2 => i64::from(i16::from_be_bytes([b[0], b[1]])),
                _ => i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
            })
        };
        if !self.started {
            let head = SIGNATURE.len();
            if data.len() < head + 8 {
                return Ok(None);
            }
            if &data[..head] != SIGNATURE {
                return Err(format_error("COPY file signature not recognized"));
            }
            let flags = int(head, 4).unwrap_or_default();
            if flags & 0x0001_0000 != 0 {
                return Err(format_error("invalid COPY file header (WITH OIDS)"));
            }
            let extension = usize::try_from(int(head + 4, 4).unwrap_or_default())
                .map_err(|_| format_error("invalid COPY file header (missing length)"))?;
            let used = head + 8 + extension;
            if data.len() < used {
                return Ok(None);
            }
            self.started = true;
            return Ok(Some((Record::Skip, used)));
        }
        let Some(count) = int(0, 2) else {
            return Ok(None);
        };
        if count == -1 {
            return Ok(Some((Record::End, 2)));
        }
        let count = usize::try_from(count).map_err(|_| {
            format_error(&format!(
                "row field count is {count}, expected a positive one"
            ))
        })?;
        let mut at = 2;
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let Some(len) = int(at, 4) else {
                return Ok(None);
            };
            at += 4;
            if len == -1 {
                fields.push(Field::Null);
                continue;
            }
            let len = usize::try_from(len).map_err(|_| format_error("invalid field size"))?;
            let Some(bytes) = data.get(at..at + len) else {
                return Ok(None);
            };
            fields.push(Field::Bytes(bytes));
            at += len;
        }
        Ok(Some((Record::Row(fields), at)))
    }
}

fn header(out: &mut Vec<u8>) {
    out.extend_from_slice(SIGNATURE);
    out.put_i32(0);
    out.put_i32(0);
}

/// A row's bytes (after the header, for the first).
pub(super) fn row(row: &[Datum], types: &[SqlType], first: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 8 * row.len() + if first { 19 } else { 0 });
    if first {
        header(&mut out);
    }
    out.put_i16(row.len() as i16);
    for (v, &ty) in row.iter().zip(types) {
        put_field(&mut out, |buf| encode(v, ty, buf));
    }
    out
}

/// The trailer (after the header, if no row came).
pub(super) fn trailer(first: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if first {
        header(&mut out);
    }
    out.put_i16(-1);
    out
}
