//! COPY's text format: one row per line, columns separated by tabs, `\N` for NULL, backslash
//! escapes; `\.` alone ends the data.

use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;

/// Parses COPY text `data` into rows of values for `columns` of `table`. Errors name the line.
pub fn parse_text(table: &SqlTable, columns: &[usize], data: &[u8]) -> Result<Vec<Vec<Datum>>> {
    let mut parser = TextParser::new(table, columns);
    let mut rows = parser.feed(data)?;
    rows.extend(parser.finish()?);
    Ok(rows)
}

/// COPY's text data parsed as it arrives, in pieces cut anywhere: each piece's whole lines
/// become rows at once, a line cut in two waits for its end. Linear in the data, holding no
/// more than one piece and one partial line.
pub struct TextParser<'t> {
    table: &'t SqlTable,
    columns: &'t [usize],
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// Lines parsed so far.
    line: usize,
    /// `\.` was seen: the rest of the data is ignored.
    ended: bool,
}

impl<'t> TextParser<'t> {
    /// A parser of rows for `columns` of `table`.
    pub fn new(table: &'t SqlTable, columns: &'t [usize]) -> Self {
        TextParser {
            table,
            columns,
            partial: Vec::new(),
            line: 0,
            ended: false,
        }
    }

    /// The rows of the whole lines `piece` completes.
    pub fn feed(&mut self, piece: &[u8]) -> Result<Vec<Vec<Datum>>> {
        let mut rows = Vec::new();
        let mut rest = piece;
        while !self.ended {
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                self.partial.extend_from_slice(rest);
                break;
            };
            let row = if self.partial.is_empty() {
                self.parse_line(&rest[..end])?
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.parse_line(&line)?
            };
            rows.extend(row);
            rest = &rest[end + 1..];
        }
        Ok(rows)
    }

    /// The row of a last line without its newline, if there is one.
    pub fn finish(mut self) -> Result<Vec<Vec<Datum>>> {
        if self.ended || self.partial.is_empty() {
            return Ok(Vec::new());
        }
        let line = std::mem::take(&mut self.partial);
        Ok(self.parse_line(&line)?.into_iter().collect())
    }

    /// The row of one line (without its newline); `None` for the end marker.
    fn parse_line(&mut self, line: &[u8]) -> Result<Option<Vec<Datum>>> {
        self.line += 1;
        let n = self.line;
        // A newline never falls inside a UTF-8 sequence: checking line by line is exact.
        let line = std::str::from_utf8(line).map_err(|e| {
            SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                format!("COPY {}, line {n}: data is not UTF-8: {e}", self.table.name),
            )
        })?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            self.ended = true;
            return Ok(None);
        }
        let (table, columns) = (self.table, self.columns);
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != columns.len() {
            return Err(SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                format!(
                    "COPY {}, line {n}: expected {} columns, found {}",
                    table.name,
                    columns.len(),
                    fields.len()
                ),
            ));
        }
        let mut row = Vec::with_capacity(fields.len());
        for (f, &col) in fields.iter().zip(columns) {
            row.push(if *f == "\\N" {
                Datum::Null
            } else {
                Datum::parse(&unescape(f), table.columns[col].ty).map_err(|e| {
                    SqlError::new(
                        e.code,
                        format!("COPY {}, line {n}: {}", table.name, e.message),
                    )
                })?
            });
        }
        Ok(Some(row))
    }
}

fn unescape(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_owned();
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}
