//! Conjugate gradients, plain and preconditioned, written once against [`KrylovSpace`].
//!
//! **Stopping test.** Both methods stop on the *unpreconditioned* residual 2-norm:
//! `‖b − A x‖₂ <= max(rtol · ‖b‖₂, atol)`. Using the true residual norm in PCG too (one
//! extra dot product per iteration) makes the tolerance mean the same thing whatever the
//! preconditioner, so CG and PCG runs compare. The test is relative to `‖b‖`, so it is
//! invariant to the scale of the problem only when `b` holds nothing but equations of the
//! operator: a system with eliminated (Dirichlet) rows is posed for the correction with a
//! zero right-hand side on those rows (`ferrofem_operator::lift_rhs`), never with the
//! boundary values there, which do not scale with the operator.
//!
//! **What is reported is verified.** The recurrence's residual drifts from the true one by
//! rounding (in f32 by orders of magnitude near a tight tolerance). When the recurrence
//! meets the target, the true residual `b − A x` is recomputed (one more operator
//! application); convergence is reported only when it meets the target too, and
//! [`SolveStats::final_residual`] is always that recomputed value. When it does not, it
//! replaces the recursive residual and CG restarts from it; a restart that does not halve
//! it shows the rounding floor of the precision, and the solve stops with
//! [`SolverError::AccuracyLimit`] (the iterate is left in `x`).
//!
//! **Failures** are typed errors that stop the iteration at once: NaN/Inf in the residual
//! or in `pᵀAp` ([`SolverError::NonFinite`], with the iteration), non-positive curvature
//! ([`SolverError::NotPositiveDefinite`]), growth of the residual beyond
//! `divergence_factor` × the initial one ([`SolverError::Diverged`]), the rounding floor
//! ([`SolverError::AccuracyLimit`]) and the iteration limit ([`SolverError::NotConverged`],
//! which carries the full [`SolveStats`]; the last iterate is left in `x`). A successful
//! return therefore always means converged.
//!
//! Iterations are numbered from 1; iteration 0 is the set-up (`r₀ = b − A x₀`, which
//! always costs one operator application). When `b = 0` the solve returns `x = 0` at once.

use ferrofem_base::Real;

use crate::{KrylovSpace, SolverError};

/// Tolerances and limits of a Krylov solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveOptions {
    /// Relative tolerance on `‖r‖₂ / ‖b‖₂`, in `[0, 1)`.
    pub rtol: f64,
    /// Absolute tolerance on `‖r‖₂` (the solve stops when either is met).
    pub atol: f64,
    /// The iteration limit.
    pub max_iter: usize,
    /// Keep the residual norm of every iteration in [`SolveStats::history`].
    pub record_history: bool,
    /// Stop with [`SolverError::Diverged`] when `‖r_k‖ > divergence_factor · ‖r_0‖`.
    pub divergence_factor: f64,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            rtol: 1e-8,
            atol: 0.0,
            max_iter: 10_000,
            record_history: false,
            divergence_factor: 1e8,
        }
    }
}

impl SolveOptions {
    /// Checks that `rtol` lies in `[0, 1)`, `atol` is a non-negative number, one of them
    /// is positive (else no residual could ever stop the solve), and the divergence factor
    /// exceeds 1.
    pub fn validate(&self) -> Result<(), SolverError> {
        if !(0.0..1.0).contains(&self.rtol) {
            return Err(SolverError::InvalidOptions(format!(
                "rtol must lie in [0, 1), got {}",
                self.rtol
            )));
        }
        if !(self.atol >= 0.0 && self.atol.is_finite()) {
            return Err(SolverError::InvalidOptions(format!(
                "atol must be a non-negative number, got {}",
                self.atol
            )));
        }
        if self.rtol == 0.0 && self.atol == 0.0 {
            return Err(SolverError::InvalidOptions(
                "rtol and atol are both zero: no residual would stop the solve".into(),
            ));
        }
        if self.divergence_factor.is_nan() || self.divergence_factor <= 1.0 {
            return Err(SolverError::InvalidOptions(format!(
                "divergence factor must exceed 1, got {}",
                self.divergence_factor
            )));
        }
        Ok(())
    }
}

/// Why a Krylov solve stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// `‖r‖ <= rtol · ‖b‖`.
    RelativeTolerance,
    /// `‖r‖ <= atol` (and the relative test was not met).
    AbsoluteTolerance,
    /// `b = 0`, so the solution is `x = 0` exactly.
    ZeroRhs,
    /// The iteration limit was reached (only inside [`SolverError::NotConverged`]).
    MaxIterations,
    /// The method's own residual went below the true one, which stayed above the target
    /// at the rounding level of the arithmetic (only inside [`SolverError::AccuracyLimit`]).
    AccuracyLimit,
}

