//! Protocol fuzzing against a live server: sessions that log in properly and then send random
//! and mutated frontend messages (wrong lengths, missing terminators, counts that do not match,
//! bytes flipped, messages cut short, unknown kinds), interleaved with well-formed ones. The
//! server must answer or close each such connection (never hang on it once the client has
//! finished sending), and stay up: a well-behaved session keeps working throughout, and its
//! data is intact at the end.
//!
//! Fixed seeds, plus one more each run: printed, and taken from `OVERTAKE_FUZZ_SEED` when set
//! (to repeat a failure).

use crate::common;

use std::io::Read;
use std::net::Shutdown;
use std::time::Duration;

use common::raw::Raw;
use tokio_postgres::NoTls;

/// Connections per seed, and the most messages each sends.
const CONNECTIONS: usize = 150;
const MESSAGES: usize = 8;

const STATEMENTS: [&str; 6] = [
    "SELECT 1",
    "SELECT k, v FROM fz WHERE k = $1",
    "INSERT INTO fz VALUES ($1, 'x')",
    "BEGIN",
    "COMMIT",
    "COPY fz FROM STDIN",
];

fn cstring(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// A well-formed body for message `kind`.
fn body(rng: &mut fastrand::Rng, kind: u8) -> Vec<u8> {
    let mut b = Vec::new();
    let name = ["", "s1", "p1"][rng.usize(..3)];
    match kind {
        b'Q' => cstring(&mut b, STATEMENTS[rng.usize(..STATEMENTS.len())]),
        b'P' => {
            cstring(&mut b, name);
            cstring(&mut b, STATEMENTS[rng.usize(..STATEMENTS.len())]);
            let n = rng.u16(..3);
            b.extend_from_slice(&n.to_be_bytes());
            for _ in 0..n {
                b.extend_from_slice(&[0u32, 23, 25][rng.usize(..3)].to_be_bytes());
            }
        }
        b'B' => {
            cstring(&mut b, name);
            cstring(&mut b, name);
            let formats = rng.u16(..3);
            b.extend_from_slice(&formats.to_be_bytes());
            for _ in 0..formats {
                b.extend_from_slice(&rng.u16(..2).to_be_bytes());
            }
            let params = rng.u16(..3);
            b.extend_from_slice(&params.to_be_bytes());
            for _ in 0..params {
                let value: &[u8] = [&b"42"[..], &[0, 0, 0, 7], b"", b"abc"][rng.usize(..4)];
                let len = if rng.u8(..8) == 0 {
                    -1
                } else {
                    value.len() as i32
                };
                b.extend_from_slice(&len.to_be_bytes());
                if len >= 0 {
                    b.extend_from_slice(value);
                }
            }
            let results = rng.u16(..2);
            b.extend_from_slice(&results.to_be_bytes());
            for _ in 0..results {
                b.extend_from_slice(&rng.u16(..2).to_be_bytes());
            }
        }
        b'D' | b'C' => {
            b.push([b'S', b'P'][rng.usize(..2)]);
            cstring(&mut b, name);
        }
        b'E' => {
            cstring(&mut b, name);
            b.extend_from_slice(&rng.i32(0..3).to_be_bytes());
        }
        b'd' => b.extend_from_slice(b"1\tone\n2\ttwo\n"),
        b'f' => cstring(&mut b, "client gave up"),
        _ => {} // Sync, Flush, CopyDone, Terminate, unknown kinds: empty bodies.
    }
    b
}

/// One frontend message, well-formed or mutated.
fn message(rng: &mut fastrand::Rng) -> Vec<u8> {
    const KINDS: &[u8] = b"QPBDECSHdcfQPBES";
    let kind = if rng.u8(..20) == 0 {
        rng.u8(..)
    } else {
        KINDS[rng.usize(..KINDS.len())]
    };
    let mut b = body(rng, kind);
    let mut len = (b.len() + 4) as i64;
    match rng.u8(..12) {
        0 if !b.is_empty() => b.truncate(rng.usize(..b.len())), // cut short, length unchanged
        1 if !b.is_empty() => {
            let at = rng.usize(..b.len());
            b[at] = rng.u8(..); // a byte flipped
        }
        2 => len += i64::from(rng.i8(..)), // a length that lies
        3 => len = [0, 3, 4, 0x7fff_ffff, 0xffff_ffff][rng.usize(..5)],
        4 if b.last() == Some(&0) => {
            b.pop(); // a string's terminator dropped
            len -= 1;
        }
        5 => {
            let at = rng.usize(..=b.len());
            let extra: Vec<u8> = (0..rng.usize(1..16)).map(|_| rng.u8(..)).collect();
            b.splice(at..at, extra); // bytes inserted, length unchanged
        }
        _ => {} // well-formed
    }
    let mut m = vec![kind];
    m.extend_from_slice(&(len as u32).to_be_bytes());
    m.extend_from_slice(&b);
    m
}

/// One connection: log in, send messages, stop sending, and read until the server closes.
fn fuzz_connection(port: u16, rng: &mut fastrand::Rng) -> Vec<Vec<u8>> {
    let mut raw = Raw::connect(port);
    let sent: Vec<Vec<u8>> = (0..rng.usize(1..=MESSAGES)).map(|_| message(rng)).collect();
    for m in &sent {
        if std::io::Write::write_all(&mut raw.0, m).is_err() {
            break; // The server closed already: a right answer to some input.
        }
    }
    let _ = raw.0.shutdown(Shutdown::Write);
    raw.0
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut sink = [0u8; 8192];
    loop {
        match raw.0.read(&mut sink) {
            Ok(0) => return sent,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return sent,
            Err(e) => panic!("the server neither answered nor closed after {sent:?}: {e}"),
        }
    }
}

#[test]
fn random_and_mutated_messages_never_take_the_server_or_another_session_down() {
    let server = common::TestServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let good = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&server.dsn("good"), NoTls)
            .await
            .expect("connect");
        tokio::spawn(connection);
        client
            .batch_execute("CREATE TABLE fz (k int PRIMARY KEY, v text)")
            .await
            .expect("create");
        client
    });
    let mut inserted = 0;
    for seed in common::fuzz_seeds("protocol fuzz", &[1, 2, 3]) {
        let mut rng = fastrand::Rng::with_seed(seed);
        for c in 0..CONNECTIONS {
            fuzz_connection(server.port, &mut rng);
            if c % 10 == 0 {
                let k = 1_000_000 + inserted;
                runtime
                    .block_on(good.execute("INSERT INTO fz VALUES ($1, 'good')", &[&k]))
                    .unwrap_or_else(|e| panic!("seed {seed}, connection {c}: {e}"));
                inserted += 1;
            }
        }
    }
    let kept: i64 = runtime
        .block_on(good.query_one("SELECT count(*) FROM fz WHERE v = 'good'", &[]))
        .expect("count")
        .get(0);
    assert_eq!(kept, i64::from(inserted));
}

