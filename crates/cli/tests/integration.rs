//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "end_to_end.rs"]
mod end_to_end;
#[path = "memory_limits.rs"]
mod memory_limits;
#[path = "option_ranges.rs"]
mod option_ranges;
