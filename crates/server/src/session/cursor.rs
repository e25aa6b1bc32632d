//! Portals fetched a few rows at a time: an Execute with a row limit, as drivers' cursors use it
//! (pgjdbc's fetch size, asyncpg's cursors). Such a portal belongs to the transaction block, as
//! PostgreSQL's do, and ends with it (a Sync ends the implicit block of the statements before it).
//!
//! A query that writes nothing runs in the block's task as it is fetched: the task makes at most
//! one fetch of rows ahead of the client and parks, so a result of any size takes bounded memory,
//! and a portal closed before its end (the block ends, a Close, a new Bind of its name) stops its
//! statement without failing the block. A statement that writes runs whole at its first Execute,
//! as PostgreSQL runs it, and its rows are held. The block's task runs one statement at a time:
//! another statement of the block first reads a running portal's rows to their end and holds them
//! (within the statement memory budget, 53200 past it).
//!
//! Never leave the block without its task: a running portal holds the task's reply, and every
//! way out of `Running` takes that reply back into the block (`Session::on_reply`).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

use overtake_sched::{Promise, Ticket};
use overtake_sql::exec::access;
use overtake_sql::plan::OutputColumn;
use overtake_sql::{Datum, Prepared, SqlError, sqlstate};

use super::{RowOut, Session, StatementAnswer, failed_block, writes};
use crate::txn::{self, Cancel, Chunk, Reply, StatementWork, Take};

/// A portal being fetched.
pub(super) struct Cursor {
    pub(super) name: String,
    pub(super) columns: Vec<OutputColumn>,
    /// Rows made and not fetched yet.
    rows: VecDeque<Vec<Datum>>,
    state: State,
    /// Where FETCH and MOVE left it (see `sql_cursor`).
    pub(super) position: Position,
    /// Declared `WITH HOLD`: kept past the commit of its transaction, its rows read to the
    /// end then (see `keep_held_cursors`).
    pub(super) hold: bool,
}

/// Where a cursor stands, as SQL's FETCH and MOVE see it.
#[derive(Default)]
pub(super) struct Position {
    /// Rows fetched or moved over.
    pub(super) rows: u64,
    /// It is past its last row.
    pub(super) at_end: bool,
}

enum State {
    /// Its statement runs in the block's task.
    Running(Running),
    /// Its statement has ended, with this command tag.
    Ended(String),
    /// It ran a statement without rows: nothing more to fetch (55000).
    Spent,
}

struct Running {
    /// The batch fetched last: marked taken when more rows are wanted (the task waits for it).
    taken: Option<Promise<Take>>,
    /// Where the next batch comes (`None` once no more come: the reply follows).
    next: Option<Ticket<Chunk>>,
    /// The statement's reply, once it ends: the rows after its last batch, and its tag.
    reply: Ticket<Reply>,
    cancel: Arc<Cancel>,
}

/// What the statement's task sent while a fetch waited.
enum Got {
    Batch(Chunk),
    NoMoreBatches,
    Reply(Reply),
    Lost(overtake_sched::CallError),
}

impl Running {
    /// Waits for the statement's next batch, or its end.
    async fn receive(&mut self) -> Got {
        let Running { next, reply, .. } = self;
        tokio::select! {
            biased;
            batch = async { next.as_mut().expect("checked").await }, if next.is_some() => {
                match batch {
                    Ok(batch) => Got::Batch(batch),
                    Err(_) => Got::NoMoreBatches,
                }
            }
            // Once its batches are all taken, a statement that ends keeps where the next would
            // have gone until the session has its reply (see `txn::Done`): wait for both.
            reply = reply => match reply {
                Ok(reply) => Got::Reply(reply),
                Err(e) => Got::Lost(e),
            },
        }
    }

    /// Takes the batch fetched last, telling the statement what to do next.
    fn take(&mut self, take: Take) {
        if let Some(taken) = self.taken.take() {
            taken.fulfil(take);
        }
    }
}

/// `tag` with its row count replaced by `n` (PostgreSQL counts a fetch's rows, not the
/// statement's: `SELECT 3` ends a portal whose last fetch gave three rows).
fn with_count(tag: &str, n: usize) -> String {
    match tag.rsplit_once(' ') {
        Some((head, count)) if count.parse::<u64>().is_ok() => format!("{head} {n}"),
        _ => tag.to_owned(),
    }
}

