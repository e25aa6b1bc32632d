//! Passwords for SCRAM-SHA-256 (`--password-file`): one `user:password` per line, `#` comments.
//! Each password is salted and hashed once, when the file is read; the file's text is not kept.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::gen_salted_password;
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};

/// SCRAM's iteration count (PostgreSQL's default).
pub const ITERATIONS: usize = 4096;

/// Users and their salted passwords.
#[derive(Debug)]
pub struct PasswordFile {
    users: HashMap<String, Password>,
}

impl PasswordFile {
    /// The users it names.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.users.keys().map(String::as_str)
    }

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
            let salt = random_salt().map_err(|e| format!("{}: {e}", path.display()))?;
            let salted = gen_salted_password(password, &salt, ITERATIONS);
            users.insert(user.to_owned(), Password::new(Some(salt), salted));
        }
        if users.is_empty() {
            return Err(format!("{}: no users", path.display()));
        }
        Ok(PasswordFile { users })
    }
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

#[async_trait]
impl AuthSource for PasswordFile {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        self.users.get(user).cloned().ok_or_else(|| {
            PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                "28P01".into(),
                format!("password authentication failed for user \"{user}\""),
            )))
        })
    }
}
