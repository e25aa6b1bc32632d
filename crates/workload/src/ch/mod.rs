//! The CH-benCHmark's analytic side: REGION, NATION and SUPPLIER, populated as the CH-benCHmark does,
//! and its Query 2 ([`q2`]).
//!
//! CH-benCHmark links TPC-C's STOCK to SUPPLIER by `mod(s_w_id * s_i_id, 10000) = su_suppkey`. Its
//! 10,000 suppliers here have keys 0..=9999, so every stock row has exactly one supplier. Nation keys
//! are the character codes of `0-9`, `A-Z`, `a-z` (62 nations), each in one of five regions.

pub mod q2;

use std::sync::Arc;

use overtake_engine::{ColumnType, Database, Isolation, Priority, Result, Table, TableSchema};

use crate::rng::TpccRng;
use crate::tpcc::dollars;

/// Number of suppliers.
pub const SUPPLIERS: i64 = 10_000;

/// The five regions (key, name).
pub const REGIONS: [(i64, &str); 5] = [
    (1, "Africa"),
    (2, "America"),
    (3, "Asia"),
    (4, "Australia"),
    (5, "Europe"),
];

/// The 62 nations (key, name, region key), as the CH-benCHmark defines them.
pub const NATIONS: [(i64, &str, i64); 62] = [
    (48, "Australia", 4),
    (49, "Belgium", 5),
    (50, "Cameroon", 1),
    (51, "Denmark", 5),
    (52, "Ecuador", 2),
    (53, "France", 5),
    (54, "Germany", 5),
    (55, "Hungary", 5),
    (56, "Italy", 5),
    (57, "Japan", 3),
    (65, "Kenya", 1),
    (66, "Lithuania", 5),
    (67, "Mexico", 2),
    (68, "Netherlands", 5),
    (69, "Oman", 1),
    (70, "Portugal", 5),
    (71, "Qatar", 1),
    (72, "Rwanda", 1),
    (73, "Serbia", 5),
    (74, "Togo", 1),
    (75, "United States", 2),
    (76, "Vietnam", 3),
    (77, "Singapore", 3),
    (78, "Cambodia", 3),
    (79, "Yemen", 1),
    (80, "Zimbabwe", 1),
    (81, "Argentina", 2),
    (82, "Bolivia", 2),
    (83, "Canada", 2),
    (84, "Dominican Republic", 2),
    (85, "Egypt", 1),
    (86, "Finnland", 5),
    (87, "Ghana", 1),
    (88, "Haiti", 2),
    (89, "India", 3),
    (90, "Jamaica", 4),
    (97, "Kazakhstan", 3),
    (98, "Luxembourg", 5),
    (99, "Morocco", 1),
    (100, "Norway", 5),
    (101, "Poland", 5),
    (102, "Peru", 2),
    (103, "Nicaragua", 2),
    (104, "Romania", 5),
    (105, "South Africa", 1),
    (106, "Thailand", 3),
    (107, "United Kingdom", 5),
    (108, "Venezuela", 2),
    (109, "Liechtenstein", 5),
    (110, "Austria", 5),
    (111, "Laos", 3),
    (112, "Zambia", 1),
    (113, "Switzerland", 5),
    (114, "China", 3),
    (115, "Papua New Guinea", 4),
    (116, "East Timor", 4),
    (117, "Bulgaria", 5),
    (118, "Brazil", 2),
    (119, "Albania", 5),
    (120, "Andorra", 5),
    (121, "Belize", 2),
    (122, "Botswana", 1),
];

/// REGION columns.
pub mod region {
    #![allow(missing_docs)]
    pub const R_REGIONKEY: usize = 0;
    pub const R_NAME: usize = 1;
    pub const R_COMMENT: usize = 2;
}

/// NATION columns.
pub mod nation {
    #![allow(missing_docs)]
    pub const N_NATIONKEY: usize = 0;
    pub const N_NAME: usize = 1;
    pub const N_REGIONKEY: usize = 2;
    pub const N_COMMENT: usize = 3;
}

/// SUPPLIER columns.
pub mod supplier {
    #![allow(missing_docs)]
    pub const SU_SUPPKEY: usize = 0;
    pub const SU_NAME: usize = 1;
    pub const SU_ADDRESS: usize = 2;
    pub const SU_NATIONKEY: usize = 3;
    pub const SU_PHONE: usize = 4;
    pub const SU_ACCTBAL: usize = 5;
    pub const SU_COMMENT: usize = 6;
}

