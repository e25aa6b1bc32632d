//! The TPC-C schema (clause 1.3), declared through the engine's catalog.
//!
//! Column types follow the specification, with one deliberate deviation: the year-to-date sums
//! (`W_YTD`, `D_YTD`, `C_YTD_PAYMENT`) are DECIMAL(18,2) instead of (12,2). TPC-C's terminals pace a
//! warehouse at about 12 transactions a minute; an in-memory benchmark drives it at tens of
//! thousands a second, which would overflow 12 digits of year-to-date within minutes.
//!
//! Each table has a module of column positions, so stored procedures read `row.int(customer::C_ID)`
//! rather than looking columns up by name.

use std::sync::Arc;

use overtake_engine::{ColumnType, Database, IndexId, Result, Table, TableSchema};

const fn money(precision: u8) -> ColumnType {
    ColumnType::Decimal {
        precision,
        scale: 2,
    }
}
const RATE: ColumnType = ColumnType::Decimal {
    precision: 4,
    scale: 4,
};
const INT: ColumnType = ColumnType::Int32;
const TS: ColumnType = ColumnType::Timestamp;
const YTD: ColumnType = money(18);

/// WAREHOUSE columns.
pub mod warehouse {
    #![allow(missing_docs)]
    pub const W_ID: usize = 0;
    pub const W_NAME: usize = 1;
    pub const W_STREET_1: usize = 2;
    pub const W_STREET_2: usize = 3;
    pub const W_CITY: usize = 4;
    pub const W_STATE: usize = 5;
    pub const W_ZIP: usize = 6;
    pub const W_TAX: usize = 7;
    pub const W_YTD: usize = 8;
}

/// DISTRICT columns.
pub mod district {
    #![allow(missing_docs)]
    pub const D_W_ID: usize = 0;
    pub const D_ID: usize = 1;
    pub const D_NAME: usize = 2;
    pub const D_STREET_1: usize = 3;
    pub const D_STREET_2: usize = 4;
    pub const D_CITY: usize = 5;
    pub const D_STATE: usize = 6;
    pub const D_ZIP: usize = 7;
    pub const D_TAX: usize = 8;
    pub const D_YTD: usize = 9;
    pub const D_NEXT_O_ID: usize = 10;
}

/// CUSTOMER columns.
pub mod customer {
    #![allow(missing_docs)]
    pub const C_W_ID: usize = 0;
    pub const C_D_ID: usize = 1;
    pub const C_ID: usize = 2;
    pub const C_FIRST: usize = 3;
    pub const C_MIDDLE: usize = 4;
    pub const C_LAST: usize = 5;
    pub const C_STREET_1: usize = 6;
    pub const C_STREET_2: usize = 7;
    pub const C_CITY: usize = 8;
    pub const C_STATE: usize = 9;
    pub const C_ZIP: usize = 10;
    pub const C_PHONE: usize = 11;
    pub const C_SINCE: usize = 12;
    pub const C_CREDIT: usize = 13;
    pub const C_CREDIT_LIM: usize = 14;
    pub const C_DISCOUNT: usize = 15;
    pub const C_BALANCE: usize = 16;
    pub const C_YTD_PAYMENT: usize = 17;
    pub const C_PAYMENT_CNT: usize = 18;
    pub const C_DELIVERY_CNT: usize = 19;
    pub const C_DATA: usize = 20;
}

/// HISTORY columns (no primary key in the specification: the table uses a hidden row id).
pub mod history {
    #![allow(missing_docs)]
    pub const H_C_ID: usize = 0;
    pub const H_C_D_ID: usize = 1;
    pub const H_C_W_ID: usize = 2;
    pub const H_D_ID: usize = 3;
    pub const H_W_ID: usize = 4;
    pub const H_DATE: usize = 5;
    pub const H_AMOUNT: usize = 6;
    pub const H_DATA: usize = 7;
}

