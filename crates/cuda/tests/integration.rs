//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "gpu.rs"]
mod gpu;
#[path = "gpu_assembly.rs"]
mod gpu_assembly;
#[path = "gpu_wave.rs"]
mod gpu_wave;
#[path = "ptx.rs"]
mod ptx;
