//! Which ordered concurrent map should back the engine's indexes?
//!
//! Candidates, all with 16-byte keys shaped like TPC-C's order-line keys (warehouse, district,
//! order, line) and u64 values (OIDs):
//! - `scc::TreeIndex` (B+-tree, lock-free reads, double-ended range iteration),
//! - `crossbeam_skiplist::base::SkipList` (lock-free skip list, read through an epoch guard
//!   rather than a reference count per entry),
//! - `std::collections::BTreeMap` behind an `RwLock` (the simplest correct baseline).
//!
//! (`congee`, an ART, only takes 8-byte keys, which composite keys exceed, so it is not a candidate.)
//!
//! Measured: random point gets in a 1M-entry index, appends at the right end of a range (how new
//! orders and order lines arrive), 15-entry range scans (one order's lines), the get+append mix on
//! two threads at once, and ten interleaved FIFO queues (TPC-C's NEW-ORDER: append at each
//! district's tail, find the district's oldest entry with a scan from the district prefix, remove
//! it), measured after 20,000 deliveries so that removed entries have piled up behind the
//! live ones. Run with `cargo bench -p overtake-index-choice`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use crossbeam_skiplist::base::SkipList;
use scc::{Guard, TreeIndex};

type Key = [u8; 16];

fn key(w: u32, d: u32, o: u32, l: u32) -> Key {
    let mut k = [0u8; 16];
    for (i, part) in [w, d, o, l].into_iter().enumerate() {
        k[i * 4..i * 4 + 4].copy_from_slice(&part.to_be_bytes());
    }
    k
}

/// 1M keys: 10 districts x 10,000 orders x 10 lines.
fn loaded_keys() -> Vec<Key> {
    let mut keys = Vec::with_capacity(1_000_000);
    for d in 0..10 {
        for o in 0..10_000 {
            for l in 0..10 {
                keys.push(key(1, d, o, l));
            }
        }
    }
    keys
}

trait Index: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn insert(&self, k: Key, v: u64);
    fn get(&self, k: &Key) -> Option<u64>;
    fn scan(&self, lo: &Key, hi: &Key) -> u64;
    /// The first key at or after `lo`.
    fn first_from(&self, lo: &Key) -> Option<Key>;
    fn remove(&self, k: &Key) -> bool;
}

impl Index for TreeIndex<Key, u64> {
    const NAME: &'static str = "scc_treeindex";
    fn new() -> Self {
        TreeIndex::new()
    }
    fn insert(&self, k: Key, v: u64) {
        let _ = self.insert_sync(k, v);
    }
    fn get(&self, k: &Key) -> Option<u64> {
        self.peek(k, &Guard::new()).copied()
    }
    fn scan(&self, lo: &Key, hi: &Key) -> u64 {
        let guard = Guard::new();
        self.range::<Key, _>(*lo..*hi, &guard)
            .map(|(_, v)| *v)
            .sum()
    }
    fn first_from(&self, lo: &Key) -> Option<Key> {
        let guard = Guard::new();
        self.range::<Key, _>(*lo.., &guard).next().map(|(k, _)| *k)
    }
    fn remove(&self, k: &Key) -> bool {
        self.remove_sync(k)
    }
}

impl Index for SkipList<Key, u64> {
    const NAME: &'static str = "crossbeam_skiplist";
    fn new() -> Self {
        SkipList::new(crossbeam_epoch::default_collector().clone())
    }
    fn insert(&self, k: Key, v: u64) {
        let guard = crossbeam_epoch::pin();
        self.get_or_insert(k, v, &guard).release(&guard);
    }
    fn get(&self, k: &Key) -> Option<u64> {
        let guard = crossbeam_epoch::pin();
        SkipList::get(self, k, &guard).map(|e| *e.value())
    }
    fn scan(&self, lo: &Key, hi: &Key) -> u64 {
        let guard = crossbeam_epoch::pin();
        self.range::<Key, _>(*lo..*hi, &guard)
            .map(|e| *e.value())
            .sum()
    }
    fn first_from(&self, lo: &Key) -> Option<Key> {
        let guard = crossbeam_epoch::pin();
        self.lower_bound(Bound::Included(lo), &guard)
            .map(|e| *e.key())
    }
    fn remove(&self, k: &Key) -> bool {
        let guard = crossbeam_epoch::pin();
        SkipList::get(self, k, &guard).is_some_and(|e| e.remove())
    }
}

struct LockedBTree(RwLock<BTreeMap<Key, u64>>);

