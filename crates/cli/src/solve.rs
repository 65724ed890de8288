//! The solve pipeline of `ferrofem solve`: set up a [`Problem`], build its pointwise
//! operator, solve, and measure the error against the manufactured solution.
//!
//! - Linear problems, `--solver direct`: assemble the reduced system (Dirichlet dofs
//!   eliminated, see [`crate::linear_system`]) and factor it with faer (Cholesky for the
//!   symmetric problems).
//! - Linear problems, `--solver cg|pcg`: matrix-free. The form's Jacobian action
//!   ([`FormOperator::linearize`]) with the Dirichlet rows replaced by the identity
//!   ([`ConstrainedOperator`]), solved for the correction `w = u − g̃` from `w = 0`: the
//!   boundary values lifted into the right-hand side of the free rows, zero on the
//!   constrained ones ([`correction_rhs`]), so that the relative stopping test measures the
//!   free equations alone, whatever the problem's scale; for PCG the Jacobi preconditioner
//!   from [`FormOperator::diagonal`]. The reported residual is recomputed from the returned
//!   solution; a tolerance below the precision's rounding level is warned of up front, and
//!   a solve that stops at that level ([`SolverError::AccuracyLimit`]) returns its iterate
//!   with a warning that gives the true residual.
//! - Linear problems, `--solver gmres`: the same matrix-free system, solved by
//!   Jacobi-preconditioned GMRES(30) (it needs no symmetry, so it is the check on CG).
//! - The nonlinear problem: Newton with line search ([`newton`]) on the full residual with
//!   the Dirichlet rows `u_c − g_c`, from the boundary-lifted guess. `--solver direct`
//!   (the CPU default): every step assembles the Jacobian on the free dofs and solves with
//!   a sparse LU. `--solver gmres`: every step solves with the matrix-free Jacobian action
//!   ([`FormOperator::linearize`], Dirichlet rows the identity) by GMRES(30),
//!   right-preconditioned by Jacobi from the Jacobian's diagonal at the current state
//!   ([`FormOperator::diagonal`]), to the relative tolerance of [`newton_forcing`]. CG/PCG
//!   are refused: the Jacobian's `g2 = 2u∇u` block makes it nonsymmetric, so CG's
//!   convergence theory does not apply.

use crate::linear_system::{
    assemble_system_of, correction_rhs, full_residual, to_f64, to_real, BcMode,
};
use crate::pipeline_error::PipelineError;
use crate::problem::{FormVisitor, Problem, ProblemKind, ProblemOptions};
use crate::progress::Progress;
use clap::ValueEnum;
use ferrofem_assembly::{predicted_lagrange_system, AssemblyPlan, DofMap, Strategy};
use ferrofem_base::{LinearOperator, Real};
use ferrofem_io::{write_space_vtu, Encoding};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{add_boundary_values, errors, ConstrainedOperator, FormOperator};
use ferrofem_physics::Physics;
use ferrofem_solver::direct::check_predicted_memory;
use ferrofem_solver::{
    cg, gmres, newton, pcg, CpuSpace, DirectFactorization, DirectKind, GmresOptions, LinearInfo,
    NewtonOptions, NewtonStats, NonlinearProblem, SolveOptions as KrylovOptions, SolveStats,
    SolverError,
};
use serde::Serialize;
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Floating-point precision of the operator, vectors and solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Double precision (the default for solves).
    F64,
    /// Single precision (the direct factorisation itself runs in f64).
    F32,
}

impl Precision {
    /// `"f64"` or `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}

/// The linear solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SolverKind {
    /// Conjugate gradients, matrix-free.
    Cg,
    /// Jacobi-preconditioned conjugate gradients, matrix-free.
    Pcg,
    /// Assembled sparse matrix, factored by faer (Cholesky or LU).
    Direct,
    /// Restarted GMRES(30), matrix-free, right-preconditioned by Jacobi: for nonsymmetric
    /// systems (the nonlinear problem's Newton steps, and on the GPU its only solver).
    Gmres,
}

impl SolverKind {
    /// `"cg"`, `"pcg"`, `"direct"` or `"gmres"`.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Cg => "cg",
            SolverKind::Pcg => "pcg",
            SolverKind::Direct => "direct",
            SolverKind::Gmres => "gmres",
        }
    }
}

