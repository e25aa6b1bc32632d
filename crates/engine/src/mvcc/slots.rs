//! The commit clock and the transaction slots: a transaction leases a slot at begin, publishes
//! its snapshot there (for the watermark) and its commit state (for readers of its pending
//! versions), and returns the slot at its end. Beginning and ending never wait for another
//! transaction.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use overtake_runtime::{CachePadded, NoPreemptGuard};

use super::{
    GENERATION_MASK, MAX_TRANSACTION_SLOTS, STATUS_ABORTED, STATUS_ACTIVE, STATUS_COMMITTED,
    STATUS_COMMITTING, STATUS_FREE, STATUS_PRECOMMIT, pending_stamp,
};
use crate::error::{Error, Result};

/// Commits between two lazy computations of the watermark (see
/// `TxnTable::refresh_watermark_lazily`).
const WATERMARK_EVERY: u64 = 32;

/// Slots in use up to which the watermark is cheap enough to compute at every commit.
const CHEAP_SLOTS: usize = 16;

/// Marks a slot's published snapshot as a lower bound while its transaction begins (timestamps
/// never reach this bit).
const BEGINNING: u64 = 1 << 62;

/// The snapshots live transactions read at (see [`TxnTable::live_snapshots`]): every version
/// committed after `recent` is needed by someone; at or before it, only the newest version at or
/// before each of `snapshots` (newest first; `recent` is one of them).
#[derive(Debug, Default)]
pub(crate) struct LiveSnapshots {
    pub(crate) recent: u64,
    pub(crate) snapshots: Vec<u64>,
}

/// One transaction slot: the state other transactions consult to resolve its pending versions,
/// and its published snapshot (for the watermark).
pub(crate) struct TxnSlot {
    /// `generation << 8 | status`.
    pub(super) state: AtomicU64,
    pub(super) commit_ts: AtomicU64,
    pub(super) snapshot: AtomicU64,
    /// Versions created by this slot's transactions, summed into database statistics. Each slot
    /// is written by one transaction at a time, so this never bounces between cores.
    pub(super) versions_created: AtomicU64,
}

