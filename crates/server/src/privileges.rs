//! Who may raise priority: running above the default priority (`high`, `urgent`) or with a
//! weight above the default (100) takes CPU from everyone else, so it is a privilege, as
//! raising a process's priority is in every operating system. A superuser has it, and so does
//! a member of the predefined role `overtake_priority`, which a superuser grants (`GRANT
//! overtake_priority TO alice`). A superuser may also change another role's defaults (`ALTER
//! ROLE other SET ...`); a role may change its own, within its privilege.
//!
//! With authentication (`--password-file`) the superusers are the ones the server was started
//! with (`--superuser`, `postgres` unless told otherwise). Without it any user name is accepted,
//! so a name proves nothing and every session counts as a superuser (as anyone may connect as
//! `postgres` to a PostgreSQL that trusts every connection).
//!
//! Must never: let a session raise priority or weight without the privilege, or a non-superuser
//! grant it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use overtake_sql::{Catalog, SqlError, sqlstate};

use crate::settings;

/// The predefined role whose members may raise priority.
pub const PRIORITY_ROLE: &str = "overtake_priority";

/// See the module documentation.
pub struct Privileges {
    /// Without authentication every session counts as a superuser.
    authenticated: bool,
    /// Where the roles are kept, with their superuser attribute.
    catalog: Arc<Catalog>,
    /// Members of [`PRIORITY_ROLE`] (kept until the server stops, as role defaults are). Taken
    /// only by session code (a step, which is never paused, or a network thread), for a lookup or
    /// an insert, never inside a scheduler task: no paused transaction can be holding it.
    priority: Mutex<HashSet<String>>,
}

fn denied(message: String) -> SqlError {
    SqlError::new(sqlstate::INSUFFICIENT_PRIVILEGE, message)
}

impl Privileges {
    /// Privileges of a server whose roles are kept in `catalog` and that authenticates its
    /// clients; or, unless `authenticated`, of one where every session is a superuser.
    pub fn new(authenticated: bool, catalog: Arc<Catalog>) -> Self {
        Privileges {
            authenticated,
            catalog,
            priority: Mutex::default(),
        }
    }

    /// Role `name` as committed (`None` if there is none, or it cannot be read).
    fn role(&self, name: &str) -> Option<overtake_sql::catalog::roles::Role> {
        self.catalog.role(name).ok().flatten()
    }

    pub fn is_superuser(&self, user: &str) -> bool {
        !self.authenticated || self.role(user).is_some_and(|r| r.superuser)
    }

    /// Fails with 42704 unless role `name` exists (any does without authentication, where a
    /// user name is whatever a client says).
    pub fn check_role_exists(&self, name: &str) -> Result<(), SqlError> {
        if !self.authenticated || name == PRIORITY_ROLE || self.role(name).is_some() {
            Ok(())
        } else {
            Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("role \"{name}\" does not exist"),
            ))
        }
    }

    /// The role `user`'s statements act for.
    pub fn actor(&self, user: &str) -> overtake_sql::exec::access::Actor {
        overtake_sql::exec::access::Actor {
            name: user.to_owned(),
            superuser: self.is_superuser(user),
        }
    }

    /// Whether `user` may raise priority and weight above their defaults.
    pub fn may_raise(&self, user: &str) -> bool {
        self.is_superuser(user)
            || self
                .priority
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(user)
    }

    /// Fails with 42501 if `value` for setting `name` asks more than `user` may have.
    pub fn check_setting(&self, user: &str, name: &str, value: &str) -> Result<(), SqlError> {
        check_setting_by(self.may_raise(user), name, value)
    }

    /// Fails with 42501 unless `user` may change `role`'s defaults.
    pub fn check_alter_role(&self, user: &str, role: &str) -> Result<(), SqlError> {
        if role == user || self.is_superuser(user) {
            Ok(())
        } else {
            Err(denied(format!(
                "permission denied to alter role \"{role}\""
            )))
        }
    }

    /// `GRANT`/`REVOKE` (`revoke`) of `roles` to or from `grantees`, by `user`.
    pub fn grant(
        &self,
        user: &str,
        roles: &[String],
        grantees: &[String],
        revoke: bool,
    ) -> Result<(), SqlError> {
        if let Some(other) = roles.iter().find(|r| *r != PRIORITY_ROLE) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!(
                    "role \"{other}\" does not exist (the only role to grant is {PRIORITY_ROLE})"
                ),
            ));
        }
        if !self.is_superuser(user) {
            return Err(denied(format!(
                "permission denied to {} role \"{PRIORITY_ROLE}\"",
                if revoke { "revoke" } else { "grant" }
            )));
        }
        let mut members = self.priority.lock().unwrap_or_else(|p| p.into_inner());
        for g in grantees {
            if revoke {
                members.remove(g);
            } else {
                members.insert(g.clone());
            }
        }
        Ok(())
    }
}

