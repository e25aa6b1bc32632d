//! Every allocator call made through `RegionAlloc` must run inside a non-preemptible region, and
//! leave the thread preemptible again afterwards. The inner allocator here records the region depth
//! it observes on each call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use overtake_runtime::{RegionAlloc, region};

struct DepthRecordingAlloc;

static CALLS: AtomicUsize = AtomicUsize::new(0);
static CALLS_OUTSIDE_REGION: AtomicUsize = AtomicUsize::new(0);

fn record() {
    CALLS.fetch_add(1, Ordering::Relaxed);
    if region::depth() == 0 {
        CALLS_OUTSIDE_REGION.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call unchanged to `System` after bumping two counters (no allocation).
unsafe impl GlobalAlloc for DepthRecordingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record();
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: RegionAlloc<DepthRecordingAlloc> = RegionAlloc::new(DepthRecordingAlloc);

#[test]
fn every_allocator_call_runs_inside_a_region() {
    let before = CALLS.load(Ordering::Relaxed);
    let mut v: Vec<u64> = Vec::new();
    for i in 0..10_000 {
        v.push(i); // grows by realloc
    }
    let boxed: Vec<Box<[u8]>> = (0..100)
        .map(|n| vec![7u8; n + 1].into_boxed_slice())
        .collect();
    let s: String = boxed.iter().map(|b| b.len().to_string()).collect();
    drop(boxed);
    assert!(s.len() > 100);
    assert_eq!(v.iter().sum::<u64>(), 10_000 * 9_999 / 2);
    drop(v);
    let after = CALLS.load(Ordering::Relaxed);
    assert!(after - before > 200, "the allocator was exercised");
    assert_eq!(CALLS_OUTSIDE_REGION.load(Ordering::Relaxed), 0);
    assert_eq!(
        region::depth(),
        0,
        "allocation leaves the thread preemptible"
    );
}

#[test]
fn allocation_from_many_threads_keeps_each_thread_balanced() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut total = 0usize;
                for i in 0..2_000 {
                    let v = vec![t as u8; i % 97 + 1];
                    total += v.len();
                }
                assert_eq!(region::depth(), 0);
                total
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().expect("thread") > 0);
    }
    assert_eq!(CALLS_OUTSIDE_REGION.load(Ordering::Relaxed), 0);
}
