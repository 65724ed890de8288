//! Newton's method with Armijo backtracking on `‖F‖₂` for nonlinear systems `F(u) = 0`.
//!
//! The problem supplies the residual and a solve with its Jacobian; whether that solve is
//! direct or Krylov (and how accurate) is the problem's choice, and the Krylov iterations
//! it reports are summed in [`NewtonStats::linear_iterations`].
//!
//! Each iteration computes `δ = J(u)⁻¹ F(u)` and updates `u ← u − λ δ`. With line search,
//! `λ` starts at 1 and is reduced (by minimising the quadratic model of `‖F(u − λδ)‖²`,
//! safeguarded to `[0.1 λ, 0.5 λ]`) until the Armijo condition
//! `‖F(u − λδ)‖ <= (1 − c λ) ‖F(u)‖` holds; trial points whose residual is NaN/Inf are
//! rejected like any other. Convergence is `‖F(u_k)‖ <= max(rtol · ‖F(u₀)‖, atol)`.

use ferrofem_base::Real;

use crate::cpu::norm;
use crate::SolverError;

/// What a Jacobian solve reports back to Newton.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinearInfo {
    /// Krylov iterations of the solve (0 for a direct solve).
    pub iterations: usize,
}

/// A nonlinear system `F(u) = 0` with a way to solve with its Jacobian.
pub trait NonlinearProblem<T: Real> {
    /// Computes `r = F(u)`.
    fn residual(&self, u: &[T], r: &mut [T]) -> Result<(), SolverError>;
    /// Solves `J(u) δ = r` for the Newton correction `δ` (Newton then sets `u ← u − λδ`).
    fn solve_jacobian(&self, u: &[T], r: &[T], du: &mut [T]) -> Result<LinearInfo, SolverError>;
}

/// Tolerances, limits and line-search settings of [`newton`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NewtonOptions {
    /// Relative tolerance on `‖F(u_k)‖ / ‖F(u₀)‖`.
    pub rtol: f64,
    /// Absolute tolerance on `‖F(u_k)‖`.
    pub atol: f64,
    /// The iteration limit.
    pub max_iter: usize,
    /// Backtrack when the full step does not reduce `‖F‖` enough (otherwise always `λ = 1`).
    pub line_search: bool,
    /// The Armijo constant `c` in `‖F(u − λδ)‖ <= (1 − cλ)‖F(u)‖`.
    pub armijo: f64,
    /// The line search gives up (with [`SolverError::LineSearchFailed`]) below this `λ`.
    pub min_step: f64,
    /// Stop with [`SolverError::Diverged`] when `‖F(u_k)‖ > divergence_factor · ‖F(u₀)‖`.
    pub divergence_factor: f64,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        NewtonOptions {
            rtol: 1e-10,
            atol: 0.0,
            max_iter: 50,
            line_search: true,
            armijo: 1e-4,
            min_step: 1e-8,
            divergence_factor: 1e8,
        }
    }
}

impl NewtonOptions {
    /// Checks that tolerances are non-negative, `0 < c < 1`, `0 < min_step <= 1` and the
    /// divergence factor exceeds 1.
    pub fn validate(&self) -> Result<(), SolverError> {
        let bad = |msg: String| Err(SolverError::InvalidOptions(msg));
        if !(self.rtol >= 0.0 && self.rtol.is_finite() && self.atol >= 0.0) || self.atol.is_nan() {
            return bad(format!(
                "Newton tolerances must be non-negative (rtol {}, atol {})",
                self.rtol, self.atol
            ));
        }
        if !(self.armijo > 0.0 && self.armijo < 1.0) {
            return bad(format!(
                "Armijo constant must lie in (0, 1), got {}",
                self.armijo
            ));
        }
        if !(self.min_step > 0.0 && self.min_step <= 1.0) {
            return bad(format!(
                "minimum step must lie in (0, 1], got {}",
                self.min_step
            ));
        }
        if self.divergence_factor.is_nan() || self.divergence_factor <= 1.0 {
            return bad(format!(
                "divergence factor must exceed 1, got {}",
                self.divergence_factor
            ));
        }
        Ok(())
    }
}

