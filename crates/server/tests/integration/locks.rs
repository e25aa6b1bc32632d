//! Locks over the wire. DDL that replaces a table (TRUNCATE, ADD PRIMARY KEY, CREATE INDEX,
//! DROP) and the sessions writing to it: the rebuild waits for open writers and writers wait for
//! an open rebuild, as PostgreSQL's table locks make them, and no acknowledged commit is ever
//! lost; a writer of a unique value another open transaction wrote waits for it. Locking reads
//! that do not wait: `NOWAIT` and `SKIP LOCKED`.

use crate::common;

use common::{connect, runtime};

use std::time::{Duration, Instant};

/// Returns once some transaction waits for a lock (a state, not a timeout).
async fn someone_waits(server: &common::TestServer) {
    let db = server.database();
    let give_up = Instant::now() + Duration::from_secs(60);
    while db.lock_waits().is_empty() {
        assert!(Instant::now() < give_up, "nobody ever waited");
        tokio::task::yield_now().await;
    }
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect("count").get(0)
}

#[test]
fn a_rebuild_waits_for_an_open_writer_and_keeps_its_commit() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let ddls = [
            ("CREATE INDEX w_v ON w (v)", 2),
            ("ALTER TABLE w ADD PRIMARY KEY (k)", 2),
            ("TRUNCATE w", 0),
        ];
        for (ddl, left) in ddls {
            let writer = connect(&server.dsn("writer")).await;
            let rebuilder = connect(&server.dsn("rebuilder")).await;
            writer
                .batch_execute(
                    "DROP TABLE IF EXISTS w;
                     CREATE TABLE w (k int NOT NULL, v int NOT NULL);
                     INSERT INTO w VALUES (1, 1)",
                )
                .await
                .expect("setup");
            writer
                .batch_execute("BEGIN; INSERT INTO w VALUES (2, 2)")
                .await
                .expect("open writer");
            let rebuild = tokio::spawn(async move { rebuilder.batch_execute(ddl).await });
            someone_waits(&server).await;
            writer.batch_execute("COMMIT").await.expect("commit");
            rebuild.await.expect("task").expect(ddl);
            assert_eq!(
                count(&writer, "SELECT count(*) FROM w").await,
                left,
                "{ddl}"
            );
        }
    });
}

#[test]
fn a_writer_waits_for_an_open_rebuild_and_a_committed_one_fails_it_with_40001() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        for commit in [false, true] {
            let writer = connect(&server.dsn("writer")).await;
            let rebuilder = connect(&server.dsn("rebuilder")).await;
            rebuilder
                .batch_execute(
                    "DROP TABLE IF EXISTS w;
                     CREATE TABLE w (k int NOT NULL, v int NOT NULL);
                     INSERT INTO w VALUES (1, 1)",
                )
                .await
                .expect("setup");
            // (Apart: statements before a BEGIN in one message join its block.)
            rebuilder
                .batch_execute("BEGIN; CREATE INDEX w_v ON w (v)")
                .await
                .expect("open rebuild");
            let insert = tokio::spawn(async move {
                (
                    writer.execute("INSERT INTO w VALUES (2, 2)", &[]).await,
                    writer,
                )
            });
            someone_waits(&server).await;
            let end = if commit { "COMMIT" } else { "ROLLBACK" };
            rebuilder.batch_execute(end).await.expect(end);
            let (inserted, writer) = insert.await.expect("task");
            if commit {
                // Planned against the table the rebuild replaced: refused, never lost.
                let e = inserted.expect_err("the insert into the replaced table");
                assert_eq!(e.code().map(|c| c.code()), Some("40001"));
                writer
                    .execute("INSERT INTO w VALUES (2, 2)", &[])
                    .await
                    .expect("the retry");
            } else {
                inserted.expect("the insert after a rolled-back rebuild");
            }
            assert_eq!(
                count(&writer, "SELECT count(*) FROM w WHERE v = 2").await,
                1
            );
            assert_eq!(count(&writer, "SELECT count(*) FROM w").await, 2);
        }
    });
}

