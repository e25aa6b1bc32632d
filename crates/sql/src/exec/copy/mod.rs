//! COPY's data formats, as PostgreSQL writes and reads them: `text` (text.rs), `csv` (csv.rs) and
//! `binary` (binary.rs). Rows are read from the client's data as it arrives, in pieces cut
//! anywhere (`RowParser`), and written one message per row for COPY TO (`RowWriter`).
//!
//! Never holds more of the data than one piece and one record cut in two.

mod binary;
mod csv;
mod text;

use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::copy::{CopyFormat, CopyOptions};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// One record's fields as read, before they become values: NULL, text, or binary bytes.
enum Field<'a> {
    Null,
    Text(std::borrow::Cow<'a, str>),
    Bytes(&'a [u8]),
}

/// What a format read from the front of the data.
enum Record<'a> {
    Row(Vec<Field<'a>>),
    /// Bytes that make no row (binary's header).
    Skip,
    /// The end of the data (`\.`, binary's trailer).
    End,
}

/// A reading: `None` if the data holds no whole record yet, else the record and the bytes it
/// took.
type Read<'a> = Result<Option<(Record<'a>, usize)>>;

/// A format's reading of records from the front of the data.
enum Reader {
    Text(text::Reader),
    Csv(csv::Reader),
    Binary(binary::Reader),
}

/// COPY's data parsed as it arrives, in pieces cut anywhere: each piece's whole records become
/// rows at once, a record cut in two waits for its end. Linear in the data.
pub struct RowParser<'t> {
    table: &'t SqlTable,
    columns: &'t [usize],
    reader: Reader,
    /// Data not parsed yet: the start of a record whose end has not arrived.
    pending: Vec<u8>,
    /// Records read so far (for errors: PostgreSQL names the line).
    line: usize,
    /// The header line is still to be skipped.
    skip_header: bool,
    /// The end was seen (`\.`, or binary's trailer): the rest of the data is ignored.
    ended: bool,
}

impl<'t> RowParser<'t> {
    /// A parser of rows for `columns` of `table`, in `options`' format.
    pub fn new(table: &'t SqlTable, columns: &'t [usize], options: &CopyOptions) -> Self {
        RowParser {
            table,
            columns,
            reader: match options.format {
                CopyFormat::Text => Reader::Text(text::Reader::new(options)),
                CopyFormat::Csv => Reader::Csv(csv::Reader::new(options)),
                CopyFormat::Binary => Reader::Binary(binary::Reader::default()),
            },
            pending: Vec::new(),
            line: 0,
            skip_header: options.header,
            ended: false,
        }
    }

    /// The rows of the whole records `piece` completes.
    pub fn feed(&mut self, piece: &[u8]) -> Result<Vec<Vec<Datum>>> {
        self.pending.extend_from_slice(piece);
        self.parse(false)
    }

    /// The rows of the records left at the end of the data.
    pub fn finish(mut self) -> Result<Vec<Vec<Datum>>> {
        self.parse(true)
    }

