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
        values: std::collections::HashMap<String, String>,
        may_raise: bool,
        applied: bool,
    ) -> Self {
        StatementSettings {
            values: overtake_runtime::RegionMutex::new(values),
            changes: overtake_runtime::RegionMutex::new(Vec::new()),
            may_raise,
            applied,
        }
    }

    /// What `set_config` changed: (name, value or `None` for the default, local), in order.
    pub fn take_changes(&self) -> Vec<(String, Option<String>, bool)> {
        let region = overtake_runtime::NoPreemptGuard::new();
        std::mem::take(&mut *self.changes.lock(&region))
    }
}

impl overtake_sql::expr::Settings for StatementSettings {
    fn get(&self, name: &str) -> Option<String> {
        let region = overtake_runtime::NoPreemptGuard::new();
        self.values
            .lock(&region)
            .get(&name.to_ascii_lowercase())
            .cloned()
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
