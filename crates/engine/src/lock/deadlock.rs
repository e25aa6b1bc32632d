//! Deadlock detection on the waits-for graph, and a victim choice that respects priority.
//!
//! Run when a transaction starts waiting: any new cycle passes through it. Must never pick a
//! victim outside the cycle.

use super::{TxnId, TxnInfo};

/// A cycle of the waits-for graph through `start` (`start` first, each waiting for the next, the
/// last waiting for `start`), if there is one. `waits_for(t)` lists whom `t` waits for.
pub(crate) fn find_cycle(
    start: TxnId,
    waits_for: &dyn Fn(TxnId) -> Vec<TxnId>,
) -> Option<Vec<TxnId>> {
    // Depth-first, with the path kept so the cycle can be returned; each transaction is expanded
    // once (a cycle through `start` found from it is found the first time).
    let mut path = vec![start];
    let mut pending = vec![waits_for(start)];
    let mut visited = vec![start];
    while let Some(next) = pending.last_mut() {
        let Some(t) = next.pop() else {
            pending.pop();
            path.pop();
            continue;
        };
        if t == start {
            return Some(path);
        }
        if visited.contains(&t) {
            continue;
        }
        visited.push(t);
        path.push(t);
        pending.push(waits_for(t));
    }
    None
}

/// The transaction of `cycle` to abort: the least urgent, and of those the youngest (it has done
/// the least work).
pub(crate) fn choose_victim(cycle: &[TxnId], info: &dyn Fn(TxnId) -> TxnInfo) -> Option<TxnId> {
    cycle
        .iter()
        .map(|&t| info(t))
        .min_by_key(|i| (i.level, std::cmp::Reverse(i.began)))
        .map(|i| i.id)
}
