//! A transaction's locking: its handle on the lock manager, the locks its reads, writes and
//! `lock_row`/`lock_table` take, and what a lock wait's end (granted, timed out, revoked)
//! means for it.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::catalog::table::{IndexRef, Table};
use crate::error::{Error, Result};
use crate::lock::{LockAbort, LockMode, TxnId};
use crate::storage::key::KeyBuf;

use super::names::{KeyLock, key_existence_lock, table_lock};
use super::{LATEST, LockStats, Locker, TableLock};
use crate::txn::Transaction;
use crate::txn::writeset::Target;

impl<'db> Transaction<'db> {
    /// This transaction's handle on the lock manager, registered at `priority` and begun as the
    /// `age`-th transaction (`None`: the youngest yet), if the database locks or the isolation
    /// level locks what it writes (READ COMMITTED, on the row locks' manager).
    pub(in crate::txn) fn register_locker(
        engine: &'db crate::txn::shared::Engine,
        id: TxnId,
        (priority, isolation): (overtake_priority::Priority, crate::txn::Isolation),
        age: Option<u64>,
    ) -> Option<Locker<'db>> {
        let manager = match &engine.locks {
            Some(manager) => manager,
            None if isolation == crate::txn::Isolation::ReadCommitted => &engine.row_locks,
            None => return None,
        };
        let registered = manager.register_aged(id, priority.level() as u8, age);
        Some(Locker::new(manager, &engine.txns, id, registered))
    }

    /// Its place in the lock manager's begin order (two-phase locking only), which a retry of
    /// the same work keeps (see `Database::run`).
    pub(crate) fn lock_age(&self) -> Option<u64> {
        self.locker.as_ref().map(|l| l.began)
    }

    /// If a lock policy aborted it rather than let it wait (WDL1): the holders it would have
    /// waited for, which a retry waits out first (see `Database::run`).
    pub(crate) fn take_restart_after(&mut self) -> Vec<TxnId> {
        self.locker
            .as_mut()
            .map(|l| std::mem::take(&mut l.restart_after))
            .unwrap_or_default()
    }

    /// The snapshot reads use: the newest commit under two-phase locking, else the
    /// transaction's own.
    pub(in crate::txn) fn read_snapshot(&self) -> u64 {
        if self.two_phase {
            LATEST
        } else {
            self.lease.snapshot
        }
    }

    /// The snapshot a buffered write must still hold at commit (see `Buffered::read_at`).
    pub(in crate::txn) fn write_snapshot(&self, write: &crate::txn::writeset::Buffered) -> u64 {
        if self.two_phase {
            LATEST
        } else {
            write.read_at
        }
    }

    /// Before a write reads the row it changes: its primary key's write lock, if the
    /// transaction locks; under READ COMMITTED the snapshot then moves on, so that the write
    /// reads the newest committed row (which the lock now keeps from changing).
    pub(in crate::txn) fn lock_for_write(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        self.lock_primary(table, key, LockMode::Exclusive)?;
        if self.isolation == crate::txn::Isolation::ReadCommitted && !self.two_phase {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(())
    }

    /// Marks the start of the next statement: under READ COMMITTED (without two-phase locking)
    /// the transaction reads a fresh snapshot from here on; at other levels this does nothing.
    pub fn next_statement(&mut self) {
        if self.isolation == crate::txn::Isolation::ReadCommitted
            && !self.two_phase
            && self.is_active()
        {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
    }

    /// Takes the write lock of the row under primary key `key` of `table` (`SELECT ... FOR
    /// UPDATE`), as a write would: under two-phase locking and READ COMMITTED it is held until
    /// the transaction ends, and READ COMMITTED reads the newest committed rows from here on.
    /// Under snapshot and serializable isolation in an MVCC database it does nothing: a
    /// concurrent write of the row fails one of the two at its write or commit instead.
    pub fn lock_row(&mut self, table: &Table, key: &KeyBuf) -> Result<()> {
        self.check(table)?;
        self.lock_for_write(table, key.as_bytes())
    }

    /// Takes the lock standing for the existence of primary key `key` in `table` in `mode`
    /// until the transaction ends, at every isolation level and in every concurrency-control
    /// mode, waiting (parked) while another transaction holds it in a mode that conflicts: a
    /// foreign key's check of the row it references takes [`KeyLock::Share`], and a delete of
    /// a referenced row or a change of its key takes [`KeyLock::Update`], so a check and the
    /// removal of what it checked never both succeed (PostgreSQL's FOR KEY SHARE against FOR
    /// UPDATE). The lock is not the row's: writes of the row's other columns neither take nor
    /// wait for it. Under READ COMMITTED (without two-phase locking) the transaction reads the
    /// newest committed rows from here on, so the check that follows sees what the lock now
    /// keeps. The locks are the lock manager's: a paused holder's are revoked by the lock
    /// policy like any other.
    pub fn lock_key(&mut self, table: &Table, key: &KeyBuf, mode: KeyLock) -> Result<()> {
        self.check(table)?;
        let mode = match mode {
            KeyLock::Share => LockMode::Shared,
            KeyLock::Update => LockMode::Exclusive,
        };
        let name = key_existence_lock(table, key.as_bytes());
        let result = self.locker_made().acquire(name, mode);
        self.lock_result(result)?;
        if self.isolation == crate::txn::Isolation::ReadCommitted && !self.two_phase {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(())
    }

    /// Limits each lock wait from here on to `limit` (`None`: no limit), as PostgreSQL's
    /// `lock_timeout`: a wait that lasts it ends the transaction with
    /// [`AbortReason::LockTimeout`](crate::AbortReason::LockTimeout). (Only transactions that take locks wait.)
    pub fn set_lock_timeout(&mut self, limit: Option<Duration>) {
        self.lock_limit = limit;
        if let Some(locker) = &mut self.locker {
            locker.limit = limit;
        }
    }

    /// Makes `flag` end this transaction's lock waits from here on: once it is set, a wait
    /// in progress ends with [`AbortReason::Interrupted`](crate::AbortReason::Interrupted) when the waiting task is woken (the
    /// setter unparks it: `overtake_runtime::park::current_unparker` taken where the
    /// statement runs), and a wait that begins after it is set ends at once. `None`: waits end
    /// only as the lock policy and `set_lock_timeout` say. (A cancelled statement parked in a
    /// lock wait is how PostgreSQL's cancel ends a wait.)
    pub fn set_interrupt(&mut self, flag: Option<Arc<AtomicBool>>) {
        if let Some(locker) = &mut self.locker {
            locker.interrupt.clone_from(&flag);
        }
        self.lock_interrupt = flag;
    }

    /// Makes this transaction take each row's write lock before it writes the row (and in
    /// [`lock_row`](Self::lock_row)), whatever its isolation level, as PostgreSQL's writers do:
    /// a READ COMMITTED writer of the same row then waits for it instead of failing at commit,
    /// and it waits for theirs (then fails with a conflict if they committed a change to the
    /// row). READ COMMITTED and two-phase locking do this already. Call it before any write.
    /// The locks are the lock manager's, so a paused holder's are revoked by the lock policy
    /// like any other.
    pub fn lock_rows_it_writes(&mut self) {
        self.locker_made();
        self.locks_rows = true;
    }

    /// Its lock-manager handle, made now if it had none (a transaction that takes no row locks
    /// gets one for its table locks, or once it is asked to lock the rows it writes).
    fn locker_made(&mut self) -> &mut Locker<'db> {
        match &mut self.locker {
            Some(locker) => locker,
            none => {
                let engine = self.engine;
                let manager = engine.locks.as_ref().unwrap_or(&engine.row_locks);
                let level = self.priority.level() as u8;
                let registered = manager.register_aged(self.lease.stamp, level, None);
                let mut locker = Locker::new(manager, &engine.txns, self.lease.stamp, registered);
                locker.limit = self.lock_limit;
                locker.interrupt.clone_from(&self.lock_interrupt);
                none.insert(locker)
            }
        }
    }

    /// [`lock_row`](Self::lock_row) without waiting (`FOR UPDATE NOWAIT`, `SKIP LOCKED`):
    /// `Ok(false)`, with nothing taken and the transaction still active, if another transaction
    /// holds the row's lock or waits for it first.
    pub fn try_lock_row(&mut self, table: &Table, key: &KeyBuf) -> Result<bool> {
        self.check(table)?;
        if !self.locks_rows {
            return Ok(true);
        }
        let locker = self.locker_made();
        let result = locker.try_lock_key(table, IndexRef::Primary, key.as_bytes());
        let granted = self.lock_result(result)?;
        if granted && self.isolation == crate::txn::Isolation::ReadCommitted && !self.two_phase {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(granted)
    }

    /// Takes `table`'s table lock in `mode` until the transaction ends, waiting (parked) while
    /// another transaction holds it in a mode that conflicts, as PostgreSQL's table-level locks:
    /// [`TableLock::Write`] is what every writer of the table holds, [`TableLock::Rebuild`] is
    /// what replacing the table takes, so that no writer commits into a table while it is copied
    /// and replaced. At every isolation level and in every concurrency-control mode (a
    /// transaction that takes no row locks gets a lock-manager handle for this alone); waits
    /// join deadlock detection and the lock policy as row locks do. Under READ COMMITTED a
    /// rebuild reads the newest committed rows from here on; at other levels a rebuild's copy
    /// must scan with [`ScanOptions::validated`](crate::ScanOptions::validated), so that rows
    /// committed between its snapshot and its lock fail its commit instead of being left out.
    /// When a transaction holding `Rebuild` commits, the table counts as replaced: a later
    /// request for its lock fails with [`Error::TableReplaced`] (the transaction stays active).
    pub fn lock_table(&mut self, table: &Table, mode: TableLock) -> Result<()> {
        self.check(table)?;
        let held = self.table_locks.iter().find(|(t, _)| *t == table.id());
        if held.is_some_and(|&(_, m)| m == mode || m == TableLock::Rebuild) {
            return Ok(());
        }
        let locker = self.locker_made();
        let lock_mode = match mode {
            TableLock::Write => LockMode::Shared,
            TableLock::Rebuild => LockMode::Exclusive,
        };
        let result = locker.acquire(table_lock(table), lock_mode);
        self.lock_result(result)?;
        self.table_locks.retain(|(t, _)| *t != table.id());
        self.table_locks.push((table.id(), mode));
        if table.is_replaced() {
            // Its replacement committed before the lock was granted: writing here would be lost.
            return Err(Error::TableReplaced(table.name().to_owned()));
        }
        if mode == TableLock::Rebuild
            && self.isolation == crate::txn::Isolation::ReadCommitted
            && !self.two_phase
        {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(())
    }

    /// Ends the transaction with `abort`'s reason if a lock request failed.
    pub(in crate::txn) fn lock_result<T>(&mut self, result: Result<T, LockAbort>) -> Result<T> {
        result.map_err(|abort| self.fail(abort.into()))
    }

    /// Fails (ending the transaction) if the lock manager revoked its locks: every call checks on
    /// entry, and again after reading a row and before handing it to application code, so a
    /// revoked transaction never acts on a row it no longer holds the lock for.
    pub(in crate::txn) fn check_revoked(&mut self) -> Result<()> {
        match self.locker.as_ref().and_then(Locker::revoked) {
            Some(abort) => Err(self.fail(abort.into())),
            None => Ok(()),
        }
    }

    /// Whether scans lock what they visit (two-phase locking).
    pub(in crate::txn) fn scans_lock(&self) -> bool {
        self.two_phase
    }

    /// Inside the commit's region: from here on the locks cannot be revoked, unless they already
    /// were (then the commit fails with the revocation's reason).
    pub(in crate::txn) fn enter_commit(&mut self) -> Result<()> {
        let entered = match &self.locker {
            Some(locker) => locker.revocation.enter_commit(),
            None => Ok(()),
        };
        self.lock_result(entered)
    }

    /// Locks primary key `key` of `table` in `mode` (nothing unless locking).
    pub(in crate::txn) fn lock_primary(
        &mut self,
        table: &Table,
        key: &[u8],
        mode: LockMode,
    ) -> Result<()> {
        if !self.locks_rows {
            return Ok(());
        }
        let locker = self.locker_made();
        let result = locker.lock_key(table, IndexRef::Primary, key, mode);
        self.lock_result(result)
    }

    /// Before the commit's region: locks every index entry the commit will add, with its gap
    /// chain, and fails if the lock manager aborted this transaction meanwhile.
    pub(in crate::txn) fn lock_for_commit(&mut self) -> Result<()> {
        let Some(locker) = self.locker.as_mut().filter(|_| self.two_phase) else {
            // READ COMMITTED's row locks guard no ranges; but they may have been revoked.
            return self.check_revoked();
        };
        let catalog = &self.engine.catalog;
        let mut result = Ok(());
        for e in self.buf.ws.entries() {
            let Some(row) = &e.row else { continue };
            let table = catalog.recorded(e.table);
            let fresh = matches!(e.target, Target::Fresh { .. });
            if fresh {
                result = locker.lock_new_entry(table, IndexRef::Primary, e.key.as_slice());
            }
            if result.is_ok() && (fresh || e.secondary_may_change) {
                for s in 0..table.secondary_count() {
                    let key = table.secondary_key(s, &table.row(row), e.oid);
                    let index = IndexRef::Secondary(s);
                    if table.tree(index).get(key.as_bytes()) == Some(e.oid) {
                        continue; // The row keeps this entry.
                    }
                    result = locker.lock_new_entry(table, index, key.as_bytes());
                    if result.is_err() {
                        break;
                    }
                }
            }
            if result.is_err() {
                break;
            }
        }
        if result.is_ok()
            && let Some(abort) = locker.revoked()
        {
            result = Err(abort);
        }
        self.lock_result(result)
    }

    /// Releases every lock (the transaction has ended: its writes are stamped or undone).
    pub(in crate::txn) fn release_locks(&mut self) {
        if let Some(locker) = &self.locker {
            locker.manager.release_all(locker.id);
        }
    }

    /// The lock waits of this transaction so far (none outside the two-phase-locking mode).
    pub fn lock_stats(&self) -> LockStats {
        self.locker
            .as_ref()
            .map_or_else(LockStats::default, Locker::stats)
    }

    /// Identifies this transaction among those active, as [`LockWait`](crate::LockWait) names
    /// waiters and holders.
    pub fn id(&self) -> u64 {
        self.lease.stamp
    }
}
