//! COPY FROM STDIN for a session: the statement starts at once (in the open block, or in one of
//! its own) and takes the client's data piece by piece as it comes, so the data is never held
//! whole and is read no faster than the statement takes it.

use std::sync::Arc;

use overtake_sql::plan::CopyIn;
use overtake_sql::{SqlError, sqlstate};

use super::{Session, StatementAnswer};
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
        Ok(StatementAnswer::CopyIn(c.columns.len()))
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