/// How to solve (independent of the problem).
#[derive(Clone, Debug)]
pub struct SolveSettings {
    /// The linear solver; `None` picks [`SolveSettings::solver_for`]'s default.
    pub solver: Option<SolverKind>,
    /// Precision of operator and vectors.
    pub precision: Precision,
    /// Relative tolerance of the Krylov solve or of Newton (`None`: 1e-10 in f64, 1e-5
    /// in f32).
    pub rtol: Option<f64>,
    /// Iteration limit of the Krylov solve.
    pub max_iter: usize,
    /// Run the linear solve on this GPU (every Krylov vector on the device).
    #[cfg(feature = "cuda")]
    pub device: Option<std::sync::Arc<ferrofem_cuda::GpuDevice>>,
}

impl Default for SolveSettings {
    /// Default solver, f64, default tolerance, 10 000 iterations, CPU.
    fn default() -> Self {
        SolveSettings {
            solver: None,
            precision: Precision::F64,
            rtol: None,
            max_iter: 10_000,
            #[cfg(feature = "cuda")]
            device: None,
        }
    }
}

impl SolveSettings {
    /// The solver to use for `kind`: the one asked for, else, for the nonlinear problem
    /// (whose Jacobian is not symmetric), `direct` on the CPU and `gmres` on a GPU, and
    /// `pcg` for the others.
    pub fn solver_for(&self, kind: ProblemKind) -> SolverKind {
        self.solver.unwrap_or(match kind {
            ProblemKind::Nonlinear if self.on_gpu() => SolverKind::Gmres,
            ProblemKind::Nonlinear => SolverKind::Direct,
            _ => SolverKind::Pcg,
        })
    }

    /// True when a GPU is set for the solve.
    fn on_gpu(&self) -> bool {
        #[cfg(feature = "cuda")]
        return self.device.is_some();
        #[cfg(not(feature = "cuda"))]
        false
    }

    /// The relative tolerance in effect.
    pub fn rtol(&self) -> f64 {
        self.rtol.unwrap_or(match self.precision {
            Precision::F64 => 1e-10,
            Precision::F32 => 1e-5,
        })
    }
}

/// Wall-clock seconds of each phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timings {
    /// Reading or generating the mesh (filled in by the command).
    pub mesh: f64,
    /// Space, boundary split, coefficient and operator construction (geometry, tabulation).
    pub setup: f64,
    /// Right-hand side, preconditioner diagonal and matrix assembly (all Newton steps).
    pub assembly: f64,
    /// The linear solve(s) or factorisations, and Newton's residual evaluations.
    pub solve: f64,
    /// Error norms.
    pub errors: f64,
    /// Writing the VTU file (filled in by the command).
    pub output: f64,
    /// Everything above.
    pub total: f64,
}

/// Errors of the discrete solution against the manufactured one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ErrorReport {
    /// `‖u_h − u‖_{L²}`.
    pub l2: f64,
    /// `‖u_h − u‖_{L²} / ‖u‖_{L²}`.
    pub l2_rel: f64,
    /// `|u_h − u|_{H¹}` (the H¹ seminorm, `‖∇(u_h − u)‖_{L²}`).
    pub h1: f64,
    /// `|u_h − u|_{H¹} / |u|_{H¹}`.
    pub h1_rel: f64,
}

/// Residual norms of the solve (2-norms of the system solved: the free equations; the
/// Dirichlet rows are satisfied exactly).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ResidualReport {
    /// Before the first iteration (`‖b‖` of the free equations; `‖F(u₀)‖` for Newton).
    pub initial: f64,
    /// At the end, recomputed from the returned solution: `‖b − Ax‖` (direct and Krylov
    /// solves) or `‖F(u)‖` (Newton), never a recurrence's estimate.
    #[serde(rename = "final")]
    pub last: f64,
    /// `last / initial`: the quantity the relative tolerance bounds.
    pub relative: f64,
    /// The residual the Krylov method's recurrence (CG) or least-squares problem (GMRES)
    /// held at the end, which drifts from `last` by rounding (Krylov solves only).
    pub recursive: Option<f64>,
}

impl ResidualReport {
    /// The report of a Krylov solve's statistics.
    pub(crate) fn of_krylov(stats: &SolveStats) -> ResidualReport {
        ResidualReport {
            initial: stats.initial_residual,
            last: stats.final_residual,
            relative: ratio(stats.final_residual, stats.rhs_norm),
            recursive: Some(stats.recursive_residual),
        }
    }
}

