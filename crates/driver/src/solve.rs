//! The solve pipeline of `ferrofem solve`: set up a [`Problem`], build its pointwise
//! operator, solve it on the selected backend, and measure the error against the
//! manufactured solution.
//!
//! The pipeline is one for every backend: it picks the solver
//! ([`SolveSettings::solver_for`]), refuses CG/PCG for the nonlinear problem, lets the
//! backend refuse what it cannot do before anything is built, sets up the problem and its
//! operator in the requested precision, hands the operator to the backend's linear or
//! nonlinear solve through the seam ([`crate::seam`]), and reports. Which backend runs is
//! decided in one place: [`solve`]'s match on [`Backend`]. [`solve_with_fallback`] adds
//! `--backend auto`'s policy ([`crate::backend`]): a GPU attempt that finds no GPU path for
//! the case, or no usable GPU, runs again on the CPU; every other error is returned.

use crate::backend::{fallback_reason, Backend, BackendArg};
use crate::cpu::CpuBackend;
#[cfg(feature = "cuda")]
use crate::gpu::GpuBackend;
use crate::pipeline_error::PipelineError;
use crate::policy::tolerance_warning;
use crate::problem::{FormVisitor, Problem, ProblemOptions};
use crate::progress::Progress;
use crate::report::{ErrorReport, Solution, SolveReport, Timings};
use crate::seam::ProblemTraits;
use crate::seam::{Outcome, SolveBackend, SolveCase};
use crate::settings::{OperatorKind, Precision, SolveSettings, SolverKind};
use ferrofem_base::Real;
use ferrofem_mesh::Mesh;
use ferrofem_operator::{errors, FormOperator};
use ferrofem_physics::Physics;
use std::time::Instant;

/// Sets up `options` on `mesh` and solves it with `settings` on `backend`, which it never
/// leaves (see [`solve_with_fallback`] for `--backend auto`); see the module documentation.
pub fn solve(
    mesh: &Mesh,
    options: &ProblemOptions,
    settings: &SolveSettings,
    backend: &Backend,
    progress: &Progress,
) -> Result<Solution, PipelineError> {
    let traits = ProblemTraits::of_options(mesh, options);
    let solver = check_solver(settings, &traits, backend)?;
    preflight(backend, mesh, &traits, solver)?;
    progress.stage("setting up the space and boundary conditions");
    let start = Instant::now();
    let problem = Problem::new(mesh, options)?;
    let setup = start.elapsed().as_secs_f64();
    solve_set_up(mesh, problem, settings, backend, solver, progress, setup)
}

/// Solves `problem` (already set up on `mesh`, e.g. from a problem file) with `settings`
/// on `backend`, which it never leaves.
pub fn solve_problem(
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    backend: &Backend,
    progress: &Progress,
) -> Result<Solution, PipelineError> {
    let traits = ProblemTraits::of_problem(mesh, problem);
    let solver = check_solver(settings, &traits, backend)?;
    preflight(backend, mesh, &traits, solver)?;
    solve_set_up(
        mesh,
        problem.clone(),
        settings,
        backend,
        solver,
        progress,
        0.0,
    )
}

/// [`solve`] on `backend`, which [`select`](crate::select) chose for `requested`, with
/// `--backend auto`'s fallback: when `requested` is `auto` and the GPU attempt fails
/// because the case has no GPU path or no GPU is usable
/// ([`fallback_reason`](crate::fallback_reason)), the problem is solved again on the CPU,
/// and the returned backend (the one that produced the solution) carries the reason for
/// the note. Every other error, a GPU failure included, is returned as it is.
pub fn solve_with_fallback(
    mesh: &Mesh,
    options: &ProblemOptions,
    settings: &SolveSettings,
    requested: BackendArg,
    backend: Backend,
    progress: &Progress,
) -> Result<(Solution, Backend), PipelineError> {
    with_fallback(requested, backend, |b| {
        solve(mesh, options, settings, b, progress)
    })
}

/// [`solve_problem`] with `--backend auto`'s fallback (see [`solve_with_fallback`]).
pub fn solve_problem_with_fallback(
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    requested: BackendArg,
    backend: Backend,
    progress: &Progress,
) -> Result<(Solution, Backend), PipelineError> {
    with_fallback(requested, backend, |b| {
        solve_problem(mesh, problem, settings, b, progress)
    })
}

/// Runs `run` on `backend`, and again on the CPU when `requested` is `auto` and the GPU
/// attempt has no GPU path or no usable GPU.
fn with_fallback(
    requested: BackendArg,
    backend: Backend,
    run: impl Fn(&Backend) -> Result<Solution, PipelineError>,
) -> Result<(Solution, Backend), PipelineError> {
    match run(&backend) {
        Err(e) if requested == BackendArg::Auto && backend.is_gpu() => {
            let Some(why) = fallback_reason(&e) else {
                return Err(e);
            };
            let cpu = Backend::Cpu {
                fallback_reason: Some(why),
            };
            let solution = run(&cpu)?;
            Ok((solution, cpu))
        }
        result => result.map(|solution| (solution, backend)),
    }
}

