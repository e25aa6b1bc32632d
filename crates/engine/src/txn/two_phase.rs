//! Two-phase commit: a transaction prepared under a global identifier (PostgreSQL's `PREPARE
//! TRANSACTION`) is promised to commit whenever asked, by anyone, across crashes, until it is
//! committed or rolled back.
//!
//! Preparing does what a commit does up to its timestamp: the locks taken for the commit, the
//! writes installed as pending versions, serializable validation (against every commit so far);
//! then, instead of a timestamp, a log record with the writes under the identifier. Its locks
//! can no longer be revoked (its revocation word says committing), and its slot stays active, so
//! readers pass over its pending versions to the ones below (as PostgreSQL's readers do) while
//! writers of its rows wait for its row locks. Committing it later draws the timestamp, logs the
//! writes again with it (a commit record that replays alone) and stamps them; rolling it back
//! logs the identifier and undoes them. A prepared transaction dropped undecided (its process is
//! shutting down) is undone in memory only: it stays in doubt, and
//! [`Database::resume_prepared`](crate::Database::resume_prepared) takes it up again, as recovery
//! does after a crash.
//!
//! The prepared set is the truth of which transactions are in doubt: it is changed, and the
//! records that decide them appended, under its lock inside a region, so a checkpoint that logs
//! every member again after its cut (the segments before the cut go) never logs one its
//! decision precedes.
//!
//! Must never: acknowledge a prepare before its record is durable (under any durability setting,
//! as PostgreSQL), let a prepared transaction's commit fail but for a stopped log (which leaves
//! it prepared), or hold the set's lock outside a region.

use std::collections::HashMap;

use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::{State, Transaction};
use crate::catalog::table::Table;
use crate::error::{AbortReason, CommitError, Error, Result};
use crate::log::record::{self, CommitEncoder, Cursor, Image};
use crate::mvcc::epoch::EpochGuard;
use crate::storage::key::KeyBuf;

/// A prepared transaction as the log holds it: the caller's note and its writes' encoding.
#[derive(Clone, Debug)]
pub(crate) struct PreparedRecord {
    pub(crate) note: Box<[u8]>,
    pub(crate) body: Box<[u8]>,
    /// A live [`Transaction`] holds it (else it is in doubt, waiting to be resumed).
    pub(crate) held: bool,
}

impl PreparedRecord {
    pub(crate) fn in_doubt(note: &[u8], body: &[u8]) -> Self {
        PreparedRecord {
            note: note.into(),
            body: body.into(),
            held: false,
        }
    }
}

/// The prepared transactions of a database, by global identifier.
#[derive(Default)]
pub(crate) struct PreparedSet {
    entries: RegionMutex<HashMap<String, PreparedRecord>>,
}

/// A prepared transaction no [`Transaction`] holds, from [`Database::in_doubt`](crate::Database::in_doubt).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InDoubt {
    /// Its global identifier.
    pub gid: String,
    /// What its preparer noted about it.
    pub note: Vec<u8>,
}

impl PreparedSet {
    /// Takes the prepared transactions recovery found undecided.
    pub(crate) fn recovered(&mut self, found: HashMap<String, PreparedRecord>) {
        *self.entries.get_mut() = found;
    }

    /// How many transactions are prepared (held or in doubt).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock(&NoPreemptGuard::new()).len()
    }

    /// The prepared transactions no transaction holds.
    pub(crate) fn in_doubt(&self) -> Vec<InDoubt> {
        let region = NoPreemptGuard::new();
        let entries = self.entries.lock(&region);
        let mut out: Vec<InDoubt> = entries
            .iter()
            .filter(|(_, e)| !e.held)
            .map(|(gid, e)| InDoubt {
                gid: gid.clone(),
                note: e.note.to_vec(),
            })
            .collect();
        out.sort_by(|a, b| a.gid.cmp(&b.gid));
        out
    }

    /// Marks in-doubt `gid` held and returns its record, or says why not.
    fn take_up(&self, gid: &str) -> Result<PreparedRecord> {
        let region = NoPreemptGuard::new();
        let mut entries = self.entries.lock(&region);
        match entries.get_mut(gid) {
            Some(e) if !e.held => {
                e.held = true;
                Ok(e.clone())
            }
            _ => Err(Error::NoSuchPrepared(gid.to_owned())),
        }
    }

    /// Marks `gid` in doubt again (its transaction is gone undecided).
    fn let_go(&self, gid: &str, region: &NoPreemptGuard) {
        if let Some(e) = self.entries.lock(region).get_mut(gid) {
            e.held = false;
        }
    }

    /// Logs every prepared transaction again (a checkpoint, just after its cut: the segments
    /// with their first records are about to go).
    pub(crate) fn log_again(&self, log: &crate::log::Log) {
        let region = NoPreemptGuard::new();
        let entries = self.entries.lock(&region);
        let mut frame = Vec::new();
        for (gid, e) in entries.iter() {
            frame.clear();
            record::encode_prepared(&mut frame, gid, &e.note, &e.body);
            log.append(&frame, None, &region);
        }
    }
}

