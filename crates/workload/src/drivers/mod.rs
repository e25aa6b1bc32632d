//! Drivers: the clients that put load on the scheduler, through its public API like any
//! application. `open_loop` is the dispatcher of arrivals that come whether or not earlier work
//! is done (PreemptDB's batches, Aspen's Poisson stream); `closed_loop` is `bench tpcc`'s (every
//! worker runs the TPC-C mix back to back); `clients` are POW's closed-loop clients with think
//! time and a share of urgent transactions; `tiers` are UFS's bursty and bound sessions, on the
//! scheduler or on their own OS threads. The closed loops sit above the executor (`exec`) and
//! the transactions (`tpcc`).

pub mod clients;
pub mod closed_loop;
pub mod open_loop;
pub mod tiers;