/// NEW-ORDER columns.
pub mod new_order {
    #![allow(missing_docs)]
    pub const NO_W_ID: usize = 0;
    pub const NO_D_ID: usize = 1;
    pub const NO_O_ID: usize = 2;
}

/// ORDER columns.
pub mod order {
    #![allow(missing_docs)]
    pub const O_W_ID: usize = 0;
    pub const O_D_ID: usize = 1;
    pub const O_ID: usize = 2;
    pub const O_C_ID: usize = 3;
    pub const O_ENTRY_D: usize = 4;
    pub const O_CARRIER_ID: usize = 5;
    pub const O_OL_CNT: usize = 6;
    pub const O_ALL_LOCAL: usize = 7;
}

/// ORDER-LINE columns.
pub mod order_line {
    #![allow(missing_docs)]
    pub const OL_W_ID: usize = 0;
    pub const OL_D_ID: usize = 1;
    pub const OL_O_ID: usize = 2;
    pub const OL_NUMBER: usize = 3;
    pub const OL_I_ID: usize = 4;
    pub const OL_SUPPLY_W_ID: usize = 5;
    pub const OL_DELIVERY_D: usize = 6;
    pub const OL_QUANTITY: usize = 7;
    pub const OL_AMOUNT: usize = 8;
    pub const OL_DIST_INFO: usize = 9;
}

/// ITEM columns.
pub mod item {
    #![allow(missing_docs)]
    pub const I_ID: usize = 0;
    pub const I_IM_ID: usize = 1;
    pub const I_NAME: usize = 2;
    pub const I_PRICE: usize = 3;
    pub const I_DATA: usize = 4;
}

/// STOCK columns.
pub mod stock {
    #![allow(missing_docs)]
    pub const S_W_ID: usize = 0;
    pub const S_I_ID: usize = 1;
    pub const S_QUANTITY: usize = 2;
    /// `S_DIST_01`; district `d` (1..=10) is at `S_DIST_01 + d - 1`.
    pub const S_DIST_01: usize = 3;
    pub const S_YTD: usize = 13;
    pub const S_ORDER_CNT: usize = 14;
    pub const S_REMOTE_CNT: usize = 15;
    pub const S_DATA: usize = 16;
}

/// The nine TPC-C tables of a database.
#[derive(Clone, Debug)]
pub struct TpccTables {
    /// WAREHOUSE.
    pub warehouse: Arc<Table>,
    /// DISTRICT.
    pub district: Arc<Table>,
    /// CUSTOMER.
    pub customer: Arc<Table>,
    /// Secondary index of CUSTOMER on (C_W_ID, C_D_ID, C_LAST, C_FIRST).
    pub customer_by_name: IndexId,
    /// HISTORY.
    pub history: Arc<Table>,
    /// NEW-ORDER.
    pub new_order: Arc<Table>,
    /// ORDER.
    pub order: Arc<Table>,
    /// Secondary index of ORDER on (O_W_ID, O_D_ID, O_C_ID) (then O_ID, from the primary key).
    pub order_by_customer: IndexId,
    /// ORDER-LINE.
    pub order_line: Arc<Table>,
    /// ITEM.
    pub item: Arc<Table>,
    /// STOCK.
    pub stock: Arc<Table>,
}

