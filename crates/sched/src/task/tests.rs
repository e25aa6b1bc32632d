//! The task table's bookkeeping: slots, states, wake tokens, queues and starvation.

use super::*;

fn table(capacity: usize) -> (TaskTable, Instant) {
    let now = Instant::now();
    (TaskTable::new(capacity, now), now)
}

fn start(t: &mut TaskTable, p: Priority, now: Instant) -> (TaskId, u64) {
    let id = match t.claim().expect("room") {
        Claim::Create(id) => {
            t.created(id);
            id
        }
        Claim::Reuse(id) => id,
    };
    (id, t.start(id, p, Group::of(p), now))
}

#[test]
fn paused_tasks_continue_by_level_then_in_order() {
    let (mut t, now) = table(8);
    let (low, _) = start(&mut t, Priority::LOW, now);
    t.preempt(low, now, 0);
    let (medium, _) = start(&mut t, Priority::MEDIUM, now);
    t.preempt(medium, now, 0);
    let (medium2, _) = start(&mut t, Priority::MEDIUM, now);
    t.preempt(medium2, now, 0);
    assert_eq!(t.highest_ready(), Some(Priority::MEDIUM));
    assert_eq!(t.pop_ready(Priority::MEDIUM), Some(medium));
    assert_eq!(t.pop_ready(Priority::MEDIUM), Some(medium2));
    assert_eq!(t.highest_ready(), Some(Priority::LOW));
    assert_eq!(
        t.preempted_count(),
        1,
        "those taken from the queue are about to run"
    );
    t.resume(low, now + Duration::from_millis(2));
    assert_eq!(t.get(low).preemptions, 1);
    assert_eq!(t.get(low).preempted, Duration::from_millis(2));
}

#[test]
fn wakes_count_once_and_only_for_the_task_that_parked() {
    let (mut t, now) = table(2);
    let (id, old_token) = start(&mut t, Priority::HIGH, now);
    t.park(id, now);
    assert_eq!(t.wake(old_token).map(|(p, _)| p), Some(Priority::HIGH));
    assert_eq!(t.wake(old_token), None, "already woken");
    assert_eq!(t.pop_ready(Priority::HIGH), Some(id));
    t.resume(id, now + Duration::from_micros(5));
    assert_eq!(t.get(id).waited, Duration::from_micros(5));
    t.finish(id);
    // The slot's next task does not answer to the old task's token.
    let (again, new_token) = start(&mut t, Priority::LOW, now);
    assert_eq!(again, id, "the context is reused");
    t.park(again, now);
    assert_eq!(t.wake(old_token), None);
    assert_eq!(t.wake(token(7, 1)), None, "no such slot");
    assert_eq!(t.wake(new_token).map(|(p, _)| p), Some(Priority::LOW));
}

#[test]
fn a_wake_that_comes_before_the_park_is_recorded_is_kept_for_it() {
    // The task announced its park and an unpark sent its token, but the worker sees the
    // token first: while the task still runs, or while it is paused on its way to the switch.
    let (mut t, now) = table(2);
    let (running, running_token) = start(&mut t, Priority::HIGH, now);
    assert_eq!(t.wake(running_token), None, "not parked yet");
    t.park(running, now);
    assert_eq!(t.get(running).state, TaskState::Woken);
    assert_eq!(t.pop_ready(Priority::HIGH), Some(running));
    t.resume(running, now);
    t.park(running, now);
    assert_eq!(
        t.get(running).state,
        TaskState::Parked,
        "the early wake counted once"
    );

    let (paused, paused_token) = start(&mut t, Priority::LOW, now);
    t.preempt(paused, now, 0);
    assert_eq!(t.wake(paused_token), None);
    assert_eq!(t.pop_ready(Priority::LOW), Some(paused));
    t.resume(paused, now);
    t.park(paused, now);
    assert_eq!(
        t.pop_ready(Priority::LOW),
        Some(paused),
        "woken at its park"
    );
}

#[test]
fn the_pool_is_bounded_and_reused() {
    let (mut t, now) = table(2);
    let (a, _) = start(&mut t, Priority::LOW, now);
    let (_b, _) = start(&mut t, Priority::LOW, now);
    assert_eq!(t.claim(), None, "two contexts in use");
    assert_eq!(t.in_flight(), 2);
    t.finish(a);
    assert_eq!(t.claim(), Some(Claim::Reuse(a)));
}

