//! Which plans are point reads (`Query::is_point_read`): a server runs those where nothing
//! preempts them, so anything that can take long or wait must be left out.

use std::sync::Arc;

use overtake_engine::{Database, Options};
use overtake_sql::bind::statement::{parse, prepare};
use overtake_sql::catalog::pending::Tables;
use overtake_sql::exec::access::Actor;
use overtake_sql::exec::ddl;
use overtake_sql::{Catalog, Command};

fn is_point_read(catalog: &Catalog, sql: &str) -> bool {
    let stmt = parse(sql).expect("parses").remove(0);
    match prepare(catalog, &stmt, &[]).expect("plans").command {
        Command::Query(q) => q.is_point_read(),
        _ => false,
    }
}

#[test]
fn only_lock_free_single_key_reads_without_calls_are_point_reads() {
    let db = Arc::new(Database::in_memory(Options::default()));
    let catalog = Catalog::open(Arc::clone(&db)).expect("catalog");
    let superuser = Actor {
        name: "postgres".into(),
        superuser: true,
    };
    for sql in [
        "CREATE TABLE t (k int PRIMARY KEY, v int, s text)",
        "CREATE TABLE u (a int, b int, PRIMARY KEY (a, b))",
    ] {
        let stmt = parse(sql).expect("parses").remove(0);
        let Command::Ddl(d) = prepare(&catalog, &stmt, &[]).expect("plans").command else {
            panic!("not DDL");
        };
        let mut txn = db
            .begin(
                overtake_engine::Priority::MEDIUM,
                overtake_engine::Isolation::ReadCommitted,
            )
            .expect("begin");
        let (_, changes) = ddl::execute_in(
            Tables::shared(&catalog).acting_for(&superuser),
            &mut txn,
            &d,
        )
        .expect("created");
        txn.commit().expect("commit");
        let mut pending = overtake_sql::catalog::pending::Pending::default();
        pending.record(changes);
        pending.publish(&catalog).expect("published");
    }
    for sql in [
        "SELECT v FROM t WHERE k = $1",
        "SELECT v + 1, s FROM t WHERE k = 7 AND v > 3",
        "SELECT * FROM u WHERE a = 1 AND b = 2",
        "SELECT count(*) FROM t WHERE k = 1",
    ] {
        assert!(is_point_read(&catalog, sql), "{sql}");
    }
    for sql in [
        "SELECT v FROM t",                                // a scan
        "SELECT v FROM t WHERE k > 1",                    // a range
        "SELECT * FROM u WHERE a = 1",                    // part of the key
        "SELECT v FROM t WHERE k = 1 FOR UPDATE",         // locks
        "SELECT pg_cancel_backend(v) FROM t WHERE k = 1", // a call
        "SELECT v FROM t WHERE k = abs($1)",
        "SELECT t.v FROM t, t AS t2 WHERE t.k = 1 AND t2.k = 1", // two tables
        "UPDATE t SET v = 1 WHERE k = 1",
        "INSERT INTO t VALUES (1, 1, 'a')",
    ] {
        assert!(!is_point_read(&catalog, sql), "{sql}");
    }
}
