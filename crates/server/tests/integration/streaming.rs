//! Results leave as they are made: a statement's rows reach the client while it runs, a client
//! that stops reading holds back its own statement (which a cancel still ends), and what a
//! statement holds for sorts and groups has a budget.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::{connect, runtime, tables};
use futures::{SinkExt, StreamExt};

#[test]
fn rows_made_before_an_error_reach_the_client_before_it_as_in_postgresql() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("streamer")).await;
        tables(&c).await;
        // The scan reads `a` in key order: 90,000 rows come before the division by zero.
        let rows = c
            .query_raw(
                "SELECT a.i, 1 / (a.i - 900) FROM a, b",
                std::iter::empty::<i32>(),
            )
            .await
            .expect("started");
        futures::pin_mut!(rows);
        let mut before = 0;
        let error = loop {
            match rows.next().await {
                Some(Ok(_)) => before += 1,
                Some(Err(e)) => break e,
                None => panic!("the statement must fail"),
            }
        };
        assert_eq!(error.code().map(|c| c.code()), Some("22012"));
        assert!(
            before > 0 && before <= 90_000,
            "rows made before the error were sent first: {before}"
        );
        // The session goes on.
        let n: i64 = c
            .query_one("SELECT count(*) FROM a", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 1_000);
    });
}

/// A client speaking the protocol by hand, which reads only when asked to.
struct Slow {
    socket: TcpStream,
    /// Its process id and secret key, for a cancel request.
    key: (i32, i32),
}

impl Slow {
    fn connect(port: u16) -> Slow {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("tcp");
        socket
            .set_read_timeout(Some(std::time::Duration::from_secs(120)))
            .expect("timeout");
        socket
            .write_all(&common::raw::startup("slow"))
            .expect("startup");
        let mut slow = Slow {
            socket,
            key: (0, 0),
        };
        loop {
            let (kind, body) = slow.message();
            if kind == b'K' {
                let word = |at: usize| i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
                slow.key = (word(0), word(4));
            }
            if kind == b'Z' {
                return slow;
            }
        }
    }

    fn message(&mut self) -> (u8, Vec<u8>) {
        let mut head = [0u8; 5];
        self.socket.read_exact(&mut head).expect("a message");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize - 4;
        let mut body = vec![0u8; len];
        self.socket.read_exact(&mut body).expect("its body");
        (head[0], body)
    }

    fn query(&mut self, sql: &str) {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        let mut m = vec![b'Q'];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(&body);
        self.socket.write_all(&m).expect("send");
    }

    /// PostgreSQL's cancel request for this session's statement, on a connection of its own.
    fn cancel(&self, port: u16) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("tcp");
        let mut m = Vec::new();
        m.extend_from_slice(&16u32.to_be_bytes());
        m.extend_from_slice(&80_877_102u32.to_be_bytes());
        m.extend_from_slice(&self.key.0.to_be_bytes());
        m.extend_from_slice(&self.key.1.to_be_bytes());
        s.write_all(&m).expect("cancel");
    }
}

#[test]
fn a_client_that_stops_reading_holds_back_its_statement_which_a_cancel_still_ends() {
    let server = common::TestServer::start();
    let port = server.port;
    runtime().block_on(async {
        let c = connect(&server.dsn("streamer")).await;
        tables(&c).await;
        // 100,000 x 1,000 rows (over a gigabyte of DataRows): no buffer between the two holds
        // them, so the statement cannot end while its client does not read.
        c.batch_execute("CREATE TABLE wide (i int PRIMARY KEY)")
            .await
            .expect("create");
        c.execute("INSERT INTO wide SELECT i FROM a", &[])
            .await
            .expect("insert");
        let mut slow = Slow::connect(port);
        slow.query("SELECT a.t, b.i, wide.i FROM a, b, wide");
        // Its rows are flowing: a description, then rows.
        assert_eq!(slow.message().0, b'T');
        assert_eq!(slow.message().0, b'D');
        // It stops reading; other sessions are served meanwhile.
        let n: i64 = c
            .query_one("SELECT count(*) FROM b", &[])
            .await
            .expect("served while a client is slow")
            .get(0);
        assert_eq!(n, 100);
        slow.cancel(port);
        let (mut rows, mut code) = (1u64, None);
        loop {
            let (kind, body) = slow.message();
            match kind {
                b'D' => rows += 1,
                b'E' => {
                    let fields = body.split(|b| *b == 0);
                    code = fields
                        .filter(|f| f.first() == Some(&b'C'))
                        .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
                        .next();
                }
                b'Z' => break,
                _ => {}
            }
        }
        assert_eq!(code.as_deref(), Some("57014"), "after {rows} rows");
        assert!(rows < 100_000_000);
    });
}

