//! `--session-threads`: each session's statements run on its own OS thread, scheduled by the
//! operating system (here SCHED_IDLE for the background tier), not on the scheduler's workers.

use crate::common;

use overtake_sched::OsScheduling;
use overtake_server::ServerConfig;
use tokio_postgres::NoTls;

/// The scheduling policy (`SCHED_*`) of this process's threads named `session-*`.
fn session_thread_policies() -> Vec<i64> {
    let tasks = std::fs::read_dir("/proc/self/task").expect("tasks");
    tasks
        .flatten()
        .filter_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            if !comm.starts_with("session-") {
                return None;
            }
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // Fields after the command (in parentheses); the policy is field 41.
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.split_whitespace().nth(41 - 3)?.parse().ok()
        })
        .collect()
}

/// A server whose sessions run on their own threads, background ones SCHED_IDLE.
fn serve_on_session_threads() -> common::TestServer {
    common::TestServer::start_with(
        ServerConfig {
            session_threads: Some(OsScheduling::Idle),
            ..ServerConfig::default()
        },
        overtake_engine::Options::default(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

async fn connect(server: &common::TestServer) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&server.dsn("app"), NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

#[test]
fn statements_run_on_the_sessions_own_thread_in_its_tiers_scheduling_class() {
    let server = serve_on_session_threads();
    runtime().block_on(async {
        let client = connect(&server).await;
        client
            .batch_execute(
                "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL);
                 INSERT INTO t VALUES (1, 10), (2, 20);
                 BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; COMMIT;",
            )
            .await
            .expect("statements");
        let sum: i64 = client
            .query_one("SELECT sum(v) FROM t", &[])
            .await
            .expect("select")
            .get(0);
        assert_eq!(sum, 31);
        assert!(
            !session_thread_policies().contains(&i64::from(libc::SCHED_IDLE)),
            "a time-sensitive session runs in the ordinary class"
        );
        client
            .batch_execute("SET task_tier = 'background'; SELECT 1")
            .await
            .expect("background statement");
        assert!(
            session_thread_policies().contains(&i64::from(libc::SCHED_IDLE)),
            "the background session's thread is SCHED_IDLE: {:?}",
            session_thread_policies()
        );
    });
    // None of it ran on the workers.
    let stats = server.scheduler.as_ref().expect("running").stats();
    let ran: u64 = stats
        .levels
        .iter()
        .map(|c| c.committed + c.rolled_back + c.failed)
        .sum();
    assert_eq!(ran, 0, "statements went to the scheduler");
}

#[test]
fn ddl_in_a_block_on_a_session_thread_runs_in_the_blocks_transaction() {
    let server = serve_on_session_threads();
    runtime().block_on(async {
        let client = connect(&server).await;
        // Each statement its own message: the block's task holds the session's thread between
        // them, so DDL must run in that task (sent to the thread apart, it waited forever).
        for sql in [
            "BEGIN",
            "CREATE TABLE made (k int PRIMARY KEY)",
            "INSERT INTO made VALUES (1)",
            "CREATE INDEX made_k ON made (k)",
            "COMMIT",
        ] {
            client.batch_execute(sql).await.expect(sql);
        }
        let n: i64 = client
            .query_one("SELECT count(*) FROM made", &[])
            .await
            .expect("select")
            .get(0);
        assert_eq!(n, 1);
    });
}
