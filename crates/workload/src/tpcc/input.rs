//! Terminal inputs for the five transactions, generated as clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1 and
//! 2.8.1 prescribe.

use super::{DISTRICTS, ITEMS, now_micros};
use crate::rng::{NuRandConstants, TpccRng, last_name};

/// How Payment and Order-Status pick their customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CustomerSelector {
    /// By customer id (40%).
    Id(i64),
    /// By last name (60%): the middle one of the customers with that name, sorted by first name.
    LastName(String),
}

impl CustomerSelector {
    fn generate(rng: &mut TpccRng, c: &NuRandConstants) -> Self {
        if rng.uniform(1, 100) <= 60 {
            let mut name = String::with_capacity(16);
            last_name(rng.last_name_number(c), &mut name);
            CustomerSelector::LastName(name)
        } else {
            CustomerSelector::Id(rng.customer_id(c, super::CUSTOMERS))
        }
    }
}

/// One line of a New-Order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderLineInput {
    /// Item id (`ITEMS + 1`, an unused id, makes the transaction roll back).
    pub i_id: i64,
    /// Supplying warehouse (1% remote).
    pub supply_w_id: i64,
    /// Quantity, 1..=10.
    pub quantity: i64,
}

/// New-Order input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrderInput {
    /// Home warehouse.
    pub w_id: i64,
    /// District, 1..=10.
    pub d_id: i64,
    /// Customer id.
    pub c_id: i64,
    /// Lines (5..=15 of them).
    pub lines: [OrderLineInput; 15],
    /// Number of lines used.
    pub line_count: usize,
    /// Entry date.
    pub entry_d: i64,
}

impl NewOrderInput {
    /// Clause 2.4.1.
    pub fn generate(rng: &mut TpccRng, c: &NuRandConstants, w_id: i64, warehouses: i64) -> Self {
        let d_id = rng.uniform(1, DISTRICTS);
        let c_id = rng.customer_id(c, super::CUSTOMERS);
        let line_count = rng.uniform(5, 15) as usize;
        let rollback = rng.uniform(1, 100) == 1;
        let mut lines = [OrderLineInput::default(); 15];
        for (n, line) in lines.iter_mut().enumerate().take(line_count) {
            let i_id = if rollback && n == line_count - 1 {
                ITEMS + 1
            } else {
                rng.item_id(c, ITEMS)
            };
            let supply_w_id = if warehouses > 1 && rng.uniform(1, 100) == 1 {
                other_warehouse(rng, w_id, warehouses)
            } else {
                w_id
            };
            *line = OrderLineInput {
                i_id,
                supply_w_id,
                quantity: rng.uniform(1, 10),
            };
        }
        NewOrderInput {
            w_id,
            d_id,
            c_id,
            lines,
            line_count,
            entry_d: now_micros(),
        }
    }

    /// The lines in use.
    pub fn lines(&self) -> &[OrderLineInput] {
        &self.lines[..self.line_count]
    }
}

/// A uniformly chosen warehouse other than `w_id`.
fn other_warehouse(rng: &mut TpccRng, w_id: i64, warehouses: i64) -> i64 {
    let other = rng.uniform(1, warehouses - 1);
    if other >= w_id { other + 1 } else { other }
}

/// Payment input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentInput {
    /// Home warehouse.
    pub w_id: i64,
    /// District.
    pub d_id: i64,
    /// Customer's warehouse (15% remote).
    pub c_w_id: i64,
    /// Customer's district.
    pub c_d_id: i64,
    /// Which customer.
    pub customer: CustomerSelector,
    /// Amount in cents, 1.00..=5000.00.
    pub h_amount: i64,
    /// Payment date.
    pub h_date: i64,
}

