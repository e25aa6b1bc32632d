//! Deterministic preemption injection: preemptions land exactly at the chosen record accesses and
//! region exits, through the same hook a real request reaches, and never inside a region.

use std::cell::Cell;
use std::sync::Arc;

use overtake_runtime::preempt::inject::{self, Point};
use overtake_runtime::preempt::{self, PreemptTarget, record_access};
use overtake_runtime::{Context, NoPreemptGuard, region};

thread_local! {
    /// Hook calls on this thread, and the region depth each one saw.
    static CALLS: Cell<u32> = const { Cell::new(0) };
    static MAX_DEPTH_SEEN: Cell<u32> = const { Cell::new(0) };
}

fn calls() -> u32 {
    CALLS.with(Cell::get)
}

fn counting_hook() {
    CALLS.with(|c| c.set(c.get() + 1));
    // The hook runs inside the region the preemption opened, and nowhere deeper.
    MAX_DEPTH_SEEN.with(|d| d.set(d.get().max(region::depth())));
}

fn in_preemptible_context(body: impl FnOnce() + 'static) {
    let mut ctx = Context::new(256 * 1024, true, move |_| body()).expect("stack");
    assert!(ctx.resume().is_finished(), "the body ran to its end");
}

#[test]
fn record_access_injection_fires_at_the_chosen_accesses() {
    let registration =
        preempt::register_worker(PreemptTarget::new(), 0, counting_hook).expect("register");
    in_preemptible_context(|| {
        inject::inject(Point::RecordAccess, 3, 4);
        record_access();
        record_access();
        assert_eq!(calls(), 0);
        record_access();
        assert_eq!(calls(), 1, "the third access");
        for _ in 0..3 {
            record_access();
        }
        assert_eq!(calls(), 1);
        record_access();
        assert_eq!(calls(), 2, "then every fourth");
        assert_eq!(inject::fired(Point::RecordAccess), 2);
        inject::stop();
        for _ in 0..20 {
            record_access();
        }
        assert_eq!(calls(), 2, "stopped");
    });
    assert_eq!(MAX_DEPTH_SEEN.with(Cell::get), 1);
    drop(registration);
}

#[test]
fn region_exit_injection_fires_only_at_outermost_exits_of_a_preemptible_context() {
    let registration =
        preempt::register_worker(PreemptTarget::new(), 0, counting_hook).expect("register");
    // Outside any preemptible context no exit counts.
    inject::inject(Point::RegionExit, 1, 1);
    drop(NoPreemptGuard::new());
    assert_eq!(calls(), 0);
    inject::stop();
    in_preemptible_context(|| {
        inject::inject(Point::RegionExit, 2, 0);
        drop(NoPreemptGuard::new());
        assert_eq!(calls(), 0, "first exit");
        {
            let _outer = NoPreemptGuard::new();
            drop(NoPreemptGuard::new());
            assert_eq!(calls(), 0, "a nested exit does not count");
        }
        assert_eq!(calls(), 1, "the second outermost exit");
        for _ in 0..10 {
            drop(NoPreemptGuard::new());
        }
        assert_eq!(calls(), 1, "only once");
        assert_eq!(inject::fired(Point::RegionExit), 1);
        // Every exit, and the preemption's own region does not count as one.
        inject::inject(Point::RegionExit, 1, 1);
        for _ in 0..5 {
            drop(NoPreemptGuard::new());
        }
        assert_eq!(calls(), 6);
        inject::stop();
    });
    drop(registration);
}

#[test]
fn a_request_polled_inside_a_region_waits_for_the_region_to_end() {
    let target = PreemptTarget::new();
    let registration =
        preempt::register_worker(Arc::clone(&target), 1, counting_hook).expect("register");
    let t = Arc::clone(&target);
    in_preemptible_context(move || {
        let _ = t.request();
        {
            let _region = NoPreemptGuard::new();
            record_access();
            assert_eq!(calls(), 0, "not inside the region");
            assert!(region::is_pending());
        }
        assert_eq!(calls(), 1, "served as the region ended");
        // Injected at an access inside a region: deferred the same way.
        inject::inject(Point::RecordAccess, 1, 0);
        {
            let _region = NoPreemptGuard::new();
            record_access();
            assert_eq!(calls(), 1);
        }
        assert_eq!(calls(), 2);
        inject::stop();
    });
    drop(registration);
}
