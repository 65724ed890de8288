//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "assembly.rs"]
mod assembly;
#[path = "memory_estimate.rs"]
mod memory_estimate;
