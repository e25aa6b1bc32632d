use super::*;
use crate::storage::schema::ColumnType;
use proptest::prelude::*;

fn schema() -> TableSchema {
    TableSchema::builder("orders")
        .column("id", ColumnType::Int64)
        .column(
            "amount",
            ColumnType::Decimal {
                precision: 12,
                scale: 2,
            },
        )
        .nullable_column("note", ColumnType::VarChar(20))
        .column("code", ColumnType::Char(3))
        .column("at", ColumnType::Timestamp)
        .column("n", ColumnType::Int32)
        .primary_key(&["id"])
        .index("by_code", &["code", "at"])
        .build()
        .expect("schema")
}

fn commit(ts: u64, writes: &[LoggedWrite]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut e = CommitEncoder::begin(&mut out);
    for w in writes {
        match w.image {
            Image::Deleted => e.write(w.table, w.key, None),
            Image::Row(row) => e.write(w.table, w.key, Some(row)),
            Image::Patch(_) => unreachable!("patches are made by write_over"),
        }
    }
    seal(&mut out, ts);
    out
}

/// The one write of a commit record holding `base` overwritten by `row`.
fn over(base: &[u8], row: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    CommitEncoder::begin(&mut out).write_over(4, &[0x81], base, row);
    seal(&mut out, 1);
    let Record::Commit { writes, .. } = only(&out) else {
        panic!("a commit");
    };
    let image = match writes[..] {
        [LoggedWrite { image, .. }] => image,
        _ => panic!("one write"),
    };
    let applied = match image {
        Image::Row(r) => r.to_vec(),
        Image::Patch(p) => {
            let mut patched = base.to_vec();
            p.apply_in_place(&mut patched).expect("fits");
            patched
        }
        Image::Deleted => panic!("not deleted"),
    };
    assert_eq!(applied, row);
    let len = out.len();
    (out, len)
}

#[test]
fn an_update_logs_the_bytes_it_changed_and_a_patch_refuses_another_row() {
    let base: Vec<u8> = (0..=255).collect();
    let mut row = base.clone();
    row[100] = 0;
    row[104..108].copy_from_slice(&[1, 2, 3, 4]);
    row[200] = 9;
    let (small, len) = over(&base, &row);
    assert!(len < 80, "{len} bytes for two changed chunks");
    let Record::Commit { writes, .. } = only(&small) else {
        panic!("a commit");
    };
    let Image::Patch(p) = writes[0].image else {
        panic!("a patch");
    };
    let mut shorter = base[1..].to_vec();
    assert!(p.apply_in_place(&mut shorter).is_err());
    assert_eq!(
        shorter,
        base[1..],
        "a patch that does not fit changes nothing"
    );
    // Everything changed, or the length did: the whole row.
    let (_, len) = over(&base, &vec![7; 256]);
    assert!(len > 256);
    over(&base, &[1, 2, 3]);
}

fn only(bytes: &[u8]) -> Record<'_> {
    let Frame::Good(payload, used) = read_frame(bytes) else {
        panic!("not a good frame");
    };
    assert_eq!(used, bytes.len());
    decode(payload).expect("decodes")
}

#[test]
fn created_and_dropped_tables_decode() {
    let mut out = Vec::new();
    encode_create_table(&mut out, 3, &schema());
    assert_eq!(
        only(&out),
        Record::CreateTable {
            id: 3,
            schema: schema()
        }
    );
    let mut out = Vec::new();
    encode_drop_table(&mut out, 7);
    assert_eq!(only(&out), Record::DropTable { id: 7 });
    // A drop record with a byte more or less is not one.
    let payload = &out[FRAME_HEADER..];
    assert_eq!(decode(&payload[..payload.len() - 1]), None);
    assert_eq!(decode(&[payload, &[0]].concat()), None);
}

