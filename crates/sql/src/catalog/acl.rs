//! A table's owner and what others were granted (PostgreSQL's ACL), and the role a statement
//! acts for: the values the catalog keeps and `access` checks. Knows nothing of tables or
//! plans.
//!
//! Must never: hold anything but names and privilege sets (it is part of every table's
//! description, cloned with it).

use std::fmt;

use crate::error::{Result, SqlError, sqlstate};

/// The role a statement acts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub superuser: bool,
}

/// A set of table privileges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Privileges(u8);

/// Each privilege with its keyword, in PostgreSQL's order.
const NAMES: [(Privileges, &str); 7] = [
    (Privileges::SELECT, "SELECT"),
    (Privileges::INSERT, "INSERT"),
    (Privileges::UPDATE, "UPDATE"),
    (Privileges::DELETE, "DELETE"),
    (Privileges::TRUNCATE, "TRUNCATE"),
    (Privileges::REFERENCES, "REFERENCES"),
    (Privileges::TRIGGER, "TRIGGER"),
];

impl Privileges {
    pub const NONE: Privileges = Privileges(0);
    pub const SELECT: Privileges = Privileges(1);
    pub const INSERT: Privileges = Privileges(2);
    pub const UPDATE: Privileges = Privileges(4);
    pub const DELETE: Privileges = Privileges(8);
    pub const TRUNCATE: Privileges = Privileges(16);
    pub const REFERENCES: Privileges = Privileges(32);
    pub const TRIGGER: Privileges = Privileges(64);
    pub const ALL: Privileges = Privileges(127);

    pub fn union(self, other: Privileges) -> Privileges {
        Privileges(self.0 | other.0)
    }

    pub fn without(self, other: Privileges) -> Privileges {
        Privileges(self.0 & !other.0)
    }

    pub fn contains(self, other: Privileges) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The privilege a GRANT's keyword names, or 0LP01 as PostgreSQL's for one a table has not.
    pub fn from_keyword(keyword: &str) -> Result<Privileges> {
        NAMES
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(keyword))
            .map(|(p, _)| *p)
            .ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_GRANT_OPERATION,
                    format!(
                        "invalid privilege type {} for table",
                        keyword.to_ascii_uppercase()
                    ),
                )
            })
    }
}

impl fmt::Display for Privileges {
    /// The keywords, comma-separated (as a GRANT lists them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = NAMES
            .iter()
            .filter(|(p, _)| self.contains(*p))
            .map(|(_, n)| *n)
            .collect();
        f.write_str(&names.join(", "))
    }
}

/// Whom a grant is to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grantee {
    Public,
    Role(String),
}

/// A table's owner and what others were granted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acl {
    /// `None` for a table kept by a version that recorded no owner: only superusers own it.
    pub owner: Option<String>,
    /// Privileges per grantee (none empty, each grantee once).
    pub grants: Vec<(Grantee, Privileges)>,
}

impl Acl {
    /// A new table's: owned by `actor` (by nobody if no role acts), granted to nobody.
    pub fn owned_by(actor: Option<&Actor>) -> Acl {
        Acl {
            owner: actor.map(|a| a.name.clone()),
            grants: Vec::new(),
        }
    }

    pub fn is_owner(&self, actor: &Actor) -> bool {
        actor.superuser || self.owner.as_deref() == Some(actor.name.as_str())
    }

    /// What `actor` may do.
    pub fn privileges_of(&self, actor: &Actor) -> Privileges {
        if self.is_owner(actor) {
            return Privileges::ALL;
        }
        self.grants
            .iter()
            .filter(|(g, _)| match g {
                Grantee::Public => true,
                Grantee::Role(r) => *r == actor.name,
            })
            .fold(Privileges::NONE, |all, (_, p)| all.union(*p))
    }

    /// Adds (or, `revoke`, removes) `privileges` for `grantee`.
    pub fn grant(&mut self, grantee: &Grantee, privileges: Privileges, revoke: bool) {
        match self.grants.iter_mut().find(|(g, _)| g == grantee) {
            Some((_, p)) if revoke => *p = p.without(privileges),
            Some((_, p)) => *p = p.union(privileges),
            None if revoke => {}
            None => self.grants.push((grantee.clone(), privileges)),
        }
        self.grants.retain(|(_, p)| !p.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::sqlstate;

    fn actor(name: &str) -> Actor {
        Actor {
            name: name.into(),
            superuser: false,
        }
    }

    #[test]
    fn owners_have_everything_and_others_what_they_were_granted() {
        let mut acl = Acl::owned_by(Some(&actor("alice")));
        assert_eq!(acl.privileges_of(&actor("alice")), Privileges::ALL);
        assert_eq!(acl.privileges_of(&actor("bob")), Privileges::NONE);
        acl.grant(&Grantee::Role("bob".into()), Privileges::SELECT, false);
        acl.grant(&Grantee::Public, Privileges::INSERT, false);
        let bob = acl.privileges_of(&actor("bob"));
        assert!(bob.contains(Privileges::SELECT.union(Privileges::INSERT)));
        assert!(!bob.contains(Privileges::UPDATE));
        assert_eq!(acl.privileges_of(&actor("carol")), Privileges::INSERT);
        acl.grant(&Grantee::Role("bob".into()), Privileges::ALL, true);
        assert_eq!(acl.grants, vec![(Grantee::Public, Privileges::INSERT)]);
        let root = Actor {
            name: "postgres".into(),
            superuser: true,
        };
        assert!(acl.is_owner(&root));
        assert!(!acl.is_owner(&actor("bob")));
    }

    #[test]
    fn privilege_keywords_read_and_print_as_postgresql_spells_them() {
        let p = Privileges::from_keyword("select").unwrap();
        assert_eq!(
            p.union(Privileges::TRUNCATE).to_string(),
            "SELECT, TRUNCATE"
        );
        let e = Privileges::from_keyword("usage").unwrap_err();
        assert_eq!(e.code, sqlstate::INVALID_GRANT_OPERATION);
        assert_eq!(e.message, "invalid privilege type USAGE for table");
    }
}
