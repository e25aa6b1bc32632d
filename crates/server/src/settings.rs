//! Session settings: the priority a session's statements run at (and UFS's tier and weight),
//! its default isolation, and the ordinary parameters clients set and show (`application_name`,
//! `DateStyle`...). Values are validated when set, so a session never holds one that fails later.

use std::collections::BTreeMap;

use overtake_sched::{Priority, Tier, Weight};
use overtake_sql::{IsolationLevel, SqlError, sqlstate};

/// Parameters a client may set that only need to be remembered and shown.
const PASSIVE: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("extra_float_digits", "1"),
    ("intervalstyle", "postgres"),
    ("lock_timeout", "0"),
    ("search_path", "\"$user\", public"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("synchronous_commit", "on"),
    ("timezone", "UTC"),
    ("idle_in_transaction_session_timeout", "0"),
    ("server_version", "15.0"),
    ("server_version_num", "150000"),
    ("server_encoding", "UTF8"),
    ("max_identifier_length", "63"),
    ("integer_datetimes", "on"),
    ("is_superuser", "on"),
    ("default_transaction_read_only", "off"),
    ("transaction_read_only", "off"),
];

/// The names priorities go by, most urgent last; numbers 0-3 are accepted too.
pub fn parse_priority(value: &str) -> Result<Priority, SqlError> {
    let v = value.trim().to_ascii_lowercase();
    let level = match v.as_str() {
        "background" | "low" => 0,
        "normal" | "medium" | "default" => 1,
        "high" => 2,
        "urgent" | "critical" => 3,
        n => n
            .parse::<usize>()
            .ok()
            .filter(|n| *n < Priority::LEVELS)
            .ok_or_else(|| {
                invalid(
                    "priority",
                    value,
                    "background, normal, high, urgent, or 0-3",
                )
            })?,
    };
    Ok(Priority::from_level(level).expect("checked above"))
}

/// The name `SHOW priority` prints for a level.
pub fn priority_name(p: Priority) -> &'static str {
    ["background", "normal", "high", "urgent"][p.level()]
}

fn invalid(name: &str, value: &str, allowed: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{name}\": \"{value}\" (allowed: {allowed})"),
    )
}

/// A validated setting: its canonical name and value.
pub fn validate(name: &str, value: &str) -> Result<(String, String), SqlError> {
    let name = name.to_ascii_lowercase();
    let value = match name.as_str() {
        "priority" => priority_name(parse_priority(value)?).to_owned(),
        "task_tier" => Tier::parse(value)
            .ok_or_else(|| invalid("task_tier", value, "time-sensitive or background"))?
            .as_str()
            .to_owned(),
        "task_weight" => value
            .trim()
            .parse::<u32>()
            .ok()
            .and_then(Weight::new)
            .ok_or_else(|| invalid("task_weight", value, "1 to 10000"))?
            .get()
            .to_string(),
        "task_group" => value
            .trim()
            .parse::<u16>()
            .map_err(|_| invalid("task_group", value, "0 to 65535"))?
            .to_string(),
        "transaction_isolation" | "default_transaction_isolation" => IsolationLevel::parse(value)
            .ok_or_else(|| {
                invalid(
                    &name,
                    value,
                    "read committed, repeatable read, serializable",
                )
            })?
            .name()
            .to_owned(),
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => {
            let ms = milliseconds(value).ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("invalid value for parameter \"{name}\": \"{value}\""),
                )
            })?;
            show_milliseconds(ms)
        }
        // `work_mem` is PostgreSQL's size past which a sort spills to disk: nothing spills here,
        // so it is only shown; `statement_mem` is what a statement's sorts, groups and DISTINCT
        // may hold before it fails with 53200.
        "work_mem" | "statement_mem" => {
            let kb = kilobytes(value)
                .filter(|kb| (64..=i32::MAX as u64).contains(kb))
                .ok_or_else(|| {
                    SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!(
                            "invalid value for parameter \"{name}\": \"{value}\" (64kB to 2147483647kB; units B, kB, MB, GB, TB)"
                        ),
                    )
                })?;
            show_kilobytes(kb)
        }
        "default_transaction_read_only" | "transaction_read_only" => {
            match value.trim().to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => "on",
                "off" | "false" | "no" | "0" => "off",
                _ => {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("parameter \"{name}\" requires a Boolean value"),
                    ));
                }
            }
            .to_owned()
        }
        n if PASSIVE.iter().any(|(p, _)| *p == n) => value.to_owned(),
        _ => {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            ));
        }
    };
    Ok((name, value))
}

