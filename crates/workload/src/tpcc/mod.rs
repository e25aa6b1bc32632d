//! TPC-C, as specified by the TPC (revision 5.11): schema, loader, the five transactions as stored
//! procedures over the engine's API, and the consistency conditions.
//!
//! The database is scaled by warehouses only, exactly as the specification sizes it (100,000 items,
//! 10 districts per warehouse, 3,000 customers and orders per district, of which the last 900 are
//! undelivered).

pub mod consistency;
pub mod input;
pub mod load;
pub mod procs;
pub mod request;
pub mod schema;

pub use schema::TpccTables;

/// Items in the catalog.
pub const ITEMS: i64 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: i64 = 10;
/// Customers per district (and orders per district at load).
pub const CUSTOMERS: i64 = 3_000;
/// First order id without a carrier at load (orders 2101..=3000 are undelivered).
pub const FIRST_UNDELIVERED: i64 = 2_101;
/// Stock rows per warehouse.
pub const STOCK: i64 = ITEMS;

/// The five TPC-C transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnType {
    /// New-Order (clause 2.4).
    NewOrder,
    /// Payment (clause 2.5).
    Payment,
    /// Order-Status (clause 2.6).
    OrderStatus,
    /// Delivery (clause 2.7).
    Delivery,
    /// Stock-Level (clause 2.8).
    StockLevel,
}

impl TxnType {
    /// All five, in the order reports list them.
    pub const ALL: [TxnType; 5] = [
        TxnType::NewOrder,
        TxnType::Payment,
        TxnType::OrderStatus,
        TxnType::Delivery,
        TxnType::StockLevel,
    ];

    /// Stable name used in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            TxnType::NewOrder => "new_order",
            TxnType::Payment => "payment",
            TxnType::OrderStatus => "order_status",
            TxnType::Delivery => "delivery",
            TxnType::StockLevel => "stock_level",
        }
    }

    /// Position in [`ALL`](Self::ALL).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Picks a transaction type with the standard mix: 45% New-Order, 43% Payment, 4% each of
    /// Order-Status, Delivery and Stock-Level (`roll` is uniform in 1..=100).
    pub fn from_mix_roll(roll: i64) -> TxnType {
        match roll {
            ..=45 => TxnType::NewOrder,
            46..=88 => TxnType::Payment,
            89..=92 => TxnType::OrderStatus,
            93..=96 => TxnType::Delivery,
            _ => TxnType::StockLevel,
        }
    }
}

/// An amount of whole dollars in cents (the units of TPC-C's DECIMAL(n,2) columns).
pub const fn dollars(d: i64) -> i64 {
    d * 100
}

/// Current time as the timestamps TPC-C stores (microseconds since the Unix epoch).
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_45_43_4_4_4() {
        let mut counts = [0; 5];
        for roll in 1..=100 {
            counts[TxnType::from_mix_roll(roll).index()] += 1;
        }
        assert_eq!(counts, [45, 43, 4, 4, 4]);
    }
}