impl TpccTables {
    /// Creates the tables in `db`.
    pub fn create(db: &Database) -> Result<Self> {
        let warehouse = db.create_table(
            TableSchema::builder("warehouse")
                .column("w_id", INT)
                .column("w_name", ColumnType::VarChar(10))
                .column("w_street_1", ColumnType::VarChar(20))
                .column("w_street_2", ColumnType::VarChar(20))
                .column("w_city", ColumnType::VarChar(20))
                .column("w_state", ColumnType::Char(2))
                .column("w_zip", ColumnType::Char(9))
                .column("w_tax", RATE)
                .column("w_ytd", YTD)
                .primary_key(&["w_id"])
                .build()?,
        )?;
        let district = db.create_table(
            TableSchema::builder("district")
                .column("d_w_id", INT)
                .column("d_id", INT)
                .column("d_name", ColumnType::VarChar(10))
                .column("d_street_1", ColumnType::VarChar(20))
                .column("d_street_2", ColumnType::VarChar(20))
                .column("d_city", ColumnType::VarChar(20))
                .column("d_state", ColumnType::Char(2))
                .column("d_zip", ColumnType::Char(9))
                .column("d_tax", RATE)
                .column("d_ytd", YTD)
                .column("d_next_o_id", INT)
                .primary_key(&["d_w_id", "d_id"])
                .build()?,
        )?;
        let customer = db.create_table(
            TableSchema::builder("customer")
                .column("c_w_id", INT)
                .column("c_d_id", INT)
                .column("c_id", INT)
                .column("c_first", ColumnType::VarChar(16))
                .column("c_middle", ColumnType::Char(2))
                .column("c_last", ColumnType::VarChar(16))
                .column("c_street_1", ColumnType::VarChar(20))
                .column("c_street_2", ColumnType::VarChar(20))
                .column("c_city", ColumnType::VarChar(20))
                .column("c_state", ColumnType::Char(2))
                .column("c_zip", ColumnType::Char(9))
                .column("c_phone", ColumnType::Char(16))
                .column("c_since", TS)
                .column("c_credit", ColumnType::Char(2))
                .column("c_credit_lim", money(12))
                .column("c_discount", RATE)
                .column("c_balance", money(12))
                .column("c_ytd_payment", YTD)
                .column("c_payment_cnt", INT)
                .column("c_delivery_cnt", INT)
                .column("c_data", ColumnType::VarChar(500))
                .primary_key(&["c_w_id", "c_d_id", "c_id"])
                .index("customer_name", &["c_w_id", "c_d_id", "c_last", "c_first"])
                .build()?,
        )?;
        let history = db.create_table(
            TableSchema::builder("history")
                .column("h_c_id", INT)
                .column("h_c_d_id", INT)
                .column("h_c_w_id", INT)
                .column("h_d_id", INT)
                .column("h_w_id", INT)
                .column("h_date", TS)
                .column("h_amount", money(6))
                .column("h_data", ColumnType::VarChar(24))
                .build()?,
        )?;
        let new_order = db.create_table(
            TableSchema::builder("new_order")
                .column("no_w_id", INT)
                .column("no_d_id", INT)
                .column("no_o_id", INT)
                .primary_key(&["no_w_id", "no_d_id", "no_o_id"])
                .build()?,
        )?;
        let order = db.create_table(
            TableSchema::builder("oorder")
                .column("o_w_id", INT)
                .column("o_d_id", INT)
                .column("o_id", INT)
                .column("o_c_id", INT)
                .column("o_entry_d", TS)
                .nullable_column("o_carrier_id", INT)
                .column("o_ol_cnt", INT)
                .column("o_all_local", INT)
                .primary_key(&["o_w_id", "o_d_id", "o_id"])
                .index("order_customer", &["o_w_id", "o_d_id", "o_c_id"])
                .build()?,
        )?;
        let order_line = db.create_table(
            TableSchema::builder("order_line")
                .column("ol_w_id", INT)
                .column("ol_d_id", INT)
                .column("ol_o_id", INT)
                .column("ol_number", INT)
                .column("ol_i_id", INT)
                .column("ol_supply_w_id", INT)
                .nullable_column("ol_delivery_d", TS)
                .column("ol_quantity", INT)
                .column("ol_amount", money(6))
                .column("ol_dist_info", ColumnType::Char(24))
                .primary_key(&["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"])
                .build()?,
        )?;
        let item = db.create_table(
            TableSchema::builder("item")
                .column("i_id", INT)
                .column("i_im_id", INT)
                .column("i_name", ColumnType::VarChar(24))
                .column("i_price", money(5))
                .column("i_data", ColumnType::VarChar(50))
                .primary_key(&["i_id"])
                .build()?,
        )?;
        let mut stock = TableSchema::builder("stock")
            .column("s_w_id", INT)
            .column("s_i_id", INT)
            .column("s_quantity", INT);
        for d in 1..=10 {
            stock = stock.column(format!("s_dist_{d:02}"), ColumnType::Char(24));
        }
        let stock = db.create_table(
            stock
                .column("s_ytd", INT)
                .column("s_order_cnt", INT)
                .column("s_remote_cnt", INT)
                .column("s_data", ColumnType::VarChar(50))
                .primary_key(&["s_w_id", "s_i_id"])
                .build()?,
        )?;
        let customer_by_name = customer.index("customer_name").expect("declared above");
        let order_by_customer = order.index("order_customer").expect("declared above");
        Ok(TpccTables {
            warehouse,
            district,
            customer,
            customer_by_name,
            history,
            new_order,
            order,
            order_by_customer,
            order_line,
            item,
            stock,
        })
    }