fn default_level() -> usize {
    let default = settings::default_value("priority").expect("priority has a default");
    settings::parse_priority(default)
        .expect("the default parses")
        .level()
}

/// Fails with 42501 if `value` for setting `name` raises the session above the default and
/// its role may not (`may_raise`: [`Privileges::may_raise`]).
pub fn check_setting_by(may_raise: bool, name: &str, value: &str) -> Result<(), SqlError> {
    let raises = match name.to_ascii_lowercase().as_str() {
        "priority" => settings::parse_priority(value)?.level() > default_level(),
        "task_weight" => value.trim().parse::<u32>().is_ok_and(|w| w > 100),
        // A group apart has a share of its own beside the shared group's: as a raised weight.
        "task_group" => value.trim().parse::<u16>().is_ok_and(|n| n != 0),
        _ => false,
    };
    if raises && !may_raise {
        return Err(denied(format!(
            "permission denied to set parameter \"{name}\" to \"{value}\" (above the default takes the superuser attribute or membership in {PRIORITY_ROLE})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Arc<Catalog> {
        let db = Arc::new(overtake_engine::Database::in_memory(
            overtake_engine::Options::default(),
        ));
        Arc::new(Catalog::open(db).expect("catalog"))
    }

    #[test]
    fn raising_priority_takes_the_superuser_attribute_or_the_priority_role() {
        let catalog = catalog();
        let file = std::env::temp_dir().join(format!("overtake-priv-unit-{}", std::process::id()));
        std::fs::write(&file, "alice:a\n").unwrap();
        let passwords = crate::auth::PasswordFile::read(&file).unwrap();
        let _ = std::fs::remove_file(&file);
        passwords
            .bootstrap(&catalog, &["postgres".to_owned()])
            .unwrap();
        let p = Privileges::new(true, catalog);
        assert!(p.check_setting("alice", "priority", "normal").is_ok());
        assert!(p.check_setting("alice", "priority", "background").is_ok());
        let e = p.check_setting("alice", "priority", "urgent").unwrap_err();
        assert_eq!(e.code, sqlstate::INSUFFICIENT_PRIVILEGE);
        assert!(p.check_setting("alice", "task_weight", "500").is_err());
        assert!(p.check_setting("alice", "task_weight", "50").is_ok());
        assert!(p.check_setting("alice", "task_group", "3").is_err());
        assert!(p.check_setting("alice", "task_group", "0").is_ok());
        assert!(p.check_setting("postgres", "priority", "urgent").is_ok());
        assert!(
            p.grant("alice", &[PRIORITY_ROLE.into()], &["alice".into()], false)
                .is_err()
        );
        p.grant(
            "postgres",
            &[PRIORITY_ROLE.into()],
            &["alice".into()],
            false,
        )
        .expect("a superuser grants");
        assert!(p.check_setting("alice", "priority", "urgent").is_ok());
        p.grant("postgres", &[PRIORITY_ROLE.into()], &["alice".into()], true)
            .expect("and revokes");
        assert!(p.check_setting("alice", "priority", "high").is_err());
        assert!(p.check_alter_role("alice", "bob").is_err());
        assert!(p.check_alter_role("alice", "alice").is_ok());
        assert!(p.check_alter_role("postgres", "bob").is_ok());
        assert!(p.check_role_exists("alice").is_ok());
        assert!(p.check_role_exists("postgres").is_ok());
        let e = p.check_role_exists("nobody").unwrap_err();
        assert_eq!(e.code, sqlstate::UNDEFINED_OBJECT);
        assert!(p.actor("postgres").superuser && !p.actor("alice").superuser);
    }

    #[test]
    fn without_authentication_every_session_is_a_superuser() {
        let p = Privileges::new(false, catalog());
        assert!(p.check_setting("anyone", "priority", "urgent").is_ok());
        assert!(p.check_role_exists("anyone").is_ok());
        assert!(p.is_superuser("anyone"));
    }
}
