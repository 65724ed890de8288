//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "probe.rs"]
mod probe;
#[path = "space.rs"]
mod space;
