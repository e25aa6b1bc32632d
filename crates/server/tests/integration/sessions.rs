//! Sessions over the wire: a session's priority reaches the scheduler (SET, startup options,
//! role defaults), hostile input ends only its own connection, over-long statements are refused
//! without harm, crossed row locks make one session the deadlock victim (40P01), and a statement
//! the scheduler cannot start is refused as overload (53300).

use crate::common;

use common::{connect, runtime, until_a_lock_wait};

use common::raw::Raw;

use std::io::{Read, Write};
use std::net::TcpStream;

use overtake_sched::Priority;
use tokio_postgres::NoTls;

/// Statements the scheduler finished at each level so far.
fn finished(server: &common::TestServer) -> Vec<u64> {
    let stats = server.scheduler.as_ref().expect("running").stats();
    stats
        .levels
        .iter()
        .map(|c| c.committed + c.rolled_back + c.failed)
        .collect()
}

/// [`finished`] once level `level` has counted more than `before`: a worker books a job after
/// its result is delivered, so the client can see the result first (a state, not a timeout).
fn finished_after(server: &common::TestServer, level: Priority, before: &[u64]) -> Vec<u64> {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let now = finished(server);
        if now[level.level()] > before[level.level()] {
            return now;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "the statement was never booked"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_sessions_statements_run_at_its_priority() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let admin = connect(&server.dsn("admin")).await;
        admin
            .batch_execute("CREATE TABLE p (id int PRIMARY KEY)")
            .await
            .expect("create");
        admin
            .batch_execute("ALTER ROLE reporting SET priority = 'background'")
            .await
            .expect("alter role");
        // SET, then the statement: it runs as an urgent task.
        let before = finished(&server);
        admin
            .batch_execute("SET priority = 'urgent'")
            .await
            .expect("set");
        admin
            .query("SELECT count(*) FROM p", &[])
            .await
            .expect("select");
        let after = finished_after(&server, Priority::CRITICAL, &before);
        assert_eq!(
            after[Priority::CRITICAL.level()],
            before[Priority::CRITICAL.level()] + 1
        );
        // A role's default, and the startup packet's options over it.
        let reporting = connect(&server.dsn("reporting")).await;
        let before = finished(&server);
        reporting
            .query("SELECT count(*) FROM p", &[])
            .await
            .expect("select");
        assert_eq!(
            finished_after(&server, Priority::LOW, &before)[Priority::LOW.level()],
            before[Priority::LOW.level()] + 1
        );
        let mut opted = connect(&format!(
            "{} options='-c priority=high'",
            server.dsn("reporting")
        ))
        .await;
        let row = opted.query_one("SHOW priority", &[]).await.expect("show");
        assert_eq!(row.get::<_, &str>(0), "high");
        let before = finished(&server);
        opted
            .query("SELECT count(*) FROM p", &[])
            .await
            .expect("select");
        assert_eq!(
            finished_after(&server, Priority::HIGH, &before)[Priority::HIGH.level()],
            before[Priority::HIGH.level()] + 1
        );
        // SET LOCAL: one transaction's statements, then back.
        let tx = opted.transaction().await.expect("begin");
        tx.batch_execute("SET LOCAL priority = 'urgent'")
            .await
            .expect("set local");
        let before = finished(&server);
        tx.execute("INSERT INTO p VALUES (1)", &[])
            .await
            .expect("insert");
        tx.commit().await.expect("commit");
        // The block's task ran at the level in effect at its first statement.
        assert_eq!(
            finished_after(&server, Priority::CRITICAL, &before)[Priority::CRITICAL.level()],
            before[Priority::CRITICAL.level()] + 1
        );
        let row = opted.query_one("SHOW priority", &[]).await.expect("show");
        assert_eq!(row.get::<_, &str>(0), "high");
    });
}

/// The `SHOW` answer a raw connection gets: the one DataRow's text.
fn raw_show(raw: &mut Raw, name: &str) -> String {
    let mut body = format!("SHOW {name}").into_bytes();
    body.push(0);
    raw.send(b'Q', &body);
    let mut head = [0u8; 5];
    loop {
        raw.0.read_exact(&mut head).expect("a message");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
        let mut message = vec![0u8; len];
        raw.0.read_exact(&mut message).expect("its body");
        if head[0] == b'D' {
            // One column: its length, then its text.
            let text = &message[6..];
            let answer = String::from_utf8_lossy(text).into_owned();
            raw.until_ready();
            return answer;
        }
        assert_ne!(head[0], b'E', "SHOW {name} failed");
    }
}

#[test]
fn startup_parameters_that_name_settings_set_them() {
    // What a driver sends for a setting it carries in its connection string (go-tpc's
    // `--conn-params priority=high`, pgx's RuntimeParams): a parameter of its own name.
    let server = common::TestServer::start();
    let packet = common::raw::startup_with(
        "params",
        &[
            ("priority", "high"),
            ("statement_timeout", "250"),
            ("no_such_setting", "x"),
        ],
    );
    let (mut raw, (kinds, codes)) = Raw::open(server.port, &packet);
    assert!(codes.is_empty(), "{codes:?}");
    assert_eq!(kinds.last(), Some(&b'Z'));
    assert_eq!(raw_show(&mut raw, "priority"), "high");
    assert_eq!(raw_show(&mut raw, "statement_timeout"), "250ms");
    let before = finished(&server);
    raw.query("SELECT 1");
    assert_eq!(
        finished_after(&server, Priority::HIGH, &before)[Priority::HIGH.level()],
        before[Priority::HIGH.level()] + 1
    );
    // A parameter apart wins over the same setting in `options`, as in PostgreSQL.
    let packet = common::raw::startup_with(
        "params",
        &[("options", "-c priority=low"), ("priority", "background")],
    );
    let (mut raw, _) = Raw::open(server.port, &packet);
    assert_eq!(raw_show(&mut raw, "priority"), "background");
    // A bad value is refused before the session starts, as a bad `options` value is.
    let packet = common::raw::startup_with("params", &[("priority", "sideways")]);
    let (mut refused, (_, codes)) = Raw::open(server.port, &packet);
    assert_eq!(codes, ["22023"]);
    // ... and the connection ends: nothing more is served.
    assert_eq!(refused.until_closed(), (Vec::new(), Vec::new()));
}