/// How many unit roundoffs of the working precision the relative tolerance must at least
/// be to be attainable at all (the residual of a computed `A x` carries rounding of that
/// order times the condition of the sums); tighter requests get a warning up front.
const ATTAINABLE_ROUNDOFFS: f64 = 10.0;

/// The warning for a relative tolerance below what precision `T` can resolve, if it is.
pub(crate) fn tolerance_warning<T: Real>(rtol: f64) -> Option<String> {
    let floor = ATTAINABLE_ROUNDOFFS * T::EPS;
    (rtol < floor).then(|| {
        format!(
            "--rtol {rtol:e} is below what {} arithmetic can resolve (about {floor:.1e}); the \
             solve may stop at its rounding level instead",
            T::NAME
        )
    })
}

/// A Krylov solve's result with the rounding floor taken as an answer: the iterate of a
/// solve that stopped at [`SolverError::AccuracyLimit`] is the best the precision gives,
/// so it is returned with a warning that gives its true residual; every other error stays.
pub(crate) fn accept_accuracy_limit(
    result: Result<SolveStats, SolverError>,
    warnings: &mut Vec<String>,
) -> Result<SolveStats, SolverError> {
    match result {
        Err(SolverError::AccuracyLimit(stats)) => {
            warnings.push(format!(
                "the tolerance was not reached: the true residual of the solution is {:.2e} \
                 (relative {:.2e}), above the target {:.2e}, while the solver's own residual \
                 estimate went down to {:.2e}, and restarting from the true residual did not \
                 reduce it: this is the rounding level of the arithmetic; raise --rtol or use \
                 --precision f64",
                stats.final_residual,
                stats.relative_residual(),
                stats.target,
                stats.recursive_residual
            ));
            Ok(*stats)
        }
        other => other,
    }
}

/// What Newton's method did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NewtonReport {
    /// Newton steps taken.
    pub steps: usize,
    /// `‖F(u_k)‖₂` for `k = 0..=steps`.
    pub residual_history: Vec<f64>,
    /// The accepted line-search step length of each step.
    pub step_lengths: Vec<f64>,
    /// Observed convergence orders `log(r_{k+1}/r_k) / log(r_k/r_{k−1})` (2 for quadratic).
    pub orders: Vec<f64>,
    /// Krylov (GMRES) iterations of each step's Jacobian solve (0 for direct solves).
    pub linear_iterations: Vec<usize>,
}

impl NewtonReport {
    /// The report of Newton's statistics.
    pub(crate) fn of(stats: &NewtonStats) -> NewtonReport {
        let h = &stats.residual_history;
        let orders = (1..h.len().saturating_sub(1))
            .map(|k| (h[k + 1] / h[k]).ln() / (h[k] / h[k - 1]).ln())
            .collect();
        NewtonReport {
            steps: stats.iterations,
            residual_history: h.clone(),
            step_lengths: stats.step_lengths.clone(),
            orders,
            linear_iterations: stats.step_linear_iterations.clone(),
        }
    }
}

/// Restart length of the GMRES solves (`--solver gmres`, CPU and GPU).
pub(crate) const GMRES_RESTART: usize = 30;

/// Largest relative tolerance of a Newton step's Krylov solve.
const FORCING_MAX: f64 = 0.1;

/// The tolerances of the Krylov solve of a Newton step (inexact Newton): relative
/// `η_k = min(0.1, ‖F(u_k)‖ / ‖F(u₀)‖)` (the forcing term that keeps Newton's quadratic
/// convergence: the linear error is `O(‖F_k‖²)`, like the nonlinear one), at least
/// `100 ε_T`; absolute a tenth of Newton's own target `rtol · ‖F(u₀)‖`, so the last step
/// does not solve beyond what Newton asks for.
pub(crate) fn newton_forcing<T: Real>(
    f: f64,
    f0: f64,
    newton_rtol: f64,
    max_iter: usize,
) -> KrylovOptions {
    let ratio = if f0 > 0.0 { f / f0 } else { 1.0 };
    KrylovOptions {
        rtol: ratio.min(FORCING_MAX).max(100.0 * T::EPS),
        atol: 0.1 * newton_rtol * f0,
        max_iter,
        ..KrylovOptions::default()
    }
}

