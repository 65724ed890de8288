//! Newton's method with Armijo backtracking on `‖F‖₂` for nonlinear systems `F(u) = 0`.
//!
//! The problem supplies the residual and a solve with its Jacobian; whether that solve is
//! direct or Krylov (and how accurate) is the problem's choice, and the Krylov iterations
//! it reports are summed in [`NewtonStats::linear_iterations`].
//!
//! [`newton`] works on host slices through [`NonlinearProblem`]; [`newton_in`] runs the
//! same loop on a [`NonlinearSpace`], whose vectors may live on a GPU.
//!
//! Each iteration computes `δ = J(u)⁻¹ F(u)` and updates `u ← u − λ δ`. With line search,
//! `λ` starts at 1 and is reduced (by minimising the quadratic model of `‖F(u − λδ)‖²`,
//! safeguarded to `[0.1 λ, 0.5 λ]`) until the Armijo condition
//! `‖F(u − λδ)‖ <= (1 − c λ) ‖F(u)‖` holds; trial points whose residual is NaN/Inf are
//! rejected like any other. Convergence is `‖F(u_k)‖ <= max(rtol · ‖F(u₀)‖, atol)`.
//!
//! The test is relative to the initial residual, so it is invariant to the scale of the
//! problem when `F(u₀)` holds only equations that scale with it: with Dirichlet rows
//! `F_c = u_c − g_c`, start from a `u₀` that satisfies them (as the pipelines do, from the
//! boundary-lifted guess), so that `F_c(u₀) = 0` does not set the reference.

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
    /// Checks that `rtol` lies in `[0, 1)`, `atol` is non-negative, one of them is positive,
    /// `0 < c < 1`, `0 < min_step <= 1` and the divergence factor exceeds 1.
    pub fn validate(&self) -> Result<(), SolverError> {
        let bad = |msg: String| Err(SolverError::InvalidOptions(msg));
        let atol_ok = self.atol >= 0.0 && self.atol.is_finite();
        if !(0.0..1.0).contains(&self.rtol) || !atol_ok {
            return bad(format!(
                "Newton tolerances: rtol must lie in [0, 1) and atol be a non-negative number \
                 (rtol {}, atol {})",
                self.rtol, self.atol
            ));
        }
        if self.rtol == 0.0 && self.atol == 0.0 {
            return bad("Newton's rtol and atol are both zero: no residual would stop it".into());
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
    /// Krylov iterations of each Newton step's Jacobian solve (0 for direct solves), one
    /// entry per Jacobian solve.
    pub step_linear_iterations: Vec<usize>,
    /// Whether the stopping test was met.
    pub converged: bool,
}

impl NewtonStats {
    /// The last residual norm.
    pub fn final_residual(&self) -> f64 {
        self.residual_history.last().copied().unwrap_or(f64::NAN)
    }
}

/// A nonlinear system `F(u) = 0` whose vectors live in a backend of their own (host
/// `Vec`s, GPU device buffers): the few vector operations Newton's update and line search
/// need, the residual and a solve with the Jacobian. [`newton_in`] runs on it; every
/// [`NonlinearProblem`] is one over host vectors (see [`newton`]).
pub trait NonlinearSpace<T: Real> {
    /// The vector type.
    type Vector;
    /// A new vector of zeros.
    fn zeros(&self) -> Result<Self::Vector, SolverError>;
    /// `‖v‖₂` in `f64` (NaN stays NaN, so that Newton can detect it).
    fn norm(&self, v: &Self::Vector) -> Result<f64, SolverError>;
    /// `y ← x`.
    fn copy(&self, x: &Self::Vector, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// `y ← y + αx`.
    fn axpy(&self, alpha: T, x: &Self::Vector, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// Computes `r = F(u)`.
    fn residual(&self, u: &Self::Vector, r: &mut Self::Vector) -> Result<(), SolverError>;
    /// Solves `J(u) δ = r` for the Newton correction `δ` (given as zeros on entry).
    fn solve_jacobian(
        &self,
        u: &Self::Vector,
        r: &Self::Vector,
        du: &mut Self::Vector,
    ) -> Result<LinearInfo, SolverError>;
}

/// A [`NonlinearProblem`] seen as a [`NonlinearSpace`] over `Vec<T>`.
struct HostSpace<'a, P: ?Sized> {
    problem: &'a P,
    n: usize,
}

impl<T: Real, P: NonlinearProblem<T> + ?Sized> NonlinearSpace<T> for HostSpace<'_, P> {
    type Vector = Vec<T>;
    fn zeros(&self) -> Result<Vec<T>, SolverError> {
        Ok(vec![T::zero(); self.n])
    }
    fn norm(&self, v: &Vec<T>) -> Result<f64, SolverError> {
        Ok(norm(v))
    }
    fn copy(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        y.copy_from_slice(x);
        Ok(())
    }
    fn axpy(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        crate::cpu::axpy(alpha, x, y)
    }
    fn residual(&self, u: &Vec<T>, r: &mut Vec<T>) -> Result<(), SolverError> {
        self.problem.residual(u, r)
    }
    fn solve_jacobian(
        &self,
        u: &Vec<T>,
        r: &Vec<T>,
        du: &mut Vec<T>,
    ) -> Result<LinearInfo, SolverError> {
        self.problem.solve_jacobian(u, r, du)
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
    let mut v = u.to_vec();
    let host = HostSpace {
        problem,
        n: u.len(),
    };
    let result = newton_in(&host, &mut v, opts);
    u.copy_from_slice(&v);
    result
}

/// [`newton`] for a system whose vectors live in their own backend (a GPU, for example):
/// the same iteration, line search, stopping test and errors, with every vector operation
/// going through [`NonlinearSpace`].
pub fn newton_in<T: Real, P: NonlinearSpace<T> + ?Sized>(
    problem: &P,
    u: &mut P::Vector,
    opts: &NewtonOptions,
) -> Result<NewtonStats, SolverError> {
    opts.validate()?;
    let mut r = problem.zeros()?;
    problem.residual(u, &mut r)?;
    let mut f = problem.norm(&r)?;
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
        step_linear_iterations: Vec::new(),
        converged: f <= target,
    };
    if stats.converged {
        return Ok(stats);
    }

    let zero = problem.zeros()?;
    let mut du = problem.zeros()?;
    let mut trial = problem.zeros()?;
    let mut r_trial = problem.zeros()?;
    for k in 1..=opts.max_iter {
        problem.copy(&zero, &mut du)?;
        let info = problem.solve_jacobian(u, &r, &mut du)?;
        stats.linear_iterations += info.iterations;
        stats.step_linear_iterations.push(info.iterations);
        if !problem.norm(&du)?.is_finite() {
            return Err(SolverError::NonFinite {
                quantity: "Newton correction",
                iteration: k,
            });
        }

        let mut lambda = 1.0f64;
        let f_trial = loop {
            problem.copy(u, &mut trial)?;
            problem.axpy(-T::of(lambda), &du, &mut trial)?;
            problem.residual(&trial, &mut r_trial)?;
            let ft = problem.norm(&r_trial)?;
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

        std::mem::swap(u, &mut trial);
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
