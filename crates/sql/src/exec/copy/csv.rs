//! COPY's csv format: a record per line (a quoted field may hold newlines), fields between
//! delimiters (comma), quoted when they hold one, a quote or a newline; an unquoted empty
//! field is NULL; `\.` alone ends the data.

use std::borrow::Cow;

use super::{Field, Read, Record};
use crate::error::{SqlError, sqlstate};
use crate::plan::copy::CopyOptions;

pub(super) struct Reader {
    delimiter: char,
    quote: char,
    escape: char,
    null: String,
}

impl Reader {
    pub(super) fn new(options: &CopyOptions) -> Self {
        Reader {
            delimiter: options.delimiter,
            quote: options.quote,
            escape: options.escape,
            null: options.null.clone(),
        }
    }

    /// The record at the front of `data`.
    pub(super) fn record<'a>(&mut self, data: &'a [u8], at_end: bool) -> Read<'a> {
        // Where the record ends: the first newline outside quotes (the data is ASCII there,
        // so bytes can be scanned; UTF-8 is checked on the record).
        let (quote, escape) = (self.quote as u8, self.escape as u8);
        let (mut quoted, mut end, mut i) = (false, None, 0);
        while i < data.len() {
            let b = data[i];
            if quoted && b == escape && data.get(i + 1) == Some(&quote) && escape != quote {
                i += 2;
                continue;
            }
            if b == quote {
                quoted = !quoted;
            } else if b == b'\n' && !quoted {
                end = Some(i);
                break;
            }
            i += 1;
        }
        let (record, used) = match end {
            Some(end) => (&data[..end], end + 1),
            None if !at_end => return Ok(None),
            None if quoted => return Err(format_error("unterminated CSV quoted field")),
            None => (data, data.len()),
        };
        let record = std::str::from_utf8(record)
            .map_err(|e| format_error(&format!("data is not UTF-8: {e}")))?;
        let record = record.strip_suffix('\r').unwrap_or(record);
        if record == "\\." {
            return Ok(Some((Record::End, used)));
        }
        Ok(Some((Record::Row(self.fields(record)), used)))
    }

    fn fields<'a>(&self, record: &'a str) -> Vec<Field<'a>> {
        let mut fields = Vec::new();
        let mut chars = record.char_indices().peekable();
        let mut start = 0;
        loop {
            // One field: raw text up to an unquoted delimiter; quotes taken out.
            let mut value = String::new();
            let (mut was_quoted, mut quoted, mut plain) = (false, false, true);
            let mut end = record.len();
            while let Some((i, c)) = chars.next() {
                if quoted {
                    // The escape before a quote makes it part of the value (`""` by default).
                    if c == self.escape
                        && let Some((_, q)) = chars.next_if(|&(_, n)| n == self.quote)
                    {
                        value.push(q);
                        continue;
                    }
                    if c == self.quote {
                        quoted = false;
                    } else {
                        value.push(c);
                    }
                } else if c == self.quote {
                    (quoted, was_quoted, plain) = (true, true, false);
                } else if c == self.delimiter {
                    end = i;
                    break;
                } else {
                    value.push(c);
                }
            }
            let raw = &record[start..end];
            fields.push(if !was_quoted && raw == self.null {
                Field::Null
            } else if plain {
                Field::Text(Cow::Borrowed(raw))
            } else {
                Field::Text(Cow::Owned(value))
            });
            if end == record.len() {
                return fields;
            }
            start = end + self.delimiter.len_utf8();
        }
    }
}

fn format_error(message: &str) -> SqlError {
    SqlError::new(sqlstate::BAD_COPY_FILE_FORMAT, message)
}

/// Writes `text` as a csv field: quoted if it holds the delimiter, a quote, a newline, or
/// would read back as NULL or as the end marker.
pub(super) fn write_field(out: &mut String, text: &str, options: &CopyOptions) {
    let needs = text == options.null
        || text == "\\."
        || text.contains([options.delimiter, options.quote, '\n', '\r']);
    if !needs {
        out.push_str(text);
        return;
    }
    out.push(options.quote);
    for c in text.chars() {
        if c == options.quote || c == options.escape {
            out.push(options.escape);
        }
        out.push(c);
    }
    out.push(options.quote);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::copy::CopyFormat;

    fn texts(record: &str) -> Vec<Option<String>> {
        let options = CopyOptions::new(CopyFormat::Csv);
        let r = Reader::new(&options);
        r.fields(record)
            .into_iter()
            .map(|f| match f {
                Field::Null => None,
                Field::Text(t) => Some(t.into_owned()),
                Field::Bytes(_) => unreachable!("csv has no bytes"),
            })
            .collect()
    }

    #[test]
    fn quoted_fields_keep_delimiters_quotes_and_empty_strings() {
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(
            texts(r#"1,"a,b","say ""hi""",,"""#),
            vec![s("1"), s("a,b"), s("say \"hi\""), None, s("")]
        );
        let mut out = String::new();
        write_field(
            &mut out,
            "say \"hi\", ok",
            &CopyOptions::new(CopyFormat::Csv),
        );
        assert_eq!(out, r#""say ""hi"", ok""#);
    }
}
