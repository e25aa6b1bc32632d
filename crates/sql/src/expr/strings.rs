//! The string functions of [`Func`](super::Func), on characters (code points, as PostgreSQL's
//! are under UTF-8), with PostgreSQL's rules for the edge cases (negative lengths, empty
//! delimiters and fills, out-of-range fields). Pure functions of their arguments: they never
//! read a row or the context, and never allocate more than their result.

use crate::error::{Result, SqlError, sqlstate};

/// `left(s, n)`: the first `n` characters, or all but the last `-n`.
pub(super) fn left(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let take = if n >= 0 { n } else { (len + n).max(0) };
    s.chars().take(take as usize).collect()
}

/// `right(s, n)`: the last `n` characters, or all but the first `-n`.
pub(super) fn right(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let skip = if n >= 0 {
        (len - n).max(0)
    } else {
        (-n).min(len)
    };
    s.chars().skip(skip as usize).collect()
}

/// `lpad`/`rpad`: `s` filled with `fill` (repeated) to `length` characters, or cut to it.
pub(super) fn pad(s: &str, length: i64, fill: &str, left: bool) -> String {
    let length = length.max(0) as usize;
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= length || fill.is_empty() {
        return chars.iter().take(length).collect();
    }
    let padding: String = fill.chars().cycle().take(length - chars.len()).collect();
    if left {
        padding + s
    } else {
        s.to_owned() + &padding
    }
}

/// `ltrim`/`rtrim`/`btrim`: `s` without the characters of `set` at its start and/or end.
pub(super) fn trim(s: &str, set: &str, start: bool, end: bool) -> String {
    let in_set = |c: char| set.contains(c);
    let s = if start {
        s.trim_start_matches(in_set)
    } else {
        s
    };
    let s = if end { s.trim_end_matches(in_set) } else { s };
    s.to_owned()
}

/// `strpos(s, sub)`: where `sub` first starts in `s`, counting characters from 1; 0 if nowhere.
pub(super) fn strpos(s: &str, sub: &str) -> i64 {
    s.find(sub)
        .map_or(0, |byte| s[..byte].chars().count() as i64 + 1)
}

/// `split_part(s, delimiter, n)`: the `n`th field (from the end if negative), `''` past the
/// last; 22023 for 0.
pub(super) fn split_part(s: &str, delimiter: &str, n: i64) -> Result<String> {
    if n == 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "field position must not be zero",
        ));
    }
    // An empty delimiter leaves the string one field.
    let fields: Vec<&str> = if delimiter.is_empty() {
        vec![s]
    } else {
        s.split(delimiter).collect()
    };
    let index = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        fields
            .len()
            .checked_sub(usize::try_from(-n).unwrap_or(usize::MAX))
    };
    Ok(index
        .and_then(|i| fields.get(i))
        .map_or_else(String::new, |f| (*f).to_owned()))
}

/// `initcap(s)`: each run of letters and digits with its first character upper case and the
/// rest lower case.
pub(super) fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if in_word {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            in_word = true;
        } else {
            out.push(c);
            in_word = false;
        }
    }
    out
}

/// `repeat(s, n)`: `s` `n` times (none if `n` is not positive), within a value's bound.
pub(super) fn repeat(s: &str, n: i64) -> Result<String> {
    let n = usize::try_from(n).unwrap_or(0);
    if s.len().saturating_mul(n) > crate::values::types::LENGTH_MAX as usize * 4 {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            "requested length too large",
        ));
    }
    Ok(s.repeat(n))
}

/// `chr(n)`: the character with code point `n`.
pub(super) fn chr(n: i64) -> Result<String> {
    if n < 0 {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "character number must be positive",
        ));
    }
    if n == 0 {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            "null character not permitted",
        ));
    }
    u32::try_from(n)
        .ok()
        .and_then(char::from_u32)
        .map(String::from)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!("requested character too large for encoding: {n}"),
            )
        })
}

/// Pattern `p` compiled as a regular expression (`insensitive`: ignoring case); 2201B if it is
/// not one. PostgreSQL's advanced regular expressions in the subset Rust's `regex` shares with
/// them (no back references or lookaround). Matching allocates only in the regex's own cache,
/// which a freshly compiled regex shares with no other task.
pub(crate) fn regex(p: &str, insensitive: bool) -> Result<regex::Regex> {
    regex::RegexBuilder::new(p)
        .case_insensitive(insensitive)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            SqlError::new(
                sqlstate::INVALID_REGULAR_EXPRESSION,
                format!("invalid regular expression: {e}"),
            )
        })
}

/// `s` as an identifier: as it is if SQL would read it back unquoted (lower-case letters,
/// digits, `_` and `$`, not starting with a digit or `$`), else in double quotes with `"`
/// doubled. (PostgreSQL also quotes its keywords; those are not listed here.)
pub(crate) fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if plain {
        s.to_owned()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_cases_are_postgresqls() {
        assert_eq!(
            (left("hello", -2), right("hello", -2)),
            ("hel".into(), "llo".into())
        );
        assert_eq!(
            (left("hé", 9), right("hé", -9)),
            ("hé".into(), String::new())
        );
        assert_eq!(pad("hi", 5, "xy", true), "xyxhi");
        assert_eq!(pad("hello", 3, " ", false), "hel");
        assert_eq!(pad("hi", 5, "", true), "hi");
        assert_eq!(pad("abc", -1, " ", true), "");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b", ",", 5).unwrap(), "");
        assert_eq!(split_part("abc", "", 1).unwrap(), "abc");
        assert_eq!(split_part("a,b", ",", -3).unwrap(), "");
        assert!(split_part("a", "b", 0).is_err());
        assert_eq!(
            initcap("hELLO wORLD-foo_bar 3rd"),
            "Hello World-Foo_Bar 3rd"
        );
        assert_eq!((strpos("héllo", "l"), strpos("abc", "z")), (3, 0));
        assert_eq!(trim("xyaxy", "xy", true, true), "a");
        assert_eq!(trim("xxaxx", "x", true, false), "axx");
        assert_eq!(repeat("ab", -1).unwrap(), "");
        assert_eq!(chr(65).unwrap(), "A");
        assert!(chr(0).is_err() && chr(-1).is_err() && chr(1_114_112).is_err());
    }
}
