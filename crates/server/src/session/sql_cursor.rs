//! SQL cursors: `DECLARE`, `FETCH`, `MOVE` and `CLOSE`, over the portals `cursor` fetches in
//! parts (a declared cursor is such a portal, in the same namespace as the protocol's, as in
//! PostgreSQL). A cursor scans forward only: the rows behind it are not kept, so a fetch that
//! goes back gets PostgreSQL's answer for a NO SCROLL cursor (55000), and `SCROLL` is refused
//! when declared.
//!
//! Never hold a cursor's rows here beyond one fetch: they stream to the client as the portal
//! gives them (all of them only for `FETCH ALL` without a client to stream to).

use std::future::Future;
use std::sync::Arc;

use overtake_sql::plan::{Command, CursorFetch, FetchDirection, OutputColumn};
use overtake_sql::{Datum, Prepared, SqlError, sqlstate};

use super::{CopyStart, RowOut, Session, StatementAnswer, failed_block};

/// Rows fetched ahead of a declared cursor's first FETCH: the batch its statement makes at a
/// time (a FETCH of more takes several).
const DECLARED_BATCH: usize = 256;

/// Completes when the statement is to stop: boxed, as a cursor statement may run one of its
/// own kind (a DECLARE opens its query through `execute_until`).
pub(super) type Cancelled<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Where a fetch's rows go: to the client (or held for the answer when there is no client to
/// stream to), or nowhere (`MOVE`, and rows skipped on the way to one). Counts them.
struct Sink<'a> {
    out: Option<&'a mut dyn RowOut>,
    send: bool,
    held: Vec<Vec<Datum>>,
    count: u64,
}

impl<'a> Sink<'a> {
    fn new(out: Option<&'a mut dyn RowOut>, send: bool) -> Self {
        Sink {
            out,
            send,
            held: Vec::new(),
            count: 0,
        }
    }
}

#[async_trait::async_trait]
impl RowOut for Sink<'_> {
    async fn rows(
        &mut self,
        columns: &[OutputColumn],
        rows: Vec<Vec<Datum>>,
    ) -> Result<(), SqlError> {
        self.count += rows.len() as u64;
        if !self.send {
            return Ok(());
        }
        match &mut self.out {
            Some(out) => out.rows(columns, rows).await,
            None => {
                self.held.extend(rows);
                Ok(())
            }
        }
    }

    async fn copy_out(&mut self, _: CopyStart, _: Vec<Vec<u8>>) -> Result<(), SqlError> {
        Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "COPY data sent where a cursor's rows were expected",
        ))
    }
}

/// What a fetch does from where the cursor stands.
enum Step {
    /// Passes `skip` rows, then sends the next `take` (`None`: all that are left).
    Ahead { skip: u64, take: Option<u64> },
    /// Sends nothing (the cursor is before its first row, or past its last).
    Nothing,
}

fn cannot_go_back() -> SqlError {
    SqlError::new(
        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
        "cursor can only scan forward",
    )
    .with_hint("Declare it with SCROLL option to enable backward scan.")
}

fn no_cursor(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_CURSOR_NAME,
        format!("cursor \"{name}\" does not exist"),
    )
}

impl Session {
    /// Whether `command` is one of the cursor statements [`cursor_command`] carries out.
    pub(super) fn is_cursor_command(command: &Command) -> bool {
        matches!(
            command,
            Command::Declare { .. } | Command::Fetch(_) | Command::CloseCursor(_)
        )
    }