#[test]
fn rebuilds_racing_a_stream_of_inserts_lose_no_acknowledged_row() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let writer = connect(&server.dsn("writer")).await;
        let rebuilder = connect(&server.dsn("rebuilder")).await;
        writer
            .batch_execute("CREATE TABLE s (k int NOT NULL, v int NOT NULL)")
            .await
            .expect("setup");
        const ROWS: i32 = 300;
        let inserts = tokio::spawn(async move {
            let mut acknowledged = 0;
            for k in 0..ROWS {
                // A statement refused because its table was replaced is tried again.
                loop {
                    match writer.execute("INSERT INTO s VALUES ($1, $1)", &[&k]).await {
                        Ok(_) => break,
                        Err(e) if e.code().map(|c| c.code()) == Some("40001") => continue,
                        Err(e) => panic!("insert {k}: {e}"),
                    }
                }
                acknowledged += 1;
                tokio::task::yield_now().await;
            }
            (acknowledged, writer)
        });
        for ddl in [
            "CREATE INDEX s_v ON s (v)",
            "ALTER TABLE s ADD PRIMARY KEY (k)",
            "CREATE INDEX s_kv ON s (k, v)",
        ] {
            loop {
                match rebuilder.batch_execute(ddl).await {
                    Ok(()) => break,
                    Err(e) if e.code().map(|c| c.code()) == Some("40001") => continue,
                    Err(e) => panic!("{ddl}: {e}"),
                }
            }
        }
        let (acknowledged, writer) = inserts.await.expect("inserts");
        assert_eq!(acknowledged, ROWS);
        assert_eq!(
            count(&writer, "SELECT count(*) FROM s").await,
            i64::from(ROWS)
        );
        assert_eq!(
            count(&writer, "SELECT count(DISTINCT k) FROM s").await,
            i64::from(ROWS)
        );
    });
}

#[test]
fn nowait_refuses_a_locked_row_at_once_and_skip_locked_leaves_it_out() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        let other = connect(&server.dsn("other")).await;
        holder
            .batch_execute(
                "CREATE TABLE q (k int PRIMARY KEY, v int NOT NULL);
                 INSERT INTO q VALUES (1, 1), (2, 2), (3, 3)",
            )
            .await
            .expect("setup");
        holder
            .batch_execute("BEGIN; UPDATE q SET v = v + 1 WHERE k = 2")
            .await
            .expect("holder");
        let e = other
            .query("SELECT k FROM q FOR UPDATE NOWAIT", &[])
            .await
            .expect_err("a locked row");
        assert_eq!(e.code().map(|c| c.code()), Some("55P03"));
        let keys = |rows: Vec<tokio_postgres::Row>| -> Vec<i32> {
            rows.iter().map(|r| r.get(0)).collect()
        };
        let free = other
            .query("SELECT k FROM q ORDER BY k FOR UPDATE SKIP LOCKED", &[])
            .await
            .expect("skip locked");
        assert_eq!(keys(free), [1, 3]);
        let one = other
            .query("SELECT k FROM q WHERE k = 3 FOR UPDATE NOWAIT", &[])
            .await
            .expect("an unlocked row");
        assert_eq!(keys(one), [3]);
        holder.batch_execute("COMMIT").await.expect("commit");
        let all = other
            .query("SELECT k FROM q ORDER BY k FOR UPDATE NOWAIT", &[])
            .await
            .expect("nothing locked");
        assert_eq!(keys(all), [1, 2, 3]);
    });
}