/// What a Krylov solve did.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveStats {
    /// Iterations done (operator applications after the initial residual).
    pub iterations: usize,
    /// Whether the stopping test was met.
    pub converged: bool,
    /// `‖b − A x₀‖₂`.
    pub initial_residual: f64,
    /// `‖b − A x‖₂` of the returned `x`, recomputed from it (not the recurrence's value).
    pub final_residual: f64,
    /// The residual norm the method's recurrence (CG) or least-squares problem (GMRES)
    /// held at the end; it drifts from [`SolveStats::final_residual`] by rounding.
    pub recursive_residual: f64,
    /// `‖b‖₂`.
    pub rhs_norm: f64,
    /// The absolute residual the solve aimed for: `max(rtol · ‖b‖, atol)`.
    pub target: f64,
    /// `‖r_k‖₂` for `k = 0..=iterations` when `record_history` was set, else empty.
    pub history: Vec<f64>,
    /// Why the solve stopped.
    pub reason: StopReason,
}

impl SolveStats {
    /// `‖r‖ / ‖b‖` at the end (the absolute residual when `b = 0`).
    pub fn relative_residual(&self) -> f64 {
        if self.rhs_norm > 0.0 {
            self.final_residual / self.rhs_norm
        } else {
            self.final_residual
        }
    }
}

/// Solves `A x = b` by conjugate gradients, starting from the `x` given.
///
/// `A` must be symmetric positive definite; the space's preconditioner is ignored. See the
/// module documentation for the stopping test and the errors.
pub fn cg<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
) -> Result<SolveStats, SolverError> {
    conjugate_gradients(space, b, x, opts, false)
}

/// Solves `A x = b` by preconditioned conjugate gradients with the space's preconditioner
/// (for [`crate::CpuSpace`]: Jacobi when built with one, else the identity), starting from
/// the `x` given.
///
/// `A` and `M` must be symmetric positive definite. The stopping test is on the
/// unpreconditioned residual, as for [`cg`].
pub fn pcg<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
) -> Result<SolveStats, SolverError> {
    conjugate_gradients(space, b, x, opts, true)
}

/// Returns `Err(NonFinite)` when `value` is NaN or infinite.
pub(crate) fn finite(
    value: f64,
    quantity: &'static str,
    iteration: usize,
) -> Result<f64, SolverError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(SolverError::NonFinite {
            quantity,
            iteration,
        })
    }
}

/// The common start of the Krylov loops: `‖b‖` and the stats with their target; for
/// `b = 0` the exact solution `x = 0` of a nonsingular system, with `true` (finished).
pub(crate) fn begin_solve<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
) -> Result<(SolveStats, bool), SolverError> {
    let rhs_norm = finite(space.norm(b)?, "right-hand side", 0)?;
    let mut stats = SolveStats {
        iterations: 0,
        converged: false,
        initial_residual: 0.0,
        final_residual: 0.0,
        recursive_residual: 0.0,
        rhs_norm,
        target: (opts.rtol * rhs_norm).max(opts.atol),
        history: Vec::new(),
        reason: StopReason::MaxIterations,
    };
    if rhs_norm > 0.0 {
        return Ok((stats, false));
    }
    space.copy(&space.zeros()?, x)?;
    stats.converged = true;
    stats.reason = StopReason::ZeroRhs;
    if opts.record_history {
        stats.history.push(0.0);
    }
    Ok((stats, true))
}

/// `r ← b − A x` (with `q` as scratch for `A x`); returns `‖r‖₂`.
fn recompute_residual<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &S::Vector,
    q: &mut S::Vector,
    r: &mut S::Vector,
    iteration: usize,
) -> Result<f64, SolverError> {
    space.apply(x, q)?;
    space.copy(b, r)?;
    space.axpy(-T::one(), q, r)?;
    finite(space.norm(r)?, "true residual", iteration)
}

/// `z = M⁻¹ r` (or `r` itself) and `rᵀz`, checked positive.
fn preconditioned_product<T: Real, S: KrylovSpace<T>>(
    space: &S,
    r: &S::Vector,
    z: Option<&mut S::Vector>,
    rr: f64,
    iteration: usize,
) -> Result<f64, SolverError> {
    match z {
        Some(z) => {
            space.precondition(r, z)?;
            let rz = finite(space.dot(r, z)?, "rᵀM⁻¹r", iteration)?;
            if rz <= 0.0 {
                return Err(SolverError::PreconditionerNotPositiveDefinite {
                    iteration,
                    value: rz,
                });
            }
            Ok(rz)
        }
        None => Ok(rr),
    }
}

