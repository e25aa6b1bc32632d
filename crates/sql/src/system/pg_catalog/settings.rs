//! `pg_settings`: a row per setting the session has, with its value in the setting's base unit
//! (kilobytes, milliseconds) as PostgreSQL shows it, and what kind of value it takes. Its rows
//! are the session's settings as the statement runs (`expr::Settings::all`), so they are made
//! when the statement reads them, not when it is planned (see `plan::Relation::Settings`).
//!
//! Must never describe a setting as taking values `SET` would refuse.

use super::Row;
use super::columns::PG_SETTINGS;
use crate::values::datum::Datum;

/// What kind of value a setting takes.
enum Kind {
    Bool,
    /// An integer in `unit` (if any), between the two bounds.
    Integer(Option<&'static str>, i64, i64),
    Enum(&'static [&'static str]),
    Text,
}

/// A setting's description: its kind, who may change it (PostgreSQL's context: `user`, or
/// `internal` for what no one sets), its category and a line saying what it is for.
struct About {
    kind: Kind,
    context: &'static str,
    category: &'static str,
    short: &'static str,
}

const FORMATTING: &str = "Client Connection Defaults / Locale and Formatting";
const STATEMENTS: &str = "Client Connection Defaults / Statement Behavior";
const PRESET: &str = "Preset Options";
const PRIORITIES: &str = "Overtake / Priorities";

fn about(name: &str) -> About {
    use Kind::*;
    let user = |kind, category, short| About {
        kind,
        context: "user",
        category,
        short,
    };
    let preset = |kind, short| About {
        kind,
        context: "internal",
        category: PRESET,
        short,
    };
    let ms = || Integer(Some("ms"), 0, i64::from(i32::MAX));
    let isolation = &[
        "serializable",
        "repeatable read",
        "read committed",
        "read uncommitted",
    ];
    match name {
        "application_name" => user(
            Text,
            "Reporting and Logging / What to Log",
            "The name the client gave its application.",
        ),
        "client_encoding" => user(Text, FORMATTING, "The client's character encoding."),
        "client_min_messages" => user(
            Enum(&[
                "debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning",
                "error",
            ]),
            STATEMENTS,
            "The least severe message level sent to the client.",
        ),
        "datestyle" => user(Text, FORMATTING, "How dates and times are shown."),
        "extra_float_digits" => user(
            Integer(None, -15, 3),
            FORMATTING,
            "Digits shown for floating-point values beyond the standard number.",
        ),
        "intervalstyle" => user(
            Enum(&["postgres", "postgres_verbose", "sql_standard", "iso_8601"]),
            FORMATTING,
            "How intervals are shown.",
        ),
        "lock_timeout" => user(ms(), STATEMENTS, "How long a statement waits for a lock."),
        "statement_timeout" => user(ms(), STATEMENTS, "How long a statement may run."),
        "idle_in_transaction_session_timeout" => user(
            ms(),
            STATEMENTS,
            "How long a session may stay idle inside a transaction.",
        ),
        "search_path" => user(Text, STATEMENTS, "Where unqualified names are looked up."),
        "standard_conforming_strings" => user(
            Bool,
            "Version and Platform Compatibility / Previous PostgreSQL Versions",
            "Whether backslashes in ordinary string literals are literal.",
        ),
        "synchronous_commit" => user(
            Enum(&["local", "remote_write", "remote_apply", "on", "off"]),
            "Write-Ahead Log / Settings",
            "Whether a commit waits for its log record.",
        ),
        "timezone" => user(Text, FORMATTING, "The time zone times are shown in."),
        "default_transaction_read_only" => {
            user(Bool, STATEMENTS, "Whether new transactions are read-only.")
        }
        "transaction_read_only" => user(Bool, STATEMENTS, "Whether this transaction is read-only."),
        "transaction_isolation" => user(
            Enum(isolation),
            STATEMENTS,
            "This transaction's isolation level.",
        ),
        "default_transaction_isolation" => user(
            Enum(isolation),
            STATEMENTS,
            "The isolation level of new transactions.",
        ),
        "work_mem" => user(
            Integer(Some("kB"), 64, i64::from(i32::MAX)),
            "Resource Usage / Memory",
            "Shown for clients that set it (nothing here spills to disk: see statement_mem).",
        ),
        "statement_mem" => user(
            Integer(Some("kB"), 64, i64::from(i32::MAX)),
            "Resource Usage / Memory",
            "What a statement's sorts, groups and hash tables may hold before it fails.",
        ),
        "priority" => user(
            Enum(&["background", "normal", "high", "urgent"]),
            PRIORITIES,
            "The priority this session's statements run at.",
        ),
        "task_tier" => user(
            Enum(&["time-sensitive", "background"]),
            PRIORITIES,
            "The UFS tier this session's statements run in.",
        ),
        "task_weight" => user(
            Integer(None, 1, 10_000),
            PRIORITIES,
            "The session's weight within its tier.",
        ),
        "task_group" => user(
            Integer(None, 0, 65_535),
            PRIORITIES,
            "Which of the groups of the session's tier and weight it is in (0: the shared one).",
        ),
        "server_version" => preset(Text, "The server's version."),
        "server_version_num" => preset(
            Integer(None, 150_000, 150_000),
            "The server's version as a number.",
        ),
        "server_encoding" => preset(Text, "The database's character encoding."),
        "max_identifier_length" => preset(Integer(None, 63, 63), "The longest identifier."),
        "integer_datetimes" => preset(Bool, "Whether times are kept as integers."),
        "is_superuser" => preset(Bool, "Whether the session's role is a superuser."),
        _ => user(Text, "Customized Options", ""),
    }
}