/// Everything `ferrofem solve` reports (JSON field names are the struct's).
#[derive(Clone, Debug, Serialize)]
pub struct SolveReport {
    /// Problem name.
    pub problem: &'static str,
    /// Polynomial order.
    pub order: usize,
    /// Precision.
    pub precision: &'static str,
    /// Cell type of the mesh.
    pub cell_type: &'static str,
    /// Cells of the mesh.
    pub cells: usize,
    /// Vertices of the mesh.
    pub vertices: usize,
    /// Dofs of the space.
    pub dofs: usize,
    /// Unknowns after removing the Dirichlet dofs.
    pub free_dofs: usize,
    /// Where the Dirichlet condition holds.
    pub dirichlet: String,
    /// Boundary facets with natural conditions.
    pub natural_facets: usize,
    /// `cg`, `pcg`, `direct` or `gmres`.
    pub solver: &'static str,
    /// How the solver was realised (matrix-free/assembled, preconditioner, factorisation).
    pub method: String,
    /// Krylov iterations (0 for direct solves).
    pub iterations: usize,
    /// Newton's history (nonlinear problem only).
    pub newton: Option<NewtonReport>,
    /// Residual norms.
    pub residual: ResidualReport,
    /// Phase timings in seconds.
    pub timings: Timings,
    /// Errors against the manufactured solution.
    pub errors: ErrorReport,
    /// What the user should know about the result (a tolerance below the precision's
    /// rounding level, a solve that stopped there).
    pub warnings: Vec<String>,
}

/// A solved problem.
#[derive(Clone, Debug)]
pub struct Solution {
    /// The problem (space, boundary split, manufactured solution).
    pub problem: Problem,
    /// The discrete solution, an L-vector of `problem.space` (in f64 whatever the solve's
    /// precision).
    pub u: Vec<f64>,
    /// The report.
    pub report: SolveReport,
}

/// Sets up `options` on `mesh` and solves it with `settings`; see the module docs.
pub fn solve(
    mesh: &Mesh,
    options: &ProblemOptions,
    settings: &SolveSettings,
    progress: &Progress,
) -> Result<Solution, PipelineError> {
    let start = Instant::now();
    let solver = settings.solver_for(options.kind);
    if options.kind == ProblemKind::Nonlinear && matches!(solver, SolverKind::Cg | SolverKind::Pcg)
    {
        return Err(PipelineError::Unsupported(format!(
            "--solver {} is not available for the nonlinear problem: its Jacobian is not \
             symmetric (the g2 = 2u∇u block), so CG does not apply; use --solver direct (the \
             CPU default for this problem) or --solver gmres",
            solver.name()
        )));
    }
    if solver == SolverKind::Direct && !settings.on_gpu() {
        check_direct_memory(mesh, options)?;
    }
    progress.stage("setting up the space and boundary conditions");
    let problem = Problem::new(mesh, options)?;
    progress.stage("building the operator (geometry, tabulation)");
    let visitor = SolveVisitor {
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
    progress.stage("computing the errors");
    let t = Instant::now();
    let m = problem.manufactured;
    let e = errors(
        mesh,
        &problem.space,
        &outcome.u,
        |x, out| m.exact(x, out),
        |x, out| m.exact_grad(x, out),
        None,
    )?;
    let errors_time = t.elapsed().as_secs_f64();
    let timings = Timings {
        setup: outcome.setup,
        assembly: outcome.assembly,
        solve: outcome.solve,
        errors: errors_time,
        total: start.elapsed().as_secs_f64(),
        ..Timings::default()
    };
    let report = SolveReport {
        problem: options.kind.name(),
        order: options.order,
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
        errors: ErrorReport {
            l2: e.l2,
            l2_rel: e.l2_rel,
            h1: e.h1_semi,
            h1_rel: e.h1_rel,
        },
        warnings: outcome.warnings,
    };
    Ok(Solution {
        problem,
        u: outcome.u,
        report,
    })
}

/// Refuses, from the mesh's counts alone and before anything is built, a direct solve
/// whose predicted factor (with the assembled matrix) does not fit in the available
/// memory: the space, operator and matrix of such a problem would take minutes and
/// gigabytes before the factorisation's own exact check could refuse it.
fn check_direct_memory(mesh: &Mesh, options: &ProblemOptions) -> Result<(), PipelineError> {
    let ncomp = if options.kind == ProblemKind::Elasticity {
        mesh.dim()
    } else {
        1
    };
    let p = predicted_lagrange_system(
        mesh.cell_type(),
        mesh.num_cells(),
        mesh.num_vertices(),
        options.order,
        ncomp,
    );
    // the assembled matrix: values, column indices and row offsets
    let matrix = 12 * p.nnz + 8 * p.dofs;
    check_predicted_memory(
        p.dofs as usize,
        p.nnz as usize,
        mesh.dim(),
        options.kind != ProblemKind::Nonlinear,
        matrix,
    )?;
    Ok(())
}

/// Writes the solution as VTU for ParaView: point fields `u` (the discrete solution,
/// `ncomp` components), `u_exact` (the interpolant of the manufactured solution) and
/// `error` (their difference), on the sub-cells of the space's node lattice.
pub fn write_solution_vtu(
    path: &Path,
    mesh: &Mesh,
    solution: &Solution,
) -> Result<(), PipelineError> {
    let exact = solution.problem.exact_interpolant();
    let error: Vec<f64> = solution.u.iter().zip(&exact).map(|(u, e)| u - e).collect();
    write_space_vtu(
        path,
        mesh,
        &solution.problem.space,
        &[("u", &solution.u), ("u_exact", &exact), ("error", &error)],
        &[],
        Encoding::Binary,
    )?;
    Ok(())
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

struct SolveVisitor<'a> {
    mesh: &'a Mesh,
    problem: &'a Problem,
    settings: &'a SolveSettings,
    solver: SolverKind,
    progress: &'a Progress,
    start: Instant,
}

impl<T: Real> FormVisitor<T> for SolveVisitor<'_> {
    type Output = Outcome;
    fn visit<P: Physics<T>>(self, op: FormOperator<T, P>) -> Result<Outcome, PipelineError> {
        let setup = self.start.elapsed().as_secs_f64();
        let warning = (self.solver != SolverKind::Direct || !self.problem.is_linear())
            .then(|| tolerance_warning::<T>(self.settings.rtol()))
            .flatten();
        let mut out = self.solve_with(op)?;
        out.setup = setup;
        out.warnings.splice(0..0, warning);
        Ok(out)
    }
}

