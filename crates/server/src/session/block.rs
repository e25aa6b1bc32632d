//! A session's transaction block, as PostgreSQL keeps it: none (each statement its own
//! transaction), implicit (a Query message of several statements, or the statements up to a
//! Sync), begun (BEGIN), or failed (refusing all but COMMIT and ROLLBACK with 25P02). A block is
//! one scheduler task that parks between statements; this part starts it, sends it statements,
//! ends it, and ends an idle one past `idle_in_transaction_session_timeout`.

use std::sync::Arc;

use overtake_engine::Savepoint;
use overtake_sched::Promise;
use overtake_sql::catalog::pending::{Pending, Tables};
use overtake_sql::{IsolationLevel, SqlError, sqlstate};

use super::{Session, StatementAnswer, runner_of};
use crate::runner::Runner;
use crate::settings::{self, Settings};
use crate::txn::{self, Reply, Request, StatementWork};

pub(super) enum TxnState {
    /// BEGIN was seen; no statement has run yet (the task starts with the first).
    NotStarted,
    /// Only point reads have run, at READ COMMITTED, each as a transaction of its own in its
    /// session's step (see [`Session::run`]): the same at that level, where every statement
    /// reads a fresh snapshot and a read holds nothing. No task yet; but a query has run.
    PointReads,
    Running(Promise<Request>),
    /// A statement failed or was cancelled: the task has ended.
    Gone,
}

pub(super) struct Block {
    pub(super) level: IsolationLevel,
    /// `READ ONLY`: statements that write are refused (25006).
    pub(super) read_only: bool,
    pub(super) txn: TxnState,
    pub(super) failed: bool,
    /// `SET LOCAL` values, gone with the block.
    pub(super) local: Settings,
    /// The session's settings when the block began: a rollback restores them (a `SET` in a
    /// transaction that rolls back is undone, as in PostgreSQL).
    pub(super) saved: Settings,
    /// Opened by a Query message holding several statements, not by BEGIN: it commits when the
    /// message ends and rolls back at its first error (PostgreSQL's implicit transaction block).
    pub(super) implicit: bool,
    /// When its first statement began: `now()` for all of them.
    pub(super) began: Option<i64>,
    /// Its catalog changes (DDL), seen by its own statements until it commits.
    pub(super) pending: Arc<Pending>,
    /// Its portals being fetched a few rows at a time.
    pub(super) cursors: Vec<super::cursor::Cursor>,
    /// Its savepoints, oldest first (see `savepoints`).
    pub(super) savepoints: Vec<SavepointEntry>,
}

/// A savepoint of the open block.
pub(super) struct SavepointEntry {
    pub(super) name: String,
    /// The engine's point in the block's writes (`None`: the block's transaction had not begun).
    pub(super) engine: Option<Savepoint>,
    /// How many catalog changes the block had made.
    pub(super) changes: usize,
    /// The session's settings and the block's `SET LOCAL`s then.
    pub(super) settings: Settings,
    pub(super) local: Settings,
}

/// Makes `block` read-only, or read-write again if no statement has run in it yet.
pub(super) fn set_read_only(block: &mut Block, read_only: bool) -> Result<(), SqlError> {
    if !read_only && block.read_only && !matches!(block.txn, TxnState::NotStarted) {
        return Err(SqlError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "transaction read-write mode must be set before any query",
        ));
    }
    block.read_only = read_only;
    Ok(())
}

