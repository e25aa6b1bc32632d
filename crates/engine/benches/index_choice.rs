//! Which ordered concurrent map should back the engine's indexes?
//!
//! Candidates, all with 16-byte keys shaped like TPC-C's order-line keys (warehouse, district,
//! order, line) and u64 values (OIDs):
//! - `scc::TreeIndex` (B+-tree, lock-free reads, double-ended range iteration),
//! - `crossbeam_skiplist::SkipMap` (lock-free skip list),
//! - `std::collections::BTreeMap` behind an `RwLock` (the simplest correct baseline).
//!
//! (`congee`, an ART, only takes 8-byte keys, which composite keys exceed, so it is not a candidate.)
//!
//! Measured: random point gets in a 1M-entry index, appends at the right end of a range (how new
//! orders and order lines arrive), 15-entry range scans (one order's lines), and the get+append mix
//! on two threads at once. Run with `cargo bench -p overtake-engine --bench index_choice`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use crossbeam_skiplist::SkipMap;
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
}

impl Index for SkipMap<Key, u64> {
    const NAME: &'static str = "crossbeam_skipmap";
    fn new() -> Self {
        SkipMap::new()
    }
    fn insert(&self, k: Key, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: &Key) -> Option<u64> {
        SkipMap::get(self, k).map(|e| *e.value())
    }
    fn scan(&self, lo: &Key, hi: &Key) -> u64 {
        self.range::<Key, _>(*lo..*hi).map(|e| *e.value()).sum()
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
    group.finish();
}

fn index_choice(c: &mut Criterion) {
    let keys = loaded_keys();
    bench_candidate::<TreeIndex<Key, u64>>(c, &keys);
    bench_candidate::<SkipMap<Key, u64>>(c, &keys);
    bench_candidate::<LockedBTree>(c, &keys);
}

criterion_group!(benches, index_choice);
criterion_main!(benches);
