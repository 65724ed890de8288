//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "solver.rs"]
mod solver;
#[path = "verified_residuals.rs"]
mod verified_residuals;
