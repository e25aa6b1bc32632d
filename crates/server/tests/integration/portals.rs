//! Portals fetched a few rows at a time (Execute with a row limit, as drivers' cursors use it),
//! answered as PostgreSQL 15 answers them: suspended at the limit, counted per fetch, alive until
//! their transaction ends, interleaved with the block's other statements, closed early without
//! failing the block.

use crate::common;

use common::raw::Raw;
use common::{connect, runtime, tables};

/// Fetches `portal` `per_fetch` rows at a time until a fetch gives fewer; the rows' first two
/// integer columns.
async fn fetch_all(
    t: &tokio_postgres::Transaction<'_>,
    portal: &tokio_postgres::Portal,
    per_fetch: i32,
) -> Vec<(i32, i32)> {
    let mut all = Vec::new();
    loop {
        let rows = t.query_portal(portal, per_fetch).await.expect("fetch");
        let n = rows.len();
        all.extend(
            rows.iter()
                .map(|r| (r.get::<_, i32>(0), r.get::<_, i32>(1))),
        );
        if n < per_fetch as usize {
            return all;
        }
    }
}

#[test]
fn a_portal_is_fetched_in_parts_while_other_statements_of_its_block_run() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let mut c = connect(&server.dsn("fetcher")).await;
        tables(&c).await;
        let t = c.transaction().await.expect("begin");
        let join = t
            .prepare("SELECT a.i, b.i FROM a, b")
            .await
            .expect("prepare");
        let portal = t.bind(&join, &[]).await.expect("bind");
        let first = t.query_portal(&portal, 1_000).await.expect("first fetch");
        assert_eq!(first.len(), 1_000);
        // Another statement of the block runs between fetches (the portal's rest is set aside).
        t.execute("INSERT INTO b VALUES (1000)", &[])
            .await
            .expect("insert between fetches");
        let mut seen: Vec<(i32, i32)> = first
            .iter()
            .map(|r| (r.get::<_, i32>(0), r.get::<_, i32>(1)))
            .collect();
        seen.extend(fetch_all(&t, &portal, 1_000).await);
        // Every row once; the insert made after the portal began is not among them.
        assert_eq!(seen.len(), 100_000);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 100_000);
        assert!(seen.iter().all(|(_, b)| *b < 100));
        // A second portal, begun after the insert, sees it; one fetched with no limit gives all.
        let b = t.prepare("SELECT i, i FROM b").await.expect("prepare");
        let portal = t.bind(&b, &[]).await.expect("bind");
        assert_eq!(fetch_all(&t, &portal, 7).await.len(), 101);
        t.commit().await.expect("commit");
        let n: i64 = c
            .query_one("SELECT count(*) FROM b", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 101);
    });
}

#[test]
fn a_portal_closed_before_its_end_stops_its_statement_and_its_block_commits() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let mut c = connect(&server.dsn("fetcher")).await;
        tables(&c).await;
        let t = c.transaction().await.expect("begin");
        t.execute("INSERT INTO b VALUES (1000)", &[])
            .await
            .expect("insert");
        let join = t
            .prepare("SELECT a.i, b.i FROM a, b")
            .await
            .expect("prepare");
        let portal = t.bind(&join, &[]).await.expect("bind");
        assert_eq!(t.query_portal(&portal, 10).await.expect("fetch").len(), 10);
        // COMMIT ends the portal, 100,090 rows short of its end.
        t.commit().await.expect("commit");
        let n: i64 = c
            .query_one("SELECT count(*) FROM b", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 101);
    });
}

/// Bind of `statement` to `portal` (no parameters, text results).
fn bind(portal: &str, statement: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for name in [portal, statement] {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
    }
    body.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    body
}

/// Execute of `portal`, at most `rows` rows (0: all).
fn execute(portal: &str, rows: u32) -> Vec<u8> {
    let mut body = portal.as_bytes().to_vec();
    body.push(0);
    body.extend_from_slice(&rows.to_be_bytes());
    body
}

/// Parse of `sql` as statement `name`.
fn parse(name: &str, sql: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for text in [name, sql] {
        body.extend_from_slice(text.as_bytes());
        body.push(0);
    }
    body.extend_from_slice(&[0, 0]);
    body
}