/// The error of a statement sent to a failed block (25P02).
pub fn failed_block() -> SqlError {
    SqlError::new(
        sqlstate::IN_FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl Session {
    /// Opens the implicit transaction block of a Query message holding several statements, unless
    /// a block is open: its statements then commit or roll back together.
    pub fn begin_implicit(&mut self) {
        if self.block.is_none() {
            self.block = Some(self.new_block(self.default_level(), true));
        }
    }

    /// Ends the implicit block of a Query message (if one is open): commits it, or rolls it back
    /// if a statement failed. A block that BEGIN made explicit stays open.
    pub async fn end_implicit(&mut self) -> Option<SqlError> {
        if !self.block.as_ref().is_some_and(|b| b.implicit) {
            return None;
        }
        match self.end_block(true).await {
            StatementAnswer::Error(e) => Some(e),
            _ => None,
        }
    }

    pub(super) fn new_block(&self, level: IsolationLevel, implicit: bool) -> Block {
        Block {
            level,
            read_only: self.default_read_only(),
            txn: TxnState::NotStarted,
            failed: false,
            local: Settings::default(),
            saved: self.settings.clone(),
            implicit,
            began: None,
            pending: Arc::default(),
            cursors: Vec::new(),
            savepoints: Vec::new(),
        }
    }

    /// Runs a statement's work: alone, or in the block's task (started by its first statement,
    /// at the priority then in effect).
    pub(super) async fn run(
        &mut self,
        work: StatementWork,
    ) -> Result<overtake_sql::Output, SqlError> {
        let runner = runner_of(&self.thread, &self.shared, &self.home);
        let db = self.shared.catalog.database();
        // On the session's own worker, a point read runs in the step that serves the session:
        // it costs less than handing it to a task and back. So it does in a block that no
        // other statement has run in yet, at READ COMMITTED (see `TxnState::PointReads`).
        let (level, alone) = match &self.block {
            None => (self.default_level(), true),
            Some(b) => (
                b.level,
                b.level == IsolationLevel::ReadCommitted
                    && matches!(b.txn, TxnState::NotStarted | TxnState::PointReads),
            ),
        };
        if alone && matches!(runner, Runner::Worker(..)) && txn::runs_here(db, level, &work) {
            let done = txn::run_here(db, self.class().0, level, work, &self.cancel).await?;
            if let Some(b) = &mut self.block {
                b.txn = TxnState::PointReads;
            }
            return Ok(done.out);
        }
        if self.block.is_none() {
            let done = txn::run_alone(runner, db, self.class(), level, work, &self.cancel).await?;
            // Only now: the end of its batches wakes no one (see `txn::Done`).
            drop(done.batches);
            return Ok(done.out);
        }
        let answer = self.send_to_block(work).await?;
        let guard = txn::Abandon::new(&self.cancel);
        // If this future is dropped here (the statement was cancelled), the guard stops the
        // statement's scans and the block stays `Gone`: the task, finding no one to answer,
        // rolls back.
        let reply = answer.await.map_err(crate::txn::unanswered)?;
        guard.disarm();
        self.on_reply(reply)
    }

    /// Sends a statement's work to the open block's task (starting it with the block's first
    /// statement); its reply comes through the ticket, to pass to [`on_reply`](Self::on_reply).
    /// Until then the block has no task to send to (`Gone`).
    pub(super) async fn send_to_block(
        &mut self,
        work: StatementWork,
    ) -> Result<overtake_sched::Ticket<Reply>, SqlError> {
        // The block's task runs one statement at a time.
        self.set_aside_cursor().await?;
        let class = self.class();
        let block = self.block.as_mut().expect("a block is open");
        let promise = match std::mem::replace(&mut block.txn, TxnState::Gone) {
            TxnState::Running(p) => p,
            TxnState::NotStarted | TxnState::PointReads => {
                txn::start_block(
                    runner_of(&self.thread, &self.shared, &self.home),
                    self.shared.catalog.database(),
                    class,
                    // Savepoints made before its first statement keep a failed one's
                    // transaction for ROLLBACK TO, as those made after do.
                    (block.level, !block.savepoints.is_empty()),
                )
                .await?
            }
            TxnState::Gone => return Err(failed_block()),
        };
        let (reply, answer) = Promise::<Reply>::new();
        promise.fulfil(Request::Run {
            work,
            cancel: Arc::clone(&self.cancel),
            reply,
        });
        Ok(answer)
    }

    /// Takes a statement's reply from the block's task: where to send the next statement (none
    /// if the statement failed: the task rolled back and ended), and its catalog changes.
    pub(super) fn on_reply(&mut self, reply: Reply) -> Result<overtake_sql::Output, SqlError> {
        let block = self.block.as_mut().expect("a block is open");
        if let Some(next) = reply.next {
            block.txn = TxnState::Running(next);
        }
        let done = reply.result?;
        drop(done.batches);
        if !done.changes.is_empty() {
            Arc::make_mut(&mut block.pending).record(done.changes);
        }
        Ok(done.out)
    }

    /// COMMIT (or ROLLBACK): ends the block. A block that does not commit takes back the `SET`s
    /// made in it.
    pub(super) async fn end_block(&mut self, commit: bool) -> StatementAnswer {
        let answer = self.end_block_inner(commit).await;
        // Its `SET LOCAL`s are gone, and perhaps its `SET`s: the session's steps follow.
        self.class();
        answer
    }

    async fn end_block_inner(&mut self, commit: bool) -> StatementAnswer {
        // Cursors declared WITH HOLD outlive it if it commits.
        let held = match commit && !self.block_failed() {
            true => self.keep_held_cursors().await,
            false => Ok(Vec::new()),
        };
        let held = held.unwrap_or_else(|_| {
            self.mark_failed();
            Vec::new()
        });
        // Its portals end with it; one whose statement failed before it could stop fails it.
        if self.stop_cursors().await.is_err() {
            self.mark_failed();
        }
        let Some(block) = self.block.take() else {
            // PostgreSQL warns that no transaction is in progress, and succeeds.
            return StatementAnswer::End(if commit { "COMMIT" } else { "ROLLBACK" }.into());
        };
        let answer = Self::finish(block.txn, commit && !block.failed).await;
        let pending = Arc::unwrap_or_clone(block.pending);
        let committed = matches!(&answer, StatementAnswer::End(tag) if tag == "COMMIT");
        if committed {
            self.held.extend(held);
        } else {
            self.settings = block.saved;
        }
        if pending.is_empty() {
            return answer;
        }
        // Committed: every session sees the block's catalog changes from now on; else the
        // engine tables they made go. Dropping an engine table waits until its log record is
        // durable, which the thread serving sessions must not do: a thread of the runtime's
        // blocking pool does it (DDL is rare; most blocks have no changes and skip this).
        let catalog = Arc::clone(&self.shared.catalog);
        let settled = tokio::task::spawn_blocking(move || {
            if committed {
                pending.publish(&catalog)
            } else {
                pending.discard(&catalog);
                Ok(())
            }
        })
        .await;
        match settled {
            Ok(Err(e)) => StatementAnswer::Error(e),
            Err(e) => {
                StatementAnswer::Error(SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))
            }
            Ok(Ok(())) => answer,
        }
    }

    /// Commits (or rolls back) a block's transaction.
    pub(super) async fn finish(txn: TxnState, commit: bool) -> StatementAnswer {
        match txn {
            TxnState::Running(p) if commit => {
                let (reply, answer) = Promise::new();
                p.fulfil(Request::Commit(reply));
                match answer.await {
                    Ok(Ok(())) => StatementAnswer::End("COMMIT".into()),
                    Ok(Err(e)) => StatementAnswer::Error(e),
                    Err(e) => StatementAnswer::Error(crate::txn::unanswered(e)),
                }
            }
            TxnState::Running(p) => {
                let (reply, answer) = Promise::new();
                p.fulfil(Request::Rollback(reply));
                let _ = answer.await;
                StatementAnswer::End("ROLLBACK".into())
            }
            TxnState::NotStarted | TxnState::PointReads if commit => {
                StatementAnswer::End("COMMIT".into())
            }
            _ => StatementAnswer::End("ROLLBACK".into()),
        }
    }

    /// Fails the open block, if any (an error was reported).
    pub fn mark_failed(&mut self) {
        if let Some(b) = &mut self.block {
            b.failed = true;
        }
    }

    /// Whether the open transaction block has failed (statements are refused until it ends).
    pub fn block_failed(&self) -> bool {
        self.block.as_ref().is_some_and(|b| b.failed)
    }

    /// Whether a transaction block is open.
    pub fn in_block(&self) -> bool {
        self.block.is_some()
    }

    /// Whether the transaction a statement runs in now is read-only: the block's, or a statement
    /// of its own under `default_transaction_read_only`.
    pub(super) fn read_only(&self) -> bool {
        match &self.block {
            Some(b) => b.read_only,
            None => self.default_read_only(),
        }
    }

    pub(super) fn default_read_only(&self) -> bool {
        self.setting("default_transaction_read_only")
            .is_some_and(|v| v == "on")
    }

    /// A message came from the client; fails with FATAL 25P03 if the session was ended for idling
    /// in a transaction.
    pub fn touch(&mut self) -> Result<(), SqlError> {
        if self.terminated {
            return Err(SqlError::new(
                sqlstate::IDLE_IN_TRANSACTION_TIMEOUT,
                "terminating connection due to idle-in-transaction timeout",
            ));
        }
        self.moment += 1;
        Ok(())
    }

    /// If the session is idle in a block and `idle_in_transaction_session_timeout` is set: how
    /// long it may stay so, and the moment it became idle.
    pub fn idle_watch(&self) -> Option<(std::time::Duration, u64)> {
        self.block.as_ref()?;
        let ms = self
            .setting("idle_in_transaction_session_timeout")
            .and_then(|v| settings::milliseconds(&v))
            .filter(|ms| *ms > 0)?;
        Some((std::time::Duration::from_millis(ms), self.moment))
    }

    /// Ends the session if it has stayed idle in its block since `moment`: the block rolls back
    /// now (its task ends, freeing its slot, snapshot and locks). Whether it ended.
    pub fn end_if_idle_since(&mut self, moment: u64) -> bool {
        if self.moment != moment || self.block.is_none() || self.terminated {
            return false;
        }
        if let Some(block) = self.block.take() {
            // Dropping the block's promise ends its task, which rolls back.
            drop(block.txn);
            self.settings = block.saved;
            Arc::unwrap_or_clone(block.pending).discard(&self.shared.catalog);
        }
        self.terminated = true;
        true
    }

    /// The open block's uncommitted catalog changes, if it has any.
    pub fn pending(&self) -> Option<Arc<Pending>> {
        self.block
            .as_ref()
            .filter(|b| !b.pending.is_empty())
            .map(|b| Arc::clone(&b.pending))
    }

    /// The catalog as this session's next statement sees it: its open block's uncommitted
    /// changes over the shared catalog.
    pub fn tables(&self) -> Tables<'_> {
        let tables = match &self.block {
            Some(b) => Tables::with(&self.shared.catalog, &b.pending),
            None => Tables::shared(&self.shared.catalog),
        };
        // For the system catalogs, which show the session's role.
        tables.acting_for(&self.actor)
    }
}
