//! Foreign keys under concurrency, as PostgreSQL keeps them: a reference to a row another open
//! transaction deleted waits for it and fails only if it commits; a delete of a row another
//! open transaction references waits and fails only if that one commits; a change of the
//! referenced row's other columns waits for nobody; a cascade waits for an open rebuild of the
//! table it writes; COPY checks once all its rows are in. Waits are shown with `lock_timeout`
//! (55P03 while the other transaction stays open), never with timings.

use crate::common;

use common::{connect, runtime};

/// The SQLSTATE of a failed statement.
fn code(e: &tokio_postgres::Error) -> Option<&str> {
    e.code().map(|c| c.code())
}

const SETUP: &str = "DROP TABLE IF EXISTS c; DROP TABLE IF EXISTS p;
     CREATE TABLE p (id int PRIMARY KEY, note text);
     CREATE TABLE c (id int PRIMARY KEY, p_id int REFERENCES p);
     INSERT INTO p VALUES (1, 'a'), (2, 'b')";

#[test]
fn a_reference_to_a_row_an_open_transaction_deleted_waits_and_fails_only_if_it_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        for commit in [true, false] {
            let deleter = connect(&server.dsn("deleter")).await;
            let other = connect(&server.dsn("other")).await;
            deleter.batch_execute(SETUP).await.expect("setup");
            deleter
                .batch_execute("BEGIN; DELETE FROM p WHERE id = 1")
                .await
                .expect("open deleter");
            let e = other
                .batch_execute("SET lock_timeout = '20ms'; INSERT INTO c VALUES (10, 1)")
                .await
                .expect_err("the referenced row's deleter is open");
            assert_eq!(code(&e), Some("55P03"));
            // A row the deleter did not touch is referenced at once.
            other
                .batch_execute("INSERT INTO c VALUES (11, 2)")
                .await
                .expect("another row");
            let insert = tokio::spawn(async move {
                other
                    .batch_execute("SET lock_timeout = 0; INSERT INTO c VALUES (10, 1)")
                    .await
            });
            deleter
                .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                .await
                .expect("end deleter");
            let done = insert.await.expect("task");
            if commit {
                let e = done.expect_err("the row is gone");
                let db = e.as_db_error().expect("a server error");
                assert_eq!(
                    (db.code().code(), db.constraint()),
                    ("23503", Some("c_p_id_fkey"))
                );
            } else {
                done.expect("the row is still there");
            }
        }
    });
}

#[test]
fn deleting_a_row_an_open_transaction_references_waits_and_fails_only_if_it_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        for commit in [true, false] {
            let referencer = connect(&server.dsn("referencer")).await;
            let other = connect(&server.dsn("other")).await;
            referencer.batch_execute(SETUP).await.expect("setup");
            referencer
                .batch_execute("BEGIN; INSERT INTO c VALUES (10, 1)")
                .await
                .expect("open referencer");
            let e = other
                .batch_execute("SET lock_timeout = '20ms'; DELETE FROM p WHERE id = 1")
                .await
                .expect_err("an open transaction references the row");
            assert_eq!(code(&e), Some("55P03"));
            // Its other columns change without waiting, as under PostgreSQL's FOR KEY SHARE.
            other
                .batch_execute("UPDATE p SET note = 'changed' WHERE id = 1")
                .await
                .expect("a change of a column nothing references");
            let delete = tokio::spawn(async move {
                other
                    .batch_execute("SET lock_timeout = 0; DELETE FROM p WHERE id = 1")
                    .await
            });
            referencer
                .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                .await
                .expect("end referencer");
            let done = delete.await.expect("task");
            let left: i64 = referencer
                .query_one("SELECT count(*) FROM p WHERE id = 1", &[])
                .await
                .expect("read")
                .get(0);
            if commit {
                let e = done.expect_err("the row is referenced");
                assert_eq!(code(&e), Some("23503"));
                assert_eq!(left, 1);
            } else {
                done.expect("nothing references the row");
                assert_eq!(left, 0);
            }
        }
    });
}

#[test]
fn under_repeatable_read_a_reference_to_a_row_deleted_since_the_snapshot_never_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let reader = connect(&server.dsn("reader")).await;
        let deleter = connect(&server.dsn("deleter")).await;
        reader.batch_execute(SETUP).await.expect("setup");
        reader
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM p")
            .await
            .expect("snapshot taken");
        deleter
            .batch_execute("DELETE FROM p WHERE id = 1")
            .await
            .expect("delete");
        // The snapshot still shows the row: the reference is refused at once or at commit,
        // never kept.
        let failed = match reader.batch_execute("INSERT INTO c VALUES (10, 1)").await {
            Err(e) => e,
            Ok(()) => reader.batch_execute("COMMIT").await.expect_err("commit"),
        };
        assert!(
            matches!(code(&failed), Some("40001" | "23503")),
            "{failed:?}"
        );
        let _ = reader.batch_execute("ROLLBACK").await;
        let orphans: i64 = deleter
            .query_one("SELECT count(*) FROM c", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(orphans, 0);
    });
}

#[test]
fn copy_checks_its_references_once_all_its_rows_are_in() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        use futures::SinkExt;
        let c = connect(&server.dsn("copier")).await;
        c.batch_execute("CREATE TABLE t (id int PRIMARY KEY, up int REFERENCES t)")
            .await
            .expect("create");
        // Rows referencing a row sent after them, in messages of their own.
        let sink = c.copy_in("COPY t FROM STDIN").await.expect("copy");
        futures::pin_mut!(sink);
        for piece in ["3\t2\n", "2\t1\n", "1\t\\N\n"] {
            sink.send(bytes::Bytes::from_static(piece.as_bytes()))
                .await
                .expect("piece");
        }
        assert_eq!(sink.finish().await.expect("finish"), 3);
        let sink = c.copy_in("COPY t FROM STDIN").await.expect("copy");
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"4\t9\n"))
            .await
            .expect("piece");
        let e = sink.finish().await.expect_err("nothing holds 9");
        assert_eq!(code(&e), Some("23503"));
        let n: i64 = c
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(n, 3);
    });
}

#[test]
fn a_cascade_waits_for_an_open_rebuild_of_the_referencing_table() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let rebuilder = connect(&server.dsn("rebuilder")).await;
        let other = connect(&server.dsn("other")).await;
        rebuilder
            .batch_execute(
                "CREATE TABLE cp (id int PRIMARY KEY);
                 CREATE TABLE cc (id int PRIMARY KEY, p int REFERENCES cp ON DELETE CASCADE);
                 INSERT INTO cp VALUES (1), (2); INSERT INTO cc VALUES (10, 1)",
            )
            .await
            .expect("setup");
        rebuilder
            .batch_execute("BEGIN; ALTER TABLE cc ADD COLUMN note text")
            .await
            .expect("open rebuild");
        // Its cascade writes the table being rebuilt: it waits, as any writer of it.
        let e = other
            .batch_execute("SET lock_timeout = '20ms'; DELETE FROM cp WHERE id = 1")
            .await
            .expect_err("the referencing table is being rebuilt");
        assert_eq!(code(&e), Some("55P03"));
        // A delete that cascades to nothing writes nothing there and goes on.
        other
            .batch_execute("DELETE FROM cp WHERE id = 2")
            .await
            .expect("nothing references 2");
        rebuilder.batch_execute("COMMIT").await.expect("commit");
        other
            .batch_execute("SET lock_timeout = 0; DELETE FROM cp WHERE id = 1")
            .await
            .expect("after the rebuild");
        let left: i64 = other
            .query_one("SELECT count(*) FROM cc", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(left, 0);
    });
}
