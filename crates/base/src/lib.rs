//! Shared vocabulary of ferrofem: the floating-point scalar trait, the reference cells with
//! their vertex, edge and facet numbering, sparse matrices and the linear-operator trait
//! that assembled and matrix-free operators share, and the reproducible pseudo-random data
//! of tests and benchmarks, and the memory checks that refuse a computation too large for
//! the machine before it allocates, and the guard that flushes subnormal numbers in hot loops.
//!
//! Every other crate agrees on these conventions, so that a mesh cell, a finite element
//! and a GPU kernel index vertices, edges and faces the same way.

pub mod cell;
pub mod lazy;
pub mod linop;
pub mod memory;
pub mod random;
pub mod real;
pub mod sparse;
pub mod subnormal;

pub use cell::CellType;
pub use linop::LinearOperator;
pub use memory::{available_memory, check_fits, MemoryError};
pub use real::Real;
pub use sparse::{CsrError, CsrMatrix};
pub use subnormal::FlushSubnormals;
