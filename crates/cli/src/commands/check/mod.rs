//! `overtake check` and `overtake crash-test`: what a kept database holds after recovery. A
//! check reports what it found in its output and ends with a failure status when it found a
//! problem; it must never call a database good without having checked it.

use clap::Subcommand;

pub mod crash_test;
pub mod tpcc;

#[derive(Debug, Subcommand)]
pub enum Check {
    /// Recover a TPC-C database kept with `bench tpcc --data-dir` and check the TPC-C consistency
    /// conditions.
    Tpcc(tpcc::CheckTpccArgs),
}