#[test]
fn fetches_suspend_count_and_end_as_in_postgresql() {
    let server = common::TestServer::start();
    let mut raw = Raw::connect(server.port);
    raw.query("CREATE TABLE t (a int PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3), (4), (5)");

    // Outside a block: suspended at each limit, then the last rows counted alone, then nothing
    // more; the portal ends with the implicit transaction at Sync.
    raw.send(b'P', &parse("s", "SELECT a FROM t ORDER BY a"));
    raw.send(b'B', &bind("", "s"));
    for _ in 0..4 {
        raw.send(b'E', &execute("", 2));
    }
    raw.send(b'S', &[]);
    let (kinds, codes) = raw.until_ready();
    assert_eq!(
        kinds,
        b"12DDsDDsDCCZ",
        "{:?}",
        String::from_utf8_lossy(&kinds)
    );
    assert!(codes.is_empty());
    raw.send(b'E', &execute("", 2));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().1, ["34000"], "the portal ended at Sync");

    // A fetch that ends exactly at the limit suspends (PostgreSQL does not look ahead).
    raw.send(b'B', &bind("", "s"));
    raw.send(b'E', &execute("", 5));
    raw.send(b'E', &execute("", 5));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().0, b"2DDDDDsCZ");

    // In a block, a named portal lives across Syncs until the block ends, and its name is
    // taken meanwhile.
    raw.query("BEGIN");
    raw.send(b'B', &bind("p", "s"));
    raw.send(b'E', &execute("p", 1));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().0, b"2DsZ");
    raw.send(b'E', &execute("p", 0));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().0, b"DDDDCZ");
    raw.query("COMMIT");
    raw.send(b'E', &execute("p", 1));
    raw.send(b'S', &[]);
    assert_eq!(
        raw.until_ready().1,
        ["34000"],
        "the portal ended with its block"
    );
    raw.query("BEGIN");
    raw.send(b'B', &bind("p", "s"));
    raw.send(b'B', &bind("p", "s"));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().1, ["42P03"]);
    raw.query("ROLLBACK");

    // A statement that writes runs whole at its first fetch; its portal cannot run again.
    raw.send(b'P', &parse("u", "UPDATE t SET a = a WHERE a < 4"));
    raw.send(b'B', &bind("", "u"));
    raw.send(b'E', &execute("", 1));
    raw.send(b'E', &execute("", 1));
    raw.send(b'S', &[]);
    let (kinds, codes) = raw.until_ready();
    assert_eq!(kinds, b"12CEZ");
    assert_eq!(codes, ["55000"]);

    // An error fails the block, and a portal of a failed block gives 25P02.
    raw.query("BEGIN");
    raw.send(b'B', &bind("q", "s"));
    raw.send(b'E', &execute("q", 2));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().0, b"2DDsZ");
    assert_eq!(raw.query("SELECT 1 / 0").1, ["22012"]);
    raw.send(b'E', &execute("q", 2));
    raw.send(b'S', &[]);
    assert_eq!(raw.until_ready().1, ["25P02"]);
    raw.query("ROLLBACK");
}

#[test]
fn the_rest_of_a_portal_set_aside_for_another_statement_has_the_statement_memory_budget() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let mut c = connect(&server.dsn("fetcher")).await;
        tables(&c).await;
        c.batch_execute("SET statement_mem = '1MB'")
            .await
            .expect("set");
        let t = c.transaction().await.expect("begin");
        let join = t
            .prepare("SELECT a.i, b.i, a.t FROM a, b")
            .await
            .expect("prepare");
        let portal = t.bind(&join, &[]).await.expect("bind");
        assert_eq!(t.query_portal(&portal, 10).await.expect("fetch").len(), 10);
        // The 99,990 rows left (about 11 MB) would have to be held while this runs.
        let e = t
            .query_one("SELECT 1", &[])
            .await
            .expect_err("over the budget");
        assert_eq!(e.code().map(|c| c.code()), Some("53200"));
        let e = t
            .query_one("SELECT 1", &[])
            .await
            .expect_err("a failed block");
        assert_eq!(e.code().map(|c| c.code()), Some("25P02"));
        t.rollback().await.expect("rollback");
        // Within the budget, the same works.
        c.batch_execute("RESET statement_mem").await.expect("reset");
        let t = c.transaction().await.expect("begin");
        let portal = t.bind(&join, &[]).await.expect("bind");
        assert_eq!(t.query_portal(&portal, 10).await.expect("fetch").len(), 10);
        t.query_one("SELECT 1", &[])
            .await
            .expect("within the budget");
        assert_eq!(fetch_all(&t, &portal, 50_000).await.len(), 99_990);
        t.commit().await.expect("commit");
    });
}
