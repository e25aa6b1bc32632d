//! Automatic ANALYZE: a table written past autovacuum's threshold (50 rows and a tenth of its
//! rows when last analyzed) is analyzed in the background, at the lowest priority, and its
//! `pg_class.reltuples` then shows the rows it counted, as PostgreSQL's autovacuum makes it.

use std::time::{Duration, Instant};

use crate::common;
use common::{connect, runtime};

/// `reltuples` of `table`, once it is `want` (the ANALYZE runs after the statement that made
/// it due, in the background): polled, with a generous deadline for a loaded machine.
async fn reltuples_becomes(client: &tokio_postgres::Client, table: &str, want: f64) {
    let give_up = Instant::now() + Duration::from_secs(120);
    loop {
        let row = client
            .query_one(
                "SELECT reltuples FROM pg_class WHERE relname = $1",
                &[&table],
            )
            .await
            .expect("pg_class");
        let got: f64 = row.get(0);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "{table}: reltuples {got}, never {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn a_table_written_past_the_threshold_is_analyzed_in_the_background() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("stats")).await;
        client
            .batch_execute("CREATE TABLE aa (id int PRIMARY KEY, v int)")
            .await
            .expect("create");
        // 50 rows: not yet due (PostgreSQL's threshold is more than 50).
        client
            .batch_execute("INSERT INTO aa SELECT g, g FROM generate_series(1, 50) g")
            .await
            .expect("insert");
        let row = client
            .query_one("SELECT reltuples FROM pg_class WHERE relname = 'aa'", &[])
            .await
            .expect("pg_class");
        assert_eq!(row.get::<_, f64>(0), -1.0, "analyzed before it was due");
        // The 51st row makes it due.
        client
            .batch_execute("INSERT INTO aa VALUES (51, 51)")
            .await
            .expect("insert");
        reltuples_becomes(&client, "aa", 51.0).await;
        // Then past 50 and a tenth of 51 rows more (55.1): 51 updated are not enough, 10
        // deleted more are.
        client
            .batch_execute("UPDATE aa SET v = v + 1")
            .await
            .expect("update");
        client
            .batch_execute("DELETE FROM aa WHERE id <= 10")
            .await
            .expect("delete");
        reltuples_becomes(&client, "aa", 41.0).await;
        // COPY counts too.
        let sink = client.copy_in("COPY aa FROM STDIN").await.expect("copy");
        use futures::SinkExt;
        let data: String = (100..200).map(|i| format!("{i}\t{i}\n")).collect();
        let mut sink = Box::pin(sink);
        sink.send(bytes::Bytes::from(data)).await.expect("send");
        sink.close().await.expect("close");
        reltuples_becomes(&client, "aa", 141.0).await;
    });
}

/// EXPLAIN's first line as postgres_fdw reads it with `use_remote_estimate`: the first
/// parenthesis is `(cost=startup..total rows=n width=w)`. Returns (startup, total, rows, width).
fn estimate_of(line: &str) -> (f64, f64, f64, u32) {
    let inside = line
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_prefix("cost="))
        .and_then(|rest| rest.split_once(')'))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("no estimate first in {line:?}"));
    let (costs, rest) = inside.split_once(" rows=").expect("rows");
    let (rows, width) = rest.split_once(" width=").expect("width");
    let (startup, total) = costs.split_once("..").expect("startup..total");
    let number = |s: &str| {
        s.parse::<f64>()
            .unwrap_or_else(|_| panic!("{s:?} in {line:?}"))
    };
    (
        number(startup),
        number(total),
        number(rows),
        width.parse().expect("width"),
    )
}

#[test]
fn explain_shows_estimates_that_postgres_fdw_can_read() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let client = connect(&server.dsn("stats")).await;
        client
            .batch_execute(
                "CREATE TABLE est (id int PRIMARY KEY, v text); \
                 INSERT INTO est SELECT g, 'v' || g FROM generate_series(1, 400) g; ANALYZE est",
            )
            .await
            .expect("load");
        let first_line = |sql: &'static str| {
            let client = &client;
            async move {
                let rows = client.simple_query(sql).await.expect("explain");
                rows.iter()
                    .find_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                        _ => None,
                    })
                    .expect("a plan line")
            }
        };
        let key = estimate_of(&first_line("EXPLAIN SELECT * FROM est WHERE id = 7").await);
        assert_eq!(key.2, 1.0, "one row by its key: {key:?}");
        assert!(key.3 > 0, "a width: {key:?}");
        let scan = estimate_of(&first_line("EXPLAIN SELECT * FROM est").await);
        assert_eq!(scan.2, 400.0, "the rows ANALYZE counted: {scan:?}");
        assert!(scan.0 <= scan.1 && key.1 < scan.1, "{key:?} {scan:?}");
        let limited = estimate_of(&first_line("EXPLAIN SELECT * FROM est LIMIT 5").await);
        assert_eq!(limited.2, 5.0, "{limited:?}");
        let counted = estimate_of(&first_line("EXPLAIN SELECT count(*) FROM est").await);
        assert_eq!(counted.2, 1.0, "{counted:?}");
        // COSTS off, as PostgreSQL's regression tests use it: no estimate.
        let off = first_line("EXPLAIN (COSTS OFF) SELECT * FROM est WHERE id = 7").await;
        assert_eq!(off, "Index Scan using est_pkey on est");
        let err = client
            .simple_query("EXPLAIN (COSTS maybe) SELECT 1")
            .await
            .expect_err("not a Boolean");
        assert_eq!(err.code().map(|c| c.code()), Some("42601"));
    });
}