    /// The columns a FETCH from cursor `name` gives (what Describe tells of it).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<OutputColumn>> {
        Some(self.find_cursor(name)?.columns.clone())
    }

    /// Carries out DECLARE, FETCH, MOVE or CLOSE (`prepared`, bound to `params`); a FETCH's
    /// rows go to `out` as they come (with no `out`, with the answer).
    pub(super) async fn cursor_command(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        cancelled: Cancelled<'_>,
        out: Option<&mut dyn RowOut>,
    ) -> StatementAnswer {
        if self.block_failed() {
            return self.fail(failed_block());
        }
        let answer = match &prepared.command {
            Command::Declare { name, query, hold } => {
                let query = Arc::clone(query);
                self.declare(name, (query, params), *hold, cancelled).await
            }
            Command::Fetch(fetch) => self.fetch_sql(fetch, cancelled, out).await,
            Command::CloseCursor(name) => self.close_sql(name.as_deref()).await,
            _ => Err(SqlError::new(
                sqlstate::INTERNAL_ERROR,
                "not a cursor statement",
            )),
        };
        answer.unwrap_or_else(|e| self.fail(e))
    }

    /// DECLARE of cursor `name` over `query` (with its parameters); `hold`: WITH HOLD.
    async fn declare(
        &mut self,
        name: &str,
        (query, params): (Arc<Prepared>, Vec<Datum>),
        hold: bool,
        cancelled: impl Future<Output = ()> + Send,
    ) -> Result<StatementAnswer, SqlError> {
        if self.block.as_ref().is_none_or(|b| b.implicit) && !hold {
            return Err(SqlError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if self.has_cursor(name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_CURSOR,
                format!("cursor \"{name}\" already exists"),
            ));
        }
        // A held cursor declared outside a block has a transaction of its own, which commits.
        let alone = self.block.is_none();
        if alone {
            self.block = Some(self.new_block(self.default_level(), false));
        }
        let opened = self
            .open_cursor(name, query, params, DECLARED_BATCH, cancelled)
            .await;
        if let Some(cursor) = self.cursor(name) {
            cursor.hold = hold;
        }
        let failed = matches!(opened, Some(StatementAnswer::Error(_)));
        if alone && let StatementAnswer::Error(e) = self.end_block(!failed).await {
            return Err(e);
        }
        match opened {
            Some(StatementAnswer::Error(e)) => Ok(StatementAnswer::Error(e)),
            // Its rows are ready to fetch (or it has none: `SELECT FROM t`).
            _ => Ok(StatementAnswer::Done("DECLARE CURSOR".into())),
        }
    }

    /// Where a fetch in `direction` goes from the cursor's position; 55000 for any that
    /// would go back, as for PostgreSQL's NO SCROLL cursor (the current row again and the
    /// last row take a step back too).
    fn step(&mut self, name: &str, direction: FetchDirection) -> Result<Step, SqlError> {
        let cursor = self.cursor(name).ok_or_else(|| no_cursor(name))?;
        let at = &cursor.position;
        // PostgreSQL's position: the row fetched last, or one past the last row at the end.
        let here = at.rows + u64::from(at.at_end);
        let at_start = here == 0;
        Ok(match direction {
            FetchDirection::Forward(take) => Step::Ahead { skip: 0, take },
            FetchDirection::Relative(0) if at_start || at.at_end => Step::Nothing,
            FetchDirection::Relative(n) if n > 0 => Step::Ahead {
                skip: n - 1,
                take: Some(1),
            },
            FetchDirection::Absolute(0) if at_start => Step::Nothing,
            FetchDirection::Absolute(n) if n > here && at.at_end => Step::Nothing,
            FetchDirection::Absolute(n) if n > here => Step::Ahead {
                skip: n - here - 1,
                take: Some(1),
            },
            FetchDirection::Relative(_)
            | FetchDirection::Absolute(_)
            | FetchDirection::Last
            | FetchDirection::Backward => return Err(cannot_go_back()),
        })
    }

    async fn fetch_sql(
        &mut self,
        fetch: &CursorFetch,
        cancelled: impl Future<Output = ()> + Send,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
        let name = fetch.name.as_str();
        let columns = self.cursor_columns(name).ok_or_else(|| no_cursor(name))?;
        let step = self.step(name, fetch.direction)?;
        let mut cancelled = std::pin::pin!(cancelled);
        let mut sink = Sink::new(out, !fetch.moves);
        let count = match step {
            Step::Ahead { skip, take } => {
                if skip > 0 {
                    let mut passed = Sink::new(None, false);
                    self.advance(name, Some(skip), &mut cancelled, &mut passed)
                        .await?;
                    if passed.count < skip {
                        return Ok(self.fetched(fetch, columns, sink, 0));
                    }
                }
                self.advance(name, take, &mut cancelled, &mut sink).await?;
                sink.count
            }
            Step::Nothing => 0,
        };
        Ok(self.fetched(fetch, columns, sink, count))
    }

    /// A FETCH's answer (its rows went to the client already, or are held in `sink`), or a
    /// MOVE's.
    fn fetched(
        &self,
        fetch: &CursorFetch,
        columns: Vec<OutputColumn>,
        sink: Sink<'_>,
        count: u64,
    ) -> StatementAnswer {
        if fetch.moves {
            return StatementAnswer::Done(format!("MOVE {count}"));
        }
        StatementAnswer::Rows {
            columns,
            rows: sink.held,
            tag: format!("FETCH {count}"),
        }
    }

    /// Fetches `n` rows (all: `None`) of cursor `name` into `sink`, and moves its position on.
    async fn advance(
        &mut self,
        name: &str,
        n: Option<u64>,
        cancelled: impl Future<Output = ()> + Send,
        sink: &mut Sink<'_>,
    ) -> Result<(), SqlError> {
        if n == Some(0) {
            return Ok(());
        }
        let before = sink.count;
        // 0 asks a portal for all its rows.
        let want = n.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let answer = self.fetch(name, want, cancelled, sink).await;
        let at_end = match answer {
            StatementAnswer::Suspended => false,
            StatementAnswer::Done(_) => true,
            StatementAnswer::Error(e) => return Err(e),
            other => {
                return Err(SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    format!("unexpected answer to a fetch: {other:?}"),
                ));
            }
        };
        let cursor = self.cursor(name).ok_or_else(|| no_cursor(name))?;
        let at = &mut cursor.position;
        at.rows += sink.count - before;
        at.at_end = at_end;
        Ok(())
    }

    async fn close_sql(&mut self, name: Option<&str>) -> Result<StatementAnswer, SqlError> {
        let names = match name {
            Some(name) if !self.has_cursor(name) => return Err(no_cursor(name)),
            Some(name) => vec![name.to_owned()],
            None => self.cursor_names(),
        };
        for name in names {
            self.close_cursor(&name).await;
        }
        Ok(StatementAnswer::Done(
            if name.is_some() {
                "CLOSE CURSOR"
            } else {
                "CLOSE CURSOR ALL"
            }
            .into(),
        ))
    }
}
