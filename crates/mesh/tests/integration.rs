//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "gmsh.rs"]
mod gmsh;
#[path = "gmsh_fuzz.rs"]
mod gmsh_fuzz;
#[path = "refine.rs"]
mod refine;