#[test]
fn a_malformed_message_closes_only_its_connection() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let good = connect(&server.dsn("good")).await;
        good.batch_execute("CREATE TABLE g (id int PRIMARY KEY)")
            .await
            .expect("create");
        for garbage in [
            &b"\x00\x00\x00\x08\x04\xd2\x16\x2f"[..], // an SSL request, then garbage below
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            &[0xff; 64][..],
            &b"\x00\x00\x00\x03"[..], // a length shorter than its own field
        ] {
            let mut s = TcpStream::connect(("127.0.0.1", server.port)).expect("tcp");
            s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .expect("timeout");
            let _ = s.write_all(garbage);
            let _ = s.write_all(&[0x51, 0x7f, 0xff, 0xff, 0xff]);
            let mut buf = [0u8; 256];
            // The server answers with an error or closes; either way it does not hang.
            let _ = s.read(&mut buf);
        }
        // A startup, then a message whose length claims a gigabyte.
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).expect("tcp");
        let mut startup = Vec::new();
        let params = b"user\0bad\0\0";
        startup.extend_from_slice(&((8 + params.len()) as u32).to_be_bytes());
        startup.extend_from_slice(&196_608u32.to_be_bytes());
        startup.extend_from_slice(params);
        s.write_all(&startup).expect("startup");
        s.write_all(&[b'Q', 0x40, 0, 0, 0]).expect("huge");
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        // Every other session carries on.
        good.execute("INSERT INTO g VALUES (1)", &[])
            .await
            .expect("insert");
        let n: i64 = good
            .query_one("SELECT count(*) FROM g", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 1);
    });
}

#[test]
fn an_over_long_statement_is_refused_and_the_session_goes_on() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("long")).await;
        let long = format!(
            "SELECT 1 {}",
            " ".repeat(overtake_sql::bind::statement::MAX_STATEMENT_LEN)
        );
        let err = client.simple_query(&long).await.expect_err("refused");
        assert_eq!(err.code().map(|c| c.code()), Some("54000"));
        let rows = client.simple_query("SELECT 2").await.expect("still usable");
        assert!(rows.iter().any(
            |m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("2"))
        ));
    });
}

/// `DISCARD ALL` (what connection pools send before handing a session on) forgets the
/// client's prepared statements and resets its settings, as PostgreSQL's does.
#[test]
fn discard_all_forgets_prepared_statements_and_settings() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("discard")).await;
        let one = client.prepare("SELECT 1").await.expect("prepare");
        client
            .simple_query("SET statement_timeout = '5s'")
            .await
            .expect("SET");
        client
            .simple_query("DISCARD ALL")
            .await
            .expect("DISCARD ALL");
        let e = client.query(&one, &[]).await.expect_err("forgotten");
        assert_eq!(e.code().map(|c| c.code()), Some("26000"));
        let rows = client
            .query("SHOW statement_timeout", &[])
            .await
            .expect("SHOW");
        assert_eq!(rows[0].get::<_, String>(0), "0");
    });
}

/// `DEALLOCATE` forgets the client's prepared statements as PostgreSQL's does (psycopg sends
/// `DEALLOCATE ALL` after any DROP or ALTER): a statement deallocated no longer binds, an
/// unknown name is 26000 and fails the block, and a name prepared again works.
#[test]
fn deallocate_forgets_prepared_statements() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("dealloc")).await;
        let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        let one = client.prepare("SELECT 1").await.expect("prepare");
        let two = client.prepare("SELECT 2").await.expect("prepare");
        client.query(&one, &[]).await.expect("runs");
        client
            .simple_query("DEALLOCATE ALL")
            .await
            .expect("DEALLOCATE ALL");
        for statement in [&one, &two] {
            let e = client.query(statement, &[]).await.expect_err("forgotten");
            assert_eq!(code(e).as_deref(), Some("26000"));
        }
        // A statement prepared under a name of the client's choosing (tokio-postgres picks
        // its own), dropped by that name.
        let mut raw = Raw::connect(server.port);
        raw.send(b'P', b"mine\0SELECT 3\0\0\0");
        raw.send(b'S', &[]);
        assert!(raw.until_ready().1.is_empty());
        assert!(raw.query("DEALLOCATE PREPARE mine").1.is_empty());
        raw.send(b'B', b"\0mine\0\0\0\0\0\0\0");
        raw.send(b'S', &[]);
        assert_eq!(raw.until_ready().1, ["26000"]);
        let e = client
            .simple_query("DEALLOCATE nosuch")
            .await
            .expect_err("unknown");
        assert_eq!(code(e).as_deref(), Some("26000"));
        let e = client
            .batch_execute("BEGIN; DEALLOCATE nosuch; SELECT 1")
            .await
            .expect_err("fails the block");
        assert_eq!(code(e).as_deref(), Some("26000"));
        let e = client
            .simple_query("SELECT 1")
            .await
            .expect_err("failed block");
        assert_eq!(code(e).as_deref(), Some("25P02"));
        client.simple_query("ROLLBACK").await.expect("rollback");
        let four = client.prepare("SELECT 4").await.expect("prepare again");
        let rows = client.query(&four, &[]).await.expect("runs");
        assert_eq!(rows[0].get::<_, i32>(0), 4);
    });
}

/// `PREPARE`'s statements run by `EXECUTE` in the extended protocol too (described as the
/// statement's rows), and share `DEALLOCATE` with the client's own.
#[test]
fn sql_prepared_statements_run_through_the_extended_protocol() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("prepare_sql")).await;
        client
            .batch_execute(
                "CREATE TABLE ps (id int PRIMARY KEY, v text);
                 INSERT INTO ps VALUES (1, 'one'), (2, 'two');
                 PREPARE by_id (int) AS SELECT id, v FROM ps WHERE id >= $1 ORDER BY id",
            )
            .await
            .expect("prepare");
        let execute = client.prepare("EXECUTE by_id(2)").await.expect("parse");
        let described: Vec<_> = execute.columns().iter().map(|c| c.name()).collect();
        assert_eq!(described, ["id", "v"]);
        let rows = client.query(&execute, &[]).await.expect("execute");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i32>(0), 2);
        assert_eq!(rows[0].get::<_, &str>(1), "two");
        // An argument from the client, of the type it declares.
        let typed = client
            .prepare_typed("EXECUTE by_id($1)", &[tokio_postgres::types::Type::INT4])
            .await
            .expect("parse with a parameter");
        let rows = client.query(&typed, &[&1i32]).await.expect("execute");
        assert_eq!(rows.len(), 2);
        client
            .batch_execute("DEALLOCATE by_id")
            .await
            .expect("deallocate");
        let e = client.query(&execute, &[]).await.expect_err("forgotten");
        assert_eq!(e.code().map(|c| c.code()), Some("26000"));
    });
}

