use super::*;
use proptest::prelude::*;
use std::ops::RangeBounds;

fn int_key(v: i64) -> KeyBuf {
    let cols = [ColumnType::Int64];
    KeyBuilder::new("t", &cols, None)
        .int(v)
        .finish()
        .expect("key")
}

fn str_key(parts: &[&str]) -> KeyBuf {
    let cols = vec![ColumnType::VarChar(40); parts.len()];
    let mut b = KeyBuilder::new("t", &cols, None);
    for p in parts {
        b.str(p);
    }
    b.finish().expect("key")
}

proptest! {
    #[test]
    fn keys_decode_to_the_values_they_encode(
        a in any::<i64>(), text in "[a\x00b']{0,6}", units in -10_000i64..10_000,
    ) {
        let cols = [
            ColumnType::Int64,
            ColumnType::VarChar(8),
            ColumnType::Decimal { precision: 8, scale: 2 },
        ];
        let decimal = crate::storage::value::Decimal::new(units, 2).expect("scale 2");
        let key = KeyBuilder::new("t", &cols, None)
            .int(a)
            .str(&text)
            .value(Value::Decimal(decimal))
            .finish()
            .expect("key");
        let quoted = text.replace('\'', "''");
        prop_assert_eq!(
            describe(key.as_bytes(), &cols, None),
            Some(format!("({a}, '{quoted}', {decimal})"))
        );
        // A prefix of the columns shows what it has; garbage is not a key.
        prop_assert_eq!(describe(int_key(a).as_bytes(), &cols, None), Some(format!("({a})")));
        prop_assert_eq!(describe(&[0x95], &cols, None), None);
    }

    #[test]
    fn integer_order_is_preserved(a in any::<i64>(), b in any::<i64>()) {
        prop_assert_eq!(a.cmp(&b), int_key(a).as_bytes().cmp(int_key(b).as_bytes()));
    }

    #[test]
    fn integer_order_is_preserved_near_byte_boundaries(
        a in prop_oneof![-70_000i64..70_000, any::<i64>(), Just(i64::MIN), Just(i64::MAX)],
        b in prop_oneof![-70_000i64..70_000, any::<i64>(), Just(i64::MIN), Just(i64::MAX)],
        c in -300i64..300, d in -300i64..300,
    ) {
        // Pairs compare as tuples: no encoding is a prefix of another.
        let cols = [ColumnType::Int64, ColumnType::Int64];
        let ka = KeyBuilder::new("t", &cols, None).int(a).int(c).finish().expect("key");
        let kb = KeyBuilder::new("t", &cols, None).int(b).int(d).finish().expect("key");
        prop_assert_eq!((a, c).cmp(&(b, d)), ka.as_bytes().cmp(kb.as_bytes()));
    }

    #[test]
    fn int32_order_is_preserved(a in any::<i32>(), b in any::<i32>()) {
        let cols = [ColumnType::Int32];
        let ka = KeyBuilder::new("t", &cols, None).int(a.into()).finish().expect("key");
        let kb = KeyBuilder::new("t", &cols, None).int(b.into()).finish().expect("key");
        prop_assert_eq!(a.cmp(&b), ka.as_bytes().cmp(kb.as_bytes()));
    }

    #[test]
    fn composite_string_order_is_preserved(
        a1 in "[a\\x00b]{0,6}", a2 in "[a\\x00b]{0,6}",
        b1 in "[a\\x00b]{0,6}", b2 in "[a\\x00b]{0,6}",
    ) {
        let expected = (a1.as_str(), a2.as_str()).cmp(&(b1.as_str(), b2.as_str()));
        let ka = str_key(&[&a1, &a2]);
        let kb = str_key(&[&b1, &b2]);
        prop_assert_eq!(expected, ka.as_bytes().cmp(kb.as_bytes()));
    }
}

#[test]
fn integers_take_only_their_significant_bytes() {
    let len = |v: i64| int_key(v).len();
    assert_eq!(len(0), 1);
    assert_eq!(len(1), 2);
    assert_eq!(len(255), 2);
    assert_eq!(len(256), 3);
    assert_eq!(len(3_000), 3);
    assert_eq!(len(-1), 2);
    assert_eq!(len(i64::MAX), 9);
    assert_eq!(len(i64::MIN), 9);
    // An order line's key (warehouse, district, order, line) fits an inline index key.
    let cols = [ColumnType::Int32; 4];
    let k = KeyBuilder::new("t", &cols, None)
        .int(1)
        .int(10)
        .int(40_000)
        .int(15)
        .finish()
        .expect("key");
    assert!(k.len() <= INLINE, "{} bytes", k.len());
}

#[test]
fn builder_checks_parts() {
    let cols = [ColumnType::Int32, ColumnType::VarChar(4)];
    assert!(KeyBuilder::new("i", &cols, None).int(1).finish().is_err());
    assert!(KeyBuilder::new("i", &cols, None).int(1).prefix().is_ok());
    assert!(KeyBuilder::new("i", &cols, None).str("x").finish().is_err());
    assert!(
        KeyBuilder::new("i", &cols, None)
            .int(i64::from(i32::MAX) + 1)
            .str("x")
            .finish()
            .is_err()
    );
    assert!(
        KeyBuilder::new("i", &cols, None)
            .int(1)
            .str("12345")
            .finish()
            .is_err()
    );
    assert!(
        KeyBuilder::new("i", &cols, None)
            .int(1)
            .str("ab")
            .int(3)
            .finish()
            .is_err()
    );
}