impl SolveVisitor<'_> {
    /// The solve on the chosen backend, solver and problem kind.
    fn solve_with<T: Real, P: Physics<T>>(
        &self,
        op: FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        #[cfg(feature = "cuda")]
        if let Some(dev) = &self.settings.device {
            let (mesh, problem, settings, solver) =
                (self.mesh, self.problem, self.settings, self.solver);
            return if problem.is_linear() {
                crate::gpu_solve::linear_gpu(
                    mesh,
                    problem,
                    settings,
                    solver,
                    &op,
                    self.progress,
                    dev,
                )
            } else {
                crate::gpu_solve::nonlinear_gpu(
                    mesh,
                    problem,
                    settings,
                    solver,
                    &op,
                    self.progress,
                    dev,
                )
            };
        }
        if !self.problem.is_linear() {
            if self.solver == SolverKind::Gmres {
                self.newton_gmres(&op)
            } else {
                self.newton_direct(&op)
            }
        } else if self.solver == SolverKind::Direct {
            self.linear_direct(&op)
        } else {
            self.linear_matrix_free(&op)
        }
    }

    fn neumann<T: Real>(&self) -> Result<Vec<T>, PipelineError> {
        Ok(to_real(&self.problem.neumann_load(self.mesh)?))
    }

    /// Assembled reduced system, Cholesky (symmetric) or LU.
    fn linear_direct<T: Real, P: Physics<T>>(
        &self,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        let t = Instant::now();
        self.progress.stage("assembling the matrix");
        let neumann = self.neumann::<T>()?;
        let sys = assemble_system_of(op, self.problem, &neumann, BcMode::Dirichlet)?;
        let assembly = t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.progress.stage(format!(
            "factorising the {} x {} matrix ({} nonzeros)",
            sys.matrix.nrows(),
            sys.matrix.ncols(),
            sys.matrix.nnz()
        ));
        let kind = if sys.symmetric {
            DirectKind::Cholesky
        } else {
            DirectKind::Lu
        };
        let x: Vec<T> = DirectFactorization::new(&sys.matrix, kind)?.solve(&sys.rhs)?;
        let solve = t.elapsed().as_secs_f64();
        let mut ax = vec![T::zero(); x.len()];
        sys.matrix.matvec(&x, &mut ax);
        let b_norm = norm2(&sys.rhs);
        let r_norm = norm2(
            &sys.rhs
                .iter()
                .zip(&ax)
                .map(|(&b, &a)| b - a)
                .collect::<Vec<T>>(),
        );
        let mut u = self.problem.boundary_values.clone();
        for (&d, &v) in sys.dof_map.free().iter().zip(&x) {
            u[d as usize] = v.as_f64();
        }
        Ok(Outcome {
            u,
            method: format!(
                "assembled ({} nonzeros), sparse {} (faer)",
                sys.matrix.nnz(),
                if kind == DirectKind::Cholesky {
                    "Cholesky"
                } else {
                    "LU"
                }
            ),
            iterations: 0,
            newton: None,
            residual: ResidualReport {
                initial: b_norm,
                last: r_norm,
                relative: ratio(r_norm, b_norm),
                recursive: None,
            },
            setup: 0.0,
            assembly,
            solve,
            warnings: Vec::new(),
        })
    }

    /// Matrix-free CG/PCG on the constrained operator.
    fn linear_matrix_free<T: Real, P: Physics<T>>(
        &self,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        let t = Instant::now();
        self.progress.stage("right-hand side and boundary lifting");
        let constrained = &self.problem.dirichlet_dofs;
        let b = correction_rhs(op, self.problem, &self.neumann::<T>()?)?;
        let cop = ConstrainedOperator::new(op.linearize(&[]), constrained)?;
        let label = self.solver.name();
        let counted = Counted {
            op: &cop,
            progress: self.progress,
            label,
            applies: AtomicUsize::new(0),
        };
        let preconditioned = matches!(self.solver, SolverKind::Pcg | SolverKind::Gmres);
        let space = if preconditioned {
            self.progress.stage("Jacobi diagonal");
            let diag = cop.diagonal().unwrap_or_default();
            CpuSpace::with_jacobi(&counted, &diag)?
        } else {
            CpuSpace::new(&counted)?
        };
        let assembly = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let opts = KrylovOptions {
            rtol: self.settings.rtol(),
            max_iter: self.settings.max_iter,
            ..KrylovOptions::default()
        };
        // the correction w = u − g̃ from w = 0: the constrained rows carry no right-hand side
        let mut x = vec![T::zero(); b.len()];
        let result = match self.solver {
            SolverKind::Gmres => gmres(
                &space,
                &b,
                &mut x,
                &opts,
                &GmresOptions {
                    restart: GMRES_RESTART,
                    ..GmresOptions::default()
                },
            ),
            SolverKind::Pcg => pcg(&space, &b, &mut x, &opts),
            _ => cg(&space, &b, &mut x, &opts),
        };
        let mut warnings = Vec::new();
        let stats = accept_accuracy_limit(result, &mut warnings)?;
        let solve = t.elapsed().as_secs_f64();
        let mut u = to_f64(&x);
        add_boundary_values(&mut u, constrained, &self.problem.boundary_values)?;
        Ok(Outcome {
            u,
            method: format!(
                "matrix-free Jacobian action, {}{}",
                if preconditioned {
                    "Jacobi preconditioner"
                } else {
                    "no preconditioner"
                },
                if self.solver == SolverKind::Gmres {
                    format!(" (right), GMRES({GMRES_RESTART})")
                } else {
                    String::new()
                }
            ),
            iterations: stats.iterations,
            newton: None,
            residual: ResidualReport::of_krylov(&stats),
            setup: 0.0,
            assembly,
            solve,
            warnings,
        })
    }

    /// Newton with line search, assembled Jacobian and sparse LU per step.
    fn newton_direct<T: Real, P: Physics<T>>(
        &self,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        let t = Instant::now();
        let n = self.problem.num_dofs();
        let map = DofMap::new(n, &self.problem.dirichlet_dofs)?;
        let plan = AssemblyPlan::new(
            ferrofem_operator::ElementMatrices::restriction(op),
            Some(&map),
        )?;
        let system = NewtonSystem {
            op,
            neumann: self.neumann::<T>()?,
            g: to_real(&self.problem.boundary_values),
            constrained: &self.problem.dirichlet_dofs,
            map,
            plan,
            progress: self.progress,
            assembly: Cell::new(Duration::ZERO),
            steps: Cell::new(0),
        };
        let setup = t.elapsed();
        self.run_newton(
            &system,
            &system.g,
            setup,
            || system.assembly.get(),
            "Newton with line search; assembled Jacobian, sparse LU (faer) per step".into(),
        )
    }

    /// Newton with line search; each step's Jacobian solve is matrix-free GMRES with a
    /// Jacobi preconditioner from the Jacobian's diagonal at the current state.
    fn newton_gmres<T: Real, P: Physics<T>>(
        &self,
        op: &FormOperator<T, P>,
    ) -> Result<Outcome, PipelineError> {
        let t = Instant::now();
        let system = NewtonGmresSystem {
            op,
            neumann: self.neumann::<T>()?,
            g: to_real(&self.problem.boundary_values),
            constrained: &self.problem.dirichlet_dofs,
            newton_rtol: self.settings.rtol(),
            max_iter: self.settings.max_iter,
            progress: self.progress,
            f0: Cell::new(None),
            diagonal: Cell::new(Duration::ZERO),
            steps: Cell::new(0),
        };
        let setup = t.elapsed();
        self.run_newton(
            &system,
            &system.g,
            setup,
            || system.diagonal.get(),
            format!(
                "Newton with line search; matrix-free Jacobian action, GMRES({GMRES_RESTART}) \
                 right-preconditioned by Jacobi (Jacobian diagonal per step), relative \
                 tolerance min(0.1, ‖F_k‖/‖F_0‖) per step"
            ),
        )
    }

    /// Runs Newton on `system` from `g` and reports it: `setup` and the per-step setup
    /// time that `step_setup` returns afterwards (assembly or Jacobi diagonals) are
    /// counted as assembly, the rest as solve.
    fn run_newton<T: Real, S: NonlinearProblem<T>>(
        &self,
        system: &S,
        g: &[T],
        setup: Duration,
        step_setup: impl Fn() -> Duration,
        method: String,
    ) -> Result<Outcome, PipelineError> {
        let t = Instant::now();
        let opts = NewtonOptions {
            rtol: self.settings.rtol(),
            max_iter: 30,
            ..NewtonOptions::default()
        };
        let mut u = g.to_vec();
        self.progress.stage("Newton: initial residual");
        let stats = newton(system, &mut u, &opts)?;
        let solve = t.elapsed().saturating_sub(step_setup());
        Ok(newton_outcome(
            to_f64(&u),
            &stats,
            method,
            setup + step_setup(),
            solve,
        ))
    }
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