/// A setting's number and the unit after it (`250ms`, `'4 MB'`), quotes and spaces aside.
fn number_and_unit(value: &str) -> Option<(f64, &str)> {
    let v = value.trim().trim_matches('\'').trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// A time setting's value in milliseconds: a number (milliseconds) or one with a unit (`ms`,
/// `s`, `min`, `h`, `d`), as PostgreSQL reads `statement_timeout`.
pub fn milliseconds(value: &str) -> Option<u64> {
    let (number, unit) = number_and_unit(value)?;
    let scale = match unit {
        "" | "ms" => 1.0,
        "s" => 1e3,
        "min" => 60e3,
        "h" => 3_600e3,
        "d" => 86_400e3,
        _ => return None,
    };
    let ms = (number * scale).round();
    (ms >= 0.0 && ms <= f64::from(i32::MAX)).then_some(ms as u64)
}

/// A memory setting's value in kilobytes: a number (kilobytes) or one with a unit (`B`, `kB`,
/// `MB`, `GB`, `TB`), as PostgreSQL reads `work_mem`.
pub fn kilobytes(value: &str) -> Option<u64> {
    let (number, unit) = number_and_unit(value)?;
    let scale = match unit {
        "B" => 1.0 / 1024.0,
        "" | "kB" => 1.0,
        "MB" => 1024.0,
        "GB" => 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let kb = (number * scale).round();
    (kb >= 0.0 && kb <= u64::MAX as f64 / 2.0).then_some(kb as u64)
}

/// How PostgreSQL shows a memory setting of `kb` kilobytes (`64kB`, `4MB`, `1GB`).
fn show_kilobytes(kb: u64) -> String {
    const MB: u64 = 1024;
    const GB: u64 = 1024 * 1024;
    match kb {
        kb if kb % GB == 0 => format!("{}GB", kb / GB),
        kb if kb % MB == 0 => format!("{}MB", kb / MB),
        kb => format!("{kb}kB"),
    }
}

/// How PostgreSQL shows a time setting of `ms` milliseconds (`0`, `250ms`, `5s`, `2min`).
fn show_milliseconds(ms: u64) -> String {
    match ms {
        0 => "0".into(),
        ms if ms % 60_000 == 0 => format!("{}min", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// A session's settings: what was set, over the defaults.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Settings {
    /// Sets a validated value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), SqlError> {
        let (name, value) = validate(name, value)?;
        self.values.insert(name, value);
        Ok(())
    }

    /// Back to the default (`all`: every setting).
    pub fn reset(&mut self, name: &str) {
        if name.eq_ignore_ascii_case("all") {
            self.values.clear();
        } else {
            self.values.remove(&name.to_ascii_lowercase());
        }
    }

    /// The value set here, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(&*lowercase(name)).map(String::as_str)
    }

    /// Every value set here.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.values.iter()
    }
}

/// A setting's name as settings are kept (lower case), without a copy when it is already: the
/// session reads a few settings for every statement.
fn lowercase(name: &str) -> std::borrow::Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(name.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// The default of a setting nobody set.
/// The names of every setting with a default (lowercase).
pub fn names() -> impl Iterator<Item = &'static str> {
    [
        "priority",
        "task_tier",
        "task_weight",
        "task_group",
        "transaction_isolation",
        "default_transaction_isolation",
        "work_mem",
        "statement_mem",
    ]
    .into_iter()
    .chain(PASSIVE.iter().map(|(n, _)| *n))
}

pub fn default_value(name: &str) -> Option<&'static str> {
    Some(match &*lowercase(name) {
        "priority" => "normal",
        "task_tier" => "time-sensitive",
        "task_weight" => "100",
        "task_group" => "0",
        "transaction_isolation" | "default_transaction_isolation" => "read committed",
        "work_mem" => "4MB",
        "statement_mem" => "1GB",
        n => return PASSIVE.iter().find(|(p, _)| *p == n).map(|(_, v)| *v),
    })
}

