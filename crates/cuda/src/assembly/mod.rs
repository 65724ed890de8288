//! Global CSR assembly on the GPU (Cecka, Lew & Darve 2011) of the element matrices of any
//! pointwise physics on simplices, into the pattern and index maps of a host
//! [`ferrofem_assembly::AssemblyPlan`] (built once per mesh; Dirichlet dofs eliminated
//! when the plan has a dof map). See `kernels/assembly.cu` and docs/assembly-gpu.md.

mod block_sums;
mod cases;
mod gpu_assembly;
mod kernel;
mod shared_nz;
mod shared_sums;
mod strategy;

pub use cases::{tested_cases, AssemblyCase};
pub use gpu_assembly::GpuAssembly;
pub use kernel::{assembly_kernel, AssemblyKernel, AuxKind, Output, THREADS};
pub use strategy::GpuStrategy;
