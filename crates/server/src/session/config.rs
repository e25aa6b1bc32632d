//! A session's settings as its statements see and change them: SET and SET LOCAL (undone with
//! their block), SHOW, the role's defaults under them, and what they decide for a statement (its
//! priority and group, its isolation level).

use overtake_sched::{Group, Priority, Tier, Weight};
use overtake_sql::plan::{OutputColumn, TxnModes};
use overtake_sql::{Datum, IsolationLevel, SqlError, SqlType, sqlstate};

use super::block::set_read_only;
use super::{Session, StatementAnswer, TxnState};
use crate::settings::{self};

/// `on` or `off`, as PostgreSQL shows a boolean setting.
pub(super) fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

impl Session {
    /// The value of setting `name` in effect: SET LOCAL, then SET (over the role's default),
    /// then the built-in default.
    pub fn setting(&self, name: &str) -> Option<String> {
        if name.eq_ignore_ascii_case("is_superuser") {
            let superuser = self.shared.privileges.is_superuser(&self.user);
            return Some(on_off(superuser).to_owned());
        }
        if name.eq_ignore_ascii_case("transaction_read_only") {
            return Some(on_off(self.read_only()).to_owned());
        }
        if name.eq_ignore_ascii_case("transaction_isolation")
            && let Some(b) = &self.block
        {
            return Some(b.level.name().to_owned());
        }
        let name = if name.eq_ignore_ascii_case("transaction_isolation") {
            "default_transaction_isolation"
        } else {
            name
        };
        self.explicit(name)
            .or_else(|| settings::default_value(name).map(str::to_owned))
    }

    /// The value of `name` set in this session (or its transaction), not its default.
    pub(super) fn explicit(&self, name: &str) -> Option<String> {
        self.block
            .as_ref()
            .and_then(|b| b.local.get(name))
            .or_else(|| self.settings.get(name))
            .map(str::to_owned)
    }

    /// A time limit set in milliseconds (`statement_timeout`, `lock_timeout`; 0: none).
    fn limit(&self, name: &str) -> Option<std::time::Duration> {
        self.setting(name)
            .and_then(|v| settings::milliseconds(&v))
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
    }

    /// The next statement's cancellation (with its `lock_timeout`), made the session's current.
    pub(super) fn new_cancel(&mut self) -> std::sync::Arc<crate::txn::Cancel> {
        let lock_timeout = self.limit("lock_timeout");
        let cancel = std::sync::Arc::new(crate::txn::Cancel::with_lock_timeout(lock_timeout));
        self.cancel = std::sync::Arc::clone(&cancel);
        cancel
    }

    /// Completes when `statement_timeout` (if set) passes from now.
    pub(super) fn statement_timer(&self) -> impl std::future::Future<Output = ()> + use<> {
        let timeout = self.limit("statement_timeout");
        async move {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        }
    }

    /// A statement's memory budget for sorts, groups and DISTINCT (`statement_mem`, bytes).
    pub(super) fn statement_memory(&self) -> usize {
        self.setting("statement_mem")
            .and_then(|v| settings::kilobytes(&v))
            .map_or(overtake_sql::expr::DEFAULT_STATEMENT_MEMORY, |kb| {
                usize::try_from(kb.saturating_mul(1024)).unwrap_or(usize::MAX)
            })
    }

    /// The level `priority` names (normal by default).
    pub(super) fn level_asked(&self) -> Priority {
        self.setting("priority")
            .and_then(|p| settings::parse_priority(&p).ok())
            .unwrap_or(Priority::MEDIUM)
    }

    /// The priority and group of this session's next statement: the group `task_tier` (if set,
    /// else the tier of `priority`), `task_weight` (100 by default) and `task_group` (0, the
    /// group shared by every session of that tier and weight, by default) name, and `priority`
    /// moved into that tier if it lies outside it (as [`Call::in_group`](overtake_sched::Call::in_group)).
    pub(super) fn class(&self) -> (Priority, Group) {
        let asked = self.level_asked();
        let tier = self
            .explicit("task_tier")
            .and_then(|t| Tier::parse(&t))
            .unwrap_or_else(|| Tier::of(asked));
        let weight = self
            .explicit("task_weight")
            .and_then(|w| w.trim().parse().ok())
            .and_then(Weight::new)
            .unwrap_or_default();
        let number = self
            .explicit("task_group")
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        let group = Group::new(tier, weight).numbered(number);
        let class = (group.level_for(asked), group);
        self.note_class(class);
        class
    }

    /// The priority this session's next statement runs at: `priority` (or the tier's default
    /// when only `task_tier` is set), moved into the `task_tier` group's tier if it lies outside.
    pub fn priority(&self) -> Priority {
        self.class().0
    }

    pub(super) fn default_level(&self) -> IsolationLevel {
        self.setting("default_transaction_isolation")
            .and_then(|l| IsolationLevel::parse(&l))
            .unwrap_or(IsolationLevel::ReadCommitted)
    }

    /// Every setting's value now, by lowercase name (what `current_setting` reads).
    pub(super) fn settings_now(&self) -> std::collections::HashMap<String, String> {
        let set = self.settings.iter().map(|(k, _)| k.clone());
        let local = self
            .block
            .iter()
            .flat_map(|b| b.local.iter().map(|(k, _)| k.clone()));
        let names: Vec<String> = settings::names()
            .map(str::to_owned)
            .chain(set)
            .chain(local)
            .collect();
        names
            .into_iter()
            .filter_map(|n| {
                let v = self.setting(&n)?;
                Some((n.to_ascii_lowercase(), v))
            })
            .collect()
    }