/// `a / b`, or `a` when `b = 0`.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        a
    }
}

/// 2-norm accumulated in f64.
fn norm2<T: Real>(v: &[T]) -> f64 {
    v.iter().map(|x| x.as_f64().powi(2)).sum::<f64>().sqrt()
}

/// An operator that counts its applications and shows the count as progress.
struct Counted<'a, A> {
    op: A,
    progress: &'a Progress,
    label: &'static str,
    applies: AtomicUsize,
}

impl<T: Real, A: LinearOperator<T>> LinearOperator<T> for Counted<'_, A> {
    fn nrows(&self) -> usize {
        self.op.nrows()
    }
    fn ncols(&self) -> usize {
        self.op.ncols()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        self.op.apply(x, y);
        let k = self.applies.fetch_add(1, Ordering::Relaxed);
        if !self.progress.is_hidden() {
            self.progress
                .stage(format!("{}: iteration {k}", self.label));
        }
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        self.op.diagonal()
    }
}

/// The nonlinear system `F(u) = 0` with `F_f = r_f(u) − N_f`, `F_c = u_c − g_c`, solved
/// for Newton by assembling `J_ff(u)` and factoring it.
struct NewtonSystem<'a, T: Real, P: Physics<T>> {
    op: &'a FormOperator<T, P>,
    neumann: Vec<T>,
    g: Vec<T>,
    constrained: &'a [u32],
    map: DofMap,
    plan: AssemblyPlan,
    progress: &'a Progress,
    assembly: Cell<Duration>,
    steps: Cell<usize>,
}