#[test]
fn a_cancelled_query_stops_running() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("analyst")).await;
        let values: Vec<String> = (0..1000).map(|i| format!("({i})")).collect();
        client
            .batch_execute(&format!(
                "CREATE TABLE n (i int PRIMARY KEY); INSERT INTO n VALUES {}",
                values.join(", ")
            ))
            .await
            .expect("setup");
        let before = finished(&server);
        let cancel = client.cancel_token();
        // 10^12 joined rows: it would run for days.
        let running = tokio::spawn(async move {
            client
                .batch_execute("SELECT count(*) FROM n a, n b, n c, n d")
                .await
        });
        // A cancel that arrives before the query has started is not kept: ask until it ends.
        while !running.is_finished() {
            cancel.cancel_query(NoTls).await.expect("cancel");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let err = running.await.expect("joined").expect_err("cancelled");
        assert_eq!(err.code().map(|c| c.code()), Some("57014"));
        // The statement's task itself ends (it is booked), not only its client's wait.
        finished_after(&server, Priority::MEDIUM, &before);
    });
}

#[test]
fn a_cancelled_statement_waiting_for_a_row_lock_never_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        holder
            .batch_execute("CREATE TABLE c (id int PRIMARY KEY, v int NOT NULL)")
            .await
            .expect("create");
        holder
            .batch_execute("INSERT INTO c VALUES (1, 0)")
            .await
            .expect("insert");
        holder
            .batch_execute("BEGIN; UPDATE c SET v = 1 WHERE id = 1")
            .await
            .expect("hold");
        let waiter = connect(&server.dsn("waiter")).await;
        let cancel = waiter.cancel_token();
        let waiting = tokio::spawn(async move {
            let r = waiter
                .batch_execute("UPDATE c SET v = 100 WHERE id = 1")
                .await;
            (waiter, r)
        });
        // The waiter is seen waiting for the row lock (a state, not a timeout).
        let db = server.database();
        until_a_lock_wait(&db).await;
        cancel.cancel_query(NoTls).await.expect("cancel");
        let (waiter, result) = waiting.await.expect("joined");
        let err = result.expect_err("cancelled");
        assert_eq!(err.code().map(|c| c.code()), Some("57014"));
        holder.batch_execute("COMMIT").await.expect("commit");
        // The cancelled update got the lock after the commit, and rolled back: v stays 1.
        let v: i32 = waiter
            .query_one("SELECT v FROM c WHERE id = 1", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(v, 1);
        // Until it has, its lock may still be queued: a write after it waits, then applies.
        waiter
            .batch_execute("UPDATE c SET v = v + 1 WHERE id = 1")
            .await
            .expect("update");
        let v: i32 = waiter
            .query_one("SELECT v FROM c WHERE id = 1", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(v, 2);
    });
}

/// A cancel ends a lock wait at once, as PostgreSQL's does: the cancelled block's ROLLBACK is
/// answered while the lock's holder still holds it, and nothing of the block is kept.
#[test]
fn a_cancel_ends_a_lock_wait_and_the_block_rolls_back_while_the_holder_holds() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        holder
            .batch_execute("CREATE TABLE cw (id int PRIMARY KEY, v int NOT NULL); INSERT INTO cw VALUES (1, 0), (2, 0)")
            .await
            .expect("setup");
        holder
            .batch_execute("BEGIN; UPDATE cw SET v = 1 WHERE id = 1")
            .await
            .expect("hold");
        let waiter = connect(&server.dsn("waiter")).await;
        waiter
            .batch_execute("BEGIN; UPDATE cw SET v = 20 WHERE id = 2")
            .await
            .expect("the waiter's first write");
        let cancel = waiter.cancel_token();
        let waiting = tokio::spawn(async move {
            let r = waiter.batch_execute("UPDATE cw SET v = 10 WHERE id = 1").await;
            (waiter, r)
        });
        let db = server.database();
        until_a_lock_wait(&db).await;
        cancel.cancel_query(NoTls).await.expect("cancel");
        let (waiter, result) = waiting.await.expect("joined");
        assert_eq!(result.expect_err("cancelled").code().map(|c| c.code()), Some("57014"));
        // ROLLBACK is answered, and the wait ends, with the holder still holding the row (a
        // state waited for, not a time: before, it lasted until the holder's commit).
        waiter.batch_execute("ROLLBACK").await.expect("rollback");
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !db.lock_waits().is_empty() {
            assert!(std::time::Instant::now() < give_up, "the wait outlived its cancel");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        // Its first write was rolled back: another session writes row 2.
        let other = connect(&server.dsn("other")).await;
        other
            .batch_execute("UPDATE cw SET v = 2 WHERE id = 2")
            .await
            .expect("row 2 is free");
        holder.batch_execute("COMMIT").await.expect("commit");
        let rows = other
            .query("SELECT v FROM cw ORDER BY id", &[])
            .await
            .expect("read");
        let v: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(v, [1, 2]);
    });
}

/// `pg_backend_pid()`, `pg_cancel_backend()` and `pg_terminate_backend()` as PostgreSQL's: a
/// session cancels another's statement (here one waiting for a lock) or ends it (its block
/// rolls back, its client is sent FATAL 57P01); an unknown pid answers false.
#[test]
fn sessions_cancel_and_terminate_each_other_by_process_id() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let pid = |c: tokio_postgres::Client| async move {
            let n: i32 = c
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .expect("pid")
                .get(0);
            (c, n)
        };
        let (holder, holder_pid) = pid(connect(&server.dsn("holder")).await).await;
        let (waiter, waiter_pid) = pid(connect(&server.dsn("waiter")).await).await;
        let admin = connect(&server.dsn("admin")).await;
        assert_ne!(holder_pid, waiter_pid);
        holder
            .batch_execute("CREATE TABLE sig (id int PRIMARY KEY, v int NOT NULL); INSERT INTO sig VALUES (1, 0)")
            .await
            .expect("setup");
        holder
            .batch_execute("BEGIN; UPDATE sig SET v = 1 WHERE id = 1")
            .await
            .expect("hold");
        let waiting = tokio::spawn(async move {
            let r = waiter.batch_execute("UPDATE sig SET v = 2 WHERE id = 1").await;
            (waiter, r)
        });
        let db = server.database();
        until_a_lock_wait(&db).await;
        let signalled = |sql: String| {
            let admin = &admin;
            async move {
                let b: bool = admin.query_one(&sql, &[]).await.expect(&sql).get(0);
                b
            }
        };
        assert!(signalled(format!("SELECT pg_cancel_backend({waiter_pid})")).await);
        let (waiter, result) = waiting.await.expect("joined");
        let e = result.expect_err("cancelled");
        assert_eq!(e.code().map(|c| c.code()), Some("57014"));
        waiter.batch_execute("SELECT 1").await.expect("the waiter goes on");
        // The holder, idle in its block, is ended: FATAL 57P01, and its block rolls back.
        assert!(signalled(format!("SELECT pg_terminate_backend({holder_pid})")).await);
        let e = holder
            .batch_execute("SELECT 1")
            .await
            .expect_err("terminated");
        if let Some(db_error) = e.as_db_error() {
            assert_eq!(db_error.code().code(), "57P01");
        }
        waiter
            .batch_execute("UPDATE sig SET v = 3 WHERE id = 1")
            .await
            .expect("the holder's lock is gone");
        let v: i32 = waiter
            .query_one("SELECT v FROM sig WHERE id = 1", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(v, 3);
        assert!(!signalled("SELECT pg_cancel_backend(2147483647)".into()).await);
    });
}