/// `ORDER BY k LIMIT n FOR UPDATE` in key order locks only the rows it returns, as
/// PostgreSQL's does (TPC-C's Delivery takes the oldest new order of a district this way while
/// others take the next ones), and a row deleted under it is passed over for the next.
#[test]
fn a_limited_locking_read_in_key_order_locks_only_the_rows_it_returns() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let first = connect(&server.dsn("first")).await;
        let second = connect(&server.dsn("second")).await;
        first
            .batch_execute(
                "CREATE TABLE queue (d int NOT NULL, o int NOT NULL, PRIMARY KEY (d, o));
                 INSERT INTO queue VALUES (1, 10), (1, 11), (1, 12), (2, 1)",
            )
            .await
            .expect("setup");
        let oldest = "SELECT o FROM queue WHERE d = 1 ORDER BY o LIMIT 1 FOR UPDATE";
        first.batch_execute("BEGIN").await.expect("begin");
        let taken: i32 = first.query_one(oldest, &[]).await.expect("lock").get(0);
        assert_eq!(taken, 10);
        let next: i32 = second
            .query_one(
                "SELECT o FROM queue WHERE d = 1 ORDER BY o LIMIT 1 FOR UPDATE SKIP LOCKED",
                &[],
            )
            .await
            .expect("the next row is free")
            .get(0);
        assert_eq!(next, 11);
        second
            .query_one(
                "SELECT o FROM queue WHERE d = 1 AND o = 12 FOR UPDATE NOWAIT",
                &[],
            )
            .await
            .expect("a row past the limit is not locked");
        first
            .batch_execute("DELETE FROM queue WHERE d = 1 AND o = 10")
            .await
            .expect("delete");
        let waiting = tokio::spawn(async move {
            let row = second.query_one(oldest, &[]).await.expect("after the wait");
            row.get::<_, i32>(0)
        });
        first.batch_execute("COMMIT").await.expect("commit");
        assert_eq!(
            waiting.await.expect("join"),
            11,
            "the deleted row is passed over"
        );
    });
}

#[test]
fn a_lock_wait_past_lock_timeout_fails_with_55p03_and_the_holder_goes_on() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        let waiter = connect(&server.dsn("waiter")).await;
        holder
            .batch_execute(
                "CREATE TABLE l (k int PRIMARY KEY, v int NOT NULL);
                 INSERT INTO l VALUES (1, 1)",
            )
            .await
            .expect("setup");
        holder
            .batch_execute("BEGIN; UPDATE l SET v = 2 WHERE k = 1")
            .await
            .expect("holder");
        waiter
            .batch_execute("SET lock_timeout = '20ms'")
            .await
            .expect("set");
        let e = waiter
            .batch_execute("UPDATE l SET v = 3 WHERE k = 1")
            .await
            .expect_err("the wait outlasts the limit");
        assert_eq!(e.code().map(|c| c.code()), Some("55P03"));
        let e = waiter
            .batch_execute("BEGIN; UPDATE l SET v = 3 WHERE k = 1")
            .await
            .expect_err("in a block too");
        assert_eq!(e.code().map(|c| c.code()), Some("55P03"));
        let e = waiter
            .batch_execute("SELECT 1")
            .await
            .expect_err("the block failed");
        assert_eq!(e.code().map(|c| c.code()), Some("25P02"));
        waiter.batch_execute("ROLLBACK").await.expect("rollback");
        holder.batch_execute("COMMIT").await.expect("commit");
        // No wait now: the limit does not matter.
        waiter
            .batch_execute("UPDATE l SET v = 3 WHERE k = 1")
            .await
            .expect("update");
        assert_eq!(
            count(&waiter, "SELECT v::bigint FROM l WHERE k = 1").await,
            3
        );
    });
}

#[test]
fn read_committed_and_repeatable_read_writers_of_a_row_wait_for_each_other() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let rr = connect(&server.dsn("rr")).await;
        let rc = connect(&server.dsn("rc")).await;
        rr.batch_execute(
            "CREATE TABLE m (k int PRIMARY KEY, v int NOT NULL);
             INSERT INTO m VALUES (1, 1)",
        )
        .await
        .expect("setup");
        // A READ COMMITTED update waits for the REPEATABLE READ writer, then applies its own
        // change on top of the committed one.
        rr.batch_execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ; UPDATE m SET v = v + 1 WHERE k = 1",
        )
        .await
        .expect("rr's update");
        let update = tokio::spawn(async move {
            (
                rc.execute("UPDATE m SET v = v + 5 WHERE k = 1", &[]).await,
                rc,
            )
        });
        someone_waits(&server).await;
        rr.batch_execute("COMMIT").await.expect("rr commits");
        let (updated, rc) = update.await.expect("task");
        assert_eq!(updated.expect("rc's update"), 1);
        assert_eq!(count(&rc, "SELECT v::bigint FROM m WHERE k = 1").await, 7);
        // A REPEATABLE READ update waits for the READ COMMITTED writer, and fails with 40001
        // once that commits a change its snapshot does not see.
        rr.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT v FROM m")
            .await
            .expect("rr's snapshot");
        rc.batch_execute("BEGIN; UPDATE m SET v = 100 WHERE k = 1")
            .await
            .expect("rc's update");
        let update = tokio::spawn(async move {
            (
                rr.batch_execute("UPDATE m SET v = v + 1 WHERE k = 1").await,
                rr,
            )
        });
        someone_waits(&server).await;
        rc.batch_execute("COMMIT").await.expect("rc commits");
        let (updated, rr) = update.await.expect("task");
        let e = updated.expect_err("a concurrent update");
        assert_eq!(e.code().map(|c| c.code()), Some("40001"));
        rr.batch_execute("ROLLBACK").await.expect("rollback");
        assert_eq!(count(&rr, "SELECT v::bigint FROM m WHERE k = 1").await, 100);
    });
}

