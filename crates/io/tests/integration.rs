//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "io.rs"]
mod io;
#[path = "plot.rs"]
mod plot;
#[path = "seismogram.rs"]
mod seismogram;