#[test]
fn a_statement_the_scheduler_cannot_start_is_refused_with_53300_and_the_sessions_go_on() {
    // One worker with room for two started transactions: two open blocks take both.
    let sched = common::TestServer::sched_config().workers(1).task_pool(2);
    let server = common::TestServer::serve_scheduled(
        overtake_server::ServerConfig::default(),
        overtake_engine::Database::in_memory(overtake_engine::Options::default()),
        &sched,
    );
    runtime().block_on(async {
        let a = connect(&server.dsn("a")).await;
        let b = connect(&server.dsn("b")).await;
        let c = connect(&server.dsn("c")).await;
        c.batch_execute("CREATE TABLE p (k int PRIMARY KEY, v int); INSERT INTO p VALUES (1, 10)")
            .await
            .expect("setup");
        for open in [&a, &b] {
            open.batch_execute("BEGIN; SELECT 1").await.expect("block");
        }
        let code = |e: &tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        let e = c.batch_execute("SELECT 1").await.expect_err("no context");
        assert_eq!(code(&e).as_deref(), Some("53300"));
        // A point read needs no context: it runs in the step that serves its session.
        let point = c
            .query_one("SELECT v FROM p WHERE k = $1", &[&1])
            .await
            .expect("a point read is served");
        assert_eq!(point.get::<_, i32>(0), 10);
        let e = c
            .batch_execute("SELECT v FROM p WHERE k > 0")
            .await
            .expect_err("a range read needs a context");
        assert_eq!(code(&e).as_deref(), Some("53300"));
        let e = c
            .batch_execute("BEGIN; SELECT 1")
            .await
            .expect_err("no context for a block");
        assert_eq!(code(&e).as_deref(), Some("53300"));
        c.batch_execute("ROLLBACK").await.expect("rollback");
        // The open blocks were not disturbed, and once one ends its context serves again (it
        // is free once the block's task has returned, just after its COMMIT is answered).
        a.batch_execute("SELECT 2; COMMIT")
            .await
            .expect("a goes on");
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match c.batch_execute("SELECT 1").await {
                Ok(()) => break,
                Err(e) if code(&e).as_deref() == Some("53300") => {
                    assert!(std::time::Instant::now() < give_up, "never served again");
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }
        b.batch_execute("SELECT 2; COMMIT")
            .await
            .expect("b goes on");
    });
}

#[test]
fn crossed_row_locks_make_one_session_the_deadlock_victim_and_the_other_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let a = connect(&server.dsn("a")).await;
        a.batch_execute(
            "CREATE TABLE d (id int PRIMARY KEY, v int NOT NULL); INSERT INTO d VALUES (1, 0), (2, 0)",
        )
        .await
        .expect("setup");
        let b = connect(&server.dsn("b")).await;
        a.batch_execute("BEGIN; UPDATE d SET v = 1 WHERE id = 1")
            .await
            .expect("a locks 1");
        b.batch_execute("BEGIN; UPDATE d SET v = 2 WHERE id = 2")
            .await
            .expect("b locks 2");
        let a_waits = tokio::spawn(async move {
            let r = a.batch_execute("UPDATE d SET v = 1 WHERE id = 2").await;
            (a, r)
        });
        // A is seen waiting for row 2 (a state, not a timeout); B then closes the cycle.
        let db = server.database();
        until_a_lock_wait(&db).await;
        let rb = b.batch_execute("UPDATE d SET v = 2 WHERE id = 1").await;
        let (a, ra) = a_waits.await.expect("joined");
        let code = |r: &Result<(), tokio_postgres::Error>| {
            r.as_ref()
                .err()
                .and_then(|e| e.code())
                .map(|c| c.code().to_owned())
        };
        let (victim, winner, winner_v) = match (code(&ra), code(&rb)) {
            (Some(c), None) if c == "40P01" => (&a, &b, 2),
            (None, Some(c)) if c == "40P01" => (&b, &a, 1),
            other => panic!("want exactly one deadlock victim, got {other:?}"),
        };
        // The victim's block is failed until it rolls back; the winner commits both rows.
        let e = victim
            .batch_execute("SELECT 1")
            .await
            .expect_err("aborted block");
        assert_eq!(e.code().map(|c| c.code()), Some("25P02"));
        victim.batch_execute("ROLLBACK").await.expect("rollback");
        winner.batch_execute("COMMIT").await.expect("commit");
        let rows = victim
            .query("SELECT v FROM d ORDER BY id", &[])
            .await
            .expect("read");
        let v: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(v, [winner_v, winner_v]);
    });
}

#[test]
fn under_two_phase_locking_a_writer_waits_for_the_holder_of_its_row() {
    use overtake_engine::{Concurrency, LockPolicy, Options};
    let server = common::TestServer::start_with(
        overtake_server::ServerConfig::default(),
        Options::default().concurrency(Concurrency::TwoPhaseLocking(LockPolicy::Pow)),
    );
    runtime().block_on(async {
        let holder = connect(&server.dsn("holder")).await;
        holder
            .batch_execute(
                "CREATE TABLE l (id int PRIMARY KEY, v int NOT NULL); INSERT INTO l VALUES (1, 0)",
            )
            .await
            .expect("setup");
        holder
            .batch_execute("BEGIN; UPDATE l SET v = v + 1 WHERE id = 1")
            .await
            .expect("hold");
        let waiter = connect(&server.dsn("waiter")).await;
        let waiting = tokio::spawn(async move {
            let r = waiter
                .batch_execute("UPDATE l SET v = v + 10 WHERE id = 1")
                .await;
            (waiter, r)
        });
        let db = server.database();
        until_a_lock_wait(&db).await;
        holder.batch_execute("COMMIT").await.expect("commit");
        let (waiter, result) = waiting.await.expect("joined");
        result.expect("the waiter's update went ahead after the commit");
        let v: i32 = waiter
            .query_one("SELECT v FROM l WHERE id = 1", &[])
            .await
            .expect("read")
            .get(0);
        assert_eq!(v, 11);
    });
}

