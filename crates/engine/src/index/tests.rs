//! The index against a `BTreeMap` model, splits and unlinking included, and readers racing
//! writers.

use super::*;

fn oids(index: &OrderedIndex, lo: Bound<&[u8]>, hi: Bound<&[u8]>, reverse: bool) -> Vec<u64> {
    let mut batch = ScanBatch::default();
    index.fetch_batch((lo, hi), reverse, 100, &mut batch);
    (0..batch.len()).map(|i| batch.oid(i)).collect()
}

#[test]
fn insert_get_remove_and_scan_both_ways() {
    let index = OrderedIndex::new();
    for i in 0..50u64 {
        index.insert(&i.to_be_bytes(), i).expect("fresh");
    }
    assert_eq!(index.insert(&7u64.to_be_bytes(), 99), Err(7));
    assert_eq!(
        index.insert(&7u64.to_be_bytes(), 7),
        Err(7),
        "an existing entry is reported even when it maps to the same oid"
    );
    assert_eq!(index.get(&7u64.to_be_bytes()), Some(7));
    assert!(
        !index.replace(&7u64.to_be_bytes(), 8, 70),
        "only from the expected oid"
    );
    assert!(index.replace(&7u64.to_be_bytes(), 7, 70));
    assert_eq!(index.get(&7u64.to_be_bytes()), Some(70));
    assert!(index.replace(&7u64.to_be_bytes(), 70, 7));
    assert!(
        !index.remove(&7u64.to_be_bytes(), 8),
        "only if it maps to that oid"
    );
    assert!(index.remove(&7u64.to_be_bytes(), 7));
    assert_eq!(index.get(&7u64.to_be_bytes()), None);
    let lo = 5u64.to_be_bytes();
    let hi = 10u64.to_be_bytes();
    assert_eq!(
        oids(&index, Bound::Included(&lo), Bound::Excluded(&hi), false),
        vec![5, 6, 8, 9]
    );
    assert_eq!(
        oids(&index, Bound::Excluded(&lo), Bound::Included(&hi), true),
        vec![10, 9, 8, 6]
    );
}

#[test]
fn long_keys_take_the_byte_path_and_agree() {
    let index = OrderedIndex::new();
    let key = |i: u8| [vec![7u8; 30], vec![i]].concat();
    for i in 0..10 {
        index.insert(&key(i), u64::from(i)).expect("fresh");
    }
    assert_eq!(index.get(&key(3)), Some(3));
    let (lo, hi) = (key(2), key(5));
    assert_eq!(
        oids(&index, Bound::Included(&lo), Bound::Included(&hi), true),
        vec![5, 4, 3, 2]
    );
}

use proptest::prelude::*;
use std::collections::BTreeMap;

/// Keys from a small space so that operations hit existing keys; some share a 15-byte prefix and
/// are longer, so long-key ties are exercised.
fn key_of(n: u16, long: bool) -> Vec<u8> {
    if long {
        // Long keys in three groups sharing their first 15 bytes: told apart by the bytes after.
        let mut k = vec![0x81, (n % 3) as u8];
        k.extend_from_slice(&[7; 14]);
        k.extend_from_slice(&[(n >> 8) as u8, n as u8]);
        k
    } else {
        vec![0x81, (n >> 8) as u8, n as u8]
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u16, bool, u64),
    Remove(u16, bool),
    RemoveOther(u16, bool),
    Replace(u16, bool, u64),
    Scan(u16, u16, bool, bool, usize),
    /// Looks a key up, keeping where it was found for a later hinted insert.
    Look(u16, bool),
    /// Inserts the key of a kept lookup through its hint, however stale it is by now.
    InsertHinted(usize, u64),
}

fn op() -> impl Strategy<Value = Op> {
    let key = (0u16..600, prop::bool::weighted(0.2));
    prop_oneof![
        4 => (key.clone(), any::<u64>()).prop_map(|((k, l), v)| Op::Insert(k, l, v)),
        3 => key.clone().prop_map(|(k, l)| Op::Remove(k, l)),
        1 => key.clone().prop_map(|(k, l)| Op::RemoveOther(k, l)),
        1 => (key.clone(), any::<u64>()).prop_map(|((k, l), v)| Op::Replace(k, l, v)),
        1 => (0u16..600, 0u16..600, any::<bool>(), any::<bool>(), 1usize..200)
            .prop_map(|(a, b, inc, rev, max)| Op::Scan(a, b, inc, rev, max)),
        2 => key.prop_map(|(k, l)| Op::Look(k, l)),
        3 => (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Op::InsertHinted(i, v)),
    ]
}

