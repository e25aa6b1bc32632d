//! Savepoints: points of a transaction's buffered writes it can roll back to without ending
//! (SQL's SAVEPOINT, ROLLBACK TO SAVEPOINT, RELEASE SAVEPOINT). Writes are buffered until commit,
//! so rolling back to a savepoint only restores the write set: nothing was installed, nobody else
//! saw anything.
//!
//! What it must never do: undo what the transaction read (its reads stay in the set validated at
//! commit, which can only make a serializable commit fail where a narrower set would not) or
//! give back locks (row locks taken after the savepoint stay held until the transaction ends).

use super::Transaction;
use super::writeset::{Buffered, Mark, Target};
use crate::error::Result;

/// A point of a transaction's writes to roll back to, made by
/// [`Transaction::savepoint`]. Savepoints are used as a stack: rolling back to one makes every
/// savepoint made after it unusable (using one then panics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint(Mark);

impl Transaction<'_> {
    /// A savepoint at this point of the transaction's writes.
    pub fn savepoint(&mut self) -> Result<Savepoint> {
        self.check_active()?;
        Ok(Savepoint(self.buf.ws.mark()))
    }

    /// Undoes every write made since `savepoint`, which stays usable (SQL's ROLLBACK TO keeps
    /// the savepoint). Fails if the transaction is no longer active.
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        self.check_active()?;
        let undone = self.buf.ws.roll_back_to(savepoint.0);
        self.release_unpublished(&undone);
        Ok(())
    }

    /// Hands back the OIDs allocated for the records of `entries` that were never installed:
    /// nobody saw them.
    pub(super) fn release_unpublished(&self, entries: &[Buffered]) {
        for e in entries {
            if e.target == (Target::Fresh { unpublished: true }) {
                self.engine
                    .catalog
                    .recorded(e.table)
                    .records
                    .release_unpublished(e.oid);
            }
        }
    }

    /// No savepoint will be rolled back to any more (the last was released): writes stop
    /// keeping what they change.
    pub fn forget_savepoints(&mut self) {
        self.buf.ws.forget_marks();
    }
}