impl<'db> Transaction<'db> {
    /// Prepares this transaction for two-phase commit under global identifier `gid`, with
    /// `note` kept beside it (the caller's: who prepared it, when). Returns once its record is
    /// durable, whatever the log's durability setting (an in-memory database keeps it in memory
    /// only). From then on it takes no more statements; [`commit`](Self::commit) or
    /// [`rollback_prepared`](Self::rollback_prepared) ends it, from any thread. Fails, rolling
    /// back, as [`commit`](Self::commit) fails before its timestamp, or with
    /// [`CommitError::PreparedIdInUse`] if another prepared transaction has `gid`.
    pub fn prepare(&mut self, gid: &str, note: &[u8]) -> Result<(), CommitError> {
        let lsn = self
            .prepare_in_memory(gid, note, true)
            .map_err(|e| match e {
                Error::Aborted(reason) => CommitError::Aborted(reason),
                Error::PreparedIdInUse(gid) => CommitError::PreparedIdInUse(gid),
                _ => CommitError::NotActive,
            })?;
        if let (Some(lsn), Some(log)) = (lsn, &self.engine.log) {
            let (durable, waited) = log.durable_ticket(lsn).wait();
            self.durable_wait = waited;
            durable?;
        }
        Ok(())
    }

    /// Whether it is prepared (and not yet committed or rolled back).
    pub fn is_prepared(&self) -> bool {
        self.state == State::Prepared
    }

    /// Prepares in memory; with `logged`, appends its record (returning where it ends).
    fn prepare_in_memory(&mut self, gid: &str, note: &[u8], logged: bool) -> Result<Option<u64>> {
        self.check_active()?;
        let log = self.engine.log.as_ref();
        if log.is_some_and(|l| l.stopped().is_some()) {
            return Err(self.fail(AbortReason::LogStopped));
        }
        self.lock_for_commit()?;
        let region = NoPreemptGuard::new();
        self.enter_commit()?;
        // The writes' encoding, kept to log them again at the commit (and by checkpoints).
        let mut encoded = std::mem::take(&mut self.buf.log_record);
        let epoch = EpochGuard::enter();
        if let Err(reason) = self.install_all(&epoch, Some(CommitEncoder::begin(&mut encoded))) {
            self.buf.log_record = encoded;
            return Err(self.fail_commit(epoch, reason));
        }
        let body = record::commit_body(&encoded);
        let framed = body.len() + gid.len() + note.len() + 2 * 4 + 1 + record::FRAME_HEADER;
        if log.is_some_and(|l| l.too_long(framed)) {
            self.buf.log_record = encoded;
            return Err(self.fail_commit(epoch, AbortReason::TooLarge));
        }
        if (self.serializable() || self.validating) && !self.validate(self.engine.txns.now()) {
            self.buf.log_record = encoded;
            return Err(self.fail_commit(epoch, AbortReason::Validation));
        }
        let mut entries = self.engine.prepared.entries.lock(&region);
        let lsn = if logged {
            if entries.contains_key(gid) {
                drop(entries);
                self.buf.log_record = encoded;
                drop(epoch);
                self.undo();
                self.finish(State::Aborted(None));
                return Err(Error::PreparedIdInUse(gid.to_owned()));
            }
            entries.insert(
                gid.to_owned(),
                PreparedRecord {
                    note: note.into(),
                    body: body.into(),
                    held: true,
                },
            );
            log.map(|log| {
                let mut frame = Vec::with_capacity(framed);
                record::encode_prepared(&mut frame, gid, note, body);
                log.append(&frame, None, &region)
            })
        } else {
            None
        };
        drop(entries);
        self.buf.log_record = encoded;
        self.prepared_as = Some(gid.to_owned());
        self.state = State::Prepared;
        drop(epoch);
        Ok(lsn)
    }

    /// The commit of a prepared transaction, in memory (see `commit_or_abort`): draws the
    /// timestamp, logs the writes with it, and publishes them. Fails only if the log has
    /// stopped, leaving it prepared.
    pub(super) fn commit_prepared_in_memory(&mut self) -> Result<Option<u64>> {
        let gid = self
            .prepared_as
            .clone()
            .expect("a prepared transaction has its identifier");
        let log = self.engine.log.as_ref();
        if let Some(why) = log.and_then(|l| l.stopped()) {
            return Err(Error::StillPrepared(why.to_owned()));
        }
        let region = NoPreemptGuard::new();
        let epoch = EpochGuard::enter();
        let txns = &self.engine.txns;
        if let Some(log) = log {
            log.unlogged(self.lease.slot, txns.now() + 1);
        }
        let ts = txns.start_commit(&self.lease);
        let mut entries = self.engine.prepared.entries.lock(&region);
        let entry = entries
            .remove(&gid)
            .expect("a prepared transaction is in the prepared set");
        let lsn = log.map(|log| {
            let frame = &mut self.buf.log_record;
            frame.clear();
            record::encode_commit_prepared(frame, &gid, ts, &entry.body);
            log.append(frame, Some((ts, self.lease.slot)), &region)
        });
        drop(entries);
        self.prepared_as = None;
        self.publish(&region, epoch, ts);
        Ok(lsn)
    }

