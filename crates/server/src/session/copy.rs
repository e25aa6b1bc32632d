//! COPY for a session. FROM STDIN: the statement starts at once (in the open block, or in one of
//! its own) and takes the client's data piece by piece as it comes, so the data is never held
//! whole and is read no faster than the statement takes it. TO STDOUT: a query whose rows are
//! written in the COPY's format as they come.

use std::sync::Arc;

use overtake_sql::exec::copy::RowWriter;
use overtake_sql::plan::copy::{CopyFormat, CopyOptions};
use overtake_sql::plan::{CopyIn, OutputColumn};
use overtake_sql::{Datum, Prepared, SqlError, sqlstate};

use super::{CopyStart, RowOut, Session, StatementAnswer};
use crate::txn::{self, CopyData, Rows, StatementWork};

/// A COPY in progress: its statement's task takes the data piece by piece as it comes.
pub struct CopyState {
    /// Where the next piece goes.
    next: overtake_sched::Promise<txn::CopyData>,
    /// Fulfilled once the last piece sent was taken.
    taken: Option<overtake_sched::Ticket<()>>,
    /// Data received and not sent yet: clients send a message per line (pgbench, psql), and a
    /// hand-off per line would cost more than the line's parsing.
    pending: Vec<u8>,
    /// The statement's reply, once the data ended.
    reply: overtake_sched::Ticket<txn::Reply>,
    /// It has a block of its own (no block was open), which ends with it.
    alone: bool,
    /// The table it writes.
    table: Arc<overtake_sql::SqlTable>,
}

/// COPY data is handed to its statement in pieces of at least this many bytes.
const COPY_PIECE: usize = 64 * 1024;

impl Session {
    /// Starts COPY FROM STDIN `c`: its statement runs in the open block or in one of its own,
    /// and waits for the data.
    pub(super) async fn start_copy(&mut self, c: &CopyIn) -> Result<StatementAnswer, SqlError> {
        // The statement starts now and takes the data as it comes: in the open block, or
        // in one of its own.
        let alone = self.block.is_none();
        if alone {
            self.block = Some(self.new_block(self.default_level(), false));
        }
        let (next, data) = overtake_sched::Promise::new();
        let rows = Rows {
            table: Arc::clone(&c.table),
            columns: c.columns.clone(),
            options: c.options.clone(),
            references: c.references.clone(),
            data,
        };
        let reply = match self.send_to_block(StatementWork::Insert(rows)).await {
            Ok(reply) => reply,
            Err(e) => {
                if alone {
                    self.end_block(false).await;
                }
                return Err(e);
            }
        };
        self.copy = Some(CopyState {
            next,
            taken: None,
            pending: Vec::new(),
            reply,
            alone,
            table: Arc::clone(&c.table),
        });
        Ok(StatementAnswer::CopyIn {
            columns: c.columns.len(),
            binary: c.options.format == CopyFormat::Binary,
        })
    }

    /// A message of COPY's data: gathered into pieces of `COPY_PIECE` bytes, each passed to
    /// the statement once it took the one before (so the client's data is read no faster than
    /// the statement takes it). Ignored if no COPY is in progress, or its statement has failed
    /// (its error comes at the end).
    pub async fn copy_data(&mut self, bytes: &[u8]) {
        let Some(copy) = self.copy.as_mut() else {
            return;
        };
        copy.pending.extend_from_slice(bytes);
        if copy.pending.len() >= COPY_PIECE {
            Self::send_piece(copy).await;
        }
    }

    /// Sends the data received to the COPY's statement, once it took the piece before.
    async fn send_piece(copy: &mut CopyState) {
        let bytes = std::mem::take(&mut copy.pending);
        if let Some(taken) = copy.taken.take()
            && taken.await.is_err()
        {
            return;
        }
        let (next, after) = overtake_sched::Promise::new();
        let (taken, taken_ticket) = overtake_sched::Promise::new();
        std::mem::replace(&mut copy.next, next).fulfil(CopyData::Piece {
            bytes,
            taken,
            next: after,
        });
        copy.taken = Some(taken_ticket);
    }