proptest! {
    #[test]
    fn commits_round_trip(
        ts in any::<u64>(),
        writes in prop::collection::vec(
            (any::<u32>(), prop::collection::vec(any::<u8>(), 0..20),
             prop::option::of(prop::collection::vec(any::<u8>(), 0..50))),
            0..20,
        ),
    ) {
        let writes: Vec<LoggedWrite> = writes
            .iter()
            .map(|(table, key, row)| LoggedWrite {
                table: *table,
                key,
                image: row.as_deref().map_or(Image::Deleted, Image::Row),
            })
            .collect();
        let bytes = commit(ts, &writes);
        prop_assert_eq!(only(&bytes), Record::Commit { ts, writes });
    }

    #[test]
    fn a_patch_rebuilds_the_row_it_was_made_from(
        base in prop::collection::vec(any::<u8>(), 0..300),
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..20),
    ) {
        let mut row = base.clone();
        for (at, b) in changes {
            if !row.is_empty() {
                let i = at.index(row.len());
                row[i] = b;
            }
        }
        let (_, len) = over(&base, &row);
        // Never longer than logging the whole row: the count, the table, the key (its
        // length and one byte), the kind, the row's length and its bytes.
        prop_assert!(len <= COUNT_AT + 4 + 4 + 4 + 1 + 1 + 4 + row.len());
    }

    #[test]
    fn no_cut_or_flipped_byte_passes_for_a_record(
        cut in 0usize..200, flip in 0usize..200, bit in 0u8..8,
    ) {
        let bytes = commit(7, &[LoggedWrite { table: 1, key: &[1, 2], image: Image::Row(&[9; 40]) }]);
        let cut = cut % bytes.len();
        prop_assert_eq!(read_frame(&bytes[..cut]), Frame::Torn);
        let mut damaged = bytes.clone();
        let at = flip % damaged.len();
        damaged[at] ^= 1 << bit;
        // A flipped length may make the frame look longer than the bytes (torn) or shorter
        // (bad checksum); it never reads as the record.
        match read_frame(&damaged) {
            Frame::Good(payload, _) => prop_assert_ne!(decode(payload), decode(&bytes[8..])),
            Frame::Torn | Frame::Bad => {}
        }
    }
}

#[test]
fn garbage_never_panics_and_is_not_a_record() {
    for payload in [
        &[][..],
        &[9],
        &[COMMIT, 1, 2],
        &[CREATE_TABLE, 255, 255, 255, 255],
    ] {
        assert_eq!(decode(payload), None, "{payload:?}");
    }
}

#[test]
fn prepared_records_carry_their_identifier_and_writes() {
    let writes = [
        LoggedWrite {
            table: 3,
            key: b"k1",
            image: Image::Row(b"row one"),
        },
        LoggedWrite {
            table: 4,
            key: b"k2",
            image: Image::Deleted,
        },
    ];
    let committed = commit(0, &writes);
    let body = commit_body(&committed);
    let mut prepared = Vec::new();
    encode_prepared(&mut prepared, "gid-é", b"who", body);
    assert_eq!(
        only(&prepared),
        Record::Prepared {
            gid: "gid-é",
            note: b"who",
            body,
            writes: writes.to_vec(),
        }
    );
    let mut decided = Vec::new();
    encode_commit_prepared(&mut decided, "gid-é", 42, body);
    let record = only(&decided);
    assert_eq!(record.committed(), Some((42, &writes[..])));
    let mut rolled_back = Vec::new();
    encode_rollback_prepared(&mut rolled_back, "gid-é");
    assert_eq!(
        only(&rolled_back),
        Record::RollbackPrepared { gid: "gid-é" }
    );
    // Cut anywhere, none decodes as a record.
    for cut in [&prepared, &decided, &rolled_back] {
        let payload = &cut[FRAME_HEADER..];
        for len in 0..payload.len() {
            assert!(decode(&payload[..len]).is_none(), "{len} bytes decoded");
        }
    }
}