    /// Rolls back a prepared transaction (`ROLLBACK PREPARED`), returning once its record is
    /// durable. Fails only if the log has stopped, leaving it prepared ([`CommitError::NotActive`]
    /// if it is not prepared).
    pub fn rollback_prepared(&mut self) -> Result<(), CommitError> {
        if self.state != State::Prepared {
            return Err(CommitError::NotActive);
        }
        let gid = self
            .prepared_as
            .clone()
            .expect("a prepared transaction has its identifier");
        let log = self.engine.log.as_ref();
        if let Some(why) = log.and_then(|l| l.stopped()) {
            return Err(CommitError::StillPrepared(why.to_owned()));
        }
        let lsn = {
            let region = NoPreemptGuard::new();
            let mut entries = self.engine.prepared.entries.lock(&region);
            entries.remove(&gid);
            let lsn = log.map(|log| {
                let mut frame = Vec::new();
                record::encode_rollback_prepared(&mut frame, &gid);
                log.append(&frame, None, &region)
            });
            drop(entries);
            self.prepared_as = None;
            self.undo();
            self.finish(State::Aborted(None));
            lsn
        };
        if let (Some(lsn), Some(log)) = (lsn, log) {
            let (durable, waited) = log.durable_ticket(lsn).wait();
            self.durable_wait = waited;
            durable?;
        }
        Ok(())
    }

    /// A prepared transaction dropped undecided: undone in memory, in doubt in the log.
    pub(super) fn let_go_prepared(&mut self) {
        let region = NoPreemptGuard::new();
        if let Some(gid) = self.prepared_as.take() {
            self.engine.prepared.let_go(&gid, &region);
        }
        self.undo();
        self.finish(State::Aborted(None));
    }

    /// Writes what a logged write says the record ends with (recovery of a prepared
    /// transaction's writes over the rows they were prepared against).
    fn redo(&mut self, table: &Table, key: &KeyBuf, image: Image<'_>) -> Result<()> {
        match image {
            Image::Deleted => {
                self.delete(table, key)?;
            }
            Image::Row(row) => {
                let written = self.write_live_row(table, key, |_| Ok((Some(row.into()), true)))?;
                if !written {
                    self.insert_encoded(table, row.into())?;
                }
            }
            Image::Patch(patch) => {
                let mut failed = None;
                let written = self.write_live_row(table, key, |current| {
                    let mut row = current.as_bytes().to_vec();
                    if let Err(e) = patch.apply_in_place(&mut row) {
                        failed = Some(e);
                    }
                    Ok((Some(row.into()), true))
                })?;
                if let Some(reason) = failed.or((!written).then(|| "no row to change".to_owned())) {
                    return Err(Error::InvalidValue {
                        column: table.name().to_owned(),
                        reason: format!("a prepared change cannot be applied again: {reason}"),
                    });
                }
            }
        }
        Ok(())
    }
}

impl crate::Database {
    /// The prepared transactions no transaction holds: found undecided in the log when the
    /// database was opened, or dropped undecided since. Each waits for
    /// [`resume_prepared`](Self::resume_prepared).
    pub fn in_doubt(&self) -> Vec<InDoubt> {
        self.engine.prepared.in_doubt()
    }

    /// How many transactions are prepared, held or in doubt.
    pub fn prepared_count(&self) -> usize {
        self.engine.prepared.len()
    }

    /// Takes up in-doubt prepared transaction `gid` again (see [`in_doubt`](Self::in_doubt)):
    /// a transaction at `priority` holding its writes and their locks, prepared, to commit or
    /// roll back. Its writes are applied to the rows they were prepared against (nothing else
    /// could write those rows meanwhile: it held their locks, and recovery replays only what
    /// committed). Fails with [`Error::NoSuchPrepared`] if no such transaction is in doubt.
    pub fn resume_prepared(
        &self,
        gid: &str,
        priority: overtake_priority::Priority,
    ) -> Result<Transaction<'_>> {
        let prepared = self.engine.prepared.take_up(gid)?;
        let resumed = (|| {
            let mut txn = self.begin(priority, super::Isolation::Snapshot)?;
            txn.lock_rows_it_writes();
            let mut r = Cursor {
                bytes: &prepared.body,
            };
            let writes = record::decode_writes(&mut r).ok_or_else(|| Error::InvalidValue {
                column: gid.to_owned(),
                reason: "the prepared transaction's writes do not decode".into(),
            })?;
            for w in writes {
                let table = self
                    .engine
                    .catalog
                    .get(w.table)
                    .filter(|t| !t.is_dropped())
                    .ok_or_else(|| Error::NoSuchTable(format!("table {}", w.table)))?;
                txn.lock_table(table, super::TableLock::Write)?;
                let mut key = KeyBuf::new();
                key.set(w.key);
                txn.redo(table, &key, w.image)?;
            }
            txn.prepare_in_memory(gid, &prepared.note, false)?;
            Ok(txn)
        })();
        if resumed.is_err() {
            self.engine.prepared.let_go(gid, &NoPreemptGuard::new());
        }
        resumed
    }
}