    /// The end of COPY's data (`failed`: the client's CopyFail message, which fails it with
    /// 57014 as PostgreSQL does): the statement's answer, its block ended if it had its own.
    pub async fn finish_copy(&mut self, failed: Option<&str>) -> StatementAnswer {
        if let Some(copy) = self.copy.as_mut()
            && failed.is_none()
            && !copy.pending.is_empty()
        {
            Self::send_piece(copy).await;
        }
        let Some(copy) = self.copy.take() else {
            return StatementAnswer::Error(SqlError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "no COPY in progress",
            ));
        };
        match failed {
            None => copy.next.fulfil(CopyData::Done),
            // Dropping the promise tells the statement the data will not come.
            Some(_) => drop(copy.next),
        }
        let done = match copy.reply.await {
            Ok(reply) => self.on_reply(reply),
            Err(e) => Err(txn::unanswered(e)),
        };
        let done = match failed {
            Some(message) => Err(SqlError::new(
                sqlstate::QUERY_CANCELED,
                format!("COPY from stdin failed: {message}"),
            )),
            None => done,
        };
        if copy.alone {
            let end = self.end_block(done.is_ok()).await;
            if let (Ok(_), StatementAnswer::Error(e)) = (&done, end) {
                return self.fail(e);
            }
        }
        match done {
            Ok(out) => {
                self.note_writes(&copy.table, &out.tag);
                StatementAnswer::Done(out.tag)
            }
            Err(e) => self.fail(e),
        }
    }
}

/// COPY TO's rows on their way out: each batch the query makes is written in the COPY's
/// format and sent as it comes, a message per row.
struct CopyEncoder<'a> {
    out: &'a mut dyn RowOut,
    writer: RowWriter,
    start: CopyStart,
    /// The header line, sent before the first row.
    header: Option<Vec<u8>>,
    rows: u64,
}

impl CopyEncoder<'_> {
    fn pieces(&mut self, rows: &[Vec<Datum>]) -> Vec<Vec<u8>> {
        self.rows += rows.len() as u64;
        let mut pieces: Vec<Vec<u8>> = self.header.take().into_iter().collect();
        pieces.extend(rows.iter().map(|r| self.writer.row(r)));
        pieces
    }
}

#[async_trait::async_trait]
impl RowOut for CopyEncoder<'_> {
    async fn rows(&mut self, _: &[OutputColumn], rows: Vec<Vec<Datum>>) -> Result<(), SqlError> {
        let pieces = self.pieces(&rows);
        self.out.copy_out(self.start, pieces).await
    }

    async fn copy_out(&mut self, start: CopyStart, pieces: Vec<Vec<u8>>) -> Result<(), SqlError> {
        self.out.copy_out(start, pieces).await
    }
}

impl Session {
    /// Runs COPY TO STDOUT (`prepared`, whose query gives the rows) in `options`' format: its
    /// rows go to `out` as they are made (with no `out`, all with the answer).
    pub(super) async fn copy_out(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        options: CopyOptions,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
        let start = CopyStart {
            columns: prepared.columns.len(),
            binary: options.format == CopyFormat::Binary,
        };
        let names: Vec<String> = prepared.columns.iter().map(|c| c.name.clone()).collect();
        let types = prepared.columns.iter().map(|c| c.ty).collect();
        let mut writer = RowWriter::new(options, types);
        let header = writer.header(&names);
        let mut sink = NoClient(Vec::new());
        let out = out.unwrap_or(&mut sink);
        let mut encoder = CopyEncoder {
            out,
            writer,
            start,
            header,
            rows: 0,
        };
        let answer = self.run_query(prepared, params, Some(&mut encoder)).await?;
        let rest = match answer {
            StatementAnswer::Rows { rows, .. } => rows,
            _ => Vec::new(),
        };
        let mut tail = encoder.pieces(&rest);
        tail.extend(encoder.writer.end());
        let tag = format!("COPY {}", encoder.rows);
        drop(encoder);
        let mut pieces = std::mem::take(&mut sink.0);
        pieces.extend(tail);
        Ok(StatementAnswer::CopyOut { start, pieces, tag })
    }
}

/// Where COPY TO's pieces wait when there is no client to stream them to: they go with the
/// answer.
struct NoClient(Vec<Vec<u8>>);

#[async_trait::async_trait]
impl RowOut for NoClient {
    async fn rows(&mut self, _: &[OutputColumn], _: Vec<Vec<Datum>>) -> Result<(), SqlError> {
        Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "rows sent where COPY's data was expected",
        ))
    }

    async fn copy_out(&mut self, _: CopyStart, pieces: Vec<Vec<u8>>) -> Result<(), SqlError> {
        self.0.extend(pieces);
        Ok(())
    }
}
