//! One-dimensional arrays in PostgreSQL's text form: `{1,2,NULL}`, `{"a b","c\"d"}`, split
//! into the elements' texts and written back from them (`datum` reads and writes the values).
//! Parsed iteratively (no recursion a long literal could overflow a task's stack with); nested
//! arrays (more dimensions) are refused.

use crate::error::{Result, SqlError, sqlstate};

fn malformed(text: &str, why: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("malformed array literal: \"{text}\""),
    )
    .with_detail(why.to_owned())
}

/// The elements' texts of array literal `text` (`None`: NULL).
pub fn split(text: &str) -> Result<Vec<Option<String>>> {
    let t = text.trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| {
            malformed(
                text,
                "Array value must start with \"{\" or dimension information.",
            )
        })?;
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => item.push(c),
                        None => return Err(malformed(text, "Unexpected end of input.")),
                    },
                    Some(c) => item.push(c),
                    None => return Err(malformed(text, "Unexpected end of input.")),
                }
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            while let Some(&c) = chars.peek() {
                match c {
                    ',' => break,
                    '{' | '}' | '"' => {
                        return Err(malformed(
                            text,
                            "Multidimensional arrays and unexpected characters are not supported here.",
                        ));
                    }
                    '\\' => {
                        chars.next();
                        match chars.next() {
                            Some(e) => item.push(e),
                            None => return Err(malformed(text, "Unexpected end of input.")),
                        }
                    }
                    c => {
                        item.push(c);
                        chars.next();
                    }
                }
            }
            let trimmed = item.trim_end().to_owned();
            item = trimmed;
            if item.is_empty() {
                return Err(malformed(text, "Unexpected \",\" character."));
            }
        }
        out.push(if !quoted && item.eq_ignore_ascii_case("null") {
            None
        } else {
            Some(item)
        });
        match chars.next() {
            None => return Ok(out),
            Some(',') => {}
            Some(_) => return Err(malformed(text, "Unexpected array element.")),
        }
    }
}

/// An element's text as an array literal writes it: quoted where it would not read back.
fn element(text: &str) -> String {
    let plain = !text.is_empty()
        && !text.eq_ignore_ascii_case("null")
        && !text
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if plain {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The array literal of elements' texts `items` (`None`: NULL).
pub fn format(items: impl IntoIterator<Item = Option<String>>) -> String {
    let mut out = String::from("{");
    for (i, v) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match v {
            None => out.push_str("NULL"),
            Some(t) => out.push_str(&element(&t)),
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_back_as_written() {
        let v = split(r#"{1, 2 ,NULL}"#).unwrap();
        assert_eq!(v, vec![Some("1".into()), Some("2".into()), None]);
        let t = split(r#"{"a b","c\"d",e\,f,"NULL",""}"#).unwrap();
        let texts: Vec<_> = t.iter().map(|d| d.clone().unwrap()).collect();
        assert_eq!(texts, ["a b", "c\"d", "e,f", "NULL", ""]);
        assert_eq!(format(t), r#"{"a b","c\"d","e,f","NULL",""}"#);
        assert_eq!(split("{}").unwrap(), vec![]);
        assert_eq!(format(Vec::new()), "{}");
    }

    #[test]
    fn malformed_literals_are_22p02() {
        for bad in ["1,2", "{1,,2}", "{{1},{2}}", "{\"a}", "{1", "{a\"b}"] {
            let e = split(bad).unwrap_err();
            assert_eq!(e.code, sqlstate::INVALID_TEXT_REPRESENTATION, "{bad}");
        }
    }
}
