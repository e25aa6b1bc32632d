//! Databases kept in a directory: a scratch directory, a table, random commits and the model of
//! what they leave.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use overtake_engine::{
    ColumnType, Database, Durability, Isolation, KeyRange, Options, Priority, ScanOptions, Table,
    TableSchema,
};

/// A fresh directory for one test (removed when dropped).
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(name: &str) -> Dir {
        let path =
            std::env::temp_dir().join(format!("overtake-durability-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        Dir(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn options(durability: Durability) -> Options {
    Options::default().durability(durability)
}

pub fn accounts(db: &Database) -> std::sync::Arc<Table> {
    db.create_table(
        TableSchema::builder("accounts")
            .column("id", ColumnType::Int64)
            .column("balance", ColumnType::Int64)
            .column("owner", ColumnType::VarChar(16))
            .primary_key(&["id"])
            .index("by_owner", &["owner"])
            .build()
            .expect("schema"),
    )
    .expect("table")
}

pub type Model = BTreeMap<i64, (i64, String)>;

pub fn rows(db: &Database) -> Model {
    let t = db.table("accounts").expect("table");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut out = Model::new();
    txn.scan(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.insert(r.int(0), (r.int(1), r.str(2).to_owned()));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

/// A small deterministic generator (the tests must not depend on a seed source).
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs `count` transactions of random inserts, updates and deletes on `t`, a fifth of them
/// rolled back; returns the model after each commit (the first entry: before any).
pub fn random_commits(
    db: &Database,
    t: &Table,
    model: &mut Model,
    count: usize,
    seed: u64,
) -> Vec<Model> {
    let mut rng = Rng(seed | 1);
    let mut after = vec![model.clone()];
    for _ in 0..count {
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let mut mine = model.clone();
        for _ in 0..=rng.below(4) {
            let id = rng.below(30) as i64;
            let key = t.key().int(id).finish().expect("key");
            let balance = rng.below(1_000) as i64;
            let owner = format!("o{}", rng.below(5));
            let exists = mine.contains_key(&id);
            if exists && rng.below(3) == 0 {
                assert!(txn.delete(t, &key).expect("delete"));
                mine.remove(&id);
            } else if exists {
                txn.update(t, &key, |r| {
                    r.int(1, balance).str(2, &owner);
                })
                .expect("update");
                mine.insert(id, (balance, owner));
            } else {
                let row = t
                    .row_builder()
                    .int(0, id)
                    .int(1, balance)
                    .str(2, &owner)
                    .finish();
                txn.insert(t, row.expect("row")).expect("insert");
                mine.insert(id, (balance, owner));
            }
        }
        if rng.below(5) == 0 {
            drop(txn.rollback());
        } else {
            txn.commit().expect("commit");
            *model = mine;
            after.push(model.clone());
        }
    }
    after
}

/// The path of log segment `n` in `dir`.
pub fn segment(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("log.{n:08}"))
}
