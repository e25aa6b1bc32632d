//! A COPY's format and options, as a statement gives them (what `exec::copy` reads and writes).

use crate::error::{Result, SqlError, sqlstate};

/// A COPY's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

/// A COPY's format and its options, with PostgreSQL's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    /// Between columns (text: tab; csv: comma).
    pub delimiter: char,
    /// What a NULL is written as (text: `\N`; csv: an unquoted empty field).
    pub null: String,
    /// A first line of column names (written; skipped when read).
    pub header: bool,
    /// csv's quote and the character that escapes it inside quotes.
    pub quote: char,
    pub escape: char,
}

impl CopyOptions {
    /// `format` with PostgreSQL's defaults.
    pub fn new(format: CopyFormat) -> Self {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            delimiter: if csv { ',' } else { '\t' },
            null: if csv { String::new() } else { "\\N".into() },
            header: false,
            quote: '"',
            escape: '"',
        }
    }

    /// Checks the options together, as PostgreSQL does (22023 or 0A000).
    pub fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, m));
        let single_byte = |c: char| c.is_ascii();
        if !single_byte(self.delimiter) {
            return bad("COPY delimiter must be a single one-byte character");
        }
        if matches!(self.delimiter, '\r' | '\n') {
            return bad("COPY delimiter cannot be newline or carriage return");
        }
        if self.null.contains(['\r', '\n']) {
            return bad("COPY null representation cannot use newline or carriage return");
        }
        match self.format {
            CopyFormat::Binary if self.header => {
                Err(SqlError::unsupported("COPY HEADER in binary format"))
            }
            CopyFormat::Csv if !single_byte(self.quote) || !single_byte(self.escape) => {
                bad("COPY quote and escape must be single one-byte characters")
            }
            CopyFormat::Csv if self.quote == self.delimiter => {
                bad("COPY delimiter and quote must be different")
            }
            CopyFormat::Text
                if self.delimiter == '\\' || self.delimiter.is_ascii_alphanumeric() =>
            {
                bad("COPY delimiter cannot be this character")
            }
            _ => Ok(()),
        }
    }
}