#[test]
fn what_postgresql_nests_runs_and_deeper_is_refused_with_54001() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("deep")).await;
        let value = |rows: Vec<tokio_postgres::SimpleQueryMessage>| {
            rows.into_iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
        };
        let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        // What PostgreSQL 15 runs with its default max_stack_depth runs here too: bound on a
        // network thread, evaluated on a worker task's stack, debug builds included.
        let casts = format!("SELECT 1{}", "::int".repeat(10_000));
        let got = client.simple_query(&casts).await.expect("10,000 casts");
        assert_eq!(value(got).as_deref(), Some("1"));
        let nulls = format!("SELECT 1{}", " IS NULL".repeat(10_000));
        let got = client.simple_query(&nulls).await.expect("10,000 IS NULLs");
        assert_eq!(value(got).as_deref(), Some("f"));
        let or = format!("SELECT {}", vec!["1 = 2"; 50_000].join(" OR "));
        let got = client.simple_query(&or).await.expect("a 50,000-term OR");
        assert_eq!(value(got).as_deref(), Some("f"));
        let and = format!("SELECT 1 WHERE {}", vec!["1 = 1"; 50_000].join(" AND "));
        let got = client.simple_query(&and).await.expect("a 50,000-term AND");
        assert_eq!(value(got).as_deref(), Some("1"));
        // Kept past their statement (copied: see `Ast::copy_of`) up to 15,000 levels, chains
        // of AND included.
        let and = vec!["1 = 1"; 14_000].join(" AND ");
        client
            .batch_execute(&format!(
                "BEGIN; DECLARE deep CURSOR FOR SELECT 1 WHERE {and}; CLOSE deep; COMMIT"
            ))
            .await
            .expect("a cursor over a long AND");
        client
            .batch_execute(&format!(
                "PREPARE deep AS SELECT 1 WHERE {and}; DEALLOCATE deep"
            ))
            .await
            .expect("PREPARE of a long AND");
        let sum = format!("SELECT {}", vec!["1"; 1_000].join(" + "));
        let got = client.simple_query(&sum).await.expect("a long sum");
        assert_eq!(value(got).as_deref(), Some("1000"));
        let nested = format!(
            "SELECT {}1{}",
            "(SELECT * FROM (SELECT ".repeat(200),
            ") t)".repeat(200)
        );
        let got = client
            .simple_query(&nested)
            .await
            .expect("200 nested queries");
        assert_eq!(value(got).as_deref(), Some("1"));
        let parens = format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000));
        let got = client
            .simple_query(&parens)
            .await
            .expect("5,000 parentheses");
        assert_eq!(value(got).as_deref(), Some("1"));
        // Deeper than PostgreSQL goes: 54001, and the server goes on.
        for deep in [
            format!("SELECT 1{}", "::int".repeat(50_000)),
            format!("SELECT 1{}", " IS NULL".repeat(50_000)),
            format!("SELECT 'a' || {}", vec!["'a'"; 50_000].join(" || ")),
            format!("SELECT {}1{}", "(".repeat(20_000), ")".repeat(20_000)),
            // Queries nested in FROM, in expressions and as WHERE's EXISTS.
            format!(
                "SELECT * FROM {}(SELECT 1 AS a) t{}",
                "(SELECT * FROM ".repeat(3_000),
                ") t".repeat(3_000)
            ),
            format!("SELECT {}1{}", "(SELECT ".repeat(3_000), ")".repeat(3_000)),
            // Statements kept past the one that holds them, and EXECUTE's arguments.
            format!(
                "DECLARE c CURSOR WITH HOLD FOR SELECT 1{}",
                " IS NULL".repeat(50_000)
            ),
            format!("PREPARE p AS SELECT 1{}", "::int".repeat(50_000)),
            format!("EXECUTE p({})", vec!["1"; 50_000].join(" + ")),
            format!(
                "DECLARE c CURSOR WITH HOLD FOR SELECT 1 WHERE {}",
                vec!["true"; 100_000].join(" AND ")
            ),
            format!(
                "SELECT 1 WHERE {}true{}",
                "EXISTS (SELECT 1 WHERE ".repeat(2_000),
                ")".repeat(2_000)
            ),
        ] {
            let e = client.simple_query(&deep).await.expect_err("too deep");
            assert_eq!(code(e).as_deref(), Some("54001"));
        }
        let got = client
            .simple_query("SELECT 2")
            .await
            .expect("still serving");
        assert_eq!(value(got).as_deref(), Some("2"));
    });
}

#[test]
fn task_tier_moves_a_sessions_statements_into_its_tier_and_they_are_booked_under_its_group() {
    use overtake_sched::{Group, Tier, Weight};
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("tiers")).await;
        c.batch_execute("CREATE TABLE g (id int PRIMARY KEY)")
            .await
            .expect("create");
        // Asked for `high`, but in the background tier: it runs at the lowest level.
        c.batch_execute("SET priority = 'high'; SET task_tier = 'background'; SET task_weight = 7")
            .await
            .expect("set");
        let before = finished(&server);
        c.query("SELECT count(*) FROM g", &[])
            .await
            .expect("select");
        finished_after(&server, Priority::LOW, &before);
        let background = Group::new(Tier::Background, Weight::new(7).expect("weight"));
        let stats = server.scheduler.as_ref().expect("running").stats();
        assert_eq!(stats.group(background).map(|s| s.committed), Some(1));
        // Back in the time-sensitive tier, at its own level, in a transaction with SET LOCAL.
        c.batch_execute("RESET task_tier; BEGIN; SET LOCAL task_weight = 250")
            .await
            .expect("set local");
        let before = finished(&server);
        c.batch_execute("INSERT INTO g VALUES (1); COMMIT")
            .await
            .expect("insert");
        finished_after(&server, Priority::HIGH, &before);
        let heavy = Group::new(Tier::TimeSensitive, Weight::new(250).expect("weight"));
        let stats = server.scheduler.as_ref().expect("running").stats();
        assert_eq!(stats.group(heavy).map(|s| s.committed), Some(1));
        // A group apart of the same tier and weight, booked under its own number.
        c.batch_execute("SET task_weight = 250; SET task_group = 2")
            .await
            .expect("set group");
        let before = finished(&server);
        c.query("SELECT count(*) FROM g", &[])
            .await
            .expect("select");
        finished_after(&server, Priority::HIGH, &before);
        let stats = server.scheduler.as_ref().expect("running").stats();
        assert_eq!(stats.group(heavy.numbered(2)).map(|s| s.committed), Some(1));
        assert_eq!(stats.group(heavy).map(|s| s.committed), Some(1));
    });
}

