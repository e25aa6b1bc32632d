//! COPY through the protocol: FROM STDIN and TO STDOUT in text, csv and binary, as clients'
//! COPY APIs use them; and SQL cursors fetched through the extended protocol.

use crate::common;
use common::{connect, runtime};

use futures::{SinkExt, StreamExt};
use tokio_postgres::binary_copy::{BinaryCopyInWriter, BinaryCopyOutStream};
use tokio_postgres::types::Type;

/// All of a COPY TO's data.
async fn copied_out(c: &tokio_postgres::Client, sql: &str) -> String {
    let stream = c.copy_out(sql).await.expect("copy out");
    futures::pin_mut!(stream);
    let mut data = Vec::new();
    while let Some(piece) = stream.next().await {
        data.extend_from_slice(&piece.expect("data"));
    }
    String::from_utf8(data).expect("utf-8")
}

#[test]
fn copy_data_is_parsed_off_the_network_thread_in_linear_time_empty_lines_included() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("copier")).await;
        c.batch_execute("CREATE TABLE lines (t text)")
            .await
            .expect("create");
        // 80,000 empty lines (each an empty string, as PostgreSQL reads them), then two rows.
        let mut data = "\n".repeat(80_000);
        data.push_str("a\nb\n");
        let sink = c.copy_in("COPY lines FROM STDIN").await.expect("copy");
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from(data)).await.expect("data");
        let n = sink.finish().await.expect("finish");
        assert_eq!(n, 80_002);
        let rows: i64 = c
            .query_one("SELECT count(*) FROM lines WHERE t = ''", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(rows, 80_000);
    });
}

#[test]
fn binary_copy_goes_both_ways_and_text_and_csv_are_written_as_postgresql_writes_them() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("copier")).await;
        c.batch_execute("CREATE TABLE cb (id int PRIMARY KEY, t text, f float8, ok bool)")
            .await
            .expect("create");
        let types = [Type::INT4, Type::TEXT, Type::FLOAT8, Type::BOOL];
        let sink = c
            .copy_in("COPY cb FROM STDIN (FORMAT binary)")
            .await
            .expect("copy in");
        let writer = BinaryCopyInWriter::new(sink, &types);
        futures::pin_mut!(writer);
        for i in 0..1_000i32 {
            let t = (i % 7 != 0).then(|| format!("row\t{i}, \"q\""));
            let f = f64::from(i) / 4.0;
            writer
                .as_mut()
                .write(&[&i, &t, &f, &(i % 2 == 0)])
                .await
                .expect("row");
        }
        assert_eq!(writer.finish().await.expect("finish"), 1_000);

        let stream = c
            .copy_out("COPY (SELECT * FROM cb ORDER BY id) TO STDOUT (FORMAT binary)")
            .await
            .expect("copy out");
        let rows = BinaryCopyOutStream::new(stream, &types);
        futures::pin_mut!(rows);
        let mut n = 0;
        while let Some(row) = rows.next().await {
            let row = row.expect("row");
            let i: i32 = row.get(0);
            assert_eq!(i, n);
            let t: Option<String> = row.get(1);
            assert_eq!(t, (n % 7 != 0).then(|| format!("row\t{n}, \"q\"")));
            assert_eq!(row.get::<f64>(2), f64::from(n) / 4.0);
            n += 1;
        }
        assert_eq!(n, 1_000);

        let text = copied_out(&c, "COPY (SELECT id, t, ok FROM cb WHERE id IN (6, 7)) TO STDOUT").await;
        assert_eq!(text, "6\trow\\t6, \"q\"\tt\n7\t\\N\tf\n");
        let csv = copied_out(
            &c,
            "COPY (SELECT id, t FROM cb WHERE id IN (6, 7) ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)",
        )
        .await;
        assert_eq!(csv, "id,t\n6,\"row\t6, \"\"q\"\"\"\n7,\n");
    });
}

#[test]
fn bad_copy_data_fails_the_copy_and_keeps_nothing() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("copier")).await;
        c.batch_execute("CREATE TABLE cbad (id int PRIMARY KEY, t text)")
            .await
            .expect("create");
        for (sql, data) in [
            (
                "COPY cbad FROM STDIN (FORMAT binary)",
                "not a binary copy file",
            ),
            (
                "COPY cbad FROM STDIN (FORMAT csv)",
                "1,ok\n2,\"never closed\n",
            ),
            ("COPY cbad FROM STDIN", "1\tok\n2\n"),
        ] {
            let sink = c.copy_in(sql).await.expect("copy in");
            futures::pin_mut!(sink);
            sink.send(bytes::Bytes::from(data)).await.expect("data");
            let e = sink.finish().await.expect_err(sql);
            assert_eq!(e.code().map(|c| c.code()), Some("22P04"), "{sql}: {e:?}");
        }
        let n: i64 = c
            .query_one("SELECT count(*) FROM cbad", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 0);
    });
}

#[test]
fn a_cursor_declared_with_a_parameter_is_fetched_through_the_extended_protocol() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let mut c = connect(&server.dsn("reader")).await;
        c.batch_execute(
            "CREATE TABLE cur (a int PRIMARY KEY, b text);
             INSERT INTO cur SELECT g, 'r' || g FROM generate_series(1, 500) g",
        )
        .await
        .expect("setup");
        let t = c.transaction().await.expect("begin");
        t.execute(
            "DECLARE c1 CURSOR FOR SELECT a, b FROM cur WHERE a > $1 ORDER BY a",
            &[&100i32],
        )
        .await
        .expect("declare");
        let mut seen = Vec::new();
        loop {
            let rows = t.query("FETCH 64 FROM c1", &[]).await.expect("fetch");
            if rows.is_empty() {
                break;
            }
            seen.extend(
                rows.iter()
                    .map(|r| (r.get::<_, i32>(0), r.get::<_, String>(1))),
            );
        }
        assert_eq!(seen.len(), 400);
        assert_eq!(seen[0], (101, "r101".to_owned()));
        assert_eq!(seen[399].0, 500);
        t.execute("CLOSE c1", &[]).await.expect("close");
        t.commit().await.expect("commit");
    });
}
