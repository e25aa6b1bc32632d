//! What a two-phase-locking transaction and the lock manager share about it: whether the manager
//! has revoked its locks (a policy doomed it), or whether it has begun to commit (after which its
//! locks can no longer be taken from it).
//!
//! Writes are buffered until commit, so a transaction that has not begun committing has changed
//! nothing anyone can see: taking its locks away costs it its work, never the database's
//! consistency. The lock manager revokes at the moment a policy dooms a transaction (PAbort at
//! once, POW when the holder waits or is paused, CR after its reprieve, deadlock and wait-depth
//! victims), so the transactions waiting behind it are granted without waiting for the victim to
//! run. The victim learns it at its next engine call: every call loads this word first, and every
//! row handed to application code is read before the word is loaded again (`revoked` after the
//! read), so the victim never acts on a row it no longer holds the lock for. Its commit moves the
//! word from active to committing in one compare-and-swap inside the commit's region, racing the
//! manager's own compare-and-swap: exactly one of the two wins.
//!
//! Must never: let a transaction commit after its locks were revoked, or revoke one that has begun
//! committing.

use std::sync::atomic::{AtomicU8, Ordering};

use super::LockAbort;

const ACTIVE: u8 = 0;
const COMMITTING: u8 = 1;
const DEADLOCK: u8 = 2;
const PREEMPTED: u8 = 3;
const WAIT_DEPTH: u8 = 4;
const TIMEOUT: u8 = 5;
const INTERRUPTED: u8 = 6;

fn encode(reason: LockAbort) -> u8 {
    match reason {
        LockAbort::Deadlock => DEADLOCK,
        LockAbort::Preempted => PREEMPTED,
        LockAbort::WaitDepth => WAIT_DEPTH,
        LockAbort::Timeout => TIMEOUT,
        LockAbort::Interrupted => INTERRUPTED,
    }
}

fn decode(word: u8) -> Option<LockAbort> {
    match word {
        DEADLOCK => Some(LockAbort::Deadlock),
        PREEMPTED => Some(LockAbort::Preempted),
        WAIT_DEPTH => Some(LockAbort::WaitDepth),
        TIMEOUT => Some(LockAbort::Timeout),
        INTERRUPTED => Some(LockAbort::Interrupted),
        _ => None,
    }
}

/// One transaction's revocation state (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Revocation {
    word: AtomicU8,
}

impl Revocation {
    /// The manager takes the transaction's locks away for `reason`. False if it has begun
    /// committing (it is running inside its commit's region and releases everything in a moment)
    /// or was revoked already.
    pub(crate) fn revoke(&self, reason: LockAbort) -> bool {
        self.word
            .compare_exchange(ACTIVE, encode(reason), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The transaction begins to commit: from now on its locks cannot be revoked. Fails with the
    /// revocation's reason if they already were.
    pub(crate) fn enter_commit(&self) -> Result<(), LockAbort> {
        match self
            .word
            .compare_exchange(ACTIVE, COMMITTING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) | Err(COMMITTING) => Ok(()),
            Err(word) => Err(decode(word).unwrap_or_else(|| unreachable!("word {word}"))),
        }
    }

    /// Why the locks were revoked, if they were. An acquire load: called after reading a row, it
    /// is ordered after that read, so a row installed by a transaction granted a revoked lock
    /// (which happened after the revocation was stored) is never handed on with `None`.
    pub(crate) fn revoked(&self) -> Option<LockAbort> {
        decode(self.word.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoking_and_committing_race_for_one_word() {
        let r = Revocation::default();
        assert_eq!(r.revoked(), None);
        assert!(r.revoke(LockAbort::Preempted));
        assert!(!r.revoke(LockAbort::Deadlock), "revoked once");
        assert_eq!(r.revoked(), Some(LockAbort::Preempted));
        assert_eq!(r.enter_commit(), Err(LockAbort::Preempted));

        let c = Revocation::default();
        assert_eq!(c.enter_commit(), Ok(()));
        assert!(
            !c.revoke(LockAbort::Preempted),
            "a committer keeps its locks"
        );
        assert_eq!(c.revoked(), None);
        assert_eq!(c.enter_commit(), Ok(()), "a second commit attempt");
    }
}
