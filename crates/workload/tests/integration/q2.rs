//! CH-benCHmark Query 2: the stored procedure's full result set equals a literal evaluation of the
//! SQL over the same data.

use crate::common;

use std::collections::HashMap;
use std::ops::ControlFlow;

use overtake_engine::{Isolation, KeyRange, Priority, RowRef, ScanOptions, Table, Transaction};
use overtake_workload::ch::q2::{Q2Row, query2};
use overtake_workload::ch::{ChTables, nation, region, supplier};
use overtake_workload::tpcc::TpccTables;
use overtake_workload::tpcc::schema::{item, stock};

/// SQL LIKE with `%` and `_`, matched by dynamic programming (independent of the procedure's
/// `starts_with` / `ends_with`).
fn like(text: &str, pattern: &str) -> bool {
    let (t, p): (Vec<char>, Vec<char>) = (text.chars().collect(), pattern.chars().collect());
    let mut m = vec![vec![false; t.len() + 1]; p.len() + 1];
    m[0][0] = true;
    for i in 1..=p.len() {
        m[i][0] = m[i - 1][0] && p[i - 1] == '%';
        for j in 1..=t.len() {
            m[i][j] = match p[i - 1] {
                '%' => m[i - 1][j] || m[i][j - 1],
                '_' => m[i - 1][j - 1],
                c => m[i - 1][j - 1] && c == t[j - 1],
            };
        }
    }
    m[p.len()][t.len()]
}

fn dump<T>(txn: &mut Transaction<'_>, table: &Table, mut f: impl FnMut(RowRef<'_>) -> T) -> Vec<T> {
    let mut out = Vec::new();
    txn.scan(table, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.push(f(r));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

fn brute_force(txn: &mut Transaction<'_>, tpcc: &TpccTables, ch: &ChTables) -> Vec<Q2Row> {
    let regions = dump(txn, &ch.region, |r| {
        (r.int(region::R_REGIONKEY), r.str(region::R_NAME).to_owned())
    });
    let nations = dump(txn, &ch.nation, |r| {
        (
            r.int(nation::N_NATIONKEY),
            r.str(nation::N_NAME).to_owned(),
            r.int(nation::N_REGIONKEY),
        )
    });
    let suppliers = dump(txn, &ch.supplier, |r| {
        (
            r.int(supplier::SU_SUPPKEY),
            r.str(supplier::SU_NAME).to_owned(),
            r.str(supplier::SU_ADDRESS).to_owned(),
            r.int(supplier::SU_NATIONKEY),
            r.str(supplier::SU_PHONE).to_owned(),
            r.str(supplier::SU_COMMENT).to_owned(),
        )
    });
    let items = dump(txn, &tpcc.item, |r| {
        (
            r.int(item::I_ID),
            r.str(item::I_NAME).to_owned(),
            r.str(item::I_DATA).to_owned(),
        )
    });
    let stocks = dump(txn, &tpcc.stock, |r| {
        (
            r.int(stock::S_W_ID),
            r.int(stock::S_I_ID),
            r.int(stock::S_QUANTITY),
        )
    });

    // Equi-joins resolved through hash maps on the join columns; every predicate of the SQL is then
    // evaluated as written.
    let supplier_by_key: HashMap<i64, usize> = suppliers
        .iter()
        .enumerate()
        .map(|(i, s)| (s.0, i))
        .collect();
    let nation_by_key: HashMap<i64, usize> =
        nations.iter().enumerate().map(|(i, n)| (n.0, i)).collect();
    let region_by_key: HashMap<i64, usize> =
        regions.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
    let item_by_id: HashMap<i64, usize> =
        items.iter().enumerate().map(|(i, it)| (it.0, i)).collect();
    // (stock, supplier, nation, region) join, shared by the subquery and the outer query.
    let joined: Vec<(usize, usize, usize, usize)> = stocks
        .iter()
        .enumerate()
        .filter_map(|(s, &(w, i, _))| {
            let su = *supplier_by_key.get(&((w * i) % 10_000))?;
            let n = *nation_by_key.get(&suppliers[su].3)?;
            let r = *region_by_key.get(&nations[n].2)?;
            Some((s, su, n, r))
        })
        .collect();
    let mut m: HashMap<i64, i64> = HashMap::new();
    for &(s, _, _, r) in &joined {
        if like(&regions[r].1, "Europ%") {
            let (_, i, q) = stocks[s];
            let e = m.entry(i).or_insert(q);
            *e = (*e).min(q);
        }
    }
    let mut rows = Vec::new();
    for &(s, su, n, r) in &joined {
        let (_, s_i_id, s_quantity) = stocks[s];
        let Some(&it) = item_by_id.get(&s_i_id) else {
            continue;
        };
        let (i_id, ref i_name, ref i_data) = items[it];
        if like(i_data, "%b") && like(&regions[r].1, "Europ%") && m.get(&i_id) == Some(&s_quantity)
        {
            let sup = &suppliers[su];
            rows.push(Q2Row {
                su_suppkey: sup.0,
                su_name: sup.1.clone(),
                n_name: nations[n].1.clone(),
                i_id,
                i_name: i_name.clone(),
                su_address: sup.2.clone(),
                su_phone: sup.4.clone(),
                su_comment: sup.5.clone(),
            });
        }
    }
    rows.sort_by(|a, b| (&a.n_name, &a.su_name, a.i_id).cmp(&(&b.n_name, &b.su_name, b.i_id)));
    rows
}

#[test]
fn like_matches_sql_semantics() {
    assert!(like("Europe", "Europ%"));
    assert!(!like("europe", "Europ%"));
    assert!(like("xyzb", "%b"));
    assert!(!like("xyzB", "%b"));
    assert!(like("b", "%b"));
    assert!(like("ab", "_b"));
}

#[test]
fn query2_equals_a_literal_evaluation_of_the_sql() {
    let (db, tpcc, _) = common::tpcc_database(2, 3);
    let ch = ChTables::create(&db).expect("schema");
    ch.load(&db, 4).expect("load ch");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let got = query2(&mut txn, &tpcc, &ch).expect("q2");
    let expected = brute_force(&mut txn, &tpcc, &ch);
    assert!(got.len() > 300, "a meaningful result: {} rows", got.len());
    // With two warehouses some items have two European-supplied stock rows; the minimum decides.
    assert_eq!(got.len(), expected.len());
    assert_eq!(got, expected);
    // The order is the query's: by nation name, supplier name, item id.
    assert!(
        got.windows(2)
            .all(|w| (&w[0].n_name, &w[0].su_name, w[0].i_id)
                <= (&w[1].n_name, &w[1].su_name, w[1].i_id))
    );
    txn.commit().expect("read-only");
}
