//! Passwords for SCRAM-SHA-256. Roles and their verifiers are kept in the database (see
//! `overtake_sql::catalog::roles`): `CREATE ROLE ... PASSWORD` adds them, and the password file
//! (`--password-file`: one `user:password` per line, `#` comments) is the bootstrap, written
//! into them when the server starts. A file's password is salted and hashed once, when the file
//! is read; its text is not kept.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use overtake_sql::Catalog;
use overtake_sql::catalog::roles::{self, Role, Verifier};
use pgwire::api::auth::sasl::scram::gen_salted_password;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

/// SCRAM's iteration count (PostgreSQL's default).
pub const ITERATIONS: usize = 4096;

/// The password file's users and their verifiers.
#[derive(Debug)]
pub struct PasswordFile {
    users: HashMap<String, Verifier>,
}

impl PasswordFile {
    /// Reads `path`; errors name the file and line.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut users = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (user, password) = line
                .split_once(':')
                .filter(|(u, p)| !u.is_empty() && !p.is_empty())
                .ok_or_else(|| format!("{}:{}: expected user:password", path.display(), n + 1))?;
            let verifier = verifier(password).map_err(|e| format!("{}: {e}", path.display()))?;
            users.insert(user.to_owned(), verifier);
        }
        if users.is_empty() {
            return Err(format!("{}: no users", path.display()));
        }
        Ok(PasswordFile { users })
    }

    /// Writes the file's users into `catalog`'s roles (they may log in, with the file's
    /// password; a role of that name keeps its superuser attribute), and makes `superusers`
    /// superusers (a name no role has yet becomes a role without a password).
    pub fn bootstrap(&self, catalog: &Catalog, superusers: &[String]) -> Result<(), String> {
        let fail =
            |e: overtake_sql::SqlError| format!("writing the password file's roles: {}", e.message);
        let db = catalog.database();
        let mut txn = db
            .begin(
                overtake_engine::Priority::HIGH,
                overtake_engine::Isolation::ReadCommitted,
            )
            .map_err(|e| fail(e.into()))?;
        let table = catalog.roles();
        let mut names: Vec<&String> = self.users.keys().collect();
        names.extend(superusers.iter().filter(|s| !self.users.contains_key(*s)));
        for name in names {
            let old = roles::get(&mut txn, table, name).map_err(fail)?;
            let superuser = superusers.contains(name);
            let role = match (self.users.get(name), &old) {
                (Some(v), old) => Role {
                    name: name.clone(),
                    superuser: superuser || old.as_ref().is_some_and(|r| r.superuser),
                    login: true,
                    password: Some(v.clone()),
                },
                (None, Some(old)) => Role {
                    superuser: true,
                    ..old.clone()
                },
                (None, None) => Role {
                    name: name.clone(),
                    superuser: true,
                    login: true,
                    password: None,
                },
            };
            roles::put(&mut txn, table, &role, old.is_some()).map_err(fail)?;
        }
        txn.commit().map_err(|e| fail(e.into()))
    }
}

/// Logins checked against the roles kept in the database.
pub struct RoleAuth {
    pub catalog: Arc<Catalog>,
}

impl std::fmt::Debug for RoleAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RoleAuth")
    }
}

fn login_error(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message,
    )))
}

#[async_trait]
impl AuthSource for RoleAuth {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        let failed = || {
            login_error(
                "28P01",
                format!("password authentication failed for user \"{user}\""),
            )
        };
        match self.catalog.role(user) {
            Ok(Some(Role { login: false, .. })) => Err(login_error(
                "28000",
                format!("role \"{user}\" is not permitted to log in"),
            )),
            Ok(Some(Role {
                password: Some(v), ..
            })) => Ok(Password::new(Some(v.salt), v.salted)),
            _ => Err(failed()),
        }
    }
}

/// A SCRAM-SHA-256 verifier for `password`: a fresh salt and the password salted with it.
pub fn verifier(password: &str) -> Result<overtake_sql::catalog::roles::Verifier, String> {
    let salt = random_salt()?;
    let salted = gen_salted_password(password, &salt, ITERATIONS);
    Ok(overtake_sql::catalog::roles::Verifier { salt, salted })
}

/// A salt from the operating system's cryptographic generator (through rustls' provider), as
/// SCRAM requires: a guessable salt would let a stolen verifier be attacked with precomputed
/// tables.
fn random_salt() -> Result<Vec<u8>, String> {
    let mut salt = vec![0u8; 16];
    pgwire::tokio::tokio_rustls::rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut salt)
        .map_err(|_| "no cryptographic random numbers".to_owned())?;
    Ok(salt)
}

/// How long a failed login waits before it is answered (PostgreSQL's `auth_delay`): guessing
/// passwords costs this per guess, on the guessing connection only.
pub const FAILED_LOGIN_DELAY: std::time::Duration = std::time::Duration::from_millis(500);
