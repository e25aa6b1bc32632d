//! `CREATE ROLE`, `ALTER ROLE ... WITH` and `DROP ROLE`, carried out in the statement's
//! transaction with PostgreSQL's rules: only a superuser creates, drops or changes another role
//! (a role may change its own password); a role that owns a table or holds a grant on one, or
//! the session's own, cannot be dropped. A password is hashed here, in the statement's task,
//! and only its SCRAM-SHA-256 verifier is kept (see `overtake_sql::catalog::roles`).
//!
//! Must never: keep or log a password's text, or let a role that is not a superuser make one.

use overtake_engine::Transaction;
use overtake_sql::catalog::pending::Tables;
use overtake_sql::catalog::roles::{self, Role, Verifier};
use overtake_sql::exec::access::{Actor, Grantee};
use overtake_sql::plan::RoleCommand;
use overtake_sql::{SqlError, sqlstate};

use crate::auth;

fn denied(message: String) -> SqlError {
    SqlError::new(sqlstate::INSUFFICIENT_PRIVILEGE, message)
}

fn missing(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}

fn verifier(password: &Option<String>) -> Result<Option<Verifier>, SqlError> {
    password
        .as_deref()
        .map(|p| auth::verifier(p).map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e)))
        .transpose()
}

/// Carries out `command` for `actor` in `txn`, over the catalog as `tables` shows it; returns
/// its command tag.
pub fn run(
    txn: &mut Transaction<'_>,
    tables: Tables<'_>,
    actor: &Actor,
    command: &RoleCommand,
) -> Result<&'static str, SqlError> {
    let table = tables.catalog.roles();
    match command {
        RoleCommand::Create {
            name,
            superuser,
            login,
            password,
        } => {
            if !actor.superuser {
                return Err(denied("permission denied to create role".into()));
            }
            let role = Role {
                name: name.clone(),
                superuser: *superuser,
                login: *login,
                password: verifier(password)?,
            };
            roles::put(txn, table, &role, false)?;
            Ok("CREATE ROLE")
        }
        RoleCommand::Alter {
            name,
            superuser,
            login,
            password,
        } => {
            let mut role = roles::get(txn, table, name)?.ok_or_else(|| missing(name))?;
            if !actor.superuser {
                // A role may change its own password, nothing else (PostgreSQL's messages).
                if superuser.is_some() || role.superuser {
                    return Err(denied(
                        "must be superuser to alter superuser roles or change superuser attribute"
                            .into(),
                    ));
                }
                if actor.name != *name || login.is_some() {
                    return Err(denied("permission denied".into()));
                }
            }
            role.superuser = superuser.unwrap_or(role.superuser);
            role.login = login.unwrap_or(role.login);
            if let Some(p) = password {
                role.password = verifier(p)?;
            }
            roles::put(txn, table, &role, true)?;
            Ok("ALTER ROLE")
        }
        RoleCommand::Drop { names, if_exists } => {
            if !actor.superuser {
                return Err(denied("permission denied to drop role".into()));
            }
            let all = tables.all();
            for name in names {
                if roles::get(txn, table, name)?.is_none() {
                    if *if_exists {
                        continue;
                    }
                    return Err(missing(name));
                }
                if *name == actor.name {
                    return Err(SqlError::new(
                        sqlstate::OBJECT_IN_USE,
                        "current user cannot be dropped",
                    ));
                }
                let depends = all.iter().find_map(|t| {
                    if t.acl.owner.as_deref() == Some(name.as_str()) {
                        Some(format!("owner of table {}", t.name))
                    } else {
                        let granted = t
                            .acl
                            .grants
                            .iter()
                            .any(|(g, _)| matches!(g, Grantee::Role(r) if r == name));
                        granted.then(|| format!("privileges for table {}", t.name))
                    }
                });
                if let Some(detail) = depends {
                    return Err(SqlError::new(
                        sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
                        format!(
                            "role \"{name}\" cannot be dropped because some objects depend on it"
                        ),
                    )
                    .with_detail(detail));
                }
                roles::remove(txn, table, name)?;
            }
            Ok("DROP ROLE")
        }
    }
}
