//! The backend seam: what the solve pipeline asks of a backend ([`SolveBackend`]), what it
//! hands it ([`SolveCase`] and the problem's form operator) and what it gets back
//! ([`Outcome`]). The CPU backend ([`crate::cpu`]) and the GPU backend (`crate::gpu`,
//! feature `cuda`) implement it; the pipeline ([`crate::solve`]) chooses one, in one place,
//! from the selected [`Backend`](crate::Backend), and never calls a backend's internals.

use crate::pipeline_error::PipelineError;
use crate::problem::{Problem, ProblemKind, ProblemOptions};
use crate::progress::Progress;
use crate::report::{ratio, NewtonReport, ResidualReport};
use crate::settings::{SolveSettings, SolverKind};
use crate::terms::to_real;
use ferrofem_base::Real;
use ferrofem_mesh::Mesh;
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use ferrofem_solver::NewtonStats;
use std::time::Duration;

/// Where the linear and nonlinear solves of a problem run. The methods are generic in the
/// precision and the physics (the pipeline visits the form operator once it knows both),
/// so the pipeline dispatches on the selected backend with a `match`, not a trait object.
pub(crate) trait SolveBackend {
    /// Refuses, before the space and operator are built, what this backend cannot do with
    /// `solver` or cannot fit in memory. The default accepts everything.
    fn preflight(
        &self,
        _mesh: &Mesh,
        _traits: &ProblemTraits,
        _solver: SolverKind,
    ) -> Result<(), PipelineError> {
        Ok(())
    }

    /// Solves a linear problem with the operator `op` (the correction from the lifted
    /// boundary values, or the assembled reduced system).
    fn linear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError>;

    /// Solves the nonlinear problem by Newton with line search from the boundary-lifted
    /// guess.
    fn nonlinear<T: Real, P: Physics<T>>(
        &self,
        case: &SolveCase<'_>,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError>;
}

/// What the solver choice and the backends' refusals need to know of a problem before
/// (or without) building it.
#[derive(Clone, Debug)]
pub(crate) struct ProblemTraits {
    /// The problem's name.
    pub(crate) name: String,
    /// Solution components.
    pub(crate) ncomp: usize,
    /// Polynomial order.
    pub(crate) order: usize,
    /// Symmetric Jacobian.
    pub(crate) symmetric: bool,
    /// Linear (one solve, no Newton iteration).
    pub(crate) linear: bool,
}

impl ProblemTraits {
    /// The traits of the manufactured problem `options` on `mesh`.
    pub(crate) fn of_options(mesh: &Mesh, options: &ProblemOptions) -> ProblemTraits {
        let nonlinear = options.kind == ProblemKind::Nonlinear;
        ProblemTraits {
            name: options.kind.name().to_string(),
            ncomp: if options.kind == ProblemKind::Elasticity {
                mesh.dim()
            } else {
                1
            },
            order: options.order,
            symmetric: !nonlinear,
            linear: !nonlinear,
        }
    }

    /// The traits of a set-up problem.
    pub(crate) fn of_problem(_mesh: &Mesh, problem: &Problem) -> ProblemTraits {
        ProblemTraits {
            name: problem.name().to_string(),
            ncomp: problem.space.ncomp(),
            order: problem.order(),
            symmetric: problem.is_symmetric(),
            linear: problem.is_linear(),
        }
    }
}

/// Everything a backend's solve needs besides the operator.
#[derive(Clone, Copy)]
pub(crate) struct SolveCase<'a> {
    /// The mesh the problem lives on.
    pub(crate) mesh: &'a Mesh,
    /// The problem: space, boundary split, boundary values, coefficient.
    pub(crate) problem: &'a Problem,
    /// Precision, tolerance and iteration limit.
    pub(crate) settings: &'a SolveSettings,
    /// The solver in effect (the one asked for, or the backend's default).
    pub(crate) solver: SolverKind,
    /// Where the stages are shown.
    pub(crate) progress: &'a Progress,
}

impl SolveCase<'_> {
    /// The natural-boundary load, a full L-vector in `T`.
    pub(crate) fn neumann<T: Real>(&self) -> Result<Vec<T>, PipelineError> {
        Ok(to_real(&self.problem.neumann_load(self.mesh)?))
    }
}

/// What the precision- and physics-generic part of a solve returns.
pub(crate) struct Outcome {
    pub(crate) u: Vec<f64>,
    pub(crate) method: String,
    pub(crate) iterations: usize,
    pub(crate) newton: Option<NewtonReport>,
    pub(crate) residual: ResidualReport,
    pub(crate) setup: f64,
    pub(crate) assembly: f64,
    pub(crate) solve: f64,
    pub(crate) warnings: Vec<String>,
}

/// The outcome of a Newton solve (CPU or GPU): its statistics, with `assembly` the time
/// spent building Jacobians or preconditioners and `solve` the rest.
pub(crate) fn newton_outcome(
    u: Vec<f64>,
    stats: &NewtonStats,
    method: String,
    assembly: Duration,
    solve: Duration,
) -> Outcome {
    let h = &stats.residual_history;
    let (first, last) = (h.first().copied().unwrap_or(0.0), stats.final_residual());
    Outcome {
        u,
        method,
        iterations: stats.linear_iterations,
        newton: Some(NewtonReport::of(stats)),
        residual: ResidualReport {
            initial: first,
            last,
            relative: ratio(last, first),
            recursive: None,
        },
        setup: 0.0,
        assembly: assembly.as_secs_f64(),
        solve: solve.as_secs_f64(),
        warnings: Vec::new(),
    }
}
