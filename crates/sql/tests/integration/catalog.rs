//! A table's owner and grants are part of its catalog description: they commit with their
//! transaction, come back when the catalog is opened again, and a change of them rolled back
//! leaves the table (its engine table is shared, not rebuilt).

use std::sync::Arc;

use overtake_engine::{Database, Isolation, Options, Priority};
use overtake_sql::bind::statement::{parse, prepare};
use overtake_sql::catalog::pending::{Pending, Tables};
use overtake_sql::exec::access::{Actor, Grantee, Privileges};
use overtake_sql::exec::ddl;
use overtake_sql::{Catalog, Command, SqlError};

/// Runs catalog change `sql` for `actor` in a transaction of its own; commits it unless
/// `roll_back`.
fn change(catalog: &Catalog, actor: &Actor, sql: &str, roll_back: bool) -> Result<(), SqlError> {
    let stmt = parse(sql)?.remove(0);
    let Command::Ddl(d) = prepare(catalog, &stmt, &[])?.command else {
        panic!("not a catalog change: {sql}");
    };
    let mut txn = catalog
        .database()
        .begin(Priority::MEDIUM, Isolation::ReadCommitted)?;
    let (_, changes) = ddl::execute_in(Tables::shared(catalog).acting_for(actor), &mut txn, &d)?;
    let mut pending = Pending::default();
    pending.record(changes);
    if roll_back {
        txn.rollback();
        pending.discard(catalog);
    } else {
        txn.commit()?;
        pending.publish(catalog)?;
    }
    Ok(())
}

fn role(name: &str) -> Actor {
    Actor {
        name: name.into(),
        superuser: false,
    }
}

#[test]
fn owner_and_grants_are_kept_with_the_table() {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).expect("catalog");
    let (alice, bob) = (role("alice"), role("bob"));
    change(
        &catalog,
        &alice,
        "CREATE TABLE t (k int PRIMARY KEY)",
        false,
    )
    .unwrap();
    change(&catalog, &alice, "GRANT SELECT, INSERT ON t TO bob", false).unwrap();
    change(&catalog, &alice, "GRANT DELETE ON t TO PUBLIC", false).unwrap();
    let e = change(&catalog, &bob, "DROP TABLE t", false).unwrap_err();
    assert_eq!(e.message, "must be owner of table t");
    // Rolled back: the grant never was, and the table (its engine table) is still there.
    change(&catalog, &alice, "GRANT UPDATE ON t TO bob", true).unwrap();
    let t = catalog.table("t").unwrap();
    assert!(db.table(t.engine.name()).is_ok());
    assert_eq!(t.acl.owner.as_deref(), Some("alice"));
    assert_eq!(
        t.acl.grants,
        vec![
            (
                Grantee::Role("bob".into()),
                Privileges::SELECT.union(Privileges::INSERT)
            ),
            (Grantee::Public, Privileges::DELETE),
        ]
    );
    // Committed: the engine table is the same one, and a catalog opened again reads it all.
    change(&catalog, &alice, "REVOKE INSERT ON t FROM bob", false).unwrap();
    let revoked = catalog.table("t").unwrap();
    assert!(Arc::ptr_eq(&revoked.engine, &t.engine));
    assert!(db.table(t.engine.name()).is_ok());
    let reopened = Catalog::open(Arc::clone(&db)).expect("opened again");
    assert_eq!(reopened.table("t").unwrap().acl, revoked.acl);
    assert_eq!(revoked.acl.grants[0].1, Privileges::SELECT);
}
