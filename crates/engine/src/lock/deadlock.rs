//! Deadlock detection on the waits-for graph, and a victim choice that respects priority.
//!
//! Run from the transactions whose request or raise added waits (any new cycle passes through
//! one of them). Must never pick a victim outside the cycle.

use std::collections::HashMap;

use super::{TxnId, TxnInfo};

/// A cycle of the waits-for graph reachable from `starts` (each member waiting for the next, the
/// last waiting for the first), if there is one. `waits_for(t)` lists whom `t` waits for.
///
/// One depth-first search over everything reachable from every start, each transaction expanded
/// once (on the path, or finished): linear in the edges, however many starts share a subgraph.
pub(crate) fn find_cycle(
    starts: &[TxnId],
    waits_for: &dyn Fn(TxnId) -> Vec<TxnId>,
) -> Option<Vec<TxnId>> {
    const ON_PATH: bool = true;
    const FINISHED: bool = false;
    let mut seen: HashMap<TxnId, bool> = HashMap::new();
    for &start in starts {
        if seen.contains_key(&start) {
            continue;
        }
        seen.insert(start, ON_PATH);
        let mut path = vec![start];
        let mut pending = vec![waits_for(start)];
        while let Some(next) = pending.last_mut() {
            let Some(t) = next.pop() else {
                pending.pop();
                if let Some(done) = path.pop() {
                    seen.insert(done, FINISHED);
                }
                continue;
            };
            match seen.get(&t) {
                Some(&ON_PATH) => {
                    let at = path.iter().position(|&p| p == t)?;
                    return Some(path[at..].to_vec());
                }
                Some(_) => {}
                None => {
                    seen.insert(t, ON_PATH);
                    path.push(t);
                    pending.push(waits_for(t));
                }
            }
        }
    }
    None
}

/// The transaction of `cycle` to abort: the least urgent by the level it asked for, and of those
/// the youngest (it has done the least work). Inheritance is left out: a holder raised to an
/// urgent waiter's level is raised to let that waiter through sooner, and counting the raise
/// would tie the two and abort the waiter, the younger, for the holder it inherited from.
pub(crate) fn choose_victim(cycle: &[TxnId], info: &dyn Fn(TxnId) -> TxnInfo) -> Option<TxnId> {
    cycle
        .iter()
        .map(|&t| info(t))
        .min_by_key(|i| (i.asked, std::cmp::Reverse(i.began)))
        .map(|i| i.id)
}