#[test]
fn sorts_and_groups_past_statement_mem_fail_with_53200_and_work_mem_is_postgresqls() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("sorter")).await;
        tables(&c).await;
        let show = |rows: Vec<tokio_postgres::SimpleQueryMessage>| match &rows[1] {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        };
        let shown = show(c.simple_query("SHOW work_mem").await.expect("show"));
        assert_eq!(shown.as_deref(), Some("4MB"));
        c.batch_execute("SET work_mem = '64MB'").await.expect("set");
        let e = c
            .batch_execute("SET work_mem = '1kB'")
            .await
            .expect_err("below PostgreSQL's least");
        assert_eq!(e.code().map(|c| c.code()), Some("22023"));
        c.batch_execute("SET statement_mem = '1MB'")
            .await
            .expect("set");
        let shown = show(c.simple_query("SHOW statement_mem").await.expect("show"));
        assert_eq!(shown.as_deref(), Some("1MB"));
        // 100,000 rows of 100 bytes to sort: past 1 MB.
        let e = c
            .query("SELECT a.t, b.i FROM a, b ORDER BY b.i", &[])
            .await
            .expect_err("past its budget");
        assert_eq!(e.code().map(|c| c.code()), Some("53200"));
        // DISTINCT holds the values it has seen: 100,000 of over 100 bytes are past 1 MB...
        let e = c
            .query("SELECT DISTINCT a.i, a.t, b.i FROM a, b", &[])
            .await
            .expect_err("past its budget");
        assert_eq!(e.code().map(|c| c.code()), Some("53200"));
        // ...while 100 distinct ones among the same 100,000 rows fit.
        let n = c
            .query("SELECT DISTINCT a.t || b.i FROM a, b", &[])
            .await
            .expect("few distinct values")
            .len();
        assert_eq!(n, 100);
        // Rows that are not held (no sort) stream within any budget; a small sort fits.
        let n = c
            .query("SELECT a.t, b.i FROM a, b", &[])
            .await
            .expect("streamed")
            .len();
        assert_eq!(n, 100_000);
        let n = c
            .query("SELECT i FROM b ORDER BY i DESC", &[])
            .await
            .expect("small sort")
            .len();
        assert_eq!(n, 100);
    });
}

#[test]
fn copy_data_is_taken_piece_by_piece_cut_anywhere_and_copyfail_keeps_nothing() {
    let server = common::TestServer::start();
    runtime().block_on(async {
        let c = connect(&server.dsn("copier")).await;
        c.batch_execute("CREATE TABLE words (i int PRIMARY KEY, w text)")
            .await
            .expect("create");
        // Pieces cut inside lines, inside fields and inside a two-byte character.
        let data: String = (0..2_000).map(|i| format!("{i}\tmot-é-{i}\n")).collect();
        let bytes = data.as_bytes();
        let sink = c.copy_in("COPY words FROM STDIN").await.expect("copy");
        futures::pin_mut!(sink);
        let mut at = 0;
        for cut in (1..).map(|k: usize| k * 7 + k % 5) {
            if at >= bytes.len() {
                break;
            }
            let end = (at + cut).min(bytes.len());
            let piece = bytes::Bytes::copy_from_slice(&bytes[at..end]);
            sink.send(piece).await.expect("piece");
            at = end;
        }
        assert_eq!(sink.finish().await.expect("finish"), 2_000);
        let row = c
            .query_one(
                "SELECT count(*), max(w) FROM words WHERE w LIKE 'mot-é-%'",
                &[],
            )
            .await
            .expect("read");
        assert_eq!(row.get::<_, i64>(0), 2_000);
        assert_eq!(row.get::<_, String>(1), "mot-é-999");

        // A bad line fails the COPY at its end, and nothing of it is kept.
        let sink = c.copy_in("COPY words FROM STDIN").await.expect("copy");
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"5000\tfine\nnot a number\tx\n"))
            .await
            .expect("data");
        let e = sink.finish().await.expect_err("a bad line");
        assert_eq!(e.code().map(|c| c.code()), Some("22P02"));

        // A COPY the client abandons (CopyFail) keeps nothing; in a block it fails the block.
        c.batch_execute("BEGIN").await.expect("begin");
        {
            let sink = c.copy_in("COPY words FROM STDIN").await.expect("copy");
            futures::pin_mut!(sink);
            sink.send(bytes::Bytes::from_static(b"6000\tgone\n"))
                .await
                .expect("data");
            // Dropped unfinished: tokio-postgres sends CopyFail.
        }
        let e = c.query("SELECT 1", &[]).await.expect_err("failed block");
        assert!(
            matches!(e.code().map(|c| c.code()), Some("57014" | "25P02")),
            "{e:?}"
        );
        c.batch_execute("ROLLBACK").await.expect("rollback");
        let n: i64 = c
            .query_one("SELECT count(*) FROM words", &[])
            .await
            .expect("count")
            .get(0);
        assert_eq!(n, 2_000);
    });
}