#[test]
fn an_error_before_a_statement_runs_fails_the_block_in_the_extended_protocol_too() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("app")).await;
        c.batch_execute("CREATE TABLE pre (k int PRIMARY KEY)")
            .await
            .expect("create");
        let code = |e: tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        c.batch_execute("BEGIN").await.expect("begin");
        c.execute("INSERT INTO pre VALUES ($1)", &[&1i32])
            .await
            .expect("insert");
        // Parse fails: the table does not exist.
        let e = c.prepare("SELECT * FROM no_such_table").await.unwrap_err();
        assert_eq!(code(e).as_deref(), Some("42P01"));
        // The block has failed: every statement is refused, at Parse as at Execute.
        let e = c
            .execute("INSERT INTO pre VALUES ($1)", &[&2i32])
            .await
            .unwrap_err();
        assert_eq!(code(e).as_deref(), Some("25P02"));
        let e = c.simple_query("SELECT 1").await.unwrap_err();
        assert_eq!(code(e).as_deref(), Some("25P02"));
        // COMMIT ends it, rolling back.
        c.batch_execute("COMMIT").await.expect("commit");
        let n: i64 = c
            .query_one("SELECT count(*) FROM pre", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 0, "nothing of the failed block was kept");
    });
}

#[test]
fn past_max_connections_a_connection_is_refused_with_53300_until_one_leaves() {
    let config = overtake_server::ServerConfig {
        max_connections: 2,
        superuser_reserved_connections: 0,
        ..Default::default()
    };
    let server = common::TestServer::start_with(config, overtake_engine::Options::default());
    runtime().block_on(async {
        let first = connect(&server.dsn("a")).await;
        let second = connect(&server.dsn("b")).await;
        let refused = tokio_postgres::connect(&server.dsn("c"), NoTls)
            .await
            .err()
            .expect("a third connection is refused");
        assert_eq!(refused.code().map(|c| c.code()), Some("53300"));
        // The two admitted ones go on.
        first.simple_query("SELECT 1").await.expect("first");
        second.simple_query("SELECT 1").await.expect("second");
        // Once one leaves, its place is free again (the server notices the close when it reads
        // the connection's end: wait for that state, not for a time).
        drop(first);
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match tokio_postgres::connect(&server.dsn("c"), NoTls).await {
                Ok((client, connection)) => {
                    tokio::spawn(connection);
                    client.simple_query("SELECT 1").await.expect("third");
                    break;
                }
                Err(e) => {
                    assert_eq!(e.code().map(|c| c.code()), Some("53300"));
                    assert!(
                        std::time::Instant::now() < give_up,
                        "the place never came back"
                    );
                    tokio::task::yield_now().await;
                }
            }
        }
    });
}

#[test]
fn constraint_errors_carry_the_fields_drivers_read_as_postgresql_fills_them() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("app")).await;
        c.batch_execute(
            "CREATE TABLE ef (id int PRIMARY KEY, name text NOT NULL, n int);
             INSERT INTO ef VALUES (1, 'a', 1)",
        )
        .await
        .expect("setup");
        // What PostgreSQL 15 reports for the same statements (psql, VERBOSITY verbose).
        let fields = |e: tokio_postgres::Error| {
            let d = e.as_db_error().expect("a database error").clone();
            (
                d.code().code().to_owned(),
                d.message().to_owned(),
                d.detail().map(str::to_owned),
                d.schema().map(str::to_owned),
                d.table().map(str::to_owned),
                d.column().map(str::to_owned),
                d.constraint().map(str::to_owned),
            )
        };
        let some = |s: &str| Some(s.to_owned());
        let e = c
            .batch_execute("INSERT INTO ef VALUES (1, 'b', 2)")
            .await
            .unwrap_err();
        assert_eq!(
            fields(e),
            (
                "23505".to_owned(),
                "duplicate key value violates unique constraint \"ef_pkey\"".to_owned(),
                some("Key (id)=(1) already exists."),
                some("public"),
                some("ef"),
                None,
                some("ef_pkey"),
            )
        );
        let e = c
            .batch_execute("INSERT INTO ef VALUES (2, NULL, 3)")
            .await
            .unwrap_err();
        assert_eq!(
            fields(e),
            (
                "23502".to_owned(),
                "null value in column \"name\" of relation \"ef\" violates not-null constraint"
                    .to_owned(),
                some("Failing row contains (2, null, 3)."),
                some("public"),
                some("ef"),
                some("name"),
                None,
            )
        );
        let e = c
            .batch_execute("UPDATE ef SET name = NULL WHERE id = 1")
            .await
            .unwrap_err();
        assert_eq!(
            fields(e).2.as_deref(),
            Some("Failing row contains (1, null, 1).")
        );
    });
}