/// The settings a startup packet's `parameters` ask for, as PostgreSQL takes them: those of
/// its `options` first, then every other parameter but the connection's own (`user`,
/// `database`, `options`, `replication`), each a setting of its name. A parameter naming a
/// setting Overtake does not have is left out (PostgreSQL knows more settings, and refuses
/// only names it does not know); a bad value of a known one is an error.
pub fn startup_settings<'a>(
    parameters: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<Vec<(String, String)>, SqlError> {
    let mut options = Vec::new();
    let mut others = Vec::new();
    for (name, value) in parameters {
        match name.as_str() {
            "options" => options = startup_options(value)?,
            "user" | "database" | "replication" => {}
            _ => match validate(name, value) {
                Ok(_) => others.push((name.to_ascii_lowercase(), value.clone())),
                Err(e) if e.code == sqlstate::UNDEFINED_OBJECT => {}
                Err(e) => return Err(e),
            },
        }
    }
    // Sorted, so that a name given twice (in `options` and apart) ends the same way each time:
    // the parameter apart wins, as in PostgreSQL.
    others.sort();
    options.extend(others);
    Ok(options)
}

/// `-c name=value` pairs of a startup packet's `options` (what `PGOPTIONS` sends).
pub fn startup_options(options: &str) -> Result<Vec<(String, String)>, SqlError> {
    let mut out = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        let pair = if w == "-c" {
            words.next().unwrap_or_default().to_owned()
        } else if let Some(rest) = w.strip_prefix("-c") {
            rest.to_owned()
        } else if let Some(rest) = w.strip_prefix("--") {
            rest.to_owned()
        } else {
            return Err(SqlError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid command-line argument in startup options: {w}"),
            ));
        };
        let (name, value) = pair.split_once('=').ok_or_else(|| {
            SqlError::new(
                sqlstate::SYNTAX_ERROR,
                format!("-c {pair} requires a value"),
            )
        })?;
        out.push((name.replace('-', "_"), value.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_go_by_name_or_number_and_show_by_name() {
        assert_eq!(parse_priority("Background").unwrap(), Priority::LOW);
        assert_eq!(parse_priority("urgent").unwrap(), Priority::CRITICAL);
        assert_eq!(parse_priority("2").unwrap(), Priority::HIGH);
        assert!(parse_priority("7").is_err());
        assert!(parse_priority("soon").is_err());
        assert_eq!(priority_name(Priority::HIGH), "high");
    }

    #[test]
    fn settings_are_checked_when_set() {
        let mut s = Settings::default();
        s.set("task_weight", "250").unwrap();
        assert!(s.set("task_weight", "0").is_err());
        s.set("task_group", " 2").unwrap();
        assert_eq!(s.get("task_group"), Some("2"));
        assert!(s.set("task_group", "-1").is_err());
        assert!(s.set("task_group", "65536").is_err());
        assert!(s.set("task_tier", "sometimes").is_err());
        assert_eq!(
            s.set("no_such_thing", "1").unwrap_err().code,
            sqlstate::UNDEFINED_OBJECT
        );
        s.set("DateStyle", "ISO").unwrap();
        assert_eq!(s.get("datestyle"), Some("ISO"));
        s.reset("all");
        assert_eq!(s.get("task_weight"), None);
    }

    #[test]
    fn startup_options_read_as_pgoptions_writes_them() {
        assert_eq!(
            startup_options("-c priority=high --task-tier=background -cstatement_timeout=5")
                .unwrap(),
            vec![
                ("priority".into(), "high".into()),
                ("task_tier".into(), "background".into()),
                ("statement_timeout".into(), "5".into()),
            ]
        );
        assert!(startup_options("-x").is_err());
    }
}
