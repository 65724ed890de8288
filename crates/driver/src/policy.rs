//! The solver policy both backends share: the GMRES restart length, the forcing term of
//! inexact Newton, and how a tolerance below the precision's rounding level is treated
//! (warned of up front; a solve that stops at that level returns its iterate with a
//! warning).

use ferrofem_base::Real;
use ferrofem_solver::{SolveOptions as KrylovOptions, SolveStats, SolverError};

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
