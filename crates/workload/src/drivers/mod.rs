//! Drivers that run TPC-C through the scheduler: the closed loop of `bench tpcc` (every worker
//! runs the mix back to back) and POW's closed-loop clients with think time and a share of urgent
//! transactions. They are clients of the scheduler's API, above the executor (`exec`) and the
//! transactions (`tpcc`).

pub mod clients;
pub mod closed_loop;
