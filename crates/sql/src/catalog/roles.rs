//! Roles kept in the database, as PostgreSQL's `pg_authid`: a name, the superuser and login
//! attributes, and a SCRAM-SHA-256 verifier (salt and salted password) when it has a password.
//! `CREATE ROLE`, `ALTER ROLE` and `DROP ROLE` write this table in the block's transaction, so
//! they commit and roll back with it; logins and privilege checks read it in a transaction of
//! their own.
//!
//! Must never: keep a password's text (only its salted hash), or be written except through
//! these functions: the row is an on-disk format.

use std::ops::ControlFlow;
use std::sync::Arc;

use overtake_engine::{
    ColumnType, Database, Isolation, KeyRange, Priority, ScanOptions, Table, TableSchema,
    Transaction,
};

use crate::error::{Result, SqlError, sqlstate};

/// The engine table holding the roles (no SQL table's engine table can take this name: theirs
/// have a `#`).
pub(crate) const TABLE: &str = "overtake_sql_roles";

const NAME: usize = 0;
const SUPERUSER: usize = 1;
const LOGIN: usize = 2;
const SALT: usize = 3;
const SALTED: usize = 4;

/// A role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    pub name: String,
    pub superuser: bool,
    pub login: bool,
    pub password: Option<Verifier>,
}

/// What SCRAM-SHA-256 needs to check a password: its salt and the salted password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verifier {
    pub salt: Vec<u8>,
    pub salted: Vec<u8>,
}

/// The roles' engine table in `db`, created if it has none.
pub(crate) fn open_table(db: &Database) -> Result<Arc<Table>> {
    if let Ok(t) = db.table(TABLE) {
        return Ok(t);
    }
    let schema = TableSchema::builder(TABLE)
        .column(
            "name",
            ColumnType::VarChar(crate::values::types::TEXT_KEY_MAX),
        )
        .column("superuser", ColumnType::Int64)
        .column("login", ColumnType::Int64)
        .nullable_column("salt", ColumnType::VarChar(255))
        .nullable_column("salted", ColumnType::VarChar(255))
        .primary_key(&["name"])
        .build()
        .map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))?;
    Ok(db.create_table(schema)?)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn read(r: &overtake_engine::RowRef<'_>) -> Role {
    let password = if r.is_null(SALT) || r.is_null(SALTED) {
        None
    } else {
        unhex(r.str(SALT))
            .zip(unhex(r.str(SALTED)))
            .map(|(salt, salted)| Verifier { salt, salted })
    };
    Role {
        name: r.str(NAME).to_owned(),
        superuser: r.int(SUPERUSER) != 0,
        login: r.int(LOGIN) != 0,
        password,
    }
}

fn key(table: &Table, name: &str) -> Result<overtake_engine::KeyBuf> {
    Ok(table.key().str(name).finish()?)
}

/// Role `name` as `txn` sees it.
pub fn get(txn: &mut Transaction<'_>, table: &Table, name: &str) -> Result<Option<Role>> {
    Ok(txn.get(table, &key(table, name)?, |r| read(&r))?)
}

/// Every role, by name.
pub fn all(txn: &mut Transaction<'_>, table: &Table) -> Result<Vec<Role>> {
    let mut out = Vec::new();
    txn.scan(table, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.push(read(&r));
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Writes `role`: a new one, or (`replace`) over the one of its name.
pub fn put(txn: &mut Transaction<'_>, table: &Table, role: &Role, replace: bool) -> Result<()> {
    let mut row = table.row_builder();
    row.str(NAME, &role.name)
        .int(SUPERUSER, i64::from(role.superuser))
        .int(LOGIN, i64::from(role.login));
    match &role.password {
        Some(v) => row.str(SALT, &hex(&v.salt)).str(SALTED, &hex(&v.salted)),
        None => row.null(SALT).null(SALTED),
    };
    let row = row.finish()?;
    if replace {
        txn.delete(table, &key(table, &role.name)?)?;
    }
    txn.insert(table, row).map_err(|e| {
        let e = SqlError::from(e);
        if e.code == sqlstate::UNIQUE_VIOLATION {
            SqlError::new(
                sqlstate::DUPLICATE_OBJECT,
                format!("role \"{}\" already exists", role.name),
            )
        } else {
            e
        }
    })?;
    Ok(())
}

/// Removes role `name`.
pub fn remove(txn: &mut Transaction<'_>, table: &Table, name: &str) -> Result<()> {
    txn.delete(table, &key(table, name)?)?;
    Ok(())
}

/// Role `name` as committed now (a login, a privilege check), read in a transaction of its own.
pub fn committed(db: &Database, table: &Table, name: &str) -> Result<Option<Role>> {
    let mut txn = db.begin(Priority::HIGH, Isolation::ReadCommitted)?;
    let role = get(&mut txn, table, name)?;
    txn.commit()?;
    Ok(role)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifiers_are_kept_as_hex_and_read_back() {
        let bytes = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&bytes), "0001abff");
        assert_eq!(unhex("0001abff"), Some(bytes));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }
}
