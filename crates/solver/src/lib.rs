//! ferrofem-solver: the linear and nonlinear solvers of ferrofem.
//!
//! - [`KrylovSpace`] is the vector backend Krylov methods are written against, so that one
//!   CG serves host vectors ([`CpuSpace`], over any [`ferrofem_base::LinearOperator`],
//!   assembled or matrix-free) and GPU device vectors.
//! - [`cg`] and [`pcg`] (Jacobi) with [`SolveOptions`] / [`SolveStats`];
//!   [`ChebyshevSpace`]: Chebyshev–Jacobi preconditioning on any space.
//! - [`gmres`]: restarted, right-preconditioned GMRES(m) ([`GmresOptions`]) for
//!   nonsymmetric operators, on the same backend trait.
//! - [`solve_direct`] / [`DirectFactorization`]: sparse Cholesky and LU through faer.
//! - [`newton()`]: Newton with Armijo backtracking for a [`NonlinearProblem`] on host
//!   slices; [`newton_in`] runs the same loop on a [`NonlinearSpace`] (device vectors).
//!
//! Every failure (NaN, breakdown, divergence, iteration limit, singular matrix) is a
//! [`SolverError`] that says what happened and where.

pub mod backend;
pub mod chebyshev;
pub mod cpu;
pub mod direct;
pub mod error;
pub mod gmres;
pub mod krylov;
pub mod newton;

pub use backend::KrylovSpace;
pub use chebyshev::ChebyshevSpace;
pub use cpu::CpuSpace;
pub use direct::{solve_direct, DirectFactorization, DirectKind};
pub use error::SolverError;
pub use gmres::{gmres, GmresOptions};
pub use krylov::{cg, pcg, SolveOptions, SolveStats, StopReason};
pub use newton::{
    newton, newton_in, LinearInfo, NewtonOptions, NewtonStats, NonlinearProblem, NonlinearSpace,
};