#[test]
fn a_writer_of_a_taken_unique_value_waits_for_its_holder_and_fails_only_if_it_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        for commit in [true, false] {
            let holder = connect(&server.dsn("holder")).await;
            let other = connect(&server.dsn("other")).await;
            holder
                .batch_execute(
                    "DROP TABLE IF EXISTS u;
                     CREATE TABLE u (k int PRIMARY KEY, email varchar(20) UNIQUE)",
                )
                .await
                .expect("setup");
            holder
                .batch_execute("BEGIN; INSERT INTO u VALUES (1, 'a@x')")
                .await
                .expect("open holder");
            // It waits (for longer than a lock timeout)...
            let e = other
                .batch_execute("SET lock_timeout = '20ms'; INSERT INTO u VALUES (2, 'a@x')")
                .await
                .expect_err("the value's holder is open");
            assert_eq!(e.code().map(|c| c.code()), Some("55P03"));
            // ... until the holder ends, whichever comes first of its end and the insert.
            let insert = tokio::spawn(async move {
                other
                    .batch_execute("SET lock_timeout = 0; INSERT INTO u VALUES (2, 'a@x')")
                    .await
            });
            holder
                .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                .await
                .expect("end holder");
            let done = insert.await.expect("task");
            let rows: Vec<i32> = holder
                .query("SELECT k FROM u", &[])
                .await
                .expect("read")
                .iter()
                .map(|r| r.get(0))
                .collect();
            if commit {
                let e = done.expect_err("the value was taken");
                let db = e.as_db_error().expect("a server error");
                assert_eq!(
                    (db.code().code(), db.constraint()),
                    ("23505", Some("u_email_key"))
                );
                assert_eq!(rows, [1]);
            } else {
                done.expect("the value was given back");
                assert_eq!(rows, [2]);
            }
        }
    });
}

#[test]
fn an_upsert_waits_for_the_open_writer_of_its_values_then_updates_its_row_or_inserts() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let upsert = "INSERT INTO v VALUES (2, 'a@x', 1) ON CONFLICT (email)
                      DO UPDATE SET n = v.n + excluded.n RETURNING k, n";
        for commit in [true, false] {
            let holder = connect(&server.dsn("holder")).await;
            let other = connect(&server.dsn("other")).await;
            holder
                .batch_execute(
                    "DROP TABLE IF EXISTS v;
                     CREATE TABLE v (k int PRIMARY KEY, email varchar(20) UNIQUE, n int)",
                )
                .await
                .expect("setup");
            holder
                .batch_execute("BEGIN; INSERT INTO v VALUES (1, 'a@x', 10)")
                .await
                .expect("open holder");
            let e = other
                .batch_execute(&format!("SET lock_timeout = '20ms'; {upsert}"))
                .await
                .expect_err("the value's holder is open");
            assert_eq!(e.code().map(|c| c.code()), Some("55P03"));
            let run = tokio::spawn(async move {
                other.batch_execute("SET lock_timeout = 0").await?;
                other.query_one(upsert, &[]).await
            });
            holder
                .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
                .await
                .expect("end holder");
            let row = run.await.expect("task").expect("upsert");
            let (k, n): (i32, i32) = (row.get(0), row.get(1));
            // Committed: the holder's row is updated; rolled back: the row is inserted.
            assert_eq!((k, n), if commit { (1, 11) } else { (2, 1) });
            assert_eq!(count(&holder, "SELECT count(*) FROM v").await, 1);
        }
    });
}
