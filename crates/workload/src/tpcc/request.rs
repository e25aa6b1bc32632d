//! One TPC-C transaction with its terminal input, chosen by the standard mix: what drivers submit
//! and the executor runs.

use super::TxnType;
use super::input::{DeliveryInput, NewOrderInput, OrderStatusInput, PaymentInput, StockLevelInput};
use crate::rng::{NuRandConstants, TpccRng};

/// One TPC-C transaction with its terminal input.
#[derive(Clone, Debug)]
pub enum TpccRequest {
    /// New-Order. Boxed: its fifteen order lines make it five times the size of the others, and
    /// requests travel by value through the scheduler's queues.
    NewOrder(Box<NewOrderInput>),
    /// Payment.
    Payment(PaymentInput),
    /// Order-Status.
    OrderStatus(OrderStatusInput),
    /// Delivery.
    Delivery(DeliveryInput),
    /// Stock-Level.
    StockLevel(StockLevelInput),
}

impl TpccRequest {
    /// A transaction chosen with the standard mix, with its input, for home warehouse `w_id`.
    pub fn generate(rng: &mut TpccRng, c: &NuRandConstants, w_id: i64, warehouses: i64) -> Self {
        match TxnType::from_mix_roll(rng.uniform(1, 100)) {
            TxnType::NewOrder => {
                TpccRequest::NewOrder(Box::new(NewOrderInput::generate(rng, c, w_id, warehouses)))
            }
            TxnType::Payment => {
                TpccRequest::Payment(PaymentInput::generate(rng, c, w_id, warehouses))
            }
            TxnType::OrderStatus => {
                TpccRequest::OrderStatus(OrderStatusInput::generate(rng, c, w_id))
            }
            TxnType::Delivery => TpccRequest::Delivery(DeliveryInput::generate(rng, w_id)),
            TxnType::StockLevel => TpccRequest::StockLevel(StockLevelInput::generate(rng, w_id)),
        }
    }
}