impl Index for LockedBTree {
    const NAME: &'static str = "rwlock_btreemap";
    fn new() -> Self {
        LockedBTree(RwLock::new(BTreeMap::new()))
    }
    fn insert(&self, k: Key, v: u64) {
        self.0.write().expect("lock").insert(k, v);
    }
    fn get(&self, k: &Key) -> Option<u64> {
        self.0.read().expect("lock").get(k).copied()
    }
    fn scan(&self, lo: &Key, hi: &Key) -> u64 {
        self.0
            .read()
            .expect("lock")
            .range::<Key, _>((Bound::Included(lo), Bound::Excluded(hi)))
            .map(|(_, v)| *v)
            .sum()
    }
    fn first_from(&self, lo: &Key) -> Option<Key> {
        self.0
            .read()
            .expect("lock")
            .range::<Key, _>((Bound::Included(lo), Bound::Unbounded))
            .next()
            .map(|(k, _)| *k)
    }
    fn remove(&self, k: &Key) -> bool {
        self.0.write().expect("lock").remove(k).is_some()
    }
}

struct Xorshift(u64);
impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn filled<I: Index>(keys: &[Key]) -> I {
    let index = I::new();
    for (i, k) in keys.iter().enumerate() {
        index.insert(*k, i as u64);
    }
    index
}

fn bench_candidate<I: Index>(c: &mut Criterion, keys: &[Key]) {
    let index: I = filled(keys);
    let mut group = c.benchmark_group("index");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));

    let mut rng = Xorshift(42);
    group.bench_function(BenchmarkId::new("get_random", I::NAME), |b| {
        b.iter(|| black_box(index.get(&keys[(rng.next() % keys.len() as u64) as usize])))
    });

    let mut order = 0u32;
    group.bench_function(BenchmarkId::new("scan_15", I::NAME), |b| {
        b.iter(|| {
            order = (order + 7919) % 10_000;
            black_box(index.scan(&key(1, 3, order, 0), &key(1, 3, order, 15)))
        })
    });

    group.bench_function(BenchmarkId::new("append", I::NAME), |b| {
        b.iter_custom(|iters| {
            let fresh = I::new();
            let start = Instant::now();
            for i in 0..iters {
                fresh.insert(key(2, (i % 10) as u32, (i / 10) as u32, 0), i);
            }
            start.elapsed()
        })
    });

    // Two threads, each 90% gets and 10% appends into its own district: the TPC-C shape at the
    // index level. Reported per operation.
    group.bench_function(BenchmarkId::new("two_threads_mixed", I::NAME), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for t in 0..2u64 {
                    let index = &index;
                    s.spawn(move || {
                        let mut rng = Xorshift(7 + t);
                        for i in 0..iters.div_ceil(2) {
                            if i % 10 == 0 {
                                index.insert(key(3 + t as u32, 0, i as u32, 0), i);
                            } else {
                                black_box(
                                    index.get(&keys[(rng.next() % keys.len() as u64) as usize]),
                                );
                            }
                        }
                    });
                }
            });
            start.elapsed()
        })
    });
    // Ten interleaved FIFO queues, as TPC-C's NEW-ORDER: 900 live entries per district, two
    // appends per delivery, the delivery scanning from the district prefix for the oldest entry.
    let queue: I = I::new();
    let (mut head, mut tail) = ([2101u32; 11], [3001u32; 11]);
    for d in 1..=10 {
        for o in 2101..3001 {
            queue.insert(key(1, d, o, 0), 0);
        }
    }
    let mut step = |queue: &I| {
        for d in 1..=10u32 {
            for _ in 0..2 {
                queue.insert(key(1, d, tail[d as usize], 0), 0);
                tail[d as usize] += 1;
            }
        }
        for d in 1..=10u32 {
            let first = queue.first_from(&key(1, d, 0, 0)).expect("non-empty");
            assert_eq!(first, key(1, d, head[d as usize], 0));
            assert!(queue.remove(&first));
            head[d as usize] += 1;
        }
    };
    for _ in 0..2_000 {
        step(&queue);
    }
    group.bench_function(BenchmarkId::new("fifo_queues_step", I::NAME), |b| {
        b.iter(|| step(&queue))
    });
    group.finish();
}

fn index_choice(c: &mut Criterion) {
    let keys = loaded_keys();
    bench_candidate::<TreeIndex<Key, u64>>(c, &keys);
    bench_candidate::<SkipList<Key, u64>>(c, &keys);
    bench_candidate::<LockedBTree>(c, &keys);
}

criterion_group!(benches, index_choice);
criterion_main!(benches);