/// The three CH-benCHmark tables of a database.
#[derive(Clone, Debug)]
pub struct ChTables {
    /// REGION.
    pub region: Arc<Table>,
    /// NATION.
    pub nation: Arc<Table>,
    /// SUPPLIER.
    pub supplier: Arc<Table>,
}

impl ChTables {
    /// Creates the tables.
    pub fn create(db: &Database) -> Result<Self> {
        Ok(ChTables {
            region: db.create_table(
                TableSchema::builder("region")
                    .column("r_regionkey", ColumnType::Int32)
                    .column("r_name", ColumnType::Char(55))
                    .column("r_comment", ColumnType::VarChar(152))
                    .primary_key(&["r_regionkey"])
                    .build()?,
            )?,
            nation: db.create_table(
                TableSchema::builder("nation")
                    .column("n_nationkey", ColumnType::Int32)
                    .column("n_name", ColumnType::Char(25))
                    .column("n_regionkey", ColumnType::Int32)
                    .column("n_comment", ColumnType::VarChar(152))
                    .primary_key(&["n_nationkey"])
                    .build()?,
            )?,
            supplier: db.create_table(
                TableSchema::builder("supplier")
                    .column("su_suppkey", ColumnType::Int32)
                    .column("su_name", ColumnType::Char(25))
                    .column("su_address", ColumnType::VarChar(40))
                    .column("su_nationkey", ColumnType::Int32)
                    .column("su_phone", ColumnType::Char(15))
                    .column(
                        "su_acctbal",
                        ColumnType::Decimal {
                            precision: 12,
                            scale: 2,
                        },
                    )
                    .column("su_comment", ColumnType::VarChar(101))
                    .primary_key(&["su_suppkey"])
                    .build()?,
            )?,
        })
    }

    /// Populates the tables (5 regions, 62 nations, 10,000 suppliers).
    pub fn load(&self, db: &Database, seed: u64) -> Result<u64> {
        let mut rng = TpccRng::new(seed);
        let mut s = String::new();
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot)?;
        let mut b = self.region.row_builder();
        for (key, name) in REGIONS {
            s.clear();
            rng.astring(&mut s, 31, 115);
            b.int(region::R_REGIONKEY, key)
                .str(region::R_NAME, name)
                .str(region::R_COMMENT, &s);
            txn.insert(&self.region, b.finish()?)?;
        }
        let mut b = self.nation.row_builder();
        for (key, name, region_key) in NATIONS {
            s.clear();
            rng.astring(&mut s, 31, 114);
            b.int(nation::N_NATIONKEY, key)
                .str(nation::N_NAME, name)
                .int(nation::N_REGIONKEY, region_key)
                .str(nation::N_COMMENT, &s);
            txn.insert(&self.nation, b.finish()?)?;
        }
        txn.commit()?;
        let mut b = self.supplier.row_builder();
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot)?;
        let mut fields = [String::new(), String::new(), String::new(), String::new()];
        for key in 0..SUPPLIERS {
            for f in &mut fields {
                f.clear();
            }
            rng.astring(&mut fields[0], 25, 25);
            rng.astring(&mut fields[1], 20, 40);
            rng.nstring(&mut fields[2], 15, 15);
            rng.astring(&mut fields[3], 51, 101);
            let nation_key = NATIONS[rng.below(NATIONS.len())].0;
            let balance = rng.uniform(dollars(10_000), dollars(1_000_000_000));
            b.int(supplier::SU_SUPPKEY, key)
                .str(supplier::SU_NAME, &fields[0])
                .str(supplier::SU_ADDRESS, &fields[1])
                .int(supplier::SU_NATIONKEY, nation_key)
                .str(supplier::SU_PHONE, &fields[2])
                .decimal_units(supplier::SU_ACCTBAL, balance)
                .str(supplier::SU_COMMENT, &fields[3]);
            txn.insert(&self.supplier, b.finish()?)?;
        }
        txn.commit()?;
        Ok((REGIONS.len() + NATIONS.len()) as u64 + SUPPLIERS as u64)
    }
}
