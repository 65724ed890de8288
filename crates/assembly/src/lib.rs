//! Global sparse assembly: the CSR sparsity pattern of a restriction, element matrices and
//! vectors summed into CSR matrices and L-vectors with selectable parallel strategies
//! (serial, element colouring, by row, by nonzero; Cecka, Lew and Darve 2011), and
//! essential boundary conditions by elimination (the constrained dofs are not unknowns).
//!
//! Typical use: build a [`DofMap`]/[`Dirichlet`] from the boundary dofs of a space, an
//! [`AssemblyPlan`] from the restriction and the dof map (once per mesh), then
//! [`AssemblyPlan::assemble_system`] for each linearisation; solve the reduced system and
//! rebuild the full solution with [`Dirichlet::expand`].
//!
//! Ownership: the caller owns the restriction, the element-matrix provider, the boundary
//! conditions and every assembled matrix/vector; a plan owns only connectivity-derived
//! data (its copy of the restriction, the dof map, the pattern and index maps).

mod assemble;
mod blocks;
mod coloring;
mod dirichlet;
mod error;
mod identity_rows;
mod plan;
mod predict;
mod sparsity;
mod vector;

pub use assemble::{assemble_matrix, assemble_system, ElementVectorFn, Strategy, System};
pub use coloring::ElementColoring;
pub use dirichlet::{Dirichlet, DofMap, CONSTRAINED};
pub use error::AssemblyError;
pub use identity_rows::with_identity_rows;
pub use plan::{AssemblyPlan, PlanEstimate, DEFAULT_BATCH_BYTES, NO_TARGET};
pub use predict::{predicted_lagrange_system, PredictedSystem};
pub use sparsity::{NodeGraph, SparsityPattern};
pub use vector::assemble_vector;
