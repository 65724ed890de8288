//! The ferrofem driver: problem set-up and the solve and assemble pipelines, callable from
//! the `ferrofem` command, from tests and from other programs, with where they run chosen
//! behind one backend seam.
//!
//! - [`problem`]: a problem on a mesh (space, Dirichlet/natural boundary split) and its
//!   pointwise operator: a manufactured one (the verification mode) or a user's model.
//! - [`file`]: problem files (TOML): the user's mesh, physics, materials per region,
//!   sources and boundary conditions as constants or expressions, solver and outputs;
//!   [`model_setup`]: such a model set up on its mesh; [`mesh_input`]: loading meshes.
//! - [`settings`]: how to solve (precision, solver, tolerances); [`report`]: what a solve
//!   reports (timings, residuals, Newton's history, errors) and the [`Solution`].
//! - [`backend`]: choosing the backend (`auto`, `cpu`, `cuda`) and when `auto` falls back
//!   to the CPU.
//! - [`solve`]: the one solve pipeline; it hands the problem's operator to the CPU backend
//!   or, with the `cuda` feature, the GPU backend through the seam (`SolveBackend`), and
//!   measures the error against the manufactured solution. [`output`] writes the solution
//!   for ParaView.
//! - [`linear_system`]: the assembled system (what the CPU's direct solve factors);
//!   [`export`]: its assembly for `ferrofem assemble` and its files (Matrix Market, dof
//!   table).
//! - [`solve_ranks`]: a problem file solved over MPI ranks (`mpirun -np N ferrofem solve`).
//! - [`wave`]: the wave pipeline: a wave problem run by the spectral-element solver,
//!   with its seismograms, snapshots and plots.
//! - [`progress`]: the progress spinner of long runs.
//! - [`pipeline_error`]: the one error type of all of the above, GPU failures typed.
//!
//! Module dependencies run one way: the CPU backend, the GPU backend and the export each
//! build on the shared modules (settings, reports, solver policy, residual terms, the
//! seam) and never on one another; only the pipeline knows every backend.

pub mod backend;
mod cpu;
pub mod export;
pub mod file;
#[cfg(feature = "cuda")]
mod gpu;
mod krylov;
pub mod linear_system;
pub mod mesh_input;
pub mod model_setup;
pub mod output;
pub mod pipeline_error;
mod policy;
pub mod post;
pub mod problem;
pub mod progress;
pub mod report;
mod seam;
pub mod settings;
pub mod solve;
pub mod solve_ranks;
mod terms;
pub mod wave;

#[cfg(feature = "cuda")]
pub use backend::falls_back;
pub use backend::{fallback_reason, select, Backend, BackendArg};
pub use export::assemble_problem;
pub use file::{FileCase, FileError, ProblemFile};
#[cfg(feature = "cuda")]
pub use gpu::assemble_problem_gpu;
pub use linear_system::{BcMode, LinearSystem};
pub use mesh_input::{LoadedMesh, MeshInput, MeshOrigin, Reorder};
pub use model_setup::{
    own_problem, CasePhysics, ModelCase, ModelInput, PendingErrors, ResolvedBoundary,
};
pub use output::write_solution_vtu;
pub use pipeline_error::PipelineError;
pub use problem::{
    CoefField, Definition, DirichletSpec, ManufacturedCase, Problem, ProblemKind, ProblemOptions,
};
pub use progress::{Progress, StepProgress};
pub use report::{ErrorReport, NewtonReport, ResidualReport, Solution, SolveReport, Timings};
pub use settings::{OperatorKind, Precision, Preconditioner, SolveSettings, SolverKind};
pub use solve::{solve, solve_problem, solve_problem_with_fallback, solve_with_fallback};
pub use solve_ranks::{solve_file_on_ranks, RanksSolution, SolveOverrides};