/// `F(u)`: `F_f = r_f(u) − N_f`, `F_c = u_c − g_c`.
fn newton_residual<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    neumann: &[T],
    g: &[T],
    constrained: &[u32],
    u: &[T],
    r: &mut [T],
) {
    full_residual(op, neumann, u, r);
    for &c in constrained {
        let c = c as usize;
        r[c] = u[c] - g[c];
    }
}

impl<T: Real, P: Physics<T>> NonlinearProblem<T> for NewtonSystem<'_, T, P> {
    fn residual(&self, u: &[T], r: &mut [T]) -> Result<(), SolverError> {
        newton_residual(self.op, &self.neumann, &self.g, self.constrained, u, r);
        Ok(())
    }

    fn solve_jacobian(&self, u: &[T], r: &[T], du: &mut [T]) -> Result<LinearInfo, SolverError> {
        let k = self.steps.get() + 1;
        self.steps.set(k);
        self.progress.stage(format!(
            "Newton step {k}: assembling the Jacobian (‖F‖ = {:.3e})",
            norm2(r)
        ));
        let t = Instant::now();
        let a = self
            .plan
            .assemble_matrix(self.op, Some(u), Strategy::default())
            .map_err(|e| SolverError::backend(format!("Jacobian assembly: {e}")))?;
        self.assembly.set(self.assembly.get() + t.elapsed());
        self.progress
            .stage(format!("Newton step {k}: sparse LU of the Jacobian"));
        let rf: Vec<T> = self.map.free().iter().map(|&d| r[d as usize]).collect();
        let x: Vec<T> = DirectFactorization::new(&a, DirectKind::Lu)?.solve(&rf)?;
        du.copy_from_slice(r);
        for (&d, &v) in self.map.free().iter().zip(&x) {
            du[d as usize] = v;
        }
        Ok(LinearInfo { iterations: 0 })
    }
}