    fn parse(&mut self, at_end: bool) -> Result<Vec<Vec<Datum>>> {
        let mut rows = Vec::new();
        let mut at = 0;
        let types: Vec<SqlType> = self
            .columns
            .iter()
            .map(|&c| self.table.columns[c].ty)
            .collect();
        while !self.ended && at < self.pending.len() {
            let data = &self.pending[at..];
            let line = self.line + 1;
            let record = match &mut self.reader {
                Reader::Text(r) => r.record(data, at_end),
                Reader::Csv(r) => r.record(data, at_end),
                Reader::Binary(r) => r.record(data),
            }
            .map_err(|e| self.error(line, e))?;
            let Some((record, used)) = record else {
                break;
            };
            at += used;
            let fields = match record {
                Record::Row(fields) => fields,
                Record::Skip => continue,
                Record::End => {
                    self.ended = true;
                    break;
                }
            };
            self.line = line;
            if std::mem::take(&mut self.skip_header) {
                continue;
            }
            if fields.len() != types.len() {
                let (want, got) = (types.len(), fields.len());
                let what = if got < want {
                    format!("missing data for column \"{}\"", self.name(got))
                } else {
                    "extra data after last expected column".into()
                };
                return Err(self.error(line, SqlError::new(sqlstate::BAD_COPY_FILE_FORMAT, what)));
            }
            let mut row = Vec::with_capacity(fields.len());
            for (i, (f, &ty)) in fields.into_iter().zip(&types).enumerate() {
                let value = match f {
                    Field::Null => Ok(Datum::Null),
                    Field::Text(t) => Datum::parse(&t, ty),
                    Field::Bytes(b) => crate::values::binary::decode(b, ty),
                };
                row.push(value.map_err(|e| {
                    let e =
                        SqlError::new(e.code, format!("{} (column {})", e.message, self.name(i)));
                    self.error(line, e)
                })?);
            }
            rows.push(row);
        }
        self.pending.drain(..at);
        if at_end && !self.ended && !self.pending.is_empty() {
            let e = SqlError::new(sqlstate::BAD_COPY_FILE_FORMAT, "unexpected end of data");
            return Err(self.error(self.line + 1, e));
        }
        Ok(rows)
    }

    fn name(&self, i: usize) -> &str {
        &self.table.columns[self.columns[i]].name
    }

    /// `e` where PostgreSQL's context puts it: the table and the line.
    fn error(&self, line: usize, e: SqlError) -> SqlError {
        SqlError::new(
            e.code,
            format!("COPY {}, line {line}: {}", self.table.name, e.message),
        )
    }
}

/// Writes rows for COPY TO, each as one message's bytes (as PostgreSQL sends them: some clients
/// read a row per message).
pub struct RowWriter {
    options: CopyOptions,
    types: Vec<SqlType>,
    /// binary's header goes before the first row.
    started: bool,
}

impl RowWriter {
    /// A writer of rows of `types` in `options`' format.
    pub fn new(options: CopyOptions, types: Vec<SqlType>) -> Self {
        RowWriter {
            options,
            types,
            started: false,
        }
    }

    /// What comes before the rows: the header line of `names`, if asked for (binary's header
    /// goes with the first row, as PostgreSQL sends it).
    pub fn header(&mut self, names: &[String]) -> Option<Vec<u8>> {
        if !self.options.header {
            return None;
        }
        let names: Vec<Datum> = names.iter().map(|n| Datum::Text(n.clone())).collect();
        let types = vec![SqlType::Text; names.len()];
        Some(line(&self.options, &names, &types))
    }

    /// One row's bytes.
    pub fn row(&mut self, row: &[Datum]) -> Vec<u8> {
        let started = std::mem::replace(&mut self.started, true);
        match self.options.format {
            CopyFormat::Binary => binary::row(row, &self.types, !started),
            _ => line(&self.options, row, &self.types),
        }
    }

    /// What ends the data: binary's trailer (with its header if no row came).
    pub fn end(&mut self) -> Option<Vec<u8>> {
        let started = std::mem::replace(&mut self.started, true);
        (self.options.format == CopyFormat::Binary).then(|| binary::trailer(!started))
    }
}

/// A row as a line of text or csv.
fn line(options: &CopyOptions, row: &[Datum], types: &[SqlType]) -> Vec<u8> {
    let mut out = String::with_capacity(16 * row.len());
    for (i, (v, ty)) in row.iter().zip(types).enumerate() {
        if i > 0 {
            out.push(options.delimiter);
        }
        match v.to_text_as(*ty) {
            None => out.push_str(&options.null),
            Some(t) if options.format == CopyFormat::Csv => csv::write_field(&mut out, &t, options),
            Some(t) => text::write_field(&mut out, &t, options.delimiter),
        }
    }
    out.push('\n');
    out.into_bytes()
}