impl Session {
    /// Whether portal `name` is being fetched (its first Execute had a row limit).
    pub fn has_cursor(&self, name: &str) -> bool {
        self.find_cursor(name).is_some()
    }

    /// The portal being fetched named `name`: the block's, or one held past its transaction.
    pub(super) fn find_cursor(&self, name: &str) -> Option<&Cursor> {
        let block = self.block.iter().flat_map(|b| &b.cursors);
        block.chain(&self.held).find(|c| c.name == name)
    }

    /// The names of every portal being fetched (the block's and those held).
    pub(super) fn cursor_names(&self) -> Vec<String> {
        let block = self.block.iter().flat_map(|b| &b.cursors);
        block.chain(&self.held).map(|c| c.name.clone()).collect()
    }

    /// Starts portal `name` (`prepared` with `params`) for fetches of `fetch` rows, in the open
    /// block or an implicit one (ended by Sync). `None` when its rows are ready to fetch; else
    /// its answer (a statement without rows, or an error).
    pub async fn open_cursor(
        &mut self,
        name: &str,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        fetch: usize,
        cancelled: impl Future<Output = ()> + Send,
    ) -> Option<StatementAnswer> {
        self.begin_implicit();
        let streamed = matches!(prepared.command, overtake_sql::Command::Query(_))
            && !prepared.columns.is_empty()
            && writes(&prepared.command).is_none();
        if !streamed {
            // Run whole now, as PostgreSQL runs a portal that writes; its rows are held.
            let answer = self.execute_until(prepared, params, cancelled, None).await;
            let (columns, rows, state) = match answer {
                StatementAnswer::Rows { columns, rows, tag } => (columns, rows, State::Ended(tag)),
                StatementAnswer::Error(e) => return Some(StatementAnswer::Error(e)),
                other => {
                    self.keep_cursor(name, Vec::new(), Vec::new(), State::Spent);
                    return Some(other);
                }
            };
            self.keep_cursor(name, columns, rows, state);
            return None;
        }
        if self.block_failed() {
            return Some(self.fail(failed_block()));
        }
        if let Err(e) = access::check(&prepared.command, &self.actor) {
            return Some(self.fail(e));
        }
        let cancel = self.new_cancel();
        let columns = prepared.columns.clone();
        let (rows, next) = Promise::new();
        let mut statement = self.statement(prepared, params, (Some(rows), false));
        statement.batch_rows = Some(fetch.max(1));
        let reply = match self.send_to_block(StatementWork::Run(statement)).await {
            Ok(reply) => reply,
            Err(e) => return Some(self.fail(e)),
        };
        let running = Running {
            taken: None,
            next: Some(next),
            reply,
            cancel,
        };
        self.keep_cursor(name, columns, Vec::new(), State::Running(running));
        None
    }

    fn keep_cursor(
        &mut self,
        name: &str,
        columns: Vec<OutputColumn>,
        rows: Vec<Vec<Datum>>,
        state: State,
    ) {
        // A statement that ended the block (COMMIT through a portal) leaves nothing to fetch.
        if let Some(block) = &mut self.block {
            block.cursors.push(Cursor {
                name: name.to_owned(),
                columns,
                rows: rows.into(),
                state,
                position: Position::default(),
                hold: false,
            });
        }
    }

