//! Where new work goes (UFS's two strategies): time-sensitive work straight to a worker that can
//! run it at once — an idle one, else one running background work (which it preempts), else the
//! one with the least time-sensitive work queued; background work to its group's queue, from
//! which any worker that would otherwise idle pulls it, so no worker idles while background work
//! waits.
//!
//! A pure function of what each worker is doing, so that every decision can be tested.

use overtake_priority::Tier;

/// What a worker is doing, as placement sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerView {
    /// The tier of the task it runs; `None`: it runs nothing (idle, or about to sleep).
    pub running: Option<Tier>,
    /// Time-sensitive work waiting for it (queued, and started tasks ready to continue).
    pub time_sensitive_waiting: usize,
}

/// Where a piece of new work goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// To worker `w`, which runs nothing: it starts at once.
    Idle(usize),
    /// To worker `w`, which runs background work: it is preempted.
    Preempt(usize),
    /// To worker `w`'s queue (every worker is busy with time-sensitive work; `w` has the least
    /// waiting).
    Queue(usize),
    /// To its group's queue, for a worker that would otherwise idle to pull.
    GroupQueue,
}

/// Where new work of `tier` goes, given `workers`; ties go to the first worker from `start`
/// on (a caller rotates it, so ties spread).
pub fn place(tier: Tier, workers: &[WorkerView], start: usize) -> Placement {
    if tier == Tier::Background || workers.is_empty() {
        return Placement::GroupQueue;
    }
    let n = workers.len();
    let order = (0..n).map(|i| (start + i) % n);
    let free = |w: &WorkerView| w.time_sensitive_waiting == 0;
    if let Some(w) = order
        .clone()
        .find(|&w| workers[w].running.is_none() && free(&workers[w]))
    {
        return Placement::Idle(w);
    }
    if let Some(w) = order
        .clone()
        .find(|&w| workers[w].running == Some(Tier::Background) && free(&workers[w]))
    {
        return Placement::Preempt(w);
    }
    let w = order
        .min_by_key(|&w| workers[w].time_sensitive_waiting)
        .expect("at least one worker");
    Placement::Queue(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(running: Option<Tier>, waiting: usize) -> WorkerView {
        WorkerView {
            running,
            time_sensitive_waiting: waiting,
        }
    }

    const TS: Option<Tier> = Some(Tier::TimeSensitive);
    const BG: Option<Tier> = Some(Tier::Background);

    #[test]
    fn time_sensitive_work_goes_to_an_idle_worker_then_preempts_background_then_queues() {
        let ts = Tier::TimeSensitive;
        // An idle worker beats one running background work.
        let w = [view(BG, 0), view(None, 0), view(TS, 0)];
        assert_eq!(place(ts, &w, 0), Placement::Idle(1));
        // No idle worker: preempt background work.
        let w = [view(TS, 0), view(BG, 0), view(TS, 1)];
        assert_eq!(place(ts, &w, 0), Placement::Preempt(1));
        // A worker with time-sensitive work already waiting is not idle for this purpose.
        let w = [view(None, 2), view(BG, 1), view(TS, 0)];
        assert_eq!(place(ts, &w, 0), Placement::Queue(2));
        // Everyone busy with time-sensitive work: the shortest queue.
        let w = [view(TS, 3), view(TS, 1), view(TS, 2)];
        assert_eq!(place(ts, &w, 0), Placement::Queue(1));
    }

    #[test]
    fn ties_spread_from_the_rotating_start() {
        let ts = Tier::TimeSensitive;
        let w = [view(None, 0), view(None, 0), view(None, 0)];
        assert_eq!(place(ts, &w, 0), Placement::Idle(0));
        assert_eq!(place(ts, &w, 1), Placement::Idle(1));
        assert_eq!(place(ts, &w, 5), Placement::Idle(2));
        let w = [view(TS, 1), view(TS, 1)];
        assert_eq!(place(ts, &w, 1), Placement::Queue(1));
    }

    #[test]
    fn background_work_waits_in_its_group_queue_to_be_pulled() {
        let w = [view(None, 0), view(None, 0)];
        assert_eq!(place(Tier::Background, &w, 0), Placement::GroupQueue);
        assert_eq!(place(Tier::TimeSensitive, &[], 0), Placement::GroupQueue);
    }
}
