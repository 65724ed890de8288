//! What a solve reports: phase timings, residual norms, Newton's history, the errors
//! against the manufactured solution, and the solved problem itself. The JSON output of
//! `ferrofem solve` is these structs serialised.

use crate::problem::Problem;
use ferrofem_solver::{NewtonStats, SolveStats};
use serde::Serialize;

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

/// Everything `ferrofem solve` reports (JSON field names are the struct's).
#[derive(Clone, Debug, Serialize)]
pub struct SolveReport {
    /// Problem name.
    pub problem: String,
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
    /// Errors against the manufactured solution (manufactured problems only).
    pub errors: Option<ErrorReport>,
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

/// `a / b`, or `a` when `b = 0`.
pub(crate) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        a
    }
}
