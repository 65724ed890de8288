//! The CPU's Newton solves of the nonlinear problem: Newton with line search on the full
//! residual with the Dirichlet rows `u_c − g_c`, each step's correction from the assembled
//! Jacobian on the free dofs and a sparse LU (`direct`), or from matrix-free GMRES(30)
//! right-preconditioned by Jacobi from the Jacobian's diagonal at the current state
//! (`matrix_free`), to the relative tolerance of [`newton_forcing`].

use super::counted::Counted;
use crate::pipeline_error::PipelineError;
use crate::policy::{newton_forcing, GMRES_RESTART};
use crate::progress::Progress;
use crate::seam::{newton_outcome, Outcome, SolveCase};
use crate::terms::{full_residual, norm2, to_f64, to_real};
use ferrofem_assembly::{AssemblyPlan, DofMap, Strategy};
use ferrofem_base::Real;
use ferrofem_operator::{ConstrainedOperator, FormOperator};
use ferrofem_physics::Physics;
use ferrofem_solver::{
    gmres, newton, CpuSpace, DirectFactorization, DirectKind, GmresOptions, LinearInfo,
    NewtonOptions, NonlinearProblem, SolverError,
};
use std::cell::Cell;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

/// Newton with line search, assembled Jacobian and sparse LU per step.
pub(super) fn direct<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<Outcome, PipelineError> {
    let t = Instant::now();
    let n = case.problem.num_dofs();
    let map = DofMap::new(n, &case.problem.dirichlet_dofs)?;
    let plan = AssemblyPlan::new(
        ferrofem_operator::ElementMatrices::restriction(op),
        Some(&map),
    )?;
    let system = NewtonSystem {
        op,
        neumann: case.neumann::<T>()?,
        g: to_real(&case.problem.boundary_values),
        constrained: &case.problem.dirichlet_dofs,
        map,
        plan,
        progress: case.progress,
        assembly: Cell::new(Duration::ZERO),
        steps: Cell::new(0),
    };
    let setup = t.elapsed();
    run_newton(
        case,
        &system,
        &system.g,
        setup,
        || system.assembly.get(),
        "Newton with line search; assembled Jacobian, sparse LU (faer) per step".into(),
    )
}

/// Newton with line search; each step's Jacobian solve is matrix-free GMRES with a
/// Jacobi preconditioner from the Jacobian's diagonal at the current state.
pub(super) fn matrix_free<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<Outcome, PipelineError> {
    let t = Instant::now();
    let system = NewtonGmresSystem {
        op,
        neumann: case.neumann::<T>()?,
        g: to_real(&case.problem.boundary_values),
        constrained: &case.problem.dirichlet_dofs,
        newton_rtol: case.settings.rtol(),
        max_iter: case.settings.max_iter,
        progress: case.progress,
        f0: Cell::new(None),
        diagonal: Cell::new(Duration::ZERO),
        steps: Cell::new(0),
    };
    let setup = t.elapsed();
    run_newton(
        case,
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
    case: &SolveCase<'_>,
    system: &S,
    g: &[T],
    setup: Duration,
    step_setup: impl Fn() -> Duration,
    method: String,
) -> Result<Outcome, PipelineError> {
    let t = Instant::now();
    let opts = NewtonOptions {
        rtol: case.settings.rtol(),
        max_iter: 30,
        ..NewtonOptions::default()
    };
    let mut u = g.to_vec();
    case.progress.stage("Newton: initial residual");
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