/// The solver in effect, refusing CG/PCG for a nonsymmetric problem and an assembled
/// operator for Newton–GMRES (whose Jacobian products are matrix-free).
fn check_solver(
    settings: &SolveSettings,
    traits: &ProblemTraits,
    backend: &Backend,
) -> Result<SolverKind, PipelineError> {
    let solver = settings.solver_for(traits.symmetric, backend);
    if !traits.symmetric && matches!(solver, SolverKind::Cg | SolverKind::Pcg) {
        return Err(PipelineError::Unsupported(format!(
            "--solver {} is not available for the {} problem: its Jacobian is not symmetric \
             (the g2 = dκ/du ∇u block), so CG does not apply; use --solver direct (the CPU \
             default for it) or --solver gmres",
            solver.name(),
            traits.name
        )));
    }
    if !traits.linear
        && solver != SolverKind::Direct
        && settings.operator == OperatorKind::Assembled
    {
        return Err(PipelineError::Unsupported(format!(
            "--operator assembled is not available for the {} problem's Newton–GMRES, whose \
             Jacobian products are matrix-free; use --solver direct for an assembled Jacobian \
             at every Newton step",
            traits.name
        )));
    }
    Ok(solver)
}

/// The backend's refusals before anything is built.
fn preflight(
    backend: &Backend,
    mesh: &Mesh,
    traits: &ProblemTraits,
    solver: SolverKind,
) -> Result<(), PipelineError> {
    match backend {
        Backend::Cpu { .. } => CpuBackend.preflight(mesh, traits, solver),
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => GpuBackend::new(dev).preflight(mesh, traits, solver),
    }
}

/// The pipeline on a set-up problem: the backend's solve, errors (manufactured problems)
/// and report. `setup` is the seconds the problem's set-up took.
fn solve_set_up(
    mesh: &Mesh,
    problem: Problem,
    settings: &SolveSettings,
    backend: &Backend,
    solver: SolverKind,
    progress: &Progress,
    setup: f64,
) -> Result<Solution, PipelineError> {
    match backend {
        Backend::Cpu { .. } => solve_on(
            &CpuBackend,
            mesh,
            problem,
            settings,
            solver,
            progress,
            setup,
        ),
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => solve_on(
            &GpuBackend::new(dev),
            mesh,
            problem,
            settings,
            solver,
            progress,
            setup,
        ),
    }
}

/// The pipeline on `backend`: the operator, the backend's solve, errors and report.
fn solve_on<B: SolveBackend>(
    backend: &B,
    mesh: &Mesh,
    problem: Problem,
    settings: &SolveSettings,
    solver: SolverKind,
    progress: &Progress,
    setup: f64,
) -> Result<Solution, PipelineError> {
    let start = Instant::now();
    progress.stage("building the operator (geometry, tabulation)");
    let visitor = SolveVisitor {
        backend,
        mesh,
        problem: &problem,
        settings,
        solver,
        progress,
        start,
    };
    let outcome = match settings.precision {
        Precision::F64 => problem.visit_form::<f64, _>(mesh, visitor)?,
        Precision::F32 => problem.visit_form::<f32, _>(mesh, visitor)?,
    };
    let t = Instant::now();
    let errors = match problem.manufactured() {
        Some(case) => {
            progress.stage("computing the errors");
            let m = case.manufactured;
            let e = errors(
                mesh,
                &problem.space,
                &outcome.u,
                |x, out| m.exact(x, out),
                |x, out| m.exact_grad(x, out),
                None,
            )?;
            Some(ErrorReport {
                l2: e.l2,
                l2_rel: e.l2_rel,
                h1: e.h1_semi,
                h1_rel: e.h1_rel,
            })
        }
        None => None,
    };
    let errors_time = t.elapsed().as_secs_f64();
    let timings = Timings {
        setup: setup + outcome.setup,
        assembly: outcome.assembly,
        solve: outcome.solve,
        errors: errors_time,
        total: setup + start.elapsed().as_secs_f64(),
        ..Timings::default()
    };
    let report = SolveReport {
        problem: problem.name().to_string(),
        order: problem.order(),
        precision: settings.precision.name(),
        cell_type: mesh.cell_type().name(),
        cells: mesh.num_cells(),
        vertices: mesh.num_vertices(),
        dofs: problem.num_dofs(),
        free_dofs: problem.num_dofs() - problem.dirichlet_dofs.len(),
        dirichlet: problem.dirichlet_description(),
        natural_facets: problem.natural_facets.len(),
        solver: solver.name(),
        method: outcome.method,
        iterations: outcome.iterations,
        newton: outcome.newton,
        residual: outcome.residual,
        timings,
        errors,
        warnings: outcome.warnings,
    };
    Ok(Solution {
        problem,
        u: outcome.u,
        report,
    })
}

/// The precision- and physics-generic part of the pipeline: the operator goes to the
/// backend's linear or nonlinear solve.
struct SolveVisitor<'a, B> {
    backend: &'a B,
    mesh: &'a Mesh,
    problem: &'a Problem,
    settings: &'a SolveSettings,
    solver: SolverKind,
    progress: &'a Progress,
    start: Instant,
}

impl<T: Real, B: SolveBackend> FormVisitor<T> for SolveVisitor<'_, B> {
    type Output = Outcome;
    fn visit<P: Physics<T>>(self, op: FormOperator<T, P>) -> Result<Outcome, PipelineError> {
        let setup = self.start.elapsed().as_secs_f64();
        let warning = (self.solver != SolverKind::Direct || !self.problem.is_linear())
            .then(|| tolerance_warning::<T>(self.settings.rtol()))
            .flatten();
        let case = SolveCase {
            mesh: self.mesh,
            problem: self.problem,
            settings: self.settings,
            solver: self.solver,
            progress: self.progress,
        };
        let mut out = if self.problem.is_linear() {
            self.backend.linear(&case, &op)?
        } else {
            self.backend.nonlinear(&case, &op)?
        };
        out.setup = setup;
        out.warnings.splice(0..0, warning);
        Ok(out)
    }
}
