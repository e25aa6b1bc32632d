//! What every command needs around its runs and is not itself a measurement: loading and opening
//! databases, keeping them in directories, refusing runs this machine cannot hold, and Ctrl-C
//! between runs. Nothing here prints a report (that is `report`), and nothing here runs a
//! workload.

pub mod database;
pub mod interrupt;
pub mod kept;
pub mod resources;
