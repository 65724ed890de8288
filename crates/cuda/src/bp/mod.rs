//! The CEED bake-off operators (BP1 mass, BP3 screened diffusion with Gauss quadrature,
//! BP3.5 diffusion collocated at GLL nodes) on hexahedral meshes, applied on the GPU as the
//! whole operator a user calls: L-vector in, gather, element kernel, scatter-add, L-vector
//! out (docs/bp-gpu.md).
//!
//! - [`plan`]: what an operator is ([`BpOperator`]) and how its kernel computes it
//!   ([`BpPlan`]: the paper's slice kernel, pencil contractions, or the lattice kernel).
//! - [`tuned`]: the measured plans, keyed by [`DeviceClass`], operator, geometry and order.
//! - [`codegen`]: the CUDA C specialisation of a plan ([`bp_kernel`]).
//! - [`operator`]: the operator on the device ([`GpuBp`]).
//! - [`tested`]: the specialisations the tests and the CI compile check cover.
//! - [`layout`]: the mesh and space laid out as a plan's kernel reads them.
//! - `bricks`: the lattice kernel's bricks (cells sorted into them, dofs numbered per brick).
//! - `diag`: the operator's diagonal on the device (Jacobi preconditioning).

mod bricks;
pub mod codegen;
mod diag;
pub mod layout;
pub mod operator;
pub mod plan;
pub mod tested;
pub mod tuned;

pub use codegen::{bp_kernel, skeleton_table, BpKernel};
pub use layout::{BrickLayout, CellArrangement, KernelSpace, SlotOrder};
pub use operator::GpuBp;
pub use plan::{rolled_phase_digits, BpOperator, BpPlan, LatticePlan, Numbering, PencilPlan};
pub use tested::{lattice_shapes, tested_configurations, Tested, TESTED_KINDS};
pub use tuned::{BandwidthClass, DeviceClass};
