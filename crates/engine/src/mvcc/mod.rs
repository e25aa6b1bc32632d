//! Multi-version concurrency control: commit timestamps, transaction slots, and which version of a
//! record a transaction sees.
//!
//! Every record is a chain of versions, newest first. A version's `stamp` is either
//! - a commit timestamp (the version is committed and visible to snapshots `>= ts`), or
//! - `PENDING | generation | slot`: installed by the transaction in that slot, which is committing
//!   (writes are buffered until then) or running a promoted attempt; either way it is running, or
//! - `ABORTED`: its writer rolled back; readers skip it.
//!
//! A transaction takes its snapshot `S` from the commit clock at begin. To commit it moves its slot
//! `Active -> Precommit -> Committing(ts)`, where `ts` comes from the clock, validates (serializable),
//! stamps its versions with `ts`, and goes `Committed`. A reader that meets a pending version looks
//! at its writer's slot: `Active` or `Aborted` means invisible; `Committing(ts)` with `ts <= S` means
//! the version is about to become visible to it, so it waits (the writer is inside a non-preemptible
//! commit and finishes in microseconds); `Precommit` means the timestamp is being drawn, so it waits.
//! The slot's generation (part of the stamp) tells a reader when the slot has moved on to another
//! transaction, in which case the stamp it read is final and it reads it again.
//!
//! Waits only ever go from a later timestamp to an earlier one (or from a reader to a committer), so
//! they cannot form a cycle; and a committer never waits for an active transaction.
//!
//! The watermark is the oldest snapshot any live transaction may still read from. Versions superseded
//! at or before it are unreachable for everyone and can be unlinked.
//!
//! Parts: `slots` (the commit clock, transaction slots and the watermark), `visibility` (which
//! version a transaction sees, and whether it may write over the head), `epoch` (protection of
//! lock-free reads of version chains) and `gc` (reclaiming the versions and records no snapshot
//! can see any more).
//!
//! # A worked example
//!
//! Record `a` holds 1, committed at timestamp 3 (the clock is at 3). `L` is a low-priority
//! transaction, `U` an urgent one that preempts it on the same worker, `R` a reader elsewhere.
//!
//! ```text
//! time  L (low)                     U (urgent)                   R (reader)       a's chain
//! ----  --------------------------  ---------------------------  ---------------  ----------------
//!  1    begin: S=3, slot 0 Active                                                 [1 @3]
//!  2    update a := 10 (buffered                                                  [1 @3]
//!       in L's write set only)
//!  3    -- preempted --             begin: S=3                                    [1 @3]
//!  4                                update a := 2 (buffered)     begin: S=3       [1 @3]
//!  5                                commit: install a pending                     [2 P1, 1 @3]
//!                                   version (slot 1 Active)
//!  6                                Precommit, draw ts=4,        read a: P1 is    [2 P1, 1 @3]
//!                                   Committing(4)                Committing(4),
//!                                                                4 > S: skip,
//!                                                                reads 1
//!  7                                stamp 4, Committed, end                       [2 @4, 1 @3]
//!  8    -- resumes --                                                             [2 @4, 1 @3]
//!  9    commit: head @4 > S=3:                                                    [2 @4, 1 @3]
//!       Conflict, nothing was
//!       installed, retry
//! 10                                                             end; watermark   [2 @4]
//!                                                                now 4: the
//!                                                                collector
//!                                                                unlinks 1 @3
//! ```
//!
//! - Step 3: `L` is paused holding nothing (its write is only in its write set), so `U` neither
//!   waits nor aborts. Had `L` installed its version at step 2 (a write lock), `U` would have met
//!   an `Active` pending version and could never commit while `L` stays paused.
//! - Step 6: had `R` begun after step 6 (`S=4`), it would have waited the few instructions until
//!   `U` stamped its version, then read 2: a snapshot never misses a commit ordered before it.
//! - Step 9: first committer wins; the loser is the transaction that was paused, which is what
//!   priority scheduling wants. Under serializable isolation `L` would also fail if it had only
//!   read `a` (validation at commit: `a` changed between its snapshot and its timestamp).
//!
//! This module must never block except in those bounded commit waits, and never allocate on the read
//! path.

pub(crate) mod epoch;
pub(crate) mod gc;
mod slots;
mod visibility;

pub(crate) use slots::{Lease, LiveSnapshots, TxnTable};
pub(crate) use visibility::{HeadCheck, Reader};

/// Stamp bit marking an uncommitted version.
pub(crate) const PENDING: u64 = 1 << 63;
/// Stamp of a version whose writer rolled back.
pub(crate) const ABORTED_STAMP: u64 = u64::MAX;
const SLOT_BITS: u32 = 16;
/// The generation bits a pending stamp has room for (63 - `SLOT_BITS`). A slot's state word keeps
/// 56 bits of generation, so generations are compared through this mask: after 2^47 transactions
/// on one slot, a full generation and the one in a stamp would otherwise never match again.
const GENERATION_MASK: u64 = (1 << (63 - SLOT_BITS)) - 1;
/// Largest number of concurrent transactions (slots) a database may be configured with.
pub const MAX_TRANSACTION_SLOTS: usize = 1 << SLOT_BITS;

const STATUS_FREE: u64 = 0;
const STATUS_ACTIVE: u64 = 1;
const STATUS_PRECOMMIT: u64 = 2;
const STATUS_COMMITTING: u64 = 3;
const STATUS_COMMITTED: u64 = 4;
const STATUS_ABORTED: u64 = 5;

/// True if `stamp` is a commit timestamp.
#[inline]
pub(crate) fn is_committed(stamp: u64) -> bool {
    stamp & PENDING == 0
}

fn pending_stamp(slot: usize, generation: u64) -> u64 {
    PENDING | ((generation & GENERATION_MASK) << SLOT_BITS) | slot as u64
}

fn decode(stamp: u64) -> (usize, u64) {
    (
        (stamp & ((1 << SLOT_BITS) - 1)) as usize,
        (stamp & !PENDING) >> SLOT_BITS,
    )
}