/// What Newton did.
#[derive(Debug, Clone, PartialEq)]
pub struct NewtonStats {
    /// Newton iterations done.
    pub iterations: usize,
    /// `‖F(u_k)‖₂` for `k = 0..=iterations`.
    pub residual_history: Vec<f64>,
    /// The accepted step length `λ` of each iteration.
    pub step_lengths: Vec<f64>,
    /// Krylov iterations summed over all Jacobian solves.
    pub linear_iterations: usize,
    /// Whether the stopping test was met.
    pub converged: bool,
}

impl NewtonStats {
    /// The last residual norm.
    pub fn final_residual(&self) -> f64 {
        self.residual_history.last().copied().unwrap_or(f64::NAN)
    }
}

/// Solves `F(u) = 0` by Newton's method from the `u` given, leaving the result in `u`.
///
/// Returns the statistics on convergence. Errors: NaN/Inf in `F` at the start or (without
/// line search) after a step, or in the Newton correction ([`SolverError::NonFinite`]);
/// a failed line search; divergence; the iteration limit
/// ([`SolverError::NewtonNotConverged`], with the statistics, the last iterate in `u`);
/// and any error of the problem's own residual or Jacobian solve.
pub fn newton<T: Real, P: NonlinearProblem<T> + ?Sized>(
    problem: &P,
    u: &mut [T],
    opts: &NewtonOptions,
) -> Result<NewtonStats, SolverError> {
    opts.validate()?;
    let n = u.len();
    let mut r = vec![T::zero(); n];
    problem.residual(u, &mut r)?;
    let mut f = norm(&r);
    if !f.is_finite() {
        return Err(SolverError::NonFinite {
            quantity: "nonlinear residual",
            iteration: 0,
        });
    }
    let f0 = f;
    let target = (opts.rtol * f0).max(opts.atol);
    let mut stats = NewtonStats {
        iterations: 0,
        residual_history: vec![f],
        step_lengths: Vec::new(),
        linear_iterations: 0,
        converged: f <= target,
    };
    if stats.converged {
        return Ok(stats);
    }

    let mut du = vec![T::zero(); n];
    let mut trial = vec![T::zero(); n];
    let mut r_trial = vec![T::zero(); n];
    for k in 1..=opts.max_iter {
        du.iter_mut().for_each(|d| *d = T::zero());
        let info = problem.solve_jacobian(u, &r, &mut du)?;
        stats.linear_iterations += info.iterations;
        if !norm(&du).is_finite() {
            return Err(SolverError::NonFinite {
                quantity: "Newton correction",
                iteration: k,
            });
        }

        let mut lambda = 1.0f64;
        let f_trial = loop {
            let step = T::of(lambda);
            for ((t, &ui), &di) in trial.iter_mut().zip(u.iter()).zip(&du) {
                *t = ui - step * di;
            }
            problem.residual(&trial, &mut r_trial)?;
            let ft = norm(&r_trial);
            if !opts.line_search {
                if !ft.is_finite() {
                    return Err(SolverError::NonFinite {
                        quantity: "nonlinear residual",
                        iteration: k,
                    });
                }
                break ft;
            }
            if ft.is_finite() && ft <= (1.0 - opts.armijo * lambda) * f {
                break ft;
            }
            // Minimise the quadratic through g(0) = f², g'(0) = −2f², g(λ) = ft².
            let next = if ft.is_finite() {
                let model = f * f * lambda * lambda / (ft * ft - f * f + 2.0 * f * f * lambda);
                model.clamp(0.1 * lambda, 0.5 * lambda)
            } else {
                0.5 * lambda
            };
            if next < opts.min_step {
                return Err(SolverError::LineSearchFailed {
                    iteration: k,
                    residual: f,
                    min_step: opts.min_step,
                });
            }
            lambda = next;
        };

        u.copy_from_slice(&trial);
        std::mem::swap(&mut r, &mut r_trial);
        f = f_trial;
        stats.iterations = k;
        stats.residual_history.push(f);
        stats.step_lengths.push(lambda);
        if f <= target {
            stats.converged = true;
            return Ok(stats);
        }
        if f > opts.divergence_factor * f0 {
            return Err(SolverError::Diverged {
                iteration: k,
                residual: f,
                initial: f0,
                factor: opts.divergence_factor,
            });
        }
    }
    Err(SolverError::NewtonNotConverged(Box::new(stats)))
}
