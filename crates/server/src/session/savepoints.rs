//! SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE SAVEPOINT in a transaction block, as PostgreSQL
//! has them: a stack of named points; rolling back to one undoes the block's writes, catalog
//! changes and settings since it (and ends a failed state), keeping the savepoint; releasing one
//! forgets it and those after it. ORMs and drivers use them for nested transactions.
//!
//! The block's task holds the engine's side (its buffered writes, see `txn::SavepointOp`); this
//! keeps the names and what the session must restore. It must never leave the stack and the
//! task's transaction disagreeing: a savepoint is pushed only once the task made it.

use std::sync::Arc;

use overtake_engine::Savepoint;
use overtake_sched::Promise;
use overtake_sql::{SqlError, sqlstate};

use super::block::{SavepointEntry, TxnState, failed_block};
use super::{Session, StatementAnswer};
use crate::txn::{self, Request, SavepointOp, SavepointReply};

impl Session {
    /// `SAVEPOINT name`.
    pub(super) async fn savepoint(&mut self, name: &str) -> Result<StatementAnswer, SqlError> {
        let block = self.explicit_block("SAVEPOINT")?;
        if block.failed {
            return Err(failed_block());
        }
        let running = matches!(block.txn, TxnState::Running(_));
        let engine = if running {
            self.ask_task(SavepointOp::Make).await?
        } else {
            None
        };
        let settings = self.settings.clone();
        let block = self.block.as_mut().expect("checked above");
        block.savepoints.push(SavepointEntry {
            name: name.to_owned(),
            engine,
            changes: block.pending.len(),
            settings,
            local: block.local.clone(),
        });
        Ok(StatementAnswer::Done("SAVEPOINT".into()))
    }

    /// `ROLLBACK TO SAVEPOINT name`: also what ends a failed block's failed state.
    pub(super) async fn rollback_to(&mut self, name: &str) -> Result<StatementAnswer, SqlError> {
        let block = self.explicit_block("ROLLBACK TO SAVEPOINT")?;
        let at = find(block, name)?;
        let engine = block.savepoints[at].engine;
        match block.txn {
            TxnState::Running(_) => {
                self.ask_task(SavepointOp::RollbackTo(engine)).await?;
            }
            TxnState::NotStarted | TxnState::PointReads => {}
            // The transaction ended (a statement was abandoned mid-way): nothing to go back to.
            TxnState::Gone => return Err(failed_block()),
        }
        let block = self.block.as_mut().expect("checked above");
        block.savepoints.truncate(at + 1);
        let entry = &block.savepoints[at];
        block.failed = false;
        block.local = entry.local.clone();
        self.settings = entry.settings.clone();
        let later = Arc::make_mut(&mut block.pending).split_off(entry.changes);
        if !later.is_empty() {
            // The engine tables the undone changes made go; dropping one waits for the log, which
            // the thread serving sessions must not do (as at the end of a block).
            let catalog = Arc::clone(&self.shared.catalog);
            tokio::task::spawn_blocking(move || later.discard(&catalog))
                .await
                .map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))?;
        }
        // Its `SET LOCAL`s may be gone: the session's steps follow.
        self.class();
        Ok(StatementAnswer::Done("ROLLBACK".into()))
    }

    /// `RELEASE SAVEPOINT name`: it and the savepoints after it are forgotten, their writes kept.
    pub(super) async fn release(&mut self, name: &str) -> Result<StatementAnswer, SqlError> {
        let block = self.explicit_block("RELEASE SAVEPOINT")?;
        if block.failed {
            return Err(failed_block());
        }
        let at = find(block, name)?;
        block.savepoints.truncate(at);
        if block.savepoints.is_empty() && matches!(block.txn, TxnState::Running(_)) {
            self.ask_task(SavepointOp::ReleasedAll).await?;
        }
        Ok(StatementAnswer::Done("RELEASE".into()))
    }

    /// The open block if BEGIN opened it: savepoints need one (25P01 otherwise, as PostgreSQL
    /// answers outside a block and in the implicit block of a message of several statements).
    fn explicit_block(&mut self, what: &str) -> Result<&mut super::block::Block, SqlError> {
        match self.block.as_mut() {
            Some(b) if !b.implicit => Ok(b),
            _ => Err(SqlError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                format!("{what} can only be used in transaction blocks"),
            )),
        }
    }

    /// Sends a savepoint operation to the block's running task and takes its answer.
    async fn ask_task(&mut self, op: SavepointOp) -> Result<Option<Savepoint>, SqlError> {
        let block = self.block.as_mut().expect("a block is open");
        let TxnState::Running(promise) = std::mem::replace(&mut block.txn, TxnState::Gone) else {
            unreachable!("only a running block's task is asked");
        };
        let (reply, answer) = Promise::<SavepointReply>::new();
        promise.fulfil(Request::Savepoint(op, reply));
        let SavepointReply { result, next } = answer.await.map_err(txn::unanswered)?;
        if let Some(block) = self.block.as_mut() {
            block.txn = TxnState::Running(next);
        }
        result
    }
}

/// The newest savepoint of `block` named `name` (3B001 if there is none).
fn find(block: &super::block::Block, name: &str) -> Result<usize, SqlError> {
    block
        .savepoints
        .iter()
        .rposition(|s| s.name == name)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_SAVEPOINT_SPECIFICATION,
                format!("savepoint \"{name}\" does not exist"),
            )
        })
}
