//! Which version of a record a transaction sees, and whether it may write over the head: a
//! pending stamp is resolved through its writer's slot, waiting only for writers that are inside
//! their (non-preemptible) commit. Never allocates, and never waits for an active transaction.

use std::sync::atomic::Ordering;

use sdd::{AtomicShared, Guard};

use super::slots::TxnTable;
use super::{
    ABORTED_STAMP, GENERATION_MASK, STATUS_ABORTED, STATUS_ACTIVE, STATUS_COMMITTING, decode,
    is_committed,
};
use crate::storage::record::{Chain, Version};

/// What a reader learns about a pending stamp.
pub(super) enum Pending {
    /// Writer still running: not visible to anyone else, and its record is locked.
    Active,
    /// Writer rolled back and is unlinking the version.
    Aborted,
    /// Writer is committing with this timestamp.
    CommittingAt(u64),
    /// The stamp is changing or already final: read it again.
    Reread,
}

/// Outcome of [`TxnTable::check_writable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeadCheck {
    /// The head is committed before the snapshot, or is the transaction's own write.
    Writable,
    /// Another transaction wrote the record after the snapshot, or holds it.
    Conflict,
    /// The head is being rolled back: read it again.
    Retry,
}

/// A transaction's identity as a reader: its snapshot and its own pending stamp.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reader {
    pub(crate) snapshot: u64,
    pub(crate) me: u64,
}

impl TxnTable {
    pub(super) fn resolve(&self, stamp: u64) -> Pending {
        let (slot, generation) = decode(stamp);
        let s = &self.slots[slot];
        let word = s.state.load(Ordering::Acquire);
        if (word >> 8) & GENERATION_MASK != generation {
            return Pending::Reread;
        }
        match word & 0xFF {
            STATUS_ACTIVE => Pending::Active,
            STATUS_ABORTED => Pending::Aborted,
            STATUS_COMMITTING => {
                let ts = s.commit_ts.load(Ordering::Relaxed);
                if s.state.load(Ordering::Acquire) == word {
                    Pending::CommittingAt(ts)
                } else {
                    Pending::Reread
                }
            }
            _ => Pending::Reread,
        }
    }

    /// The commit timestamp a version has or is about to get, waiting out commits in flight.
    /// `None` if it is, and will stay, invisible to others (its writer is active or aborted).
    /// Versions whose writer is committing with a timestamp above `wait_below` are reported without
    /// waiting for the outcome (as `Some(ts)` with `ts > wait_below`).
    pub(crate) fn settled_stamp(&self, version: &Version, wait_below: u64) -> Option<u64> {
        loop {
            let stamp = version.stamp.load(Ordering::Acquire);
            if is_committed(stamp) {
                return Some(stamp);
            }
            if stamp == ABORTED_STAMP {
                return None;
            }
            match self.resolve(stamp) {
                Pending::Active | Pending::Aborted => return None,
                Pending::CommittingAt(ts) if ts > wait_below => return Some(ts),
                Pending::CommittingAt(_) | Pending::Reread => std::hint::spin_loop(),
            }
        }
    }

    /// Whether `reader` may install a new version on top of `head` (first updater wins).
    pub(crate) fn check_writable(&self, head: &Version, reader: Reader) -> HeadCheck {
        loop {
            let stamp = head.stamp.load(Ordering::Acquire);
            if stamp == reader.me {
                return HeadCheck::Writable;
            }
            if is_committed(stamp) {
                return if stamp > reader.snapshot {
                    HeadCheck::Conflict
                } else {
                    HeadCheck::Writable
                };
            }
            if stamp == ABORTED_STAMP {
                return HeadCheck::Retry;
            }
            match self.resolve(stamp) {
                Pending::Active => return HeadCheck::Conflict,
                Pending::CommittingAt(ts) if ts > reader.snapshot => return HeadCheck::Conflict,
                // Rolling back, or committing before our snapshot: wait for the outcome.
                Pending::Aborted => return HeadCheck::Retry,
                Pending::CommittingAt(_) | Pending::Reread => std::hint::spin_loop(),
            }
        }
    }

    /// The version of the chain at `head` that `reader` sees: its own latest write, or the newest
    /// version committed at or before its snapshot.
    #[inline]
    pub(crate) fn visible<'g>(
        &self,
        head: &AtomicShared<Version>,
        reader: Reader,
        guard: &'g Guard,
    ) -> Option<&'g Version> {
        Chain::at(head, guard).find(|v| {
            let stamp = v.stamp.load(Ordering::Acquire);
            if stamp == reader.me {
                return true;
            }
            let ts = if is_committed(stamp) {
                Some(stamp)
            } else {
                self.settled_stamp(v, reader.snapshot)
            };
            matches!(ts, Some(ts) if ts <= reader.snapshot)
        })
    }

    /// Serializable validation of one record: true if no other transaction committed a version of it
    /// after `snapshot` and before `commit_ts`.
    pub(crate) fn unchanged_between(
        &self,
        head: &AtomicShared<Version>,
        me: u64,
        snapshot: u64,
        commit_ts: u64,
        guard: &Guard,
    ) -> bool {
        for v in Chain::at(head, guard) {
            if v.stamp.load(Ordering::Acquire) == me {
                continue;
            }
            match self.settled_stamp(v, commit_ts) {
                // Serialized after us, or never visible: irrelevant.
                Some(ts) if ts > commit_ts => {}
                None => {}
                Some(ts) => return ts <= snapshot,
            }
        }
        true
    }
}