fn check_all(index: &OrderedIndex, model: &BTreeMap<Vec<u8>, u64>) {
    let mut batch = ScanBatch::default();
    index.fetch_batch(
        (Bound::Unbounded, Bound::Unbounded),
        false,
        usize::MAX,
        &mut batch,
    );
    let got: Vec<(Vec<u8>, u64)> = (0..batch.len())
        .map(|i| (batch.key(i).to_vec(), batch.oid(i)))
        .collect();
    let want: Vec<(Vec<u8>, u64)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert_eq!(got, want);
    for (k, v) in model {
        assert_eq!(index.get(k), Some(*v));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn the_tree_behaves_like_a_btreemap(ops in prop::collection::vec(op(), 1..3000)) {
        let index = OrderedIndex::new();
        let mut model = BTreeMap::new();
        let mut looked: Vec<(Vec<u8>, LeafHint)> = Vec::new();
        for op in ops {
            match op {
                Op::Look(k, l) => {
                    let key = key_of(k, l);
                    let (found, hint) = index.get_hinted(&key);
                    prop_assert_eq!(found, model.get(&key).copied());
                    looked.push((key, hint));
                }
                Op::InsertHinted(i, v) => {
                    if looked.is_empty() {
                        continue;
                    }
                    let (key, hint) = looked[i % looked.len()].clone();
                    let want = model.get(&key).copied();
                    match index.insert_hinted(&key, v, hint) {
                        Err(old) => prop_assert_eq!(Some(old), want),
                        Ok(moved) => {
                            prop_assert_eq!(want, None);
                            model.insert(key.clone(), v);
                            // Hints taken at the leaf's old version follow it, as a commit's do.
                            if let Some(now) = moved {
                                for (_, h) in looked.iter_mut().filter(|(_, h)| *h == hint) {
                                    *h = now;
                                }
                            }
                        }
                    }
                    prop_assert_eq!(index.get(&key), model.get(&key).copied());
                }
                Op::Insert(k, l, v) => {
                    let key = key_of(k, l);
                    let want = match model.get(&key) {
                        Some(&old) => Err(old),
                        None => {
                            model.insert(key.clone(), v);
                            Ok(())
                        }
                    };
                    prop_assert_eq!(index.insert(&key, v), want);
                }
                Op::Remove(k, l) | Op::RemoveOther(k, l) => {
                    let key = key_of(k, l);
                    let other = matches!(op, Op::RemoveOther(..));
                    let v = model.get(&key).copied();
                    let target = v.map_or(1, |v| if other { v.wrapping_add(1) } else { v });
                    let want = v == Some(target);
                    if want {
                        model.remove(&key);
                    }
                    prop_assert_eq!(index.remove(&key, target), want);
                    prop_assert_eq!(index.get(&key), model.get(&key).copied());
                }
                Op::Replace(k, l, v) => {
                    let key = key_of(k, l);
                    let old = model.get(&key).copied();
                    if let Some(old) = old {
                        prop_assert!(index.replace(&key, old, v));
                        model.insert(key, v);
                    } else {
                        prop_assert!(!index.replace(&key, 0, v));
                    }
                }
                Op::Scan(a, b, inclusive, reverse, max) => {
                    let (x, y) = (key_of(a, false), key_of(b, b % 2 == 0));
                    let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
                    let inclusive = inclusive || lo == hi;
                    let bounds = if inclusive {
                        (Bound::Included(&lo[..]), Bound::Included(&hi[..]))
                    } else {
                        (Bound::Excluded(&lo[..]), Bound::Excluded(&hi[..]))
                    };
                    let mut batch = ScanBatch::default();
                    index.fetch_batch(bounds, reverse, max, &mut batch);
                    let got: Vec<u64> = (0..batch.len()).map(|i| batch.oid(i)).collect();
                    let range = model.range::<[u8], _>(bounds).map(|(_, v)| *v);
                    let want: Vec<u64> = if reverse {
                        range.rev().take(max).collect()
                    } else {
                        range.take(max).collect()
                    };
                    prop_assert_eq!(got, want);
                }
            }
        }
        check_all(&index, &model);
    }
}

#[test]
fn a_drained_queue_leaves_no_empty_leaves_behind() {
    // TPC-C's NEW-ORDER pattern: append at the tail, remove at the head. A scan for the oldest
    // entry must find it in the first leaf it reads, however many entries came and went.
    let index = OrderedIndex::new();
    let key = |i: u64| i.to_be_bytes();
    for i in 0..100u64 {
        index.insert(&key(i), i).expect("fresh");
    }
    for i in 100..20_000u64 {
        index.insert(&key(i), i).expect("fresh");
        assert!(index.remove(&key(i - 100), i - 100));
    }
    let mut batch = ScanBatch::default();
    index.fetch_batch((Bound::Unbounded, Bound::Unbounded), false, 1, &mut batch);
    assert_eq!(batch.oid(0), 19_900);
    let writer = index.tree.writer_state_nodes();
    assert!(
        writer < 40,
        "{writer} nodes in use for 100 entries: emptied leaves were not recycled"
    );
}

#[test]
fn ascending_runs_inside_the_tree_fill_their_leaves() {
    // TPC-C's order lines: each district's new keys go after its last ones, which a leaf shares
    // with the next district's first keys. Such a run must fill leaves as an append at the end
    // of the tree does, not leave a trail of half-full ones behind it.
    let index = OrderedIndex::new();
    let key = |district: u64, n: u64| (district << 32 | n).to_be_bytes();
    let mut oid = 0;
    for district in 0..4 {
        for n in 0..100 {
            index.insert(&key(district, n), oid).expect("fresh");
            oid += 1;
        }
    }
    for n in 100..1100 {
        for district in 0..4 {
            index.insert(&key(district, n), oid).expect("fresh");
            oid += 1;
        }
    }
    let leaves_at_least = (oid as usize).div_ceil(node::CAP);
    let nodes = index.tree.writer_state_nodes();
    assert!(
        nodes <= leaves_at_least + leaves_at_least / 4,
        "{nodes} nodes for {oid} keys ({leaves_at_least} full leaves)"
    );
    for district in 0..4 {
        for n in 0..1100 {
            assert!(index.get(&key(district, n)).is_some(), "key {district}/{n}");
        }
    }
}

#[test]
fn readers_racing_writers_always_find_the_keys_that_stay() {
    // Even keys stay for the whole test; odd keys are inserted and removed over and over by a
    // writer, splitting and unlinking leaves. Readers must find every even key every time, and
    // scans must return them in order with nothing missing.
    let index = OrderedIndex::new();
    let key = |i: u64| (i * 7919 % 10_007).to_be_bytes();
    let keep: Vec<u64> = (0..4000).filter(|i| i % 2 == 0).collect();
    for &i in &keep {
        index.insert(&key(i), i).expect("fresh");
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _round in 0..20 {
                for i in (1..4000).step_by(2) {
                    index.insert(&key(i), i).expect("odd keys are absent");
                }
                for i in (1..4000).step_by(2) {
                    assert!(index.remove(&key(i), i));
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        let reader = || {
            let mut batch = ScanBatch::default();
            let mut rounds = 0;
            // At least a few full passes, however the threads are scheduled.
            while rounds < 3 || !done.load(std::sync::atomic::Ordering::Acquire) {
                for &i in &keep {
                    assert_eq!(index.get(&key(i)), Some(i));
                }
                let mut seen = Vec::new();
                index.visit(
                    (Bound::Unbounded, Bound::Unbounded),
                    &mut batch,
                    |k, oid| {
                        if oid % 2 == 0 {
                            seen.push(k.to_vec());
                        }
                        true
                    },
                );
                let mut want: Vec<Vec<u8>> = keep.iter().map(|&i| key(i).to_vec()).collect();
                want.sort();
                assert_eq!(seen, want);
                rounds += 1;
            }
        };
        s.spawn(reader);
        s.spawn(reader);
    });
}

/// The height prefetches descend by matches the tree's depth as it grows, prefetching any key,
/// present or not, changes nothing, and the leaf a prefetch returns holds what a lookup finds.
#[test]
fn prefetches_follow_the_trees_height_and_change_nothing() {
    let index = OrderedIndex::new();
    let depth = |index: &OrderedIndex| {
        let tree = &index.tree;
        let mut node = tree
            .arena
            .get(tree.root.load(std::sync::atomic::Ordering::Acquire));
        let mut levels = 0;
        while let Some(n) = node.filter(|n| !n.is_leaf()) {
            node = tree.arena.get(n.val(0));
            levels += 1;
        }
        levels
    };
    let mut model = BTreeMap::new();
    for i in 0..20_000u64 {
        // A scattered order, so that nodes split in the middle as well as at the end.
        let k = (i * 7919) % 20_000;
        let key = key_of(k as u16, k % 5 == 0);
        if index.insert(&key, k).is_ok() {
            model.insert(key, k);
        }
        if i % 1000 == 0 {
            assert_eq!(
                index.tree.height.load(std::sync::atomic::Ordering::Acquire),
                depth(&index)
            );
        }
    }
    assert!(
        depth(&index) >= 2,
        "the test needs a tree of several levels"
    );
    for k in 0..40_000u32 {
        let key = key_of(k as u16, k % 3 == 0);
        let mut descent = index.prefetch_start(&key).expect("the root exists");
        let mut steps = 0;
        while index.prefetch_step(&mut descent) {
            steps += 1;
        }
        assert_eq!(steps, depth(&index), "one step per inner level");
        // Nothing changed the tree since: the leaf it asked for answers as a lookup does.
        let found = index.search_prefetched(&descent, &key);
        assert_eq!(found.map(|f| f.0), model.get(&key).copied(), "key {k}");
        if let Some((_, hint)) = found {
            assert!(index.unchanged_since(hint), "key {k}");
        }
    }
    check_all(&index, &model);
}