    pub(super) fn show_all(&self) -> StatementAnswer {
        let mut names: Vec<String> = [
            "priority",
            "statement_mem",
            "task_group",
            "task_tier",
            "task_weight",
            "transaction_isolation",
            "work_mem",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        names.extend(self.settings.iter().map(|(k, _)| k.clone()));
        names.sort();
        names.dedup();
        StatementAnswer::Rows {
            columns: vec![
                OutputColumn {
                    name: "name".into(),
                    ty: SqlType::Text,
                },
                OutputColumn {
                    name: "setting".into(),
                    ty: SqlType::Text,
                },
            ],
            rows: names
                .into_iter()
                .map(|n| {
                    let v = self.setting(&n).unwrap_or_default();
                    vec![Datum::Text(n), Datum::Text(v)]
                })
                .collect(),
            tag: "SHOW".into(),
        }
    }

    pub(super) fn set(
        &mut self,
        name: &str,
        value: Option<&str>,
        local: bool,
    ) -> Result<(), SqlError> {
        let set = self.set_inner(name, value, local);
        // The session's steps follow its class (see `note_class`).
        self.class();
        set
    }

    fn set_inner(&mut self, name: &str, value: Option<&str>, local: bool) -> Result<(), SqlError> {
        if let Some(v) = value {
            self.shared.privileges.check_setting(&self.user, name, v)?;
        }
        if name.eq_ignore_ascii_case("transaction_read_only") {
            let (_, v) = settings::validate(name, value.unwrap_or("off"))?;
            if let Some(b) = &mut self.block {
                set_read_only(b, v == "on")?;
            }
            return Ok(());
        }
        if name.eq_ignore_ascii_case("transaction_isolation") {
            let level = value.and_then(IsolationLevel::parse).ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "invalid transaction isolation level",
                )
            })?;
            if let Some(b) = &mut self.block {
                if !matches!(b.txn, TxnState::NotStarted) {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                b.level = level;
            }
            return Ok(());
        }
        let target = match (&mut self.block, local) {
            (Some(b), true) => &mut b.local,
            // SET LOCAL outside a block does nothing (PostgreSQL warns).
            (None, true) => {
                return value.map_or(Ok(()), |v| settings::validate(name, v).map(|_| ()));
            }
            (_, false) => &mut self.settings,
        };
        match value {
            Some(v) => target.set(name, v),
            None => {
                settings::validate(name, settings::default_value(name).unwrap_or(""))?;
                target.reset(name);
                Ok(())
            }
        }
    }

    /// SET TRANSACTION (`session`: SET SESSION CHARACTERISTICS AS TRANSACTION): the open block's
    /// isolation and access mode, before its first query, or the session's defaults.
    pub(super) fn set_transaction(
        &mut self,
        modes: &TxnModes,
        session: bool,
    ) -> Result<StatementAnswer, SqlError> {
        if session {
            if let Some(level) = modes.level {
                self.settings
                    .set("default_transaction_isolation", level.name())?;
            }
            if let Some(read_only) = modes.read_only {
                self.settings
                    .set("default_transaction_read_only", on_off(read_only))?;
            }
        } else if let Some(b) = &mut self.block {
            let started = !matches!(b.txn, TxnState::NotStarted);
            if let Some(level) = modes.level {
                if started {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                b.level = level;
            }
            if let Some(read_only) = modes.read_only {
                set_read_only(b, read_only)?;
            }
        }
        // Outside a block: PostgreSQL warns, and nothing changes.
        Ok(StatementAnswer::Done("SET".into()))
    }

    /// SHOW `name` (or SHOW ALL).
    pub(super) fn show(&self, name: &str) -> Result<StatementAnswer, SqlError> {
        let value = if name.eq_ignore_ascii_case("all") {
            return Ok(self.show_all());
        } else {
            self.setting(name).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("unrecognized configuration parameter \"{name}\""),
                )
            })?
        };
        Ok(StatementAnswer::Rows {
            columns: vec![OutputColumn {
                name: name.to_ascii_lowercase(),
                ty: SqlType::Text,
            }],
            rows: vec![vec![Datum::Text(value)]],
            tag: "SHOW".into(),
        })
    }

    /// RESET `name` (or RESET ALL): back to the role's default, or the built-in one.
    pub(super) fn reset(&mut self, name: &str) -> Result<StatementAnswer, SqlError> {
        if name.eq_ignore_ascii_case("all") || settings::default_value(name).is_some() {
            self.settings.reset(name);
            Ok(StatementAnswer::Done("RESET".into()))
        } else {
            Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            ))
        }
    }

    /// ALTER ROLE `role` SET `name` = `value` (`None`: RESET): a default for the role's sessions.
    pub(super) fn alter_role_set(
        &mut self,
        role: &str,
        name: &str,
        value: Option<&str>,
    ) -> Result<StatementAnswer, SqlError> {
        let privileges = &self.shared.privileges;
        privileges.check_alter_role(&self.user, role)?;
        if let Some(v) = value {
            privileges.check_setting(&self.user, name, v)?;
        }
        let mut roles = self.shared.roles.lock().unwrap_or_else(|p| p.into_inner());
        let defaults = roles.entry(role.to_owned()).or_default();
        match value {
            Some(v) => defaults.set(name, v)?,
            None => defaults.reset(name),
        }
        Ok(StatementAnswer::Done("ALTER ROLE".into()))
    }
}
