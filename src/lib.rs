//! ferrofem: a finite-element engine whose hot loops run at the memory-bandwidth limit of
//! a GPU or a multicore CPU. This crate is the library as users call it; each module is
//! one of the engine's crates.
//!
//! - Pose a problem in a file and solve it ([`driver`]): [`driver::ProblemFile::read`],
//!   [`driver::ProblemFile::setup`], [`driver::solve_problem`], then derived fields,
//!   boundary integrals and probes from [`driver::post`]. The format is described in
//!   [`driver::file`].
//! - Write your own physics ([`physics`]): implement [`physics::Physics`] (the pointwise
//!   `f0, f1` and their derivatives `g0..g3`, and their CUDA C half), set it up with
//!   [`driver::own_problem`] and the boundary conditions of problem files, and solve it with
//!   [`driver::solve_problem`] on the CPU or the GPU; or use the pieces underneath: a
//!   [`operator::FormOperator`] on a [`space::H1Space`] of a [`mesh::Mesh`], [`solver`]'s
//!   Krylov methods, and, with the `cuda` feature, [`cuda`]'s kernels.
//! - Propagate waves ([`wave`]): a [`wave::WaveSetup`] (medium, boundaries, sources,
//!   receivers, time) run by [`wave::Simulation`] (the spectral-element time loop), or a
//!   wave problem file through [`driver::wave::run_wave`] with its outputs; the stiffness is
//!   the sum-factorised [`operator::tensor::TensorOperator`] with pointwise physics
//!   ([`operator::tensor::TensorPhysics`]), which also takes physics of one's own.
//!
//! Examples (`cargo run --release --example NAME`): `elasticity_file` (a problem file,
//! solved and post-processed through the library), `user_physics` (a physics of one's own
//! on a Gmsh mesh, on the CPU and the GPU), `lamb` (waves: Lamb's problem from Rust, the
//! Rayleigh wave's speed measured against theory).

pub use ferrofem_assembly as assembly;
pub use ferrofem_base as base;
#[cfg(feature = "cuda")]
pub use ferrofem_cuda as cuda;
pub use ferrofem_driver as driver;
pub use ferrofem_expr as expr;
pub use ferrofem_fe as fe;
pub use ferrofem_geometry as geometry;
pub use ferrofem_io as io;
pub use ferrofem_mesh as mesh;
pub use ferrofem_operator as operator;
pub use ferrofem_physics as physics;
pub use ferrofem_solver as solver;
pub use ferrofem_space as space;
pub use ferrofem_wave as wave;
