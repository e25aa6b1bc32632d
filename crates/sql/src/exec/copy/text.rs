//! COPY's text format: a line per row, columns between delimiters (tab), NULL as `\N`,
//! backslash escapes; `\.` alone ends the data.

use std::borrow::Cow;

use super::{Field, Read, Record};
use crate::error::{SqlError, sqlstate};
use crate::plan::copy::CopyOptions;

pub(super) struct Reader {
    delimiter: u8,
    null: String,
}

impl Reader {
    pub(super) fn new(options: &CopyOptions) -> Self {
        Reader {
            delimiter: options.delimiter as u8,
            null: options.null.clone(),
        }
    }

    /// The line at the front of `data` (the last may lack its newline at the end).
    pub(super) fn record<'a>(&mut self, data: &'a [u8], at_end: bool) -> Read<'a> {
        let (line, used) = match data.iter().position(|&b| b == b'\n') {
            Some(end) => (&data[..end], end + 1),
            None if at_end => (data, data.len()),
            None => return Ok(None),
        };
        // A newline never falls inside a UTF-8 sequence: checking line by line is exact.
        let line = std::str::from_utf8(line).map_err(|e| {
            SqlError::new(
                sqlstate::BAD_COPY_FILE_FORMAT,
                format!("data is not UTF-8: {e}"),
            )
        })?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            return Ok(Some((Record::End, used)));
        }
        let mut fields = Vec::new();
        let bytes = line.as_bytes();
        let (mut start, mut i, mut escaped) = (0, 0, false);
        // Fields end at delimiters that no backslash escapes.
        while i <= bytes.len() {
            if i == bytes.len() || bytes[i] == self.delimiter {
                let raw = &line[start..i];
                fields.push(if raw == self.null {
                    Field::Null
                } else if escaped {
                    Field::Text(Cow::Owned(unescape(raw)))
                } else {
                    Field::Text(Cow::Borrowed(raw))
                });
                start = i + 1;
                escaped = false;
            } else if bytes[i] == b'\\' {
                escaped = true;
                i += 1;
            }
            i += 1;
        }
        Ok(Some((Record::Row(fields), used)))
    }
}

/// A field's text with its backslash escapes taken out (PostgreSQL's: `\b \f \n \r \t \v`,
/// octal `\NNN`, hex `\xHH`, and any other character stands for itself).
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(c) = chars.next() else {
            out.push('\\');
            break;
        };
        let digits = |chars: &mut std::iter::Peekable<std::str::Chars>, radix, first, most| {
            let mut n = first;
            for _ in 1..most {
                match chars.peek().and_then(|d| d.to_digit(radix)) {
                    Some(d) => {
                        n = n * radix + d;
                        chars.next();
                    }
                    None => break,
                }
            }
            char::from_u32(n & 0xff).unwrap_or('\0')
        };
        out.push(match c {
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '0'..='7' => digits(&mut chars, 8, c.to_digit(8).unwrap_or(0), 3),
            'x' if chars.peek().is_some_and(char::is_ascii_hexdigit) => {
                let first = chars.next().and_then(|d| d.to_digit(16)).unwrap_or(0);
                digits(&mut chars, 16, first, 2)
            }
            other => other,
        });
    }
    out
}

/// Writes `text` escaped as PostgreSQL's text format writes it.
pub(super) fn write_field(out: &mut String, text: &str, delimiter: char) {
    // Most values need no escape: copied whole.
    let plain = |b: u8| b >= b' ' && b != b'\\' && char::from(b) != delimiter;
    if text.bytes().all(plain) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c == delimiter => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_read_as_postgresql_reads_them() {
        assert_eq!(unescape(r"a\tb\\c\101\x41\q"), "a\tb\\cAAq");
        let mut out = String::new();
        write_field(&mut out, "a\tb\\c\nd", '\t');
        assert_eq!(out, r"a\tb\\c\nd");
    }
}
