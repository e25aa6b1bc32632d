//! The settings one statement runs with: what `current_setting` reads and `set_config`
//! changes (see `overtake_sql::expr::Settings`).
//!
//! Must never be read or changed outside a non-preemptible region (a statement's task is
//! preemptible), nor change the session itself: the session applies what it records.

use overtake_sql::SqlError;

use crate::privileges::check_setting_by;
use crate::settings::{default_value, validate};

/// The settings one statement runs with (see `overtake_sql::expr::Settings`): the session's as
/// the statement started, and what its `set_config` calls change, which the session applies
/// once the statement succeeded. Locks only inside regions (a statement's task is preemptible).
pub struct StatementSettings {
    values: overtake_runtime::RegionMutex<std::collections::HashMap<String, String>>,
    /// What `currval` and `lastval` give: the session's as the statement started, then
    /// what its `nextval` and `setval` calls gave.
    sequences: overtake_runtime::RegionMutex<SequenceValues>,
    changes: overtake_runtime::RegionMutex<Vec<(String, Option<String>, bool)>>,
    /// Whether the session's role may raise its priority or weight (taken when the statement
    /// was made: the statement may not read the role catalog).
    may_raise: bool,
    /// Whether the session applies `set_config`'s changes after the statement (not for a
    /// cursor's statement, which the session does not wait for).
    applied: bool,
}

impl StatementSettings {
    pub fn new(
        (values, sequences): (std::collections::HashMap<String, String>, SequenceValues),
        may_raise: bool,
        applied: bool,
    ) -> Self {
        StatementSettings {
            values: overtake_runtime::RegionMutex::new(values),
            sequences: overtake_runtime::RegionMutex::new(sequences),
            changes: overtake_runtime::RegionMutex::new(Vec::new()),
            may_raise,
            applied,
        }
    }

    /// The session's sequence values once the statement is done.
    pub fn take_sequences(&self) -> SequenceValues {
        let region = overtake_runtime::NoPreemptGuard::new();
        std::mem::take(&mut *self.sequences.lock(&region))
    }

    /// What `set_config` changed: (name, value or `None` for the default, local), in order.
    pub fn take_changes(&self) -> Vec<(String, Option<String>, bool)> {
        let region = overtake_runtime::NoPreemptGuard::new();
        std::mem::take(&mut *self.changes.lock(&region))
    }
}

/// The values a session's sequences last gave it (PostgreSQL's `currval` and `lastval`
/// state: the session's, not its transaction's).
#[derive(Clone, Default)]
pub struct SequenceValues {
    by_name: std::collections::HashMap<String, i64>,
    last: Option<String>,
}

impl overtake_sql::expr::Settings for StatementSettings {
    fn sequence_used(&self, name: &str, value: i64) {
        let region = overtake_runtime::NoPreemptGuard::new();
        let mut sequences = self.sequences.lock(&region);
        sequences.by_name.insert(name.to_owned(), value);
        sequences.last = Some(name.to_owned());
    }

    fn sequence_value(&self, name: Option<&str>) -> Option<i64> {
        let region = overtake_runtime::NoPreemptGuard::new();
        let sequences = self.sequences.lock(&region);
        let name = name.or(sequences.last.as_deref())?;
        sequences.by_name.get(name).copied()
    }

    fn get(&self, name: &str) -> Option<String> {
        let region = overtake_runtime::NoPreemptGuard::new();
        self.values
            .lock(&region)
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn all(&self) -> Vec<(String, String, Option<String>)> {
        let region = overtake_runtime::NoPreemptGuard::new();
        self.values
            .lock(&region)
            .iter()
            .map(|(name, value)| {
                let default = default_value(name).map(str::to_owned);
                (name.clone(), value.clone(), default)
            })
            .collect()
    }

    fn set(&self, name: &str, value: Option<&str>, local: bool) -> Result<String, SqlError> {
        if !self.applied {
            return Err(SqlError::unsupported("set_config in a cursor's statement"));
        }
        let shown = match value {
            Some(v) => {
                check_setting_by(self.may_raise, name, v)?;
                validate(name, v)?.1
            }
            None => default_value(name).unwrap_or_default().to_owned(),
        };
        let region = overtake_runtime::NoPreemptGuard::new();
        self.values
            .lock(&region)
            .insert(name.to_ascii_lowercase(), shown.clone());
        self.changes
            .lock(&region)
            .push((name.to_owned(), value.map(str::to_owned), local));
        Ok(shown)
    }
}