/// `int`'s inline path builds the bytes (and reports the errors) the general path does.
#[test]
fn integer_parts_encode_alike_by_every_setter() {
    let cols = [
        ColumnType::Int64,
        ColumnType::Int32,
        ColumnType::Decimal {
            precision: 9,
            scale: 2,
        },
    ];
    let edges = crate::storage::value::INTEGER_EDGES;
    for &a in &edges {
        for &b in &edges {
            let inline = KeyBuilder::new("i", &cols, None).int(a).int(b).prefix();
            let general = KeyBuilder::new("i", &cols, None)
                .value(Value::Int(a))
                .value(Value::Int(b))
                .prefix();
            assert_eq!(inline.is_ok(), general.is_ok(), "{a}, {b}");
            if let (Ok(x), Ok(y)) = (inline, general) {
                assert_eq!(x, y, "{a}, {b}");
            }
            // An integer for a decimal column is refused both ways.
            assert!(
                KeyBuilder::new("i", &cols, None)
                    .int(a)
                    .int(0)
                    .int(b)
                    .prefix()
                    .is_err()
            );
        }
    }
}

#[test]
fn long_keys_spill_to_the_heap_and_keep_every_byte() {
    let long = "x".repeat(40);
    let parts = [long.as_str(), "a", long.as_str(), "b", "c", "d", "e"];
    let key = str_key(&parts);
    assert!(key.len() > KEY_INLINE, "{} bytes", key.len());
    // Part by part, the spilled key is the concatenation of each part's own encoding.
    let expected: Vec<u8> = parts
        .iter()
        .flat_map(|p| str_key(&[p]).as_bytes().to_vec())
        .collect();
    assert_eq!(key.as_bytes(), &expected[..]);
    // Integers written after the spill land after it.
    let mut b = KeyBuilder::new("t", &[ColumnType::VarChar(100), ColumnType::Int64], None);
    let key = b.str(&"y".repeat(70)).int(300).finish().expect("key");
    assert_eq!(&key.as_bytes()[key.len() - 3..], int_key(300).as_bytes());
    assert_eq!(KeyBuf::from_bytes(key.as_bytes()), Some(key.clone()));
    // The longest key fits, one byte more does not.
    let full = KeyBuf::from_bytes(&[7; MAX_KEY_LEN]).expect("fits");
    assert_eq!(full.as_bytes(), &[7; MAX_KEY_LEN][..]);
    assert!(KeyBuf::from_bytes(&[7; MAX_KEY_LEN + 1]).is_none());
    // The successor of a spilled prefix is computed in the spilled bytes.
    let succ = KeyBuf::from_bytes(&[1; 100])
        .and_then(|k| k.prefix_successor())
        .expect("successor");
    assert_eq!(succ.as_bytes()[..99], [1; 99]);
    assert_eq!(succ.as_bytes()[99], 2);
}

#[test]
fn prefix_ranges_cover_exactly_the_prefix() {
    let cols = [ColumnType::Int32, ColumnType::Int32];
    let prefix = KeyBuilder::new("i", &cols, None)
        .int(5)
        .prefix()
        .expect("prefix");
    let range = KeyRange::prefix(prefix);
    let inside = KeyBuilder::new("i", &cols, None)
        .int(5)
        .int(i64::from(i32::MAX))
        .finish()
        .expect("k");
    let after = KeyBuilder::new("i", &cols, None)
        .int(6)
        .int(i64::from(i32::MIN))
        .finish()
        .expect("k");
    let (lo, hi) = (as_slice_bound(&range.lower), as_slice_bound(&range.upper));
    let contains = |k: &KeyBuf| (lo, hi).contains(k.as_bytes());
    assert!(contains(&inside));
    assert!(!contains(&after));
    assert_eq!(
        KeyBuf::from_bytes(&[0xFF, 0xFF])
            .expect("k")
            .prefix_successor(),
        None
    );
}

proptest! {
    #[test]
    fn inline_comparison_equals_byte_comparison(
        a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..=20),
        b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..=20),
    ) {
        let (ka, kb) = (IndexKey::new(&a), IndexKey::new(&b));
        prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        prop_assert_eq!(ka == kb, a == b);
    }
}

#[test]
fn index_keys_order_like_bytes_inline_or_not() {
    let short = IndexKey::new(b"abc");
    let long = IndexKey::new(&[b'a'; 40]);
    assert!(matches!(short, IndexKey::Inline { .. }));
    assert!(matches!(long, IndexKey::Heap(_)));
    assert_eq!(short.cmp(&long), b"abc"[..].cmp(&[b'a'; 40][..]));
    assert_eq!(std::mem::size_of::<IndexKey>(), 16);
}

#[test]
fn nullable_parts_take_a_marker_and_sort_nulls_last() {
    let cols = [ColumnType::Int64, ColumnType::VarChar(10)];
    let nullable = [true, false];
    let key = |v: Option<i64>| {
        let mut b = KeyBuilder::new("i", &cols, Some(&nullable));
        match v {
            Some(v) => b.int(v),
            None => b.value(Value::Null),
        };
        b.str("x").finish().expect("key")
    };
    assert!(key(Some(i64::MAX)).as_bytes() < key(None).as_bytes());
    assert!(key(Some(-5)).as_bytes() < key(Some(3)).as_bytes());
    assert_eq!(
        describe(key(None).as_bytes(), &cols, Some(&nullable)),
        Some("(NULL, 'x')".to_owned())
    );
    assert_eq!(
        describe(key(Some(7)).as_bytes(), &cols, Some(&nullable)),
        Some("(7, 'x')".to_owned())
    );
    // A NULL where the column may not hold one is refused.
    let mut b = KeyBuilder::new("i", &cols, None);
    assert!(b.value(Value::Null).str("x").finish().is_err());
}