thread_local! {
    /// The slot this thread's last transaction used: where its next one looks first. Only a hint
    /// (any free slot will do), so it is not per-transaction state.
    static PREFERRED_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// A transaction's lease on a slot (returned by [`TxnTable::begin`]).
pub(crate) struct Lease {
    pub(crate) slot: usize,
    pub(crate) generation: u64,
    pub(crate) stamp: u64,
    pub(crate) snapshot: u64,
}

/// The commit clock and every transaction slot.
pub(crate) struct TxnTable {
    pub(super) clock: CachePadded<AtomicU64>,
    pub(super) slots: Box<[CachePadded<TxnSlot>]>,
    pub(super) high_water: AtomicUsize,
    pub(super) cached_watermark: CachePadded<AtomicU64>,
    /// The clock when the watermark was last computed (see `refresh_watermark_lazily`).
    pub(super) last_refresh: CachePadded<AtomicU64>,
}

impl TxnTable {
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_TRANSACTION_SLOTS);
        let slots = (0..capacity)
            .map(|_| {
                CachePadded(TxnSlot {
                    state: AtomicU64::new(STATUS_FREE),
                    commit_ts: AtomicU64::new(0),
                    snapshot: AtomicU64::new(u64::MAX),
                    versions_created: AtomicU64::new(0),
                })
            })
            .collect();
        TxnTable {
            // Timestamp 0 is never assigned; the first commit gets 1.
            clock: CachePadded(AtomicU64::new(0)),
            slots,
            high_water: AtomicUsize::new(0),
            cached_watermark: CachePadded(AtomicU64::new(0)),
            last_refresh: CachePadded(AtomicU64::new(0)),
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// How many slots have ever been used (the others have nothing to report): slots
    /// `0..used_slots()`.
    pub(crate) fn used_slots(&self) -> usize {
        self.high_water.load(Ordering::Acquire)
    }

    /// Counts `n` versions created by the transaction holding `lease`.
    pub(crate) fn add_created(&self, lease: &Lease, n: u64) {
        self.slots[lease.slot]
            .versions_created
            .fetch_add(n, Ordering::Relaxed);
    }

    /// Versions created so far.
    pub(crate) fn versions_created(&self) -> u64 {
        self.slots[..self.used_slots()]
            .iter()
            .map(|s| s.versions_created.load(Ordering::Relaxed))
            .sum()
    }

    /// The latest commit timestamp handed out.
    pub(crate) fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    /// Moves the clock forward to at least `ts` (recovery: later commits are ordered after every
    /// logged one).
    pub(crate) fn advance_clock(&self, ts: u64) {
        self.clock.fetch_max(ts, Ordering::SeqCst);
    }

    /// Takes a free slot and a snapshot.
    pub(crate) fn begin(&self) -> Result<Lease> {
        let _region = NoPreemptGuard::new();
        let (slot, generation) = self.take_slot()?;
        let s = &self.slots[slot];
        // Publish a conservative snapshot before choosing the real one: a watermark computed
        // concurrently either sees this value, or ran entirely before our second read of the clock,
        // in which case our snapshot is at least its watermark. Either way nothing we can read is
        // unlinked. The conservative value is marked `BEGINNING` until the real one replaces it:
        // a collector that unlinks versions no snapshot sees (`live_snapshots`) must then keep
        // everything from it up, since the real snapshot is not known yet.
        s.snapshot.store(
            self.clock.load(Ordering::SeqCst) | BEGINNING,
            Ordering::SeqCst,
        );
        let snapshot = self.clock.load(Ordering::SeqCst);
        s.snapshot.store(snapshot, Ordering::SeqCst);
        // Read first: the high-water mark rarely moves, and a read keeps its cache line shared.
        if self.high_water.load(Ordering::Acquire) <= slot {
            self.high_water.fetch_max(slot + 1, Ordering::AcqRel);
        }
        Ok(Lease {
            slot,
            generation,
            stamp: pending_stamp(slot, generation),
            snapshot,
        })
    }

    /// Claims a free slot (`Free -> Active` with the next generation), trying first the slot this
    /// thread used last. A thread that keeps beginning transactions thus keeps one slot, whose
    /// cache line no other thread writes: no shared word is written per transaction. Returns the
    /// slot and its new generation.
    fn take_slot(&self) -> Result<(usize, u64)> {
        let n = self.slots.len();
        // Otherwise the lowest free slot, which keeps the slots in use (that the watermark and the
        // collector visit) as few as the transactions ever open at once. Not the next one after
        // the preferred slot: a worker whose preferred slot is held by a paused transaction would
        // then walk up through every slot over time (measured: all 1,024 in use after 3 s of
        // closed-loop clients under preemption, every watermark refresh reading 1,024 slots and
        // the collector's help visiting each queue once per 1,024 commits, 30,000 versions behind).
        let preferred = PREFERRED_SLOT.with(Cell::get);
        for index in (preferred < n).then_some(preferred).into_iter().chain(0..n) {
            let state = &self.slots[index].state;
            let word = state.load(Ordering::Relaxed);
            if word & 0xFF != STATUS_FREE {
                continue;
            }
            let mut generation = (word >> 8) + 1;
            if generation & GENERATION_MASK == GENERATION_MASK {
                // All ones would make the last slot's pending stamp equal `ABORTED_STAMP`.
                generation += 1;
            }
            if state
                .compare_exchange(
                    word,
                    generation << 8 | STATUS_ACTIVE,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                PREFERRED_SLOT.with(|p| p.set(index));
                return Ok((index, generation));
            }
        }
        Err(Error::TooManyTransactions(n))
    }

    /// Enters `Precommit`, draws the commit timestamp and enters `Committing`.
    pub(crate) fn start_commit(&self, lease: &Lease) -> u64 {
        let s = &self.slots[lease.slot];
        s.state
            .store(lease.generation << 8 | STATUS_PRECOMMIT, Ordering::SeqCst);
        let ts = self.clock.fetch_add(1, Ordering::SeqCst) + 1;
        s.commit_ts.store(ts, Ordering::Relaxed);
        s.state
            .store(lease.generation << 8 | STATUS_COMMITTING, Ordering::Release);
        ts
    }

    /// Marks the slot committed (after every version was stamped) or aborted (before its versions
    /// are unlinked), so that readers stop waiting for it.
    pub(crate) fn set_outcome(&self, lease: &Lease, committed: bool) {
        let status = if committed {
            STATUS_COMMITTED
        } else {
            STATUS_ABORTED
        };
        self.slots[lease.slot]
            .state
            .store(lease.generation << 8 | status, Ordering::Release);
    }

    /// Returns the slot. Every pending stamp of this generation must be final by now.
    /// Moves `lease`'s snapshot up to the newest commit (a READ COMMITTED transaction's next
    /// statement), published as [`begin`](Self::begin) publishes one: the watermark only rises.
    pub(crate) fn refresh_snapshot(&self, lease: &mut Lease) {
        let _region = NoPreemptGuard::new();
        let s = &self.slots[lease.slot];
        s.snapshot.store(
            self.clock.load(Ordering::SeqCst) | BEGINNING,
            Ordering::SeqCst,
        );
        let snapshot = self.clock.load(Ordering::SeqCst);
        s.snapshot.store(snapshot, Ordering::SeqCst);
        lease.snapshot = snapshot;
    }

    pub(crate) fn end(&self, lease: &Lease) {
        let _region = NoPreemptGuard::new();
        let s = &self.slots[lease.slot];
        s.snapshot.store(u64::MAX, Ordering::SeqCst);
        s.state
            .store(lease.generation << 8 | STATUS_FREE, Ordering::Release);
    }

    /// Computes the watermark, unless many slots are in use and it was computed less than
    /// `WATERMARK_EVERY` commits ago (then returns the cached one). Every commit whose retired
    /// items wait for a newer watermark asks: while a long snapshot holds it back, that is every
    /// commit, and each computation reads every slot in use, which a worker with hundreds of
    /// paused tasks (each holding a slot) cannot pay per commit.
    pub(crate) fn refresh_watermark_lazily(&self) -> u64 {
        let now = self.clock.load(Ordering::Relaxed);
        let last = self.last_refresh.load(Ordering::Relaxed);
        if self.used_slots() > CHEAP_SLOTS && now.saturating_sub(last) < WATERMARK_EVERY {
            return self.watermark();
        }
        self.last_refresh.store(now, Ordering::Relaxed);
        self.refresh_watermark()
    }

    /// Computes the watermark: no live transaction reads below it.
    pub(crate) fn refresh_watermark(&self) -> u64 {
        let mut min = self.clock.load(Ordering::SeqCst);
        for slot in &self.slots[..self.used_slots()] {
            min = min.min(slot.snapshot.load(Ordering::SeqCst) & !BEGINNING);
        }
        self.cached_watermark.fetch_max(min, Ordering::AcqRel);
        min
    }

    /// The snapshots live transactions read at, for unlinking the versions between them that none
    /// of them sees (see `gc::prune_unseen`).
    pub(crate) fn live_snapshots(&self, out: &mut LiveSnapshots) {
        out.snapshots.clear();
        // Read before the slots: a transaction whose snapshot the scan below misses read the
        // clock after this (`begin` publishes before it reads), so its snapshot is at least this.
        let mut recent = self.clock.load(Ordering::SeqCst);
        for slot in &self.slots[..self.used_slots()] {
            let published = slot.snapshot.load(Ordering::SeqCst);
            if published == u64::MAX {
                continue;
            }
            if published & BEGINNING != 0 {
                // Its snapshot will be somewhere from this value up.
                recent = recent.min(published & !BEGINNING);
            } else {
                out.snapshots.push(published);
            }
        }
        out.snapshots.push(recent);
        out.recent = recent;
        out.snapshots.sort_unstable_by(|a, b| b.cmp(a));
        out.snapshots.dedup();
    }

    /// The last computed watermark (cheap, possibly stale, never too high).
    pub(crate) fn watermark(&self) -> u64 {
        self.cached_watermark.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::super::visibility::Pending;
    use super::super::*;
    use super::*;

    #[test]
    fn stamps_round_trip() {
        let s = pending_stamp(513, 77);
        assert!(!is_committed(s));
        assert_eq!(decode(s), (513, 77));
        assert!(is_committed(42));
        assert!(!is_committed(ABORTED_STAMP));
    }

    /// A slot whose generation has outgrown the stamp's 47 bits still resolves its own pending
    /// stamps (a reader would otherwise read `Reread` for ever and spin), and no generation makes
    /// a pending stamp look like `ABORTED_STAMP`.
    #[test]
    fn generations_past_the_stamp_width_still_resolve() {
        let t = TxnTable::new(MAX_TRANSACTION_SLOTS);
        let last = MAX_TRANSACTION_SLOTS - 1;
        t.slots[0]
            .state
            .store(GENERATION_MASK << 8 | STATUS_FREE, Ordering::Relaxed);
        let lease = t.begin().expect("slot");
        assert_eq!(lease.slot, 0);
        assert_eq!(
            lease.generation,
            GENERATION_MASK + 1,
            "past the stamp's width"
        );
        assert!(matches!(t.resolve(lease.stamp), Pending::Active));
        t.start_commit(&lease);
        assert!(matches!(t.resolve(lease.stamp), Pending::CommittingAt(1)));
        t.set_outcome(&lease, false);
        assert!(matches!(t.resolve(lease.stamp), Pending::Aborted));
        t.end(&lease);

        // The generation whose stamp bits are all ones is skipped.
        for slot in &t.slots[..last] {
            slot.state.store(STATUS_ACTIVE, Ordering::Relaxed);
        }
        t.slots[last]
            .state
            .store((GENERATION_MASK - 1) << 8 | STATUS_FREE, Ordering::Relaxed);
        let lease = t.begin().expect("the last slot");
        assert_eq!(lease.slot, last);
        assert_ne!(lease.stamp, ABORTED_STAMP);
        assert!(matches!(t.resolve(lease.stamp), Pending::Active));
    }

    #[test]
    fn slots_are_leased_and_returned() {
        let t = TxnTable::new(3);
        let a = t.begin().expect("slot");
        let b = t.begin().expect("slot");
        let c = t.begin().expect("slot");
        assert!(matches!(t.begin(), Err(Error::TooManyTransactions(3))));
        t.end(&b);
        let d = t.begin().expect("slot freed");
        assert_eq!(d.slot, b.slot);
        assert!(
            d.generation > b.generation,
            "a reused slot gets a new generation"
        );
        for l in [a, c, d] {
            t.end(&l);
        }
    }

    #[test]
    fn a_busy_preferred_slot_sends_the_next_transaction_to_the_lowest_free_one() {
        // As a worker's tasks do: one transaction is paused holding the thread's preferred slot
        // while others begin and end on the same thread.
        let t = TxnTable::new(8);
        let first = t.begin().expect("slot");
        let paused = t.begin().expect("slot");
        t.end(&first);
        // Whenever the preferred slot (the last one taken) is busy, the lowest free one is used,
        // so two transactions at a time besides the paused one never need more than three slots.
        let next = t.begin().expect("slot");
        assert_eq!(
            next.slot, first.slot,
            "the lowest free slot, not the one after it"
        );
        t.end(&next);
        for _ in 0..20 {
            let next = t.begin().expect("slot");
            let nested = t.begin().expect("slot");
            t.end(&nested);
            t.end(&next);
        }
        assert_eq!(t.used_slots(), 3, "no walk through the table");
        t.end(&paused);
    }

    /// Threads racing for fewer slots than there are threads never lease one slot twice, and
    /// every lease gets a generation its slot never had.
    #[test]
    fn racing_threads_never_share_a_slot() {
        use std::sync::atomic::AtomicBool;
        let t = TxnTable::new(2);
        let held: Vec<AtomicBool> = (0..2).map(|_| AtomicBool::new(false)).collect();
        let last_generation: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(0)).collect();
        let start = std::sync::Barrier::new(6);
        std::thread::scope(|scope| {
            for _ in 0..6 {
                scope.spawn(|| {
                    start.wait();
                    let mut leased = 0;
                    while leased < 10_000 {
                        let Ok(lease) = t.begin() else {
                            std::hint::spin_loop();
                            continue;
                        };
                        assert!(
                            !held[lease.slot].swap(true, Ordering::AcqRel),
                            "slot {} leased twice",
                            lease.slot
                        );
                        let before =
                            last_generation[lease.slot].swap(lease.generation, Ordering::AcqRel);
                        assert!(lease.generation > before, "a generation was reused");
                        held[lease.slot].store(false, Ordering::Release);
                        t.end(&lease);
                        leased += 1;
                    }
                });
            }
        });
        assert!(t.used_slots() <= 2);
    }

    #[test]
    fn watermark_follows_the_oldest_snapshot() {
        let t = TxnTable::new(8);
        let old = t.begin().expect("slot");
        for _ in 0..5 {
            let w = t.begin().expect("slot");
            t.start_commit(&w);
            t.set_outcome(&w, true);
            t.end(&w);
        }
        assert_eq!(t.refresh_watermark(), old.snapshot);
        t.end(&old);
        assert_eq!(t.refresh_watermark(), t.now());
    }
}