/// The nonlinear system of [`NewtonSystem`], solved for Newton by matrix-free GMRES with
/// the Jacobian's action `[J_ff 0; 0 I]` and Jacobi from its diagonal at `u`.
struct NewtonGmresSystem<'a, T: Real, P: Physics<T>> {
    op: &'a FormOperator<T, P>,
    neumann: Vec<T>,
    g: Vec<T>,
    constrained: &'a [u32],
    newton_rtol: f64,
    max_iter: usize,
    progress: &'a Progress,
    /// `‖F(u₀)‖`, from the first Jacobian solve (whose right-hand side is `F(u₀)`).
    f0: Cell<Option<f64>>,
    diagonal: Cell<Duration>,
    steps: Cell<usize>,
}

impl<T: Real, P: Physics<T>> NonlinearProblem<T> for NewtonGmresSystem<'_, T, P> {
    fn residual(&self, u: &[T], r: &mut [T]) -> Result<(), SolverError> {
        newton_residual(self.op, &self.neumann, &self.g, self.constrained, u, r);
        Ok(())
    }

    fn solve_jacobian(&self, u: &[T], r: &[T], du: &mut [T]) -> Result<LinearInfo, SolverError> {
        let k = self.steps.get() + 1;
        self.steps.set(k);
        let f = norm2(r);
        let f0 = self.f0.get().unwrap_or(f);
        self.f0.set(Some(f0));
        let t = Instant::now();
        self.progress.stage(format!(
            "Newton step {k}: Jacobian diagonal (‖F‖ = {f:.3e})"
        ));
        let cop = ConstrainedOperator::new(self.op.linearize(u), self.constrained)
            .map_err(|e| SolverError::backend(format!("Jacobian operator: {e}")))?;
        let counted = Counted {
            op: &cop,
            progress: self.progress,
            label: "gmres",
            applies: AtomicUsize::new(0),
        };
        // Jacobi needs a positive diagonal; should the g2 = 2u∇u term make an entry
        // non-positive (steep gradients on a coarse mesh), this step goes unpreconditioned.
        let space = match CpuSpace::with_operator_jacobi(&counted) {
            Err(SolverError::InvalidPreconditioner { .. }) => CpuSpace::new(&counted)?,
            other => other?,
        };
        self.diagonal.set(self.diagonal.get() + t.elapsed());
        let opts = newton_forcing::<T>(f, f0, self.newton_rtol, self.max_iter);
        let mut x = vec![T::zero(); r.len()];
        let b = r.to_vec();
        let stats = gmres(
            &space,
            &b,
            &mut x,
            &opts,
            &GmresOptions {
                restart: GMRES_RESTART,
                ..GmresOptions::default()
            },
        )?;
        du.copy_from_slice(&x);
        Ok(LinearInfo {
            iterations: stats.iterations,
        })
    }
}
