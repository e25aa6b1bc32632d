//! Differential testing against PostgreSQL: random schemas, rows and statements (see
//! `generate`) run on Overtake and, when `OVERTAKE_DIFF_REFERENCE` names one (a connection
//! string such as `host=127.0.0.1 port=5432 user=postgres`), on a PostgreSQL server in a
//! database of its own; their answers are compared — rows as multisets (doubles within 1e-12,
//! which sums taken in another order may differ by), row counts of writes,
//! and the class of SQLSTATEs. The documented allowlist: statements Overtake refuses as not
//! supported (0A000, SQL the README lists as not offered) are skipped, and a data error only
//! one side raises where evaluation order decides is counted apart (see `compare`). Any other
//! difference fails, naming the seed and the statement; so does an internal error (XX000) or a
//! statement that never answers, with or without a reference.
//!
//! Fixed seeds, plus one more each run: printed, and taken from `OVERTAKE_FUZZ_SEED` when set.
//! `OVERTAKE_DIFF_STATEMENTS` sets how many statements run in all (100,000 by default against
//! a reference, 10,000 without).

use crate::common;
mod generate;

use std::time::Duration;

use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// What a statement answered.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rows(Vec<Vec<Option<String>>>),
    Done(u64),
    Error(String),
}

async fn connect(dsn: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {dsn}: {e}"));
    tokio::spawn(connection);
    client
}

async fn run(client: &Client, sql: &str) -> Outcome {
    let answered = tokio::time::timeout(Duration::from_secs(60), client.simple_query(sql)).await;
    let Ok(answer) = answered else {
        panic!("no answer within a minute: {sql}");
    };
    match answer {
        Err(e) => Outcome::Error(
            e.code()
                .map_or_else(|| format!("no SQLSTATE: {e}"), |c| c.code().to_owned()),
        ),
        Ok(messages) => {
            let mut rows = Vec::new();
            let mut done = None;
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(r) => {
                        rows.push((0..r.len()).map(|i| r.get(i).map(str::to_owned)).collect())
                    }
                    SimpleQueryMessage::CommandComplete(n) => done = Some(n),
                    _ => {}
                }
            }
            if sql.starts_with("SELECT") {
                rows.sort();
                Outcome::Rows(rows)
            } else {
                Outcome::Done(done.unwrap_or(0))
            }
        }
    }
}

/// Two values the same: as text, or as doubles within 1e-12 (relative, or absolute below 1)
/// when either may be one that is not exact: written with an exponent or as NaN/Infinity, or
/// with the 16 or 17 significant digits a double is printed with (a sum of doubles depends on
/// the order it is taken in). Shorter numerics are compared exactly, display scale included.
fn same_value(a: &Option<String>, b: &Option<String>) -> bool {
    let double = |s: &str| {
        let significant = s
            .trim_start_matches(['-', '0', '.'])
            .bytes()
            .filter(u8::is_ascii_digit);
        s.contains(['e', 'E', 'N', 'I']) || significant.count() >= 16
    };
    match (a, b) {
        (Some(a), Some(b)) if a != b && (double(a) || double(b)) => {
            match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0),
                _ => false,
            }
        }
        _ => a == b,
    }
}

/// Whether the answers agree. Rows are sorted as text, so numbers printed differently (`3` and
/// `3.0`) may sort apart: rows are then matched by value, each with one not yet used.
fn agree(ours: &Outcome, theirs: &Outcome) -> bool {
    match (ours, theirs) {
        (Outcome::Error(a), Outcome::Error(b)) => a.get(..2) == b.get(..2),
        (Outcome::Done(a), Outcome::Done(b)) => a == b,
        (Outcome::Rows(a), Outcome::Rows(b)) if a.len() == b.len() => {
            let same_row = |x: &Vec<Option<String>>, y: &Vec<Option<String>>| {
                x.len() == y.len() && x.iter().zip(y).all(|(u, v)| same_value(u, v))
            };
            let mut used = vec![false; b.len()];
            a.iter().all(|x| {
                let found = (0..b.len()).find(|&j| !used[j] && same_row(x, &b[j]));
                found.map(|j| used[j] = true).is_some()
            })
        }
        _ => false,
    }
}