    /// Sends the next `max_rows` rows of portal `name` (all that are left if 0) to `out`:
    /// answers `Suspended` if that many were sent (more may follow), else the statement's tag
    /// counting the rows of this fetch. Stops with 57014 if `cancelled` completes first or
    /// `statement_timeout` passes.
    pub async fn fetch(
        &mut self,
        name: &str,
        max_rows: usize,
        cancelled: impl Future<Output = ()> + Send,
        out: &mut dyn RowOut,
    ) -> StatementAnswer {
        let want = if max_rows == 0 { usize::MAX } else { max_rows };
        let timer = self.statement_timer();
        let mut stop = std::pin::pin!(async {
            tokio::select! {
                _ = cancelled => "user request",
                _ = timer => "statement timeout",
            }
        });
        if self.block_failed() {
            return self.fail(failed_block());
        }
        let mut why = None;
        let mut sent = 0;
        loop {
            let Some(cursor) = self.cursor(name) else {
                return StatementAnswer::Error(SqlError::new(
                    sqlstate::INVALID_CURSOR_NAME,
                    format!("portal \"{name}\" does not exist"),
                ));
            };
            if !cursor.rows.is_empty() && sent < want {
                let n = cursor.rows.len().min(want - sent);
                let rows: Vec<_> = cursor.rows.drain(..n).collect();
                let columns = cursor.columns.clone();
                if let Err(e) = out.rows(&columns, rows).await {
                    self.drop_cursor(name);
                    return self.fail(e);
                }
                sent += n;
                continue;
            }
            if sent == want {
                return StatementAnswer::Suspended;
            }
            let running = match &mut cursor.state {
                State::Ended(tag) => return StatementAnswer::Done(with_count(tag, sent)),
                State::Spent => {
                    return self.fail(SqlError::new(
                        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                        format!("portal \"{name}\" cannot be run"),
                    ));
                }
                State::Running(running) => running,
            };
            running.take(Take::More);
            let got = tokio::select! {
                biased;
                got = running.receive() => got,
                reason = &mut stop, if why.is_none() => {
                    // The statement stops at its next check and answers 57014.
                    running.cancel.request();
                    why = Some(reason);
                    continue;
                }
            };
            match got {
                Got::Batch(batch) => {
                    cursor.rows.extend(batch.rows);
                    running.taken = Some(batch.taken);
                    running.next = Some(batch.next);
                }
                Got::NoMoreBatches => running.next = None,
                Got::Reply(reply) => {
                    cursor.state = State::Spent;
                    match self.on_reply(reply) {
                        Ok(output) => {
                            let cursor = self.cursor(name).expect("still there");
                            cursor.rows.extend(output.rows);
                            cursor.state = State::Ended(output.tag);
                        }
                        Err(e) => {
                            self.drop_cursor(name);
                            let e = match why {
                                Some(why) if e.code == sqlstate::QUERY_CANCELED => SqlError::new(
                                    e.code,
                                    format!("canceling statement due to {why}"),
                                ),
                                _ => e,
                            };
                            return self.fail(e);
                        }
                    }
                }
                Got::Lost(e) => {
                    self.drop_cursor(name);
                    return self.fail(txn::unanswered(e));
                }
            }
        }
    }

    pub(super) fn cursor(&mut self, name: &str) -> Option<&mut Cursor> {
        let block = self.block.iter_mut().flat_map(|b| &mut b.cursors);
        block.chain(&mut self.held).find(|c| c.name == name)
    }

    fn drop_cursor(&mut self, name: &str) -> Option<Cursor> {
        if let Some(cursors) = self.block.as_mut().map(|b| &mut b.cursors)
            && let Some(i) = cursors.iter().position(|c| c.name == name)
        {
            return Some(cursors.remove(i));
        }
        let i = self.held.iter().position(|c| c.name == name)?;
        Some(self.held.remove(i))
    }

    /// Before the block commits: its cursors declared `WITH HOLD` are read to their end (the
    /// one running, within `statement_mem`) and taken out of it, to be kept once it commits.
    pub(super) async fn keep_held_cursors(&mut self) -> Result<Vec<Cursor>, SqlError> {
        let Some(block) = &self.block else {
            return Ok(Vec::new());
        };
        if block
            .cursors
            .iter()
            .any(|c| c.hold && matches!(c.state, State::Running(_)))
        {
            self.set_aside_cursor().await?;
        }
        let Some(block) = &mut self.block else {
            return Ok(Vec::new());
        };
        let (held, others) = std::mem::take(&mut block.cursors)
            .into_iter()
            .partition(|c| c.hold);
        block.cursors = others;
        Ok(held)
    }

    /// Closes portal `name` if it is being fetched (Close, or a Bind that replaces it): a
    /// statement still running stops where it is. Its error, if it failed before it could stop,
    /// fails the block.
    pub async fn close_cursor(&mut self, name: &str) {
        if let Some(cursor) = self.drop_cursor(name)
            && let Err(e) = self.stop(cursor).await
        {
            self.fail(e);
        }
    }