#[test]
fn the_extended_protocols_statements_up_to_sync_are_one_implicit_transaction() {
    let server = common::TestServer::start();
    let mut raw = Raw::connect(server.port);
    assert!(
        raw.query("CREATE TABLE batch (k int PRIMARY KEY)")
            .1
            .is_empty()
    );
    // Two inserts before one Sync, the second a duplicate: neither is kept (PostgreSQL).
    raw.execute("INSERT INTO batch VALUES (1)");
    raw.execute("INSERT INTO batch VALUES (1)");
    raw.send(b'S', &[]);
    let (kinds, codes) = raw.until_ready();
    assert_eq!(codes, vec!["23505".to_owned()]);
    assert_eq!(kinds.iter().filter(|k| **k == b'C').count(), 1, "{kinds:?}");
    let count = |raw: &mut Raw| {
        raw.send(b'Q', b"SELECT count(*) FROM batch\0");
        let mut head = [0u8; 5];
        loop {
            raw.0.read_exact(&mut head).expect("a message");
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
            let mut body = vec![0u8; len];
            raw.0.read_exact(&mut body).expect("its body");
            if head[0] == b'D' {
                let n = String::from_utf8_lossy(&body[6..]).into_owned();
                raw.until_ready();
                return n;
            }
        }
    };
    assert_eq!(
        count(&mut raw),
        "0",
        "the first insert rolled back with the second"
    );
    // Two good ones before one Sync: both kept; then one alone.
    raw.execute("INSERT INTO batch VALUES (2)");
    raw.execute("INSERT INTO batch VALUES (3)");
    raw.send(b'S', &[]);
    assert!(raw.until_ready().1.is_empty());
    raw.execute("INSERT INTO batch VALUES (4)");
    raw.send(b'S', &[]);
    let (kinds, codes) = raw.until_ready();
    assert!(codes.is_empty());
    assert_eq!(kinds, vec![b'1', b'2', b'C', b'Z']);
    assert_eq!(count(&mut raw), "3");
    // Execute and Flush: the answer comes without a Sync.
    raw.execute("SELECT 1");
    raw.send(b'H', &[]);
    let mut head = [0u8; 5];
    let mut seen = Vec::new();
    while !seen.contains(&b'C') {
        raw.0.read_exact(&mut head).expect("an answer before Sync");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
        let mut body = vec![0u8; len];
        raw.0.read_exact(&mut body).expect("its body");
        seen.push(head[0]);
    }
    raw.send(b'S', &[]);
    assert!(raw.until_ready().1.is_empty());
}

#[test]
fn ddl_racing_ddl_on_the_same_table_waits_and_then_fails_rather_than_lose_a_change() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let a = connect(&server.dsn("a")).await;
        let b = connect(&server.dsn("b")).await;
        a.batch_execute(
            "CREATE TABLE raced (k int PRIMARY KEY, v int NOT NULL, w int NOT NULL);
             INSERT INTO raced VALUES (1, 1, 1)",
        )
        .await
        .expect("setup");
        a.batch_execute("BEGIN; CREATE INDEX raced_v ON raced (v)")
            .await
            .expect("a's index");
        // b's change of the same table waits for a's block (its catalog row is locked)...
        let racer = tokio::spawn(async move {
            b.batch_execute("BEGIN").await.expect("begin");
            let outcome = b.batch_execute("CREATE INDEX raced_w ON raced (w)").await;
            let _ = b.batch_execute("ROLLBACK").await;
            outcome
        });
        // Wait for the state: b waits for a row lock (a's catalog row).
        let db = server.database();
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while db.lock_waits().is_empty() {
            assert!(std::time::Instant::now() < give_up, "b never waited");
            tokio::task::yield_now().await;
        }
        a.batch_execute("INSERT INTO raced VALUES (2, 2, 2); COMMIT")
            .await
            .expect("a commits");
        // ...and, finding the table changed when a commits, fails instead of building on the
        // table a replaced.
        let e = racer
            .await
            .expect("b's task")
            .expect_err("b's change fails");
        assert_eq!(e.code().map(|c| c.code()), Some("40001"));
        let n: i64 = a
            .query_one("SELECT count(*) FROM raced WHERE v = 2", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 1, "a's index and rows are kept");
    });
}

#[test]
fn a_session_idle_in_a_transaction_past_its_timeout_is_ended_and_its_block_rolled_back() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let owner = connect(&server.dsn("owner")).await;
        owner
            .batch_execute("CREATE TABLE idle (k int PRIMARY KEY, v int NOT NULL); INSERT INTO idle VALUES (1, 0)")
            .await
            .expect("setup");
        let mut idler = Raw::connect(server.port);
        assert!(
            idler
                .query("SET idle_in_transaction_session_timeout = '50ms'")
                .1
                .is_empty()
        );
        let before = finished(&server);
        let (_, codes) = idler.query("BEGIN; UPDATE idle SET v = 1 WHERE k = 1");
        assert!(codes.is_empty(), "the block's update: {codes:?}");
        // The block's task ends (rolled back) once the timeout passes: wait for that state.
        finished_after(&server, Priority::MEDIUM, &before);
        // Its row lock is gone: another session's update of the row goes through at once.
        owner
            .batch_execute("UPDATE idle SET v = 2 WHERE k = 1")
            .await
            .expect("the row is free");
        // The idle session is ended at once, unasked: FATAL 25P03, then the close (no
        // ReadyForQuery), as PostgreSQL ends it.
        let (kinds, codes) = idler.until_closed();
        assert_eq!((kinds, codes), (vec![b'E'], vec!["25P03".to_owned()]));
        let v: i32 = owner
            .query_one("SELECT v FROM idle WHERE k = 1", &[])
            .await
            .expect("select")
            .get(0);
        assert_eq!(v, 2, "the idle block's update was rolled back");
    });
}

/// What the server answers a client's SSLRequest with (`S`: go on with TLS; `N`: no TLS).
fn ssl_answer(port: u16) -> u8 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("tcp");
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .expect("timeout");
    s.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .expect("SSLRequest");
    let mut answer = [0u8; 1];
    s.read_exact(&mut answer).expect("an answer");
    answer[0]
}

