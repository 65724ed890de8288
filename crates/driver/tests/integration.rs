//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "backend.rs"]
mod backend;
mod common;
#[path = "gpu_assemble.rs"]
mod gpu_assemble;
#[path = "gpu_problem_files.rs"]
mod gpu_problem_files;
#[path = "gpu_solve.rs"]
mod gpu_solve;
#[path = "problem_files.rs"]
mod problem_files;
#[path = "scaled_problems.rs"]
mod scaled_problems;
#[path = "solve.rs"]
mod solve;
#[path = "wave_files.rs"]
mod wave_files;
#[path = "wave_model_file.rs"]
mod wave_model_file;