/// Runs `sql` on both (or on Overtake alone); returns a description of a difference.
async fn compare(
    ours: &Client,
    theirs: Option<&Client>,
    sql: &str,
    tally: &mut Tally,
) -> Option<String> {
    let mine = run(ours, sql).await;
    if matches!(&mine, Outcome::Error(code) if code == "XX000") {
        return Some(format!("internal error: {sql}"));
    }
    if matches!(&mine, Outcome::Error(code) if code == "0A000") {
        tally.unsupported += 1;
        // The reference runs it too, so that writes keep both databases alike: a write
        // Overtake refuses is rolled back there.
        if let Some(theirs) = theirs {
            run(theirs, &format!("BEGIN; {sql}; ROLLBACK")).await;
        }
        return None;
    }
    tally.compared += 1;
    if matches!(mine, Outcome::Error(_)) {
        tally.errors += 1;
    }
    let theirs = theirs?;
    let reference = run(theirs, sql).await;
    if agree(&mine, &reference) {
        return None;
    }
    // Which rows and conditions an expression is computed for is the plan's choice in SQL
    // (PostgreSQL reorders a WHERE's conditions by cost and filters a joined table's rows
    // before the join): a data error (22xxx) one side meets and the other does not, in a query
    // that combines conditions or joins, is that choice (see the README).
    // A write counts when the side that did not fail changed nothing (the databases stay
    // alike).
    let data_error = |o: &Outcome| matches!(o, Outcome::Error(c) if c.starts_with("22"));
    let changed_nothing = matches!(mine, Outcome::Done(0)) || matches!(reference, Outcome::Done(0));
    let order_dependent = sql.contains(" JOIN ") || sql.contains(" AND ") || sql.contains(" OR ");
    if order_dependent
        && (data_error(&mine) || data_error(&reference))
        && matches!(mine, Outcome::Error(_)) != matches!(reference, Outcome::Error(_))
    {
        tally.order += 1;
        // A write one side carried out and the other refused leaves the databases apart.
        tally.diverged = !sql.starts_with("SELECT") && !changed_nothing;
        return None;
    }
    // Likewise which row of several a query, UPDATE or DELETE meets first: a data error on one
    // side and a constraint violation (23xxx) on the other.
    let row_error =
        |o: &Outcome| matches!(o, Outcome::Error(c) if c.starts_with("22") || c.starts_with("23"));
    if !sql.starts_with("INSERT") && row_error(&mine) && row_error(&reference) {
        tally.order += 1;
        return None;
    }
    Some(format!(
        "{sql}\n  overtake:   {mine:?}\n  postgresql: {reference:?}"
    ))
}

#[derive(Default, Debug)]
struct Tally {
    compared: u64,
    errors: u64,
    unsupported: u64,
    /// A data error on one side only, where evaluation order decides (see `compare`).
    order: u64,
    /// Such an error met by a write the other side carried out: the databases now differ, and
    /// the seed ends (set by `compare`, taken by the loop).
    diverged: bool,
}

#[test]
fn random_statements_answer_as_on_postgresql() {
    let reference = std::env::var("OVERTAKE_DIFF_REFERENCE").ok();
    let total: u64 = std::env::var("OVERTAKE_DIFF_STATEMENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if reference.is_some() { 100_000 } else { 10_000 });
    let server = common::TestServer::start();
    let database = format!("overtake_diff_{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let differences = runtime.block_on(async {
        let ours = connect(&server.dsn("diff")).await;
        let theirs = match &reference {
            Some(dsn) => {
                let admin = connect(dsn).await;
                admin
                    .batch_execute(&format!("CREATE DATABASE {database}"))
                    .await
                    .expect("the reference's database");
                Some((admin, connect(&format!("{dsn} dbname={database}")).await))
            }
            None => None,
        };
        let theirs_client = theirs.as_ref().map(|(_, c)| c);
        let mut tally = Tally::default();
        let mut differences = Vec::new();
        let seeds = common::fuzz_seeds("differential", &[1, 2, 3, 4]);
        let per_seed = total / seeds.len() as u64;
        'seeds: for seed in seeds {
            let mut rng = fastrand::Rng::with_seed(seed);
            let schema = generate::Schema::random(&mut rng);
            let mut setup = vec!["DROP TABLE IF EXISTS t0, t1, t2".to_owned()];
            setup.extend(schema.ddl());
            for t in &schema.tables {
                let rows = rng.usize(10..40);
                setup.extend(generate::inserts(&mut rng, t, rows));
            }
            for sql in &setup {
                for client in std::iter::once(&ours).chain(theirs_client) {
                    if let Outcome::Error(code) = run(client, sql).await {
                        panic!("seed {seed}: setup failed with {code}: {sql}");
                    }
                }
            }
            for _ in 0..per_seed {
                let sql = generate::statement(&mut rng, &schema);
                let difference = compare(&ours, theirs_client, &sql, &mut tally).await;
                if std::mem::take(&mut tally.diverged) {
                    continue 'seeds;
                }
                if let Some(d) = difference {
                    differences.push(format!("seed {seed}: {d}"));
                    // After a write that differs the databases differ: the seed ends here.
                    if !sql.starts_with("SELECT") || differences.len() >= 20 {
                        if differences.len() >= 20 {
                            break 'seeds;
                        }
                        continue 'seeds;
                    }
                }
            }
        }
        eprintln!(
            "differential: {} statements compared ({} errors; {} data errors on one side where evaluation order decides), {} not supported and skipped{}",
            tally.compared,
            tally.errors,
            tally.order,
            tally.unsupported,
            if theirs.is_some() { "" } else { " (no reference: Overtake alone)" }
        );
        if let Some((admin, client)) = theirs {
            drop(client);
            let _ = admin
                .batch_execute(&format!("DROP DATABASE {database} WITH (FORCE)"))
                .await;
        }
        differences
    });
    assert!(
        differences.is_empty(),
        "{} differences:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