impl PaymentInput {
    /// Clause 2.5.1.
    pub fn generate(rng: &mut TpccRng, c: &NuRandConstants, w_id: i64, warehouses: i64) -> Self {
        let d_id = rng.uniform(1, DISTRICTS);
        let (c_w_id, c_d_id) = if warehouses == 1 || rng.uniform(1, 100) <= 85 {
            (w_id, d_id)
        } else {
            (
                other_warehouse(rng, w_id, warehouses),
                rng.uniform(1, DISTRICTS),
            )
        };
        PaymentInput {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            customer: CustomerSelector::generate(rng, c),
            h_amount: rng.uniform(100, 500_000),
            h_date: now_micros(),
        }
    }
}

/// Order-Status input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// Warehouse.
    pub w_id: i64,
    /// District.
    pub d_id: i64,
    /// Which customer.
    pub customer: CustomerSelector,
}

impl OrderStatusInput {
    /// Clause 2.6.1.
    pub fn generate(rng: &mut TpccRng, c: &NuRandConstants, w_id: i64) -> Self {
        OrderStatusInput {
            w_id,
            d_id: rng.uniform(1, DISTRICTS),
            customer: CustomerSelector::generate(rng, c),
        }
    }
}

/// Delivery input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryInput {
    /// Warehouse.
    pub w_id: i64,
    /// Carrier, 1..=10.
    pub o_carrier_id: i64,
    /// Delivery date.
    pub delivery_d: i64,
}

impl DeliveryInput {
    /// Clause 2.7.1.
    pub fn generate(rng: &mut TpccRng, w_id: i64) -> Self {
        DeliveryInput {
            w_id,
            o_carrier_id: rng.uniform(1, 10),
            delivery_d: now_micros(),
        }
    }
}

/// Stock-Level input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockLevelInput {
    /// Warehouse.
    pub w_id: i64,
    /// District (fixed per terminal in the specification; random per transaction here).
    pub d_id: i64,
    /// Threshold, 10..=20.
    pub threshold: i64,
}

impl StockLevelInput {
    /// Clause 2.8.1.
    pub fn generate(rng: &mut TpccRng, w_id: i64) -> Self {
        StockLevelInput {
            w_id,
            d_id: rng.uniform(1, DISTRICTS),
            threshold: rng.uniform(10, 20),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_order_rollbacks_and_remote_lines_have_the_specified_rates() {
        let mut rng = TpccRng::new(11);
        let c = NuRandConstants::for_load(&mut rng);
        let (mut rollbacks, mut lines, mut remote) = (0, 0, 0);
        for _ in 0..20_000 {
            let input = NewOrderInput::generate(&mut rng, &c, 2, 4);
            assert!((5..=15).contains(&input.line_count));
            rollbacks += usize::from(input.lines().last().map(|l| l.i_id) == Some(ITEMS + 1));
            for l in input.lines() {
                lines += 1;
                remote += usize::from(l.supply_w_id != 2);
                assert!((1..=4).contains(&l.supply_w_id) && (1..=10).contains(&l.quantity));
            }
        }
        assert!((140..=270).contains(&rollbacks), "about 1%: {rollbacks}");
        let remote_pct = 100.0 * remote as f64 / lines as f64;
        assert!((0.8..1.2).contains(&remote_pct), "about 1%: {remote_pct}");
    }

    #[test]
    fn payments_are_15_percent_remote_and_60_percent_by_name() {
        let mut rng = TpccRng::new(12);
        let c = NuRandConstants::for_load(&mut rng);
        let (mut remote, mut by_name) = (0, 0);
        for _ in 0..20_000 {
            let p = PaymentInput::generate(&mut rng, &c, 1, 3);
            remote += usize::from(p.c_w_id != 1);
            by_name += usize::from(matches!(p.customer, CustomerSelector::LastName(_)));
            assert!((100..=500_000).contains(&p.h_amount));
        }
        assert!((2_700..=3_300).contains(&remote), "about 15%: {remote}");
        assert!((11_500..=12_500).contains(&by_name), "about 60%: {by_name}");
        // With one warehouse every payment is local.
        assert!((0..1000).all(|_| PaymentInput::generate(&mut rng, &c, 1, 1).c_w_id == 1));
    }
}
