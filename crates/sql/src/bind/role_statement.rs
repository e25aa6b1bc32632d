//! `CREATE ROLE` (and `USER`) and `ALTER ROLE ... WITH` read into [`RoleCommand`]s: the
//! attributes roles have here (LOGIN, SUPERUSER, PASSWORD); any other is refused, never
//! ignored.

use sqlparser::ast;

use crate::bind::object_name;
use crate::error::{Result, SqlError};
use crate::plan::RoleCommand;

/// `CREATE ROLE` (or `USER`) as a [`RoleCommand`]: one role, with the attributes kept here.
pub(crate) fn create(role: &ast::CreateRole) -> Result<RoleCommand> {
    let [name] = role.names.as_slice() else {
        return Err(SqlError::syntax("CREATE ROLE names one role"));
    };
    let unsupported = role.inherit.is_some()
        || role.bypassrls.is_some()
        || role.create_db.is_some()
        || role.create_role.is_some()
        || role.replication.is_some()
        || role.connection_limit.is_some()
        || role.valid_until.is_some()
        || !role.in_role.is_empty()
        || !role.in_group.is_empty()
        || !role.role.is_empty()
        || !role.user.is_empty()
        || !role.admin.is_empty()
        || role.authorization_owner.is_some()
        || role.if_not_exists;
    if unsupported {
        return Err(SqlError::unsupported(
            "a role option other than LOGIN, SUPERUSER and PASSWORD",
        ));
    }
    Ok(RoleCommand::Create {
        name: object_name(name)?,
        superuser: role.superuser.unwrap_or(false),
        login: role.login.unwrap_or(false),
        password: match &role.password {
            Some(p) => password(p)?,
            None => None,
        },
    })
}

/// `ALTER ROLE name WITH options` as a [`RoleCommand`].
pub(crate) fn alter(name: String, options: &[ast::RoleOption]) -> Result<RoleCommand> {
    let (mut superuser, mut login, mut pass) = (None, None, None);
    for o in options {
        match o {
            ast::RoleOption::SuperUser(b) => superuser = Some(*b),
            ast::RoleOption::Login(b) => login = Some(*b),
            ast::RoleOption::Password(p) => pass = Some(password(p)?),
            other => return Err(SqlError::unsupported(format!("ALTER ROLE ... {other}"))),
        }
    }
    Ok(RoleCommand::Alter {
        name,
        superuser,
        login,
        password: pass,
    })
}

/// A `PASSWORD` clause's text (`None`: `PASSWORD NULL`).
fn password(p: &ast::Password) -> Result<Option<String>> {
    match p {
        ast::Password::NullPassword => Ok(None),
        ast::Password::Password(ast::Expr::Value(v)) => match &v.value {
            ast::Value::SingleQuotedString(s) => Ok(Some(s.clone())),
            ast::Value::Null => Ok(None),
            other => Err(SqlError::syntax(format!(
                "a password is a string, not {other}"
            ))),
        },
        ast::Password::Password(other) => Err(SqlError::syntax(format!(
            "a password is a string, not {other}"
        ))),
    }
}