    /// Stops a cursor's statement where it is (what it read stays read; its transaction goes
    /// on) and takes the block's task back.
    async fn stop(&mut self, cursor: Cursor) -> Result<(), SqlError> {
        let State::Running(running) = cursor.state else {
            return Ok(());
        };
        let mut running = running;
        if running.taken.is_some() {
            running.take(Take::Stop);
        }
        // Else the statement has sent no batch yet: stop it at its first (or let it end).
        let reply = loop {
            match running.receive().await {
                // A batch no fetch asked for yet (a cursor declared and closed unread).
                Got::Batch(batch) => {
                    batch.taken.fulfil(Take::Stop);
                    running.next = Some(batch.next);
                }
                Got::NoMoreBatches => running.next = None,
                Got::Reply(reply) => break reply,
                Got::Lost(e) => return Err(txn::unanswered(e)),
            }
        };
        self.on_reply(reply).map(drop)
    }

    /// Before the block ends: stops every running portal, and forgets them all.
    pub(super) async fn stop_cursors(&mut self) -> Result<(), SqlError> {
        let cursors = match &mut self.block {
            Some(block) => std::mem::take(&mut block.cursors),
            None => return Ok(()),
        };
        let mut result = Ok(());
        for cursor in cursors {
            let stopped = self.stop(cursor).await;
            result = result.and(stopped);
        }
        result
    }

    /// Before the block's task runs another statement: a running portal is read to its end,
    /// its rows held for the fetches to come. Fails (and the portal with it) if they pass the
    /// statement memory budget (53200) or the portal's statement failed.
    pub(super) async fn set_aside_cursor(&mut self) -> Result<(), SqlError> {
        let Some(block) = &mut self.block else {
            return Ok(());
        };
        let Some(i) = block
            .cursors
            .iter()
            .position(|c| matches!(c.state, State::Running(_)))
        else {
            return Ok(());
        };
        let budget = self.statement_memory();
        let block = self.block.as_mut().expect("checked");
        let cursor = &mut block.cursors[i];
        let name = cursor.name.clone();
        let State::Running(mut running) = std::mem::replace(&mut cursor.state, State::Spent) else {
            unreachable!("found running");
        };
        let mut bytes: usize = cursor
            .rows
            .iter()
            .map(|r| overtake_sql::values::datum::row_bytes(r))
            .sum();
        let mut over = false;
        let reply = loop {
            running.take(if over { Take::Stop } else { Take::More });
            match running.receive().await {
                Got::Batch(batch) => {
                    bytes += batch
                        .rows
                        .iter()
                        .map(|r| overtake_sql::values::datum::row_bytes(r))
                        .sum::<usize>();
                    over = bytes > budget;
                    cursor.rows.extend(batch.rows);
                    running.taken = Some(batch.taken);
                    running.next = Some(batch.next);
                }
                Got::NoMoreBatches => running.next = None,
                Got::Reply(reply) => break Ok(reply),
                Got::Lost(e) => break Err(txn::unanswered(e)),
            }
        };
        let output = reply.and_then(|reply| self.on_reply(reply));
        let cursor = self.cursor(&name).expect("still there");
        match output {
            Ok(_) if over => {}
            Ok(output) => {
                cursor.rows.extend(output.rows);
                cursor.state = State::Ended(output.tag);
                return Ok(());
            }
            Err(e) => {
                self.drop_cursor(&name);
                return Err(e);
            }
        }
        self.drop_cursor(&name);
        Err(SqlError::new(
            sqlstate::OUT_OF_MEMORY,
            format!(
                "out of memory: the rows left in portal \"{name}\", held while another statement runs, pass statement_mem"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::with_count;

    #[test]
    fn a_fetch_counts_its_own_rows() {
        assert_eq!(with_count("SELECT 10", 3), "SELECT 3");
        assert_eq!(with_count("INSERT 0 5", 1), "INSERT 0 1");
        assert_eq!(with_count("SHOW", 1), "SHOW");
    }
}
