//! Lock-scheduling policies: in which order a lock's waiters are granted, and what a request that
//! must wait does to the transactions holding the lock (nothing, raise their priority, abort them
//! now, later, or when they next block). The names follow the POW paper (ICDE 2005) and McWherter
//! et al. (ICDE 2004); `cats` is MySQL 8's contention-aware scheduling.
//!
//! Pure decisions on what the caller tells about each transaction: nothing here waits or reads a
//! clock.

use std::time::Duration;

use super::{TxnId, TxnInfo};

/// A lock-scheduling policy of the two-phase-locking mode (`--lock-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockPolicy {
    /// First come, first served; priorities ignored.
    Standard,
    /// Waiters granted most urgent first (McWherter's NP-LQ); holders untouched.
    NPrio,
    /// NPrio, and holders blocking a more urgent waiter run at its level until they end.
    NPrioInherit,
    /// A more urgent waiter aborts the less urgent holders at once (P-LQ, wound-wait).
    PAbort,
    /// Preempt-On-Wait: a less urgent holder is aborted if it is itself waiting (for a lock, or
    /// paused by CPU preemption), and otherwise inherits the waiter's level and is aborted if it
    /// blocks on a lock later.
    Pow,
    /// PAbort after a reprieve: the less urgent holders get `reprieve` to finish first.
    ConditionalRestart {
        /// How long a less urgent holder may keep the lock before it is aborted.
        reprieve: Duration,
    },
    /// Wait-depth limited to chains of two, priorities ignored: a transaction that would be the
    /// middle of a chain of three waiting transactions is aborted, unless it is older than both
    /// ends, which are aborted instead (so the oldest transaction always progresses).
    Wdl1,
    /// Waiters granted in the order of how many transactions they block (most first).
    Cats,
}

/// How a lock's waiters are ordered for granting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QueueOrder {
    /// Arrival order.
    Fifo,
    /// Most urgent level first, then arrival.
    Priority,
    /// Most transactions blocked first, then arrival.
    Contention,
}

/// What a request that has to wait does to others.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConflictAction {
    /// Transactions to abort now.
    pub(crate) abort: Vec<TxnId>,
    /// Transactions to abort if they still hold the lock after the policy's reprieve.
    pub(crate) abort_after: Option<(Duration, Vec<TxnId>)>,
    /// Transactions whose effective level is raised (to the level given) until they end.
    pub(crate) raise: Vec<(TxnId, u8)>,
    /// Transactions to abort when they next have to wait for a lock (POW's flag).
    pub(crate) doom: Vec<TxnId>,
    /// The requester itself is aborted instead of waiting (WDL1).
    pub(crate) abort_requester: bool,
}

impl LockPolicy {
    /// Every policy's name, as [`parse`](Self::parse) takes it.
    pub const NAMES: [&'static str; 8] = [
        "standard",
        "nprio",
        "nprio-inherit",
        "pabort",
        "pow",
        "cr",
        "wdl1",
        "cats",
    ];

    /// The policy called `name` (one of [`NAMES`](Self::NAMES)); `cr` gets `reprieve`.
    pub fn parse(name: &str, reprieve: Duration) -> Option<LockPolicy> {
        Some(match name {
            "standard" => LockPolicy::Standard,
            "nprio" => LockPolicy::NPrio,
            "nprio-inherit" => LockPolicy::NPrioInherit,
            "pabort" => LockPolicy::PAbort,
            "pow" => LockPolicy::Pow,
            "cr" => LockPolicy::ConditionalRestart { reprieve },
            "wdl1" => LockPolicy::Wdl1,
            "cats" => LockPolicy::Cats,
            _ => return None,
        })
    }

    /// The policy's name.
    pub fn name(self) -> &'static str {
        match self {
            LockPolicy::Standard => "standard",
            LockPolicy::NPrio => "nprio",
            LockPolicy::NPrioInherit => "nprio-inherit",
            LockPolicy::PAbort => "pabort",
            LockPolicy::Pow => "pow",
            LockPolicy::ConditionalRestart { .. } => "cr",
            LockPolicy::Wdl1 => "wdl1",
            LockPolicy::Cats => "cats",
        }
    }

    pub(super) fn order(self) -> QueueOrder {
        match self {
            LockPolicy::Standard | LockPolicy::Wdl1 => QueueOrder::Fifo,
            LockPolicy::Cats => QueueOrder::Contention,
            LockPolicy::NPrio
            | LockPolicy::NPrioInherit
            | LockPolicy::PAbort
            | LockPolicy::Pow
            | LockPolicy::ConditionalRestart { .. } => QueueOrder::Priority,
        }
    }

    /// What `requester`, about to wait for the conflicting `holders`, does to them.
    pub(super) fn on_conflict(self, requester: &TxnInfo, holders: &[TxnInfo]) -> ConflictAction {
        let lower = || holders.iter().filter(|h| h.level < requester.level);
        let mut action = ConflictAction::default();
        match self {
            LockPolicy::Standard | LockPolicy::NPrio | LockPolicy::Cats => {}
            LockPolicy::NPrioInherit => {
                action.raise = lower().map(|h| (h.id, requester.level)).collect();
            }
            LockPolicy::PAbort => action.abort = lower().map(|h| h.id).collect(),
            LockPolicy::Pow => {
                for h in lower() {
                    if h.waiting || h.paused {
                        action.abort.push(h.id);
                    } else {
                        action.raise.push((h.id, requester.level));
                        action.doom.push(h.id);
                    }
                }
            }
            LockPolicy::ConditionalRestart { reprieve } => {
                let victims: Vec<TxnId> = lower().map(|h| h.id).collect();
                if !victims.is_empty() {
                    action.abort_after = Some((reprieve, victims));
                }
            }
            LockPolicy::Wdl1 => {
                // Waiting would make a chain of three: someone waits for the requester, or a
                // holder waits itself. The middle transaction goes, unless it began before the
                // transactions at the chain's ends: then those go. So the oldest transaction
                // (`began` counts from a retried transaction's first attempt) is never a victim
                // and always progresses, as in Franaszek, Robinson and Thomasian's WDL, which
                // chooses victims by how long they have run. Always taking the middle, POW's
                // WDL1 aborted TPC-C's long transactions at every attempt on its hot spots.
                let older = |a: &TxnInfo, b: &TxnInfo| a.began < b.began;
                if requester.blocking > 0 {
                    // Waiters -> requester -> holders.
                    if holders.iter().all(|h| older(requester, h)) {
                        action.abort = holders.iter().map(|h| h.id).collect();
                    } else {
                        action.abort_requester = true;
                    }
                } else {
                    // Requester -> waiting holder -> whoever it waits for.
                    if holders.iter().any(|h| h.waiting && older(h, requester)) {
                        action.abort_requester = true;
                    } else {
                        action.abort = holders.iter().filter(|h| h.waiting).map(|h| h.id).collect();
                    }
                }
            }
        }
        action
    }
}
