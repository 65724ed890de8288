//! The library half of the `ferrofem` command: the pipelines behind `ferrofem solve` and
//! `ferrofem assemble`, callable from tests and other programs without spawning the binary.
//!
//! - [`problem`]: a manufactured problem on a mesh (space, Dirichlet/natural boundary
//!   split, coefficient field) and its pointwise operator.
//! - [`solve`]: direct, CG/PCG (matrix-free) and Newton solves with error norms and timings.
//! - [`linear_system`]: the assembled system and its export (Matrix Market, dof table).
//! - [`progress`]: the progress spinner of long runs.
//! - [`pipeline_error`]: the one error type of all of the above.

#[cfg(feature = "cuda")]
mod gpu_solve;
pub mod linear_system;
pub mod pipeline_error;
pub mod problem;
pub mod progress;
pub mod solve;

pub use linear_system::{assemble_problem, BcMode, LinearSystem};
pub use pipeline_error::PipelineError;
pub use problem::{CoefField, DirichletSpec, Problem, ProblemKind, ProblemOptions};
pub use progress::Progress;
pub use solve::{
    solve, write_solution_vtu, Precision, Solution, SolveReport, SolveSettings, SolverKind,
};