#[test]
fn in_one_queue_a_preempted_task_waits_for_the_jobs_queued_before_it() {
    let (mut t, now) = table(4);
    let (id, _) = start(&mut t, Priority::MEDIUM, now);
    t.preempt(id, now, 2);
    let g = Group::of(Priority::MEDIUM);
    assert_eq!(t.head_ready(Priority::MEDIUM, g), Some((id, 2)));
    t.new_job_started(Priority::LOW);
    assert_eq!(
        t.head_ready(Priority::MEDIUM, g),
        Some((id, 2)),
        "another level"
    );
    t.new_job_started(Priority::MEDIUM);
    t.new_job_started(Priority::MEDIUM);
    t.new_job_started(Priority::MEDIUM);
    assert_eq!(t.head_ready(Priority::MEDIUM, g), Some((id, 0)));
    assert_eq!(t.ready_count(), 1);
}

#[test]
fn a_raise_moves_a_ready_task_up_until_withdrawn() {
    let (mut t, now) = table(4);
    let (low, token) = start(&mut t, Priority::LOW, now);
    t.preempt(low, now, 0);
    assert_eq!(t.raise(token, 2, true), Some((low, Priority::HIGH)));
    assert_eq!(
        t.raise(token, 1, true),
        Some((low, Priority::HIGH)),
        "the highest counts"
    );
    assert_eq!(t.highest_ready(), Some(Priority::HIGH));
    assert_eq!(t.raise(token, 2, false), Some((low, Priority::MEDIUM)));
    assert_eq!(t.highest_ready(), Some(Priority::MEDIUM));
    assert_eq!(t.raise(token, 1, false), Some((low, Priority::LOW)));
    assert_eq!(t.highest_ready(), Some(Priority::LOW));
    assert_eq!(t.raise(token, 9, true), None, "no such level");
    assert_eq!(t.pop_ready(Priority::LOW), Some(low));
    t.resume(low, now);
    t.finish(low);
    assert_eq!(t.raise(token, 2, true), None, "the task has ended");
}

#[test]
fn ready_tasks_are_counted_by_group_and_found_by_group() {
    let (mut t, now) = table(8);
    let level = Priority::MEDIUM;
    let (a, b) = (
        Group::of(level),
        Group::new(
            Group::of(level).tier,
            overtake_priority::Weight::new(7).expect("w"),
        ),
    );
    let mut started = Vec::new();
    for g in [a, b, a] {
        let id = match t.claim().expect("room") {
            Claim::Create(id) => {
                t.created(id);
                id
            }
            Claim::Reuse(id) => id,
        };
        t.start(id, level, g, now);
        t.preempt(id, now, 0);
        started.push(id);
    }
    let mut groups: Vec<Group> = t.ready_groups(level).collect();
    groups.sort();
    assert_eq!(groups, {
        let mut v = vec![a, b];
        v.sort();
        v
    });
    assert_eq!(t.head_ready(level, b).map(|(id, _)| id), Some(started[1]));
    t.take_ready(level, started[1]);
    assert_eq!(t.ready_groups(level).collect::<Vec<_>>(), vec![a]);
    assert_eq!(t.head_ready(level, b), None);
    assert_eq!(t.pop_ready(level), Some(started[0]));
    assert_eq!(t.pop_ready(level), Some(started[2]));
    assert_eq!(t.ready_groups(level).count(), 0);
    assert_eq!(t.preempted_count(), 0);
}

#[test]
fn a_starved_task_is_found_by_its_share_of_time_paused() {
    let (mut t, now) = table(4);
    let (medium, _) = start(&mut t, Priority::MEDIUM, now);
    t.preempt(medium, now + Duration::from_millis(10), 0);
    let later = now + Duration::from_millis(20);
    // Paused 10 of its 20 ms: level 0.5.
    assert!((t.starvation(medium, later) - 0.5).abs() < 1e-9);
    assert_eq!(t.take_starved(later, 0.6, Priority::LOW), None);
    assert_eq!(
        t.take_starved(later, 0.5, Priority::MEDIUM),
        None,
        "only above the protected level"
    );
    assert_eq!(t.take_starved(later, 0.5, Priority::LOW), Some(medium));
    assert_eq!(t.highest_ready(), None, "taken out of its queue");
}
