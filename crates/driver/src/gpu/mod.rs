//! The GPU backend (feature `cuda`): every Krylov and Newton vector on the device.
//!
//! - Linear problems ([`linear`]): CG, Jacobi-PCG or Jacobi-GMRES on the bake-off diffusion
//!   kernel (Poisson on hexahedra) or the residual kernel of the problem's physics
//!   (triangles and tetrahedra).
//! - A rank's part of a distributed linear solve ([`part_linear`]): the same kernels, the
//!   interface sums through the device halo.
//! - The nonlinear problem ([`newton`]): Newton–GMRES on the residual and Jacobian-action
//!   kernels (triangles and tetrahedra).
//!
//! A case these do not cover is refused with [`PipelineError::NoGpuPath`] (which
//! `--backend auto` answers by running on the CPU); a failure of the GPU itself is
//! [`PipelineError::Gpu`] with the [`GpuError`] that says what failed.

mod assemble;
mod assembled;
mod linear;
mod part_linear;

pub use assemble::assemble_problem_gpu;
pub(crate) use part_linear::{solve_part_gpu, PartGpuSolve, PartSystem};
mod newton;

use crate::pipeline_error::PipelineError;
use crate::seam::{Outcome, SolveBackend, SolveCase};
use ferrofem_base::Real;
use ferrofem_cuda::{GpuDevice, GpuError};
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use ferrofem_solver::SolverError;
use std::sync::Arc;

/// The GPU backend of the solve pipeline, on one device.
pub(crate) struct GpuBackend<'a> {
    dev: &'a Arc<GpuDevice>,
}

impl<'a> GpuBackend<'a> {
    /// The backend on `dev`.
    pub(crate) fn new(dev: &'a Arc<GpuDevice>) -> GpuBackend<'a> {
        GpuBackend { dev }
    }
}

impl SolveBackend for GpuBackend<'_> {
    fn linear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        linear::linear_gpu(case, op, self.dev).map_err(typed)
    }

    fn nonlinear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        newton::nonlinear_gpu(case, op, self.dev).map_err(typed)
    }
}

/// A GPU failure that reached the pipeline inside a solver's error (a kernel launch or an
/// allocation during a Krylov or Newton iteration, which the solvers carry as
/// [`SolverError::Backend`]) as the [`GpuError`] it is, so that it is reported, and
/// classified by `--backend auto`, like any other GPU failure; every other error as it is.
fn typed(e: PipelineError) -> PipelineError {
    match e {
        PipelineError::Solver(SolverError::Backend(inner)) => match inner.downcast::<GpuError>() {
            Ok(gpu) => PipelineError::Gpu(*gpu),
            Err(other) => PipelineError::Solver(SolverError::Backend(other)),
        },
        other => other,
    }
}
