//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "decomposition.rs"]
mod decomposition;
#[path = "single_rank.rs"]
mod single_rank;