/// The SQLSTATE of the ErrorResponse a connection answers before it closes, if it does.
fn fatal_answer(raw: &mut Raw) -> Option<String> {
    let mut bytes = Vec::new();
    let _ = raw.0.read_to_end(&mut bytes);
    let mut at = 0;
    while at + 5 <= bytes.len() {
        let len = u32::from_be_bytes([bytes[at + 1], bytes[at + 2], bytes[at + 3], bytes[at + 4]]);
        let end = (at + 1 + len as usize).min(bytes.len());
        if bytes[at] == b'E' {
            let fields = bytes[at + 5..end].split(|b| *b == 0);
            let code = fields
                .filter_map(|f| f.strip_prefix(b"C"))
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .next();
            return code;
        }
        at = end;
    }
    None
}

#[test]
fn a_malformed_message_is_answered_08p01_and_nothing_after_it_runs() {
    let server = common::TestServer::start();
    let cases: [(&str, u8, Vec<u8>); 5] = [
        ("a Query without its NUL", b'Q', b"select 1".to_vec()),
        (
            "a Query with bytes after its NUL",
            b'Q',
            b"select 1\0Q".to_vec(),
        ),
        (
            "a Bind with five formats for one parameter",
            b'B',
            [&[0, 0, 0, 5][..], &[0; 10], &[0, 1, 0, 0, 0, 1, b'1', 0, 0]].concat(),
        ),
        (
            "a Bind with format code 7",
            b'B',
            [&[0, 0, 0, 1, 0, 7][..], &[0, 1, 0, 0, 0, 1, b'1', 0, 0]].concat(),
        ),
        (
            "a Bind whose parameter runs past its end",
            b'B',
            [&[0, 0, 0, 0, 0, 1][..], &[0, 0, 0, 50, b'1']].concat(),
        ),
    ];
    for (what, kind, body) in cases {
        let mut raw = Raw::connect(server.port);
        raw.send(kind, &body);
        // Were it read into the next message, this would run.
        raw.send(b'Q', b"select 2\0");
        let _ = raw.0.shutdown(Shutdown::Write);
        assert_eq!(fatal_answer(&mut raw).as_deref(), Some("08P01"), "{what}");
    }
}

#[test]
fn a_statement_that_is_not_utf8_is_refused_with_22021_and_the_session_goes_on() {
    let server = common::TestServer::start();
    let mut raw = Raw::connect(server.port);
    raw.send(b'Q', b"select 'a\xff'\0");
    let (kinds, codes) = raw.until_ready();
    assert_eq!(codes, ["22021"]);
    assert_eq!(kinds.last(), Some(&b'Z'));
    let (kinds, codes) = raw.query("select 1");
    assert!(codes.is_empty(), "{codes:?}");
    assert!(kinds.contains(&b'D'));
    // In the extended protocol, refused up to the Sync.
    let mut parse = b"\0select '\xc3'\0".to_vec();
    parse.extend_from_slice(&[0, 0]);
    raw.send(b'P', &parse);
    raw.send(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
    raw.send(b'E', &[0, 0, 0, 0, 0]);
    raw.send(b'S', &[]);
    let (_, codes) = raw.until_ready();
    assert_eq!(codes, ["22021"]);
    assert!(raw.query("select 2").1.is_empty());
}
