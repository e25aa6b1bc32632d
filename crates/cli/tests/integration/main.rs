//! The cli crate's integration tests, one module per subject, in one binary: one link
//! instead of one per file, and the helpers in `common` compiled once.

mod cli;
mod module_cycles;