#[test]
fn with_a_certificate_the_server_offers_tls_and_without_one_it_declines() {
    let plain = common::TestServer::start();
    assert_eq!(ssl_answer(plain.port), b'N');
    let dir = std::env::temp_dir().join(format!("overtake-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).expect("write cert");
    std::fs::write(&key, made.key_pair.serialize_pem()).expect("write key");
    let config = overtake_server::ServerConfig {
        tls: Some((cert.clone(), key.clone())),
        ..Default::default()
    };
    let tls = common::TestServer::start_with(config, overtake_engine::Options::default());
    assert_eq!(ssl_answer(tls.port), b'S');
    // A file that is not a certificate is refused when the server starts, naming it.
    std::fs::write(&cert, "not a certificate").expect("write");
    let config = overtake_server::ServerConfig {
        listen: "127.0.0.1:0".parse().expect("address"),
        tls: Some((cert.clone(), key)),
        ..Default::default()
    };
    let scheduler = std::sync::Arc::new(
        overtake_sched::Scheduler::start(
            &common::TestServer::sched_config(),
            std::sync::Arc::new(overtake_sched::CallExecutor),
        )
        .expect("scheduler"),
    );
    let db = std::sync::Arc::new(overtake_engine::Database::in_memory(Default::default()));
    let err = overtake_server::Server::start(&config, db, scheduler, None)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("cert.pem"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_login_is_answered_late_and_a_right_one_goes_through() {
    let dir = std::env::temp_dir().join(format!("overtake-scram-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("passwords");
    std::fs::write(&file, "alice:s3cret\n").expect("write");
    let config = overtake_server::ServerConfig {
        password_file: Some(file),
        ..Default::default()
    };
    let server = common::TestServer::start_with(config, overtake_engine::Options::default());
    runtime().block_on(async {
        let dsn = |password: &str| format!("{} password={password}", server.dsn("alice"));
        let (client, connection) = tokio_postgres::connect(&dsn("s3cret"), NoTls)
            .await
            .expect("the right password");
        tokio::spawn(connection);
        client.simple_query("SELECT 1").await.expect("served");
        let started = std::time::Instant::now();
        let e = tokio_postgres::connect(&dsn("wrong"), NoTls)
            .await
            .err()
            .expect("a wrong password is refused");
        assert_eq!(e.code().map(|c| c.code()), Some("28P01"));
        // A lower bound only (the delay is a sleep): guessing costs at least this per guess.
        assert!(started.elapsed() >= std::time::Duration::from_millis(500));
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn current_user_and_session_user_name_the_sessions_user() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("alice")).await;
        let row = c
            .query_one("SELECT current_user, session_user", &[])
            .await
            .expect("select");
        let (current, session): (String, String) = (row.get(0), row.get(1));
        assert_eq!((current.as_str(), session.as_str()), ("alice", "alice"));
    });
}

#[test]
fn point_reads_in_a_block_keep_its_isolation_and_its_rules() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let a = connect(&server.dsn("a")).await;
        let b = connect(&server.dsn("b")).await;
        a.batch_execute("CREATE TABLE pr (k int PRIMARY KEY, v int); INSERT INTO pr VALUES (1, 1)")
            .await
            .expect("setup");
        let value = async |c: &tokio_postgres::Client| -> i32 {
            c.query_one("SELECT v FROM pr WHERE k = $1", &[&1])
                .await
                .expect("read")
                .get(0)
        };
        let code = |e: &tokio_postgres::Error| e.code().map(|c| c.code().to_owned());
        // READ COMMITTED: each statement sees what committed before it.
        a.batch_execute("BEGIN").await.expect("begin");
        assert_eq!(value(&a).await, 1);
        b.batch_execute("UPDATE pr SET v = 2 WHERE k = 1")
            .await
            .expect("update");
        assert_eq!(value(&a).await, 2, "a fresh snapshot per statement");
        let e = a
            .batch_execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            .await
            .expect_err("a query has run");
        assert_eq!(code(&e).as_deref(), Some("25001"));
        a.batch_execute("COMMIT").await.expect("commit");
        // REPEATABLE READ: one snapshot from the first statement on.
        a.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            .await
            .expect("begin");
        assert_eq!(value(&a).await, 2);
        b.batch_execute("UPDATE pr SET v = 3 WHERE k = 1")
            .await
            .expect("update");
        assert_eq!(value(&a).await, 2, "the block's snapshot");
        a.batch_execute("COMMIT").await.expect("commit");
        assert_eq!(value(&a).await, 3);
        // A point read that fails fails its block.
        b.batch_execute("UPDATE pr SET v = 0 WHERE k = 1")
            .await
            .expect("update");
        a.batch_execute("BEGIN").await.expect("begin");
        let e = a
            .query_one("SELECT 1 / v FROM pr WHERE k = $1", &[&1])
            .await
            .expect_err("division by zero");
        assert_eq!(code(&e).as_deref(), Some("22012"));
        let e = a
            .query_one("SELECT v FROM pr WHERE k = $1", &[&1])
            .await
            .expect_err("the block failed");
        assert_eq!(code(&e).as_deref(), Some("25P02"));
        let rows = a.simple_query("COMMIT").await.expect("commit");
        assert!(
            rows.iter()
                .any(|m| matches!(m, tokio_postgres::SimpleQueryMessage::CommandComplete(_))),
            "answered"
        );
        assert_eq!(value(&a).await, 0, "out of the block again");
    });
}

/// How many sessions each of the server's workers serves now.
fn sessions_per_worker(server: &common::TestServer) -> Vec<usize> {
    let serving = server.server.as_ref().expect("serving");
    serving.sessions_per_worker()
}

/// Waits (for as long as a loaded machine may take) until the workers serve `want` sessions.
async fn until_sessions_per_worker(server: &common::TestServer, want: &[usize]) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let served = || sessions_per_worker(server);
    while served() != want {
        assert!(
            std::time::Instant::now() < give_up,
            "the workers serve {:?} sessions, not {want:?}",
            served()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[test]
fn a_session_moves_to_a_worker_with_fewer_sessions_between_statements_but_not_in_a_block() {
    let server = common::TestServer::start();
    let served = || sessions_per_worker(&server);
    runtime().block_on(async {
        // Placed by load at connect time: a and c on the first worker, b on the second.
        let a = connect(&server.dsn("a")).await;
        let b = connect(&server.dsn("b")).await;
        let c = connect(&server.dsn("c")).await;
        assert_eq!(served(), [2, 1]);
        a.batch_execute("CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
            .await
            .expect("table");
        assert_eq!(served(), [2, 1], "one more session is as even as it gets");
        drop(b);
        until_sessions_per_worker(&server, &[2, 0]).await;
        // A block's task runs on its worker: the session stays until the block ends.
        a.simple_query("BEGIN").await.expect("begin");
        a.simple_query("UPDATE t SET v = v + 1")
            .await
            .expect("update");
        a.simple_query("SELECT v FROM t").await.expect("read");
        assert_eq!(served(), [2, 0], "in a block");
        a.simple_query("COMMIT").await.expect("commit");
        // Moved before its answer was sent: the idle worker serves it now.
        assert_eq!(served(), [1, 1]);
        // Its statements run where it is now, and see what it wrote before it moved.
        let rows = a
            .query("SELECT v FROM t WHERE k = $1", &[&1])
            .await
            .expect("read");
        assert_eq!(rows[0].get::<_, i32>(0), 1);
        a.simple_query("UPDATE t SET v = v + 1")
            .await
            .expect("update");
        c.simple_query("SELECT 1").await.expect("c goes on");
        assert_eq!(served(), [1, 1], "no move back");
        let rows = c
            .query("SELECT v FROM t WHERE k = 1", &[])
            .await
            .expect("read");
        assert_eq!(rows[0].get::<_, i32>(0), 2);
    });
}