    /// Finds the tables of a database that already holds them.
    pub fn open(db: &Database) -> Result<Self> {
        let customer = db.table("customer")?;
        let order = db.table("oorder")?;
        let missing = |what: &str| overtake_engine::Error::NoSuchTable(what.to_owned());
        Ok(TpccTables {
            warehouse: db.table("warehouse")?,
            district: db.table("district")?,
            customer_by_name: customer
                .index("customer_name")
                .ok_or_else(|| missing("customer.customer_name"))?,
            customer,
            history: db.table("history")?,
            new_order: db.table("new_order")?,
            order_by_customer: order
                .index("order_customer")
                .ok_or_else(|| missing("oorder.order_customer"))?,
            order,
            order_line: db.table("order_line")?,
            item: db.table("item")?,
            stock: db.table("stock")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_constants_match_the_declared_names() {
        let db = Database::in_memory(overtake_engine::Options::default());
        let t = TpccTables::create(&db).expect("schema");
        let check = |table: &Table, pairs: &[(usize, &str)]| {
            for &(pos, name) in pairs {
                assert_eq!(table.column(name), Some(pos), "{}.{name}", table.name());
            }
        };
        check(
            &t.warehouse,
            &[(warehouse::W_YTD, "w_ytd"), (warehouse::W_TAX, "w_tax")],
        );
        check(
            &t.district,
            &[
                (district::D_NEXT_O_ID, "d_next_o_id"),
                (district::D_YTD, "d_ytd"),
            ],
        );
        check(
            &t.customer,
            &[
                (customer::C_DATA, "c_data"),
                (customer::C_BALANCE, "c_balance"),
                (customer::C_DELIVERY_CNT, "c_delivery_cnt"),
                (customer::C_CREDIT, "c_credit"),
            ],
        );
        check(
            &t.history,
            &[(history::H_DATA, "h_data"), (history::H_AMOUNT, "h_amount")],
        );
        check(&t.new_order, &[(new_order::NO_O_ID, "no_o_id")]);
        check(
            &t.order,
            &[
                (order::O_ALL_LOCAL, "o_all_local"),
                (order::O_CARRIER_ID, "o_carrier_id"),
            ],
        );
        check(
            &t.order_line,
            &[
                (order_line::OL_DIST_INFO, "ol_dist_info"),
                (order_line::OL_DELIVERY_D, "ol_delivery_d"),
            ],
        );
        check(
            &t.item,
            &[(item::I_DATA, "i_data"), (item::I_PRICE, "i_price")],
        );
        check(
            &t.stock,
            &[
                (stock::S_DIST_01, "s_dist_01"),
                (stock::S_DIST_01 + 9, "s_dist_10"),
                (stock::S_YTD, "s_ytd"),
                (stock::S_DATA, "s_data"),
            ],
        );
        assert_eq!(TpccTables::open(&db).expect("open").item.name(), "item");
    }
}