/// The one CG loop; `preconditioned` selects whether `z = M⁻¹ r` or `z = r`.
///
/// When the recurrence meets the target, the true residual `b − A x` is recomputed. If it
/// meets the target too, the solve has converged and reports it. Otherwise it replaces the
/// recursive residual and the iteration restarts from it (steepest descent direction); a
/// restart that does not halve the true residual shows that it sits at the rounding level
/// of the precision, and the solve stops with [`SolverError::AccuracyLimit`].
fn conjugate_gradients<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
    preconditioned: bool,
) -> Result<SolveStats, SolverError> {
    opts.validate()?;
    let (mut stats, finished) = begin_solve(space, b, x, opts)?;
    if finished {
        return Ok(stats);
    }

    // r = b − A x, p = z = M⁻¹ r.
    let mut q = space.zeros()?;
    let mut r = space.zeros()?;
    let mut rnorm = recompute_residual(space, b, x, &mut q, &mut r, 0)?;
    stats.initial_residual = rnorm;
    stats.final_residual = rnorm;
    stats.recursive_residual = rnorm;
    if opts.record_history {
        stats.history.push(rnorm);
    }
    if let Some(reason) = stop_reason(opts, stats.rhs_norm, rnorm) {
        stats.converged = true;
        stats.reason = reason;
        return Ok(stats);
    }

    let mut z = if preconditioned {
        Some(space.zeros()?)
    } else {
        None
    };
    let mut rz = preconditioned_product(space, &r, z.as_mut(), rnorm * rnorm, 0)?;
    let mut p = space.zeros()?;
    space.copy(z.as_ref().unwrap_or(&r), &mut p)?;
    // the true residual at the last replacement, to tell progress from the rounding floor
    let mut replaced_at: Option<f64> = None;

    for k in 1..=opts.max_iter {
        space.apply(&p, &mut q)?;
        let curvature = finite(space.dot(&p, &q)?, "pᵀAp", k)?;
        if curvature <= 0.0 {
            return Err(SolverError::NotPositiveDefinite {
                iteration: k,
                curvature,
            });
        }
        let alpha = rz / curvature;
        space.axpy(T::of(alpha), &p, x)?;
        space.axpy(T::of(-alpha), &q, &mut r)?;
        let mut rr = finite(space.dot(&r, &r)?, "residual", k)?;
        rnorm = rr.sqrt();
        stats.iterations = k;
        stats.final_residual = rnorm;
        stats.recursive_residual = rnorm;
        if opts.record_history {
            stats.history.push(rnorm);
        }
        let mut restart = false;
        if stop_reason(opts, stats.rhs_norm, rnorm).is_some() {
            let true_norm = recompute_residual(space, b, x, &mut q, &mut r, k)?;
            stats.final_residual = true_norm;
            if let Some(last) = stats.history.last_mut() {
                *last = true_norm;
            }
            if let Some(reason) = stop_reason(opts, stats.rhs_norm, true_norm) {
                stats.converged = true;
                stats.reason = reason;
                return Ok(stats);
            }
            if replaced_at.is_some_and(|before| true_norm > 0.5 * before) {
                stats.reason = StopReason::AccuracyLimit;
                return Err(SolverError::AccuracyLimit(Box::new(stats)));
            }
            replaced_at = Some(true_norm);
            rnorm = true_norm;
            rr = true_norm * true_norm;
            restart = true;
        }
        if rnorm > opts.divergence_factor * stats.initial_residual {
            return Err(SolverError::Diverged {
                iteration: k,
                residual: rnorm,
                initial: stats.initial_residual,
                factor: opts.divergence_factor,
            });
        }
        let rz_new = preconditioned_product(space, &r, z.as_mut(), rr, k)?;
        let beta = if restart { 0.0 } else { rz_new / rz };
        space.xpby(z.as_ref().unwrap_or(&r), T::of(beta), &mut p)?;
        rz = rz_new;
    }
    // the iterate left in x is reported with its true residual
    stats.final_residual = recompute_residual(space, b, x, &mut q, &mut r, opts.max_iter)?;
    if let Some(last) = stats.history.last_mut() {
        *last = stats.final_residual;
    }
    Err(SolverError::NotConverged(Box::new(stats)))
}

/// Whether `rnorm` meets the stopping test, and which part of it.
pub(crate) fn stop_reason(opts: &SolveOptions, rhs_norm: f64, rnorm: f64) -> Option<StopReason> {
    if rnorm <= opts.rtol * rhs_norm {
        Some(StopReason::RelativeTolerance)
    } else if rnorm <= opts.atol {
        Some(StopReason::AbsoluteTolerance)
    } else {
        None
    }
}
