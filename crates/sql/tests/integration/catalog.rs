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

/// Object ids, as the system catalogs show them, stay with a table and its indexes through a
/// rebuild (CREATE INDEX, TRUNCATE) and a reopening, and are never handed out twice.
#[test]
fn object_ids_are_kept_through_rebuilds_and_reopening() {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).expect("catalog");
    let admin = Actor {
        name: "admin".into(),
        superuser: true,
    };
    let run = |catalog: &Catalog, sql: &str| change(catalog, &admin, sql, false).unwrap();
    run(
        &catalog,
        "CREATE TABLE a (k int PRIMARY KEY, v int NOT NULL)",
    );
    run(&catalog, "CREATE TABLE b (k int)");
    let a = catalog.table("a").unwrap();
    assert!(a.oid >= overtake_sql::catalog::FIRST_USER_OID);
    run(&catalog, "CREATE INDEX a_v ON a (v)");
    run(&catalog, "TRUNCATE a");
    let rebuilt = catalog.table("a").unwrap();
    assert!(!Arc::ptr_eq(&rebuilt.engine, &a.engine));
    assert_eq!(rebuilt.oid, a.oid);
    let index = rebuilt.indexes[0].oid;
    let reopened = Catalog::open(Arc::clone(&db)).expect("opened again");
    let (a2, b2) = (reopened.table("a").unwrap(), reopened.table("b").unwrap());
    assert_eq!((a2.oid, a2.indexes[0].oid), (a.oid, index));
    assert_eq!(b2.oid, catalog.table("b").unwrap().oid);
    // A table made after reopening takes ids no other object has.
    run(&reopened, "CREATE TABLE c (k int)");
    let c = reopened.table("c").unwrap();
    let n = overtake_sql::SqlTable::OIDS;
    let last_taken = (a.oid + n - 1).max(b2.oid + n - 1).max(index);
    assert!(c.oid > last_taken, "{} after {last_taken}", c.oid);
}

/// A sequence opened again goes on after every value it handed out (values logged ahead may be
/// skipped, as PostgreSQL skips them after a restart), and a serial column's default draws
/// from the sequence opened with it.
#[test]
fn a_sequence_opened_again_never_repeats_a_value() {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).expect("catalog");
    let admin = Actor {
        name: "admin".into(),
        superuser: true,
    };
    change(
        &catalog,
        &admin,
        "CREATE TABLE t (id serial PRIMARY KEY)",
        false,
    )
    .unwrap();
    let next = |catalog: &Catalog| {
        let s = catalog.table("t_id_seq").unwrap();
        s.sequence.as_ref().unwrap().next().unwrap()
    };
    let handed: Vec<i64> = (0..40).map(|_| next(&catalog)).collect();
    assert_eq!(handed, (1..=40).collect::<Vec<_>>());
    let reopened = Catalog::open(Arc::clone(&db)).expect("opened again");
    let after = next(&reopened);
    assert!(after > 40, "{after}");
    // The table's default is bound to the sequence the reopened catalog has.
    let t = reopened.table("t").unwrap();
    let default = t.columns[0].default.as_ref().unwrap();
    let v = default
        .expr
        .eval(&[], &overtake_sql::Context::new(&[], 0))
        .unwrap();
    assert_eq!(v, overtake_sql::Datum::Int(after + 1));
}

/// CHECK constraints are kept with their table: named, and the same condition, once the
/// catalog is opened again.
#[test]
fn check_constraints_are_kept_with_the_table() {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).expect("catalog");
    let admin = Actor {
        name: "admin".into(),
        superuser: true,
    };
    let sql = "CREATE TABLE t (a int CHECK (a > 0), b int, CONSTRAINT small CHECK (b < 10))";
    change(&catalog, &admin, sql, false).unwrap();
    let reopened = Catalog::open(Arc::clone(&db)).expect("opened again");
    let t = reopened.table("t").unwrap();
    let names: Vec<&str> = t.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["t_a_check", "small"]);
    let cx = overtake_sql::Context::new(&[], 0);
    let row = [overtake_sql::Datum::Int(0), overtake_sql::Datum::Int(3)];
    let held: Vec<_> = t
        .checks
        .iter()
        .map(|c| c.expr.eval(&row, &cx).unwrap())
        .collect();
    assert_eq!(
        held,
        [
            overtake_sql::Datum::Bool(false),
            overtake_sql::Datum::Bool(true)
        ]
    );
}
