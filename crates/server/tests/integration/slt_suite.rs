//! The SQL suite: sqllogictest files (tests/slt) run by the `sqllogictest` crate's runner against
//! a server, over the wire through tokio-postgres, as an independent client would.

use crate::common;

use std::path::PathBuf;

use async_trait::async_trait;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use tokio_postgres::{NoTls, SimpleQueryMessage};

struct Postgres {
    client: tokio_postgres::Client,
    /// `overtake`, or `postgresql` for the reference server (records Overtake alone passes say
    /// `onlyif overtake`).
    engine: &'static str,
}

/// A failed statement, shown with its SQLSTATE and message.
#[derive(Debug)]
struct PgError {
    code: Option<String>,
    message: String,
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            self.code.as_deref().unwrap_or("?????"),
            self.message
        )
    }
}

impl std::error::Error for PgError {}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> Self {
        PgError {
            code: e.code().map(|c| c.code().to_owned()),
            message: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_owned()),
        }
    }
}

#[async_trait]
impl AsyncDB for Postgres {
    type Error = PgError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Self::Error> {
        let messages = self.client.simple_query(sql).await?;
        let mut rows = Vec::new();
        let mut columns = None;
        let mut count = 0;
        for m in messages {
            match m {
                SimpleQueryMessage::Row(row) => {
                    rows.push(
                        (0..row.len())
                            .map(|i| row.get(i).map_or_else(|| "NULL".to_owned(), str::to_owned))
                            .map(|v| {
                                if v.is_empty() {
                                    "(empty)".to_owned()
                                } else {
                                    v
                                }
                            })
                            .collect(),
                    );
                }
                SimpleQueryMessage::RowDescription(d) => columns = Some(d.len()),
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        Ok(match columns {
            Some(n) => DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            },
            None => DBOutput::StatementComplete(count),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }

    fn error_sql_state(err: &Self::Error) -> Option<String> {
        err.code.clone()
    }
}

/// The suite's files, in order.
fn files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/slt")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    // `OVERTAKE_SLT_ONLY=34` runs the files whose names contain it (while writing one).
    if let Ok(only) = std::env::var("OVERTAKE_SLT_ONLY") {
        files.retain(|f| {
            f.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&only))
        });
    }
    assert!(!files.is_empty(), "no .slt files");
    files
}

/// Runs every file against the server at `dsn`, as `engine`.
fn run_suite(dsn: &str, engine: &'static str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut failures = Vec::new();
    runtime.block_on(async {
        for file in &files() {
            // A file of Overtake's own features says so on its first line.
            let text = std::fs::read_to_string(file).expect("readable");
            if engine != "overtake" && text.starts_with("# overtake-only") {
                continue;
            }
            let dsn = dsn.to_owned();
            let mut runner = Runner::new(move || {
                let dsn = dsn.clone();
                async move {
                    let (client, connection) = tokio_postgres::connect(&dsn, NoTls).await?;
                    tokio::spawn(connection);
                    Ok::<_, PgError>(Postgres { client, engine })
                }
            });
            runner.with_column_validator(|_, _| true);
            // Every record is run (a failure does not stop the file) and every failure shown.
            let records = sqllogictest::parse_file::<DefaultColumnType>(file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for record in records {
                if let Err(e) = runner.run_async(record).await {
                    failures.push(format!("{engine}: {}: {e}", file.display()));
                }
            }
        }
    });
    assert!(
        failures.is_empty(),
        "{} records failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_sql_suite_passes_over_the_wire() {
    let server = common::TestServer::start();
    run_suite(&server.dsn("slt"), "overtake");
}

/// The same suite against PostgreSQL, when `OVERTAKE_SLT_REFERENCE` names one (a connection
/// string such as `host=127.0.0.1 port=5432 user=postgres`): each run in a database of its own,
/// dropped after. The suite's expectations are PostgreSQL's; this keeps them honest.
#[test]
fn the_sql_suite_passes_on_postgresql_too() {
    let Ok(reference) = std::env::var("OVERTAKE_SLT_REFERENCE") else {
        return;
    };
    let database = format!("overtake_slt_{}", std::process::id());
    let admin = |sql: String| {
        let reference = reference.clone();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(async move {
                let (client, connection) = tokio_postgres::connect(&reference, NoTls)
                    .await
                    .expect("the reference server");
                tokio::spawn(connection);
                client.batch_execute(&sql).await.expect(&sql);
            });
    };
    admin(format!("CREATE DATABASE {database}"));
    let result = std::panic::catch_unwind(|| {
        run_suite(&format!("{reference} dbname={database}"), "postgresql")
    });
    admin(format!("DROP DATABASE {database}"));
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