/// `value` as `SHOW` gives it (`4MB`, `5s`) in the setting's base unit (`4096`, `5000`).
fn in_unit(value: &str, unit: &str) -> String {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(v.len());
    let (number, suffix) = v.split_at(split);
    let Ok(number) = number.parse::<i64>() else {
        return value.to_owned();
    };
    let scale = match (unit, suffix.trim()) {
        (_, "") => 1,
        ("kB", "kB") | ("ms", "ms") => 1,
        ("kB", "MB") => 1024,
        ("ms", "s") => 1000,
        ("kB", "GB") => 1024 * 1024,
        ("kB", "TB") => 1024 * 1024 * 1024,
        ("ms", "min") => 60_000,
        ("ms", "h") => 3_600_000,
        ("ms", "d") => 86_400_000,
        _ => return value.to_owned(),
    };
    (number * scale).to_string()
}

fn text(s: &str) -> Datum {
    Datum::Text(s.to_owned())
}

/// The rows of `pg_settings` for `settings`: (name, value as `SHOW` gives it, its default).
pub(crate) fn rows(mut settings: Vec<(String, String, Option<String>)>) -> Vec<Vec<Datum>> {
    settings.sort();
    settings
        .into_iter()
        .map(|(name, value, default)| {
            let about = about(&name);
            let unit = match about.kind {
                Kind::Integer(unit, ..) => unit,
                _ => None,
            };
            let shown = |v: &str| unit.map_or_else(|| v.to_owned(), |u| in_unit(v, u));
            let (vartype, bounds, values) = match &about.kind {
                Kind::Bool => ("bool", None, None),
                Kind::Integer(_, low, high) => ("integer", Some((*low, *high)), None),
                Kind::Enum(values) => ("enum", None, Some(*values)),
                Kind::Text => ("string", None, None),
            };
            let source = match default.as_deref() == Some(value.as_str()) {
                true => "default",
                false => "session",
            };
            let boot = default.as_deref().map(shown);
            Row::new(PG_SETTINGS)
                .set("name", name.as_str())
                .set("setting", shown(&value))
                .set("unit", unit.map_or(Datum::Null, text))
                .set("category", about.category)
                .set("short_desc", about.short)
                .set("context", about.context)
                .set("vartype", vartype)
                .set("source", source)
                .set(
                    "min_val",
                    bounds.map_or(Datum::Null, |(l, _)| text(&l.to_string())),
                )
                .set(
                    "max_val",
                    bounds.map_or(Datum::Null, |(_, h)| text(&h.to_string())),
                )
                .set(
                    "enumvals",
                    values.map_or(Datum::Null, |v| {
                        Datum::Array(v.iter().map(|s| text(s)).collect())
                    }),
                )
                .set("boot_val", boot.clone().map_or(Datum::Null, |b| text(&b)))
                .set("reset_val", boot.map_or(Datum::Null, |b| text(&b)))
                .set("sourceline", Datum::Null)
                .done()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::in_unit;

    #[test]
    fn values_are_shown_in_their_base_unit() {
        assert_eq!(in_unit("4MB", "kB"), "4096");
        assert_eq!(in_unit("1GB", "kB"), "1048576");
        assert_eq!(in_unit("640kB", "kB"), "640");
        assert_eq!(in_unit("5s", "ms"), "5000");
        assert_eq!(in_unit("2min", "ms"), "120000");
        assert_eq!(in_unit("0", "ms"), "0");
        assert_eq!(in_unit("250ms", "ms"), "250");
    }
}
