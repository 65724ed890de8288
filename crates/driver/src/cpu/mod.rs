//! The CPU backend: multithreaded solves on host vectors.
//!
//! - Linear problems, `--solver direct` ([`linear::direct`]): assemble the reduced system
//!   (Dirichlet dofs eliminated, see [`crate::linear_system`]) and factor it with faer
//!   (Cholesky for the symmetric problems).
//! - Linear problems, `--solver cg|pcg` ([`linear::matrix_free`]): matrix-free. The form's
//!   Jacobian action ([`FormOperator::linearize`]) with the Dirichlet rows replaced by the
//!   identity ([`ConstrainedOperator`]), solved for the correction `w = u − g̃` from
//!   `w = 0`: the boundary values lifted into the right-hand side of the free rows, zero on
//!   the constrained ones ([`correction_rhs`]), so that the relative stopping test measures
//!   the free equations alone, whatever the problem's scale; for PCG the Jacobi
//!   preconditioner from [`FormOperator::diagonal`]. The reported residual is recomputed
//!   from the returned solution; a tolerance below the precision's rounding level is warned
//!   of up front, and a solve that stops at that level ([`SolverError::AccuracyLimit`])
//!   returns its iterate with a warning that gives the true residual.
//! - Linear problems, `--solver gmres`: the same matrix-free system, solved by
//!   Jacobi-preconditioned GMRES(30) (it needs no symmetry, so it is the check on CG).
//! - The nonlinear problem: Newton with line search on the full residual with the
//!   Dirichlet rows `u_c − g_c`, from the boundary-lifted guess. `--solver direct` (the CPU
//!   default, [`newton::direct`]): every step assembles the Jacobian on the free dofs and
//!   solves with a sparse LU. `--solver gmres` ([`newton::matrix_free`]): every step solves
//!   with the matrix-free Jacobian action ([`FormOperator::linearize`], Dirichlet rows the
//!   identity) by GMRES(30), right-preconditioned by Jacobi from the Jacobian's diagonal at
//!   the current state ([`FormOperator::diagonal`]), to the relative tolerance of
//!   [`newton_forcing`]. CG/PCG are refused by the pipeline: the Jacobian's `g2 = 2u∇u`
//!   block makes it nonsymmetric, so CG's convergence theory does not apply.
//!
//! A direct solve whose predicted factor does not fit in memory is refused before anything
//! is built ([`check_direct_memory`]).
//!
//! [`FormOperator::linearize`]: ferrofem_operator::FormOperator::linearize
//! [`FormOperator::diagonal`]: ferrofem_operator::FormOperator::diagonal
//! [`ConstrainedOperator`]: ferrofem_operator::ConstrainedOperator
//! [`SolverError::AccuracyLimit`]: ferrofem_solver::SolverError::AccuracyLimit
//! [`correction_rhs`]: crate::terms::correction_rhs
//! [`newton_forcing`]: crate::policy::newton_forcing

mod counted;
mod linear;
mod newton;
mod robin;

pub(crate) use robin::WithRobin;

use crate::pipeline_error::PipelineError;
use crate::seam::{Outcome, ProblemTraits, SolveBackend, SolveCase};
use crate::settings::{OperatorKind, SolverKind};
use ferrofem_assembly::predicted_lagrange_system;
use ferrofem_base::Real;
use ferrofem_mesh::Mesh;
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use ferrofem_solver::direct::check_predicted_memory;

/// The CPU backend of the solve pipeline.
pub(crate) struct CpuBackend;

impl SolveBackend for CpuBackend {
    /// A direct solve whose predicted factor does not fit is refused up front
    /// ([`check_direct_memory`]).
    fn preflight(
        &self,
        mesh: &Mesh,
        traits: &ProblemTraits,
        solver: SolverKind,
    ) -> Result<(), PipelineError> {
        if solver == SolverKind::Direct {
            check_direct_memory(mesh, traits)?;
        }
        Ok(())
    }

    fn linear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        if case.solver == SolverKind::Direct {
            linear::direct(case, op)
        } else if case.settings.operator == OperatorKind::Assembled {
            linear::assembled(case, op)
        } else {
            linear::matrix_free(case, op)
        }
    }

    fn nonlinear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        if case.solver == SolverKind::Gmres {
            newton::matrix_free(case, op)
        } else {
            newton::direct(case, op)
        }
    }
}

/// Refuses, from the mesh's counts alone and before anything is built, a direct solve
/// whose predicted factor (with the assembled matrix) does not fit in the available
/// memory: the space, operator and matrix of such a problem would take minutes and
/// gigabytes before the factorisation's own exact check could refuse it.
fn check_direct_memory(mesh: &Mesh, traits: &ProblemTraits) -> Result<(), PipelineError> {
    let p = predicted_lagrange_system(
        mesh.cell_type(),
        mesh.num_cells(),
        mesh.num_vertices(),
        traits.order,
        traits.ncomp,
    );
    // the assembled matrix: values, column indices and row offsets
    let matrix = 12 * p.nnz + 8 * p.dofs;
    check_predicted_memory(
        p.dofs as usize,
        p.nnz as usize,
        mesh.dim(),
        traits.symmetric,
        matrix,
    )?;
    Ok(())
}
