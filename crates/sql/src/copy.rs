//! COPY's text format: one row per line, columns separated by tabs, `\N` for NULL, backslash
//! escapes; `\.` alone ends the data.

use crate::catalog::SqlTable;
use crate::datum::Datum;
use crate::error::{Result, SqlError, sqlstate};

/// Parses COPY text `data` into rows of values for `columns` of `table`. Errors name the line.
pub fn parse_text(table: &SqlTable, columns: &[usize], data: &[u8]) -> Result<Vec<Vec<Datum>>> {
    let text = std::str::from_utf8(data).map_err(|e| {
        SqlError::new(
            sqlstate::BAD_COPY_FILE_FORMAT,
            format!("COPY data is not UTF-8: {e}"),
        )
    })?;
    let mut rows = Vec::new();
    // The newline after the last row ends the data; it does not start an empty row.
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Ok(rows);
    }
    for (n, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            break;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != columns.len() {
            return Err(SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                format!(
                    "COPY {}, line {}: expected {} columns, found {}",
                    table.name,
                    n + 1,
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
                        format!("COPY {}, line {}: {}", table.name, n + 1, e.message),
                    )
                })?
            });
        }
        rows.push(row);
    }
    Ok(rows)
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
