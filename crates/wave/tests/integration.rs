//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "absorbing.rs"]
mod absorbing;
#[path = "acoustic.rs"]
mod acoustic;
#[path = "cfl.rs"]
mod cfl;
#[path = "device_setup.rs"]
mod device_setup;
#[path = "elastic.rs"]
mod elastic;
#[path = "energy.rs"]
mod energy;
